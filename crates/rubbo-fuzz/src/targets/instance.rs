//! The JSON of application-level discovery: the Curator `ServiceInstance` node
//! ZooKeeper holds (and what Rubbo reads from it: endpoints, revision, MetadataService
//! URL params), the `MetadataInfo` JSON of the metadata report, and the Kubernetes
//! `io.dubbo/metadata` annotation.

use std::collections::BTreeMap;

use rubbo_metadata::{Endpoint, MetadataInfo, ServiceInstance, parse_url_params};
use rubbo_metadata::{metadata_json, parse_metadata};

/// A node Java 3.3.6 wrote (`InteropProvider --register-mode instance`; the same node
/// as `rubbo-metadata`'s instance tests).
pub const JAVA_NODE: &str = r#"{"name":"interop-provider","id":"127.0.0.1:47759","address":"127.0.0.1","port":47759,"sslPort":null,"payload":{"@class":"org.apache.dubbo.registry.zookeeper.ZookeeperInstance","id":"127.0.0.1:47759","name":"interop-provider","metadata":{"dubbo.endpoints":"[{\"port\":47759,\"protocol\":\"dubbo\"}]","dubbo.metadata-service.url-params":"{\"prefer.serialization\":\"hessian2,fastjson2\",\"version\":\"1.0.0\",\"dubbo\":\"2.0.2\",\"release\":\"3.3.6\",\"side\":\"provider\",\"port\":\"47759\",\"protocol\":\"dubbo\"}","dubbo.metadata.revision":"e87870eed9f9d4ce5d65e26098f85b35","dubbo.metadata.storage-type":"local","meta-v":"1.0.0","timestamp":"1796142813040"}},"registrationTimeUTC":1796142818860,"serviceType":"DYNAMIC","uriSpec":null}"#;

/// The `io.dubbo/metadata` annotations of the Kubernetes discovery's tests, and the
/// Java node's metadata as an annotation.
pub const ANNOTATIONS: &[&str] = &[
    r#"{"dubbo.metadata.revision":"abc","dubbo.endpoints":"[{\"port\":20880,\"protocol\":\"dubbo\"}]","timestamp":"1"}"#,
    r#"{"a":1,"b":true,"c":null,"d":"x"}"#,
    r#"{"dubbo.endpoints":"[{\"port\":47759,\"protocol\":\"dubbo\"}]","dubbo.metadata-service.url-params":"{\"prefer.serialization\":\"hessian2,fastjson2\",\"version\":\"1.0.0\",\"dubbo\":\"2.0.2\",\"release\":\"3.3.6\",\"side\":\"provider\",\"port\":\"47759\",\"protocol\":\"dubbo\"}","dubbo.metadata.revision":"e87870eed9f9d4ce5d65e26098f85b35","dubbo.metadata.storage-type":"local","meta-v":"1.0.0","timestamp":"1796142813040"}"#,
];

/// JSON syntax, edge numbers and escapes, and the keys Rubbo reads.
pub const DICT: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b"\\\"",
    b":",
    b",",
    b"null",
    b"true",
    b"-1",
    b"65536",
    b"1e999",
    b"18446744073709551616",
    b"\\u0000",
    b"\\ud800",
    b"\"payload\"",
    b"\"metadata\"",
    b"\"port\"",
    b"\"uriSpec\"",
    b"\"dubbo.endpoints\"",
    b"\"dubbo.metadata-service.url-params\"",
    b"\"services\"",
    b"\"params\"",
];

/// The Java node and two nodes Rubbo writes: one with endpoints and URL params, one
/// bare.
pub fn instance_nodes() -> Vec<Vec<u8>> {
    let mut i = ServiceInstance::new("demo-provider", "10.0.0.1", 20880);
    i.set_endpoints(&[
        Endpoint {
            port: 20880,
            protocol: "dubbo".into(),
        },
        Endpoint {
            port: 50051,
            protocol: "tri".into(),
        },
    ]);
    i.metadata.insert(
        "dubbo.metadata-service.url-params".into(),
        r#"{"version":"1.0.0","port":"20880","protocol":"dubbo"}"#.into(),
    );
    i.metadata
        .insert("dubbo.metadata.revision".into(), "0123abcd".into());
    let bare = ServiceInstance::new("a", "::1", 1);
    vec![
        JAVA_NODE.as_bytes().to_vec(),
        i.to_curator_json_at(1_700_000_000_000).into_bytes(),
        bare.to_curator_json_at(0).into_bytes(),
    ]
}

/// The `MetadataInfo` JSON of the revision fixtures (what Java writes to the report).
pub fn metadata_infos() -> Vec<Vec<u8>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../rubbo-metadata/tests/fixtures/revisions.json"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let cases: Vec<serde_json::Value> =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let seeds: Vec<Vec<u8>> = cases
        .iter()
        .filter_map(|c| c.get("json")?.as_str())
        .map(|j| j.as_bytes().to_vec())
        .collect();
    assert!(!seeds.is_empty(), "no MetadataInfo JSON in {path}");
    seeds
}

/// The instance nodes, then the `MetadataInfo` JSON.
pub fn instance_seeds() -> Vec<Vec<u8>> {
    let mut seeds = instance_nodes();
    seeds.extend(metadata_infos());
    seeds
}

/// The annotations, then the Java node (not an annotation's shape).
pub fn annotation_seeds() -> Vec<Vec<u8>> {
    let mut seeds = crate::seeds::texts(ANNOTATIONS);
    seeds.push(JAVA_NODE.as_bytes().to_vec());
    seeds
}

fn same_instance(a: &ServiceInstance, b: &ServiceInstance) -> bool {
    a.service_name == b.service_name
        && a.host == b.host
        && a.port == b.port
        && a.metadata == b.metadata
}

/// A document as an instance node and as `MetadataInfo` JSON: what Rubbo reads, it
/// writes back the same.
pub fn instance_json(input: &[u8]) {
    if let Ok(i) = ServiceInstance::from_curator_json(input) {
        let _ = i.id();
        let _ = i.revision();
        let _ = i.endpoints();
        let _ = parse_url_params(&i);
        let again = ServiceInstance::from_curator_json(i.to_curator_json_at(0).as_bytes())
            .unwrap_or_else(|e| panic!("a node Rubbo wrote does not parse: {e}"));
        assert!(same_instance(&i, &again), "{i:?} != {again:?}");
    }
    if let Ok(info) = MetadataInfo::from_json(&crate::text(input)) {
        let _ = info.calculate_revision();
        let again = MetadataInfo::from_json(&info.to_json())
            .unwrap_or_else(|e| panic!("MetadataInfo JSON Rubbo wrote does not parse: {e}"));
        assert_eq!(again.to_json(), info.to_json());
    }
}

/// A document as the `io.dubbo/metadata` annotation: what Rubbo reads, it writes back
/// the same.
pub fn annotation(input: &[u8]) {
    if let Ok(meta) = parse_metadata(&crate::text(input)) {
        let again: BTreeMap<String, String> = parse_metadata(&metadata_json(&meta))
            .unwrap_or_else(|e| panic!("an annotation Rubbo wrote does not parse: {e}"));
        assert_eq!(again, meta);
    }
}
