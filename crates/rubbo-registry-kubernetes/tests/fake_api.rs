//! The discovery against a small fake API server on 127.0.0.1: list and watch of
//! EndpointSlices, Services and Pods (JSON, one watch event per line, as the real
//! server streams them) and Pod patches. The real server runs in interop cell 11.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use parking_lot::Mutex;
use rubbo_metadata::{ServiceDiscovery, ServiceInstance};
use rubbo_registry_kubernetes::{KubernetesServiceDiscovery, Settings};
use serde_json::{Value, json};
use tokio::sync::broadcast;

/// The pseudo kind that ends every open watch.
const CLOSE: &str = "close";

const META: &str = r#"{"dubbo.metadata.revision":"r1","dubbo.endpoints":"[{\"port\":20880,\"protocol\":\"dubbo\"}]"}"#;

/// The objects the fake serves, by kind ("endpointslices", "services", "pods").
#[derive(Default)]
struct State {
    objects: BTreeMap<(String, String), Value>,
    patches: Vec<(String, Value)>,
    version: u64,
    /// Every event, for watches that start from an older resource version.
    log: Vec<(String, u64, Value)>,
}

struct Fake {
    state: Mutex<State>,
    events: broadcast::Sender<(String, u64, Value)>,
    /// While set, every request gets 503 (the API server is away).
    down: AtomicBool,
    /// Requests answered 503.
    refused: AtomicU64,
    /// An old server: no EndpointSlices API (404).
    no_slices: AtomicBool,
}

impl Fake {
    /// The server goes away: open watches end, requests fail until `up`.
    fn go_down(&self) {
        self.down.store(true, Ordering::SeqCst);
        let _ = self.events.send((CLOSE.to_owned(), 0, Value::Null));
    }

    fn up(&self) {
        self.down.store(false, Ordering::SeqCst);
    }

    /// Adds or replaces an object and tells the watches.
    fn put(&self, kind: &str, mut obj: Value) {
        let mut st = self.state.lock();
        st.version += 1;
        obj["metadata"]["resourceVersion"] = json!(st.version.to_string());
        let name = obj["metadata"]["name"].as_str().unwrap().to_owned();
        let added = st
            .objects
            .insert((kind.to_owned(), name), obj.clone())
            .is_none();
        let event = json!({ "type": if added { "ADDED" } else { "MODIFIED" }, "object": obj });
        let version = st.version;
        st.log.push((kind.to_owned(), version, event.clone()));
        let _ = self.events.send((kind.to_owned(), version, event));
    }
}

fn kind_of(path: &str) -> Option<&'static str> {
    ["endpointslices", "endpoints", "services", "pods"]
        .into_iter()
        .find(|k| path.ends_with(k) || path.contains(&format!("/{k}/")))
}

fn list_kind(kind: &str) -> (&'static str, &'static str) {
    match kind {
        "endpointslices" => ("EndpointSliceList", "discovery.k8s.io/v1"),
        "services" => ("ServiceList", "v1"),
        "endpoints" => ("EndpointsList", "v1"),
        _ => ("PodList", "v1"),
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn full(v: Value) -> Response<Body> {
    Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(v.to_string())).boxed())
        .unwrap()
}

async fn serve(fake: Arc<Fake>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    if fake.down.load(Ordering::SeqCst) {
        fake.refused.fetch_add(1, Ordering::SeqCst);
        return Ok(Response::builder()
            .status(503)
            .body(Full::new(Bytes::new()).boxed())
            .unwrap());
    }
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or_default().to_owned();
    let kind = kind_of(&path)
        .filter(|k| !(*k == "endpointslices" && fake.no_slices.load(Ordering::SeqCst)));
    let Some(kind) = kind else {
        return Ok(Response::builder()
            .status(404)
            .body(Full::new(Bytes::new()).boxed())
            .unwrap());
    };
    if req.method() == hyper::Method::PATCH {
        let name = path.rsplit('/').next().unwrap_or_default().to_owned();
        let body = req.into_body().collect().await.unwrap().to_bytes();
        let patch: Value = serde_json::from_slice(&body).unwrap();
        fake.state
            .lock()
            .patches
            .push((name.clone(), patch.clone()));
        let mut pod = fake
            .state
            .lock()
            .objects
            .get(&("pods".to_owned(), name))
            .cloned()
            .unwrap_or_default();
        if let Some(a) = patch["metadata"]["annotations"].as_object() {
            for (k, v) in a {
                if v.is_null() {
                    if let Some(m) = pod["metadata"]["annotations"].as_object_mut() {
                        m.remove(k);
                    }
                } else {
                    pod["metadata"]["annotations"][k] = v.clone();
                }
            }
        }
        fake.put("pods", pod.clone());
        return Ok(full(pod));
    }
    if query.contains("watch=true") {
        // Subscribe, then replay what came after the asked version; live events the
        // replay already sent are skipped by version.
        let rx = fake.events.subscribe();
        let from: u64 = query
            .split('&')
            .find_map(|kv| kv.strip_prefix("resourceVersion="))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let replay: Vec<(u64, Value)> = fake
            .state
            .lock()
            .log
            .iter()
            .filter(|(k, v, _)| k == kind && *v > from)
            .map(|(_, v, e)| (*v, e.clone()))
            .collect();
        let kind = kind.to_owned();
        let stream = futures::stream::unfold(
            (rx, replay.into_iter(), from),
            move |(mut rx, mut replay, mut last)| {
                let kind = kind.clone();
                async move {
                    if let Some((v, e)) = replay.next() {
                        let frame = Frame::data(Bytes::from(format!("{e}\n")));
                        return Some((Ok::<_, Infallible>(frame), (rx, replay, v)));
                    }
                    loop {
                        match rx.recv().await {
                            Ok((k, v, e)) if k == kind && v > last => {
                                last = v;
                                let frame = Frame::data(Bytes::from(format!("{e}\n")));
                                return Some((Ok(frame), (rx, replay, last)));
                            }
                            Ok((k, _, _)) if k == CLOSE => return None,
                            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                            Err(broadcast::error::RecvError::Closed) => return None,
                        }
                    }
                }
            },
        );
        return Ok(Response::builder()
            .header("content-type", "application/json")
            .body(BodyExt::boxed(StreamBody::new(stream)))
            .unwrap());
    }
    let st = fake.state.lock();
    let items: Vec<Value> = st
        .objects
        .iter()
        .filter(|((k, _), _)| k == kind)
        .map(|(_, v)| v.clone())
        .collect();
    let (list, api) = list_kind(kind);
    Ok(full(json!({
        "kind": list, "apiVersion": api,
        "metadata": { "resourceVersion": st.version.to_string() },
        "items": items,
    })))
}

async fn start() -> (Arc<Fake>, String) {
    let fake = Arc::new(Fake {
        state: Mutex::new(State::default()),
        events: broadcast::channel(256).0,
        down: AtomicBool::new(false),
        refused: AtomicU64::new(0),
        no_slices: AtomicBool::new(false),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let f = fake.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let f = f.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| serve(f.clone(), req));
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    (fake, format!("http://{addr}"))
}

fn pod(name: &str, annotation: Option<&str>) -> Value {
    let mut p = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name, "namespace": "default", "labels": { "app": "greeter" } },
    });
    if let Some(a) = annotation {
        p["metadata"]["annotations"] = json!({ "io.dubbo/metadata": a });
    }
    p
}

fn endpoint(ip: &str, pod: &str, ready: bool, terminating: bool) -> Value {
    json!({
        "addresses": [ip],
        "conditions": { "ready": ready, "serving": ready, "terminating": terminating },
        "targetRef": { "kind": "Pod", "name": pod, "namespace": "default" },
    })
}

fn slice(endpoints: Vec<Value>) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": { "name": "greeter-x1", "namespace": "default",
                      "labels": { "kubernetes.io/service-name": "greeter" } },
        "addressType": "IPv4",
        "ports": [{ "name": "dubbo", "port": 20880, "protocol": "TCP" }],
        "endpoints": endpoints,
    })
}

fn settings(pod: Option<&str>) -> Settings {
    Settings {
        namespace: Some("default".into()),
        enable_register: true,
        max_backoff: Duration::from_millis(500),
        timeout: Duration::from_secs(5),
        pod_name: pod.map(str::to_owned),
    }
}

async fn discovery(url: &str, pod: Option<&str>) -> KubernetesServiceDiscovery {
    let config = kube::Config::new(url.parse().unwrap());
    let client = kube::Client::try_from(config).unwrap();
    KubernetesServiceDiscovery::with_client(client, "default".into(), settings(pod))
}

fn ids(list: &[std::sync::Arc<ServiceInstance>]) -> Vec<String> {
    list.iter().map(|i| i.id()).collect()
}

/// Waits (bounded) for the instance ids to be `want`.
async fn wait_ids(rx: &mut rubbo_metadata::InstancesWatch, want: &[&str]) -> bool {
    let wait = rx.wait_for(|l| ids(l) == want);
    matches!(
        tokio::time::timeout(Duration::from_secs(10), wait).await,
        Ok(Ok(_))
    )
}

#[tokio::test]
async fn instances_follow_the_slices_and_the_pod_annotations() {
    let (fake, url) = start().await;
    fake.put(
        "services",
        json!({ "apiVersion": "v1", "kind": "Service",
                "metadata": { "name": "greeter", "namespace": "default" },
                "spec": { "selector": { "app": "greeter" } } }),
    );
    fake.put("pods", pod("greeter-0", Some(META)));
    fake.put("pods", pod("greeter-1", Some("{garbage")));
    fake.put(
        "endpointslices",
        slice(vec![
            endpoint("10.251.0.2", "greeter-0", true, false),
            endpoint("10.251.0.3", "greeter-1", true, false),
        ]),
    );
    let d = discovery(&url, None).await;
    let mut rx = d.watch("greeter").await.unwrap();
    // The first complete list is there when watch returns; the garbage Pod is skipped.
    assert_eq!(ids(&rx.borrow()), ["10.251.0.2:20880"]);
    assert_eq!(rx.borrow()[0].revision(), Some("r1"));

    // A new ready Pod, and greeter-0 terminating: new calls go to greeter-2 only.
    fake.put("pods", pod("greeter-2", Some(META)));
    fake.put(
        "endpointslices",
        slice(vec![
            endpoint("10.251.0.2", "greeter-0", true, true),
            endpoint("10.251.0.3", "greeter-1", true, false),
            endpoint("10.251.0.4", "greeter-2", true, false),
        ]),
    );
    let wanted = wait_ids(&mut rx, &["10.251.0.4:20880"]).await;
    assert!(wanted, "instances: {:?}", ids(&rx.borrow()));

    // greeter-1's annotation repaired: it joins.
    fake.put("pods", pod("greeter-1", Some(META)));
    let wanted = wait_ids(&mut rx, &["10.251.0.3:20880", "10.251.0.4:20880"]).await;
    assert!(wanted, "instances: {:?}", ids(&rx.borrow()));
    d.destroy().await;
}

#[tokio::test]
async fn a_provider_annotates_its_pod_and_removes_the_annotation() {
    let (fake, url) = start().await;
    fake.put("pods", pod("greeter-0", None));
    let d = discovery(&url, Some("greeter-0")).await;
    let mut instance = ServiceInstance::new("greeter", "10.251.0.2", 20880);
    instance
        .metadata
        .insert("dubbo.metadata.revision".into(), "r1".into());
    d.register(instance.clone()).await.unwrap();
    {
        let st = fake.state.lock();
        let (name, patch) = st.patches.last().unwrap();
        assert_eq!(name, "greeter-0");
        let written = patch["metadata"]["annotations"]["io.dubbo/metadata"]
            .as_str()
            .unwrap();
        let parsed: BTreeMap<String, String> = serde_json::from_str(written).unwrap();
        assert_eq!(parsed, instance.metadata);
    }
    d.unregister(&instance).await.unwrap();
    {
        let st = fake.state.lock();
        let (_, patch) = st.patches.last().unwrap();
        assert!(patch["metadata"]["annotations"]["io.dubbo/metadata"].is_null());
        let pod = &st.objects[&("pods".to_owned(), "greeter-0".to_owned())];
        assert!(
            pod["metadata"]["annotations"]
                .get("io.dubbo/metadata")
                .is_none()
        );
    }
    d.destroy().await;
}

#[tokio::test]
async fn without_a_pod_name_register_says_so() {
    let (_fake, url) = start().await;
    let d = discovery(&url, None).await;
    let err = d
        .register(ServiceInstance::new("greeter", "10.251.0.2", 20880))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("POD_NAME"), "{err}");
}

#[tokio::test]
async fn the_last_instances_stay_while_the_server_is_away_and_the_watch_resumes() {
    let (fake, url) = start().await;
    fake.put(
        "services",
        json!({ "apiVersion": "v1", "kind": "Service",
                "metadata": { "name": "greeter", "namespace": "default" },
                "spec": { "selector": { "app": "greeter" } } }),
    );
    fake.put("pods", pod("greeter-0", Some(META)));
    fake.put(
        "endpointslices",
        slice(vec![endpoint("10.251.0.2", "greeter-0", true, false)]),
    );
    let d = discovery(&url, None).await;
    let mut rx = d.watch("greeter").await.unwrap();
    assert_eq!(ids(&rx.borrow()), ["10.251.0.2:20880"]);

    fake.go_down();
    // The watches come back and are refused a few times (bounded wait).
    let refused = async {
        while fake.refused.load(Ordering::SeqCst) < 6 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    assert!(
        tokio::time::timeout(Duration::from_secs(20), refused)
            .await
            .is_ok()
    );
    assert_eq!(ids(&rx.borrow()), ["10.251.0.2:20880"], "kept while away");

    // Changes made while it was away arrive once it is back (resumed from the last
    // resource version).
    fake.put("pods", pod("greeter-1", Some(META)));
    fake.put(
        "endpointslices",
        slice(vec![
            endpoint("10.251.0.2", "greeter-0", true, false),
            endpoint("10.251.0.3", "greeter-1", true, false),
        ]),
    );
    fake.up();
    let wanted = wait_ids(&mut rx, &["10.251.0.2:20880", "10.251.0.3:20880"]).await;
    assert!(wanted, "instances: {:?}", ids(&rx.borrow()));
    d.destroy().await;
}

#[tokio::test]
async fn without_endpointslices_the_endpoints_object_is_followed() {
    let (fake, url) = start().await;
    fake.no_slices.store(true, Ordering::SeqCst);
    fake.put(
        "services",
        json!({ "apiVersion": "v1", "kind": "Service",
                "metadata": { "name": "greeter", "namespace": "default" },
                "spec": { "selector": { "app": "greeter" } } }),
    );
    fake.put("pods", pod("greeter-0", Some(META)));
    fake.put("pods", pod("greeter-1", Some(META)));
    let address =
        |ip: &str, pod: &str| json!({ "ip": ip, "targetRef": { "kind": "Pod", "name": pod } });
    fake.put(
        "endpoints",
        json!({ "apiVersion": "v1", "kind": "Endpoints",
                "metadata": { "name": "greeter", "namespace": "default" },
                "subsets": [{ "addresses": [address("10.251.0.2", "greeter-0")],
                              "notReadyAddresses": [address("10.251.0.3", "greeter-1")],
                              "ports": [{ "port": 20880 }] }] }),
    );
    let d = discovery(&url, None).await;
    let mut rx = d.watch("greeter").await.unwrap();
    assert_eq!(ids(&rx.borrow()), ["10.251.0.2:20880"]);
    fake.put(
        "endpoints",
        json!({ "apiVersion": "v1", "kind": "Endpoints",
                "metadata": { "name": "greeter", "namespace": "default" },
                "subsets": [{ "addresses": [address("10.251.0.3", "greeter-1")],
                              "ports": [{ "port": 20880 }] }] }),
    );
    let wanted = wait_ids(&mut rx, &["10.251.0.3:20880"]).await;
    assert!(wanted, "instances: {:?}", ids(&rx.borrow()));
    d.destroy().await;
}
