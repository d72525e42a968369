//! From Kubernetes objects to [`ServiceInstance`]s, with no client: EndpointSlices (or
//! the legacy Endpoints) give the ready addresses and ports, each address's Pod gives
//! the instance metadata (the `io.dubbo/metadata` annotation), as Java's
//! `KubernetesServiceDiscovery.toServiceInstance` does.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use k8s_openapi::api::core::v1::{Endpoints, ObjectReference, Pod};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};
use rubbo_metadata::{InstanceMetadata, MetadataInterner, ServiceInstance};
/// The annotation's JSON form; kept in `rubbo-metadata`, so that reading it needs no
/// Kubernetes client (the fuzz targets build without one).
pub use rubbo_metadata::{metadata_json, parse_metadata};

/// The Pod annotation holding the instance metadata as a JSON object of strings
/// (Java's `KubernetesServiceDiscovery.KUBERNETES_PROPERTIES_KEY`).
pub const METADATA_ANNOTATION: &str = "io.dubbo/metadata";

/// The label the EndpointSlice controller puts on the slices of a Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// One ready address of a Service: its IP, the Pod behind it and the ports it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyAddress {
    /// The IP.
    pub ip: String,
    /// The name of the Pod of `targetRef`, if it names a Pod.
    pub pod: Option<String>,
    /// The ports (of the slice, or of the Endpoints subset).
    pub ports: Vec<u16>,
}

/// Why something was left out: logged once by the watcher, kept here for tests.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Skipped {
    /// A slice (or Endpoints subset) with no usable port.
    NoPorts {
        /// The slice's name.
        slice: String,
    },
    /// A slice whose `addressType` is not `IPv4` or `IPv6` (`FQDN`).
    AddressType {
        /// The slice's name.
        slice: String,
        /// Its address type.
        address_type: String,
    },
    /// An address whose `targetRef` is no Pod.
    NoPod {
        /// The address.
        ip: String,
    },
    /// An address whose Pod is not (yet) known.
    UnknownPod {
        /// The Pod's name.
        pod: String,
    },
    /// A Pod without the annotation (its provider has not registered yet).
    NoMetadata {
        /// The Pod's name.
        pod: String,
    },
    /// A Pod whose annotation is not a JSON object.
    BadMetadata {
        /// The Pod's name.
        pod: String,
        /// Why it does not parse.
        reason: String,
    },
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skipped::NoPorts { slice } => write!(f, "endpoints {slice} have no port"),
            Skipped::AddressType {
                slice,
                address_type,
            } => write!(f, "EndpointSlice {slice} has address type {address_type}"),
            Skipped::NoPod { ip } => write!(f, "endpoint {ip} names no Pod"),
            Skipped::UnknownPod { pod } => write!(f, "Pod {pod} is not known (yet)"),
            Skipped::NoMetadata { pod } => {
                write!(f, "Pod {pod} has no {METADATA_ANNOTATION} annotation")
            }
            Skipped::BadMetadata { pod, reason } => {
                write!(
                    f,
                    "Pod {pod} has a bad {METADATA_ANNOTATION} annotation: {reason}"
                )
            }
        }
    }
}

fn pod_of(target: Option<&ObjectReference>) -> Option<String> {
    target
        .filter(|t| t.kind.as_deref().is_none_or(|k| k == "Pod"))
        .and_then(|t| t.name.clone())
}

fn port_of(p: Option<i32>) -> Option<u16> {
    p.and_then(|p| u16::try_from(p).ok()).filter(|&p| p != 0)
}

/// Whether new calls may go to `e`: ready and serving (an unknown state counts as
/// both, as the API says) and not terminating. A terminating endpoint drains: it is
/// left out, and calls already sent to it finish.
pub fn is_ready(e: &Endpoint) -> bool {
    let c = e.conditions.as_ref();
    let ready = c.and_then(|c| c.ready).unwrap_or(true);
    let serving = c.and_then(|c| c.serving).unwrap_or(true);
    let terminating = c.and_then(|c| c.terminating).unwrap_or(false);
    ready && serving && !terminating
}

/// The ready addresses of one EndpointSlice (the first address of each endpoint, as
/// the API says consumers should use), or why the whole slice is skipped.
pub fn slice_addresses(slice: &EndpointSlice) -> Result<Vec<ReadyAddress>, Skipped> {
    let name = slice.metadata.name.clone().unwrap_or_default();
    if slice.address_type != "IPv4" && slice.address_type != "IPv6" {
        return Err(Skipped::AddressType {
            slice: name,
            address_type: slice.address_type.clone(),
        });
    }
    let mut ports: Vec<u16> = slice
        .ports
        .iter()
        .flatten()
        .filter_map(|p| port_of(p.port))
        .collect();
    ports.sort_unstable();
    ports.dedup();
    if ports.is_empty() {
        return Err(Skipped::NoPorts { slice: name });
    }
    Ok(slice
        .endpoints
        .iter()
        .filter(|e| is_ready(e))
        .filter_map(|e| {
            e.addresses.first().map(|ip| ReadyAddress {
                ip: ip.clone(),
                pod: pod_of(e.target_ref.as_ref()),
                ports: ports.clone(),
            })
        })
        .collect())
}

/// The ready addresses of a legacy Endpoints object (`subsets[].addresses`; the
/// `notReadyAddresses` are left out), for servers without EndpointSlices. A subset
/// with no port is skipped.
pub fn endpoints_addresses(endpoints: &Endpoints) -> (Vec<ReadyAddress>, Vec<Skipped>) {
    let name = endpoints.metadata.name.clone().unwrap_or_default();
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for subset in endpoints.subsets.iter().flatten() {
        let mut ports: Vec<u16> = subset
            .ports
            .iter()
            .flatten()
            .filter_map(|p| port_of(Some(p.port)))
            .collect();
        ports.sort_unstable();
        ports.dedup();
        if ports.is_empty() {
            skipped.push(Skipped::NoPorts {
                slice: name.clone(),
            });
            continue;
        }
        for a in subset.addresses.iter().flatten() {
            out.push(ReadyAddress {
                ip: a.ip.clone(),
                pod: pod_of(a.target_ref.as_ref()),
                ports: ports.clone(),
            });
        }
    }
    (out, skipped)
}

/// The instances of `app`: one per ready address and port whose Pod carries valid
/// metadata (sorted by id, duplicates dropped), and what was skipped.
pub fn instances(
    app: &str,
    addresses: &[ReadyAddress],
    pods: &HashMap<String, Pod>,
) -> (Vec<ServiceInstance>, Vec<Skipped>) {
    instances_shared(app, addresses, pods, &mut MetadataInterner::default())
}

/// [`instances`], their metadata texts shared through `interner` (with one another and
/// with the instances it gave before: the watch of an application keeps one).
pub fn instances_shared(
    app: &str,
    addresses: &[ReadyAddress],
    pods: &HashMap<String, Pod>,
    interner: &mut MetadataInterner,
) -> (Vec<ServiceInstance>, Vec<Skipped>) {
    let mut out: BTreeMap<String, ServiceInstance> = BTreeMap::new();
    let mut skipped = Vec::new();
    for a in addresses {
        let Some(name) = &a.pod else {
            skipped.push(Skipped::NoPod { ip: a.ip.clone() });
            continue;
        };
        let Some(pod) = pods.get(name) else {
            skipped.push(Skipped::UnknownPod { pod: name.clone() });
            continue;
        };
        let annotation = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(METADATA_ANNOTATION))
            .filter(|v| !v.trim().is_empty());
        let Some(annotation) = annotation else {
            skipped.push(Skipped::NoMetadata { pod: name.clone() });
            continue;
        };
        let metadata = match parse_metadata(annotation) {
            Ok(m) => InstanceMetadata::collect_shared(m, interner),
            Err(reason) => {
                skipped.push(Skipped::BadMetadata {
                    pod: name.clone(),
                    reason,
                });
                continue;
            }
        };
        for &port in &a.ports {
            let mut i = ServiceInstance::new(app, a.ip.clone(), port);
            i.metadata = metadata.clone();
            out.entry(i.id()).or_insert(i);
        }
    }
    (out.into_values().collect(), skipped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort as CorePort, EndpointSubset};
    use k8s_openapi::api::discovery::v1::{EndpointConditions, EndpointPort};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn endpoint(ip: &str, pod: &str, ready: Option<bool>, terminating: Option<bool>) -> Endpoint {
        Endpoint {
            addresses: vec![ip.to_owned()],
            conditions: Some(EndpointConditions {
                ready,
                serving: ready,
                terminating,
            }),
            target_ref: Some(ObjectReference {
                kind: Some("Pod".into()),
                name: Some(pod.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn slice(name: &str, ports: &[i32], endpoints: Vec<Endpoint>) -> EndpointSlice {
        EndpointSlice {
            address_type: "IPv4".into(),
            endpoints,
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            ports: Some(
                ports
                    .iter()
                    .map(|&p| EndpointPort {
                        port: Some(p),
                        ..Default::default()
                    })
                    .collect(),
            ),
        }
    }

    fn pod(name: &str, annotation: Option<&str>) -> (String, Pod) {
        let annotations =
            annotation.map(|a| [(METADATA_ANNOTATION.to_owned(), a.to_owned())].into());
        (
            name.to_owned(),
            Pod {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    annotations,
                    ..Default::default()
                },
                ..Default::default()
            },
        )
    }

    const META: &str = r#"{"dubbo.metadata.revision":"abc","dubbo.endpoints":"[{\"port\":20880,\"protocol\":\"dubbo\"}]","timestamp":"1"}"#;

    #[test]
    fn ready_endpoints_of_a_slice_become_instances_with_the_pod_metadata() {
        let s = slice(
            "greeter-abc",
            &[20880],
            vec![
                endpoint("10.251.0.3", "greeter-1", Some(true), None),
                endpoint("10.251.0.2", "greeter-0", None, None),
            ],
        );
        let addrs = slice_addresses(&s).unwrap();
        let pods: HashMap<_, _> =
            [pod("greeter-0", Some(META)), pod("greeter-1", Some(META))].into();
        let (list, skipped) = instances("greeter", &addrs, &pods);
        assert!(skipped.is_empty(), "{skipped:?}");
        let ids: Vec<String> = list.iter().map(ServiceInstance::id).collect();
        assert_eq!(ids, ["10.251.0.2:20880", "10.251.0.3:20880"]);
        assert_eq!(list[0].service_name, "greeter");
        assert_eq!(list[0].revision(), Some("abc"));
        assert_eq!(list[0].endpoints()[0].port, 20880);
        assert_eq!(
            list[0].metadata.get("timestamp").map(String::as_str),
            Some("1")
        );
    }

    #[test]
    fn instances_of_one_interner_share_their_metadata_texts_across_lists() {
        let s = slice(
            "greeter-abc",
            &[20880],
            vec![
                endpoint("10.251.0.3", "greeter-1", Some(true), None),
                endpoint("10.251.0.2", "greeter-0", None, None),
            ],
        );
        let addrs = slice_addresses(&s).unwrap();
        let pods: HashMap<_, _> =
            [pod("greeter-0", Some(META)), pod("greeter-1", Some(META))].into();
        let mut interner = MetadataInterner::default();
        let (first, _) = instances_shared("greeter", &addrs, &pods, &mut interner);
        let (again, _) = instances_shared("greeter", &addrs, &pods, &mut interner);
        assert_eq!(first, again);
        assert_eq!(first, instances("greeter", &addrs, &pods).0);
        let revision = rubbo_common::keys::EXPORTED_SERVICES_REVISION_PROPERTY_NAME;
        assert!(std::ptr::eq(
            &first[0].metadata[revision],
            &first[1].metadata[revision]
        ));
        assert!(std::ptr::eq(
            &first[0].metadata[revision],
            &again[1].metadata[revision]
        ));
    }

    #[test]
    fn unready_serving_false_and_terminating_endpoints_get_no_new_calls() {
        let mut not_serving = endpoint("10.251.0.5", "p5", Some(true), None);
        if let Some(c) = not_serving.conditions.as_mut() {
            c.serving = Some(false);
        }
        let s = slice(
            "s",
            &[20880],
            vec![
                endpoint("10.251.0.2", "p2", Some(true), Some(false)),
                endpoint("10.251.0.3", "p3", Some(false), None),
                // publishNotReadyAddresses keeps ready=true while terminating.
                endpoint("10.251.0.4", "p4", Some(true), Some(true)),
                not_serving,
            ],
        );
        let ips: Vec<String> = slice_addresses(&s)
            .unwrap()
            .into_iter()
            .map(|a| a.ip)
            .collect();
        assert_eq!(ips, ["10.251.0.2"]);
    }

    #[test]
    fn a_slice_with_no_ports_or_of_fqdn_is_skipped_whole() {
        let no_ports = EndpointSlice {
            ports: None,
            ..slice(
                "empty",
                &[],
                vec![endpoint("10.251.0.2", "p", Some(true), None)],
            )
        };
        assert_eq!(
            slice_addresses(&no_ports),
            Err(Skipped::NoPorts {
                slice: "empty".into()
            })
        );
        // A port list whose only entry has no number (a Service with no ports) too.
        let portless = EndpointSlice {
            ports: Some(vec![EndpointPort::default()]),
            ..slice("p", &[], vec![])
        };
        assert!(matches!(
            slice_addresses(&portless),
            Err(Skipped::NoPorts { .. })
        ));
        let fqdn = EndpointSlice {
            address_type: "FQDN".into(),
            ..slice("f", &[80], vec![])
        };
        assert!(matches!(
            slice_addresses(&fqdn),
            Err(Skipped::AddressType { .. })
        ));
    }

    #[test]
    fn a_pod_with_garbage_or_no_annotation_is_skipped_and_the_others_kept() {
        let s = slice(
            "s",
            &[20880],
            vec![
                endpoint("10.251.0.2", "good", Some(true), None),
                endpoint("10.251.0.3", "garbage", Some(true), None),
                endpoint("10.251.0.4", "array", Some(true), None),
                endpoint("10.251.0.5", "bare", Some(true), None),
                endpoint("10.251.0.6", "unknown", Some(true), None),
            ],
        );
        let pods: HashMap<_, _> = [
            pod("good", Some(META)),
            pod("garbage", Some("{not json")),
            pod("array", Some("[1,2]")),
            pod("bare", None),
        ]
        .into();
        let (list, skipped) = instances("app", &slice_addresses(&s).unwrap(), &pods);
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].id(), "10.251.0.2:20880");
        assert_eq!(skipped.len(), 4, "{skipped:?}");
        assert!(matches!(&skipped[0], Skipped::BadMetadata { pod, .. } if pod == "garbage"));
        assert!(matches!(&skipped[1], Skipped::BadMetadata { pod, .. } if pod == "array"));
        assert_eq!(skipped[2], Skipped::NoMetadata { pod: "bare".into() });
        assert_eq!(
            skipped[3],
            Skipped::UnknownPod {
                pod: "unknown".into()
            }
        );
    }

    #[test]
    fn every_port_of_an_address_is_an_instance_and_duplicates_across_slices_merge() {
        let a = slice(
            "a",
            &[20880, 50051],
            vec![endpoint("10.251.0.2", "p", Some(true), None)],
        );
        let b = slice(
            "b",
            &[20880],
            vec![endpoint("10.251.0.2", "p", Some(true), None)],
        );
        let mut addrs = slice_addresses(&a).unwrap();
        addrs.extend(slice_addresses(&b).unwrap());
        let pods: HashMap<_, _> = [pod("p", Some(META))].into();
        let ids: Vec<String> = instances("app", &addrs, &pods)
            .0
            .iter()
            .map(ServiceInstance::id)
            .collect();
        assert_eq!(ids, ["10.251.0.2:20880", "10.251.0.2:50051"]);
    }

    #[test]
    fn legacy_endpoints_give_ready_addresses_only() {
        let addr = |ip: &str, pod: &str| EndpointAddress {
            ip: ip.into(),
            target_ref: Some(ObjectReference {
                kind: Some("Pod".into()),
                name: Some(pod.into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let e = Endpoints {
            metadata: ObjectMeta {
                name: Some("greeter".into()),
                ..Default::default()
            },
            subsets: Some(vec![
                EndpointSubset {
                    addresses: Some(vec![addr("10.251.0.2", "p2")]),
                    not_ready_addresses: Some(vec![addr("10.251.0.3", "p3")]),
                    ports: Some(vec![CorePort {
                        port: 20880,
                        ..Default::default()
                    }]),
                },
                EndpointSubset {
                    addresses: Some(vec![addr("10.251.0.4", "p4")]),
                    ..Default::default()
                },
            ]),
        };
        let (addrs, skipped) = endpoints_addresses(&e);
        assert_eq!(
            addrs,
            [ReadyAddress {
                ip: "10.251.0.2".into(),
                pod: Some("p2".into()),
                ports: vec![20880]
            }]
        );
        assert_eq!(
            skipped,
            [Skipped::NoPorts {
                slice: "greeter".into()
            }]
        );
    }

    #[test]
    fn annotation_json_round_trips_and_tolerates_non_string_values() {
        let mut m = BTreeMap::new();
        m.insert("dubbo.metadata.revision".to_owned(), "r1".to_owned());
        m.insert(
            "dubbo.endpoints".to_owned(),
            r#"[{"port":1,"protocol":"tri"}]"#.to_owned(),
        );
        assert_eq!(parse_metadata(&metadata_json(&m)).unwrap(), m);
        let parsed = parse_metadata(r#"{"a":1,"b":true,"c":null,"d":"x"}"#).unwrap();
        assert_eq!(parsed.get("a").map(String::as_str), Some("1"));
        assert_eq!(parsed.get("b").map(String::as_str), Some("true"));
        assert!(!parsed.contains_key("c"));
        assert!(parse_metadata("\"str\"").is_err());
        assert!(parse_metadata("").is_err());
    }
}
