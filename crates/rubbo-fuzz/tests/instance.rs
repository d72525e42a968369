//! Fuzz: the JSON of application-level discovery: the Curator `ServiceInstance` node
//! ZooKeeper holds (and what Rubbo reads from it: endpoints, revision, MetadataService
//! URL params), the `MetadataInfo` JSON of the metadata report, and the Kubernetes
//! `io.dubbo/metadata` annotation.

use rubbo_fuzz::targets::{self, instance};
use rubbo_metadata::parse_metadata;
use rubbo_metadata::{MetadataInfo, ServiceInstance};

#[test]
fn zookeeper_instance_json() {
    // The seeds reach the readers (a target whose seeds all fail to parse would only
    // fuzz the JSON tokenizer).
    for s in instance::instance_nodes() {
        ServiceInstance::from_curator_json(&s).expect("an instance seed parses");
    }
    for s in instance::metadata_infos() {
        MetadataInfo::from_json(&rubbo_fuzz::text(&s)).expect("a MetadataInfo seed parses");
    }
    targets::INSTANCE_JSON.fuzz();
}

#[test]
fn kubernetes_metadata_annotation() {
    for s in instance::ANNOTATIONS {
        parse_metadata(s).expect("an annotation seed parses");
    }
    targets::K8S_METADATA.fuzz();
}
