//! Trace propagation end to end over 127.0.0.1: a consumer calls a middle provider
//! (dubbo), whose handler calls a leaf provider (Triple). Every hop runs the tracing
//! filters; the spans they open are captured by a `tracing` layer, and must form one
//! trace whose parent ids chain client -> server -> client -> server. A caller
//! without tracing that sends its own `traceparent` (as a Java consumer with
//! dubbo-tracing does) is continued, not restarted.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use rubbo::metrics::TraceContext;
use rubbo::{RpcError, Rubbo, context};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// The leaf: answers the `traceparent` it received.
#[rubbo::service(interface = "org.rubbo.test.Leaf", version = "1.0.0")]
pub trait Leaf {
    /// The `traceparent` attachment of this call.
    async fn leaf(&self) -> Result<String, RpcError>;
}

struct LeafImpl;

impl Leaf for LeafImpl {
    async fn leaf(&self) -> Result<String, RpcError> {
        Ok(context::attachment_str("traceparent").unwrap_or_default())
    }
}

/// The middle: calls the leaf, answers (its own server span, the leaf's answer).
#[rubbo::service(interface = "org.rubbo.test.Middle", version = "1.0.0")]
pub trait Middle {
    /// `current span id | leaf's traceparent`.
    async fn middle(&self) -> Result<String, RpcError>;
}

struct MiddleImpl(LeafClient);

impl Middle for MiddleImpl {
    async fn middle(&self) -> Result<String, RpcError> {
        let me = TraceContext::current().expect("a server span while serving");
        let leaf = self.0.leaf().await?;
        Ok(format!("{}|{leaf}", me.traceparent()))
    }
}

/// One captured span: its name and fields.
type Captured = (String, BTreeMap<String, String>);

#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

/// Records every `rpc.*` span with its fields, those recorded later included (the
/// filters record the ids once the span exists).
struct Capture(Arc<Mutex<Vec<Captured>>>, Mutex<BTreeMap<u64, usize>>);

impl<S: tracing::Subscriber> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        let name = attrs.metadata().name();
        if name.starts_with("rpc.") {
            let mut f = Fields::default();
            attrs.record(&mut f);
            let mut spans = self.0.lock();
            self.1.lock().insert(id.into_u64(), spans.len());
            spans.push((name.to_owned(), f.0));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        // The index lock is let go before the spans lock is taken: `on_new_span` takes
        // them the other way round, on another thread at the same time.
        let index = self.1.lock().get(&id.into_u64()).copied();
        if let Some(i) = index {
            let mut f = Fields::default();
            values.record(&mut f);
            self.0.lock()[i].1.extend(f.0);
        }
    }
}

fn spans() -> Arc<Mutex<Vec<Captured>>> {
    static SPANS: OnceLock<Arc<Mutex<Vec<Captured>>>> = OnceLock::new();
    SPANS
        .get_or_init(|| {
            let spans = Arc::new(Mutex::new(Vec::new()));
            let subscriber =
                tracing_subscriber::registry().with(Capture(spans.clone(), Mutex::default()));
            tracing::subscriber::set_global_default(subscriber).unwrap();
            spans
        })
        .clone()
}

/// The spans of trace `trace` (32 hex digits), by (name, method).
fn of_trace(trace: &str) -> BTreeMap<(String, String), BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for (name, fields) in spans().lock().iter() {
        if fields.get("trace_id").map(String::as_str) == Some(trace) {
            let key = (name.clone(), fields["rpc.method"].clone());
            assert!(
                out.insert(key, fields.clone()).is_none(),
                "two {name} spans"
            );
        }
    }
    out
}

/// The leaf on Triple and the middle on dubbo, both traced; the middle's address.
async fn chain() -> (Vec<Rubbo>, String) {
    let leaf = Rubbo::builder()
        .application("leaf")
        .protocol("tri", 0)
        .tracing(true)
        .build()
        .unwrap();
    let leaf_url = leaf
        .export(LeafServer::new(Arc::new(LeafImpl)))
        .await
        .unwrap();
    let middle = Rubbo::builder()
        .application("middle")
        .port(0)
        .tracing(true)
        .build()
        .unwrap();
    let leaf_client = LeafClient::new(
        middle
            .refer_url(
                &LeafClient::SERVICE,
                &format!("tri://{}", leaf_url.address()),
            )
            .await
            .unwrap(),
    );
    let middle_url = middle
        .export(MiddleServer::new(Arc::new(MiddleImpl(leaf_client))))
        .await
        .unwrap();
    (
        vec![leaf, middle],
        format!("dubbo://{}", middle_url.address()),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_across_consumer_middle_and_leaf() {
    spans();
    let (apps, middle) = chain().await;
    let consumer = Rubbo::builder()
        .application("edge")
        .tracing(true)
        .build()
        .unwrap();
    let client = MiddleClient::new(
        consumer
            .refer_url(&MiddleClient::SERVICE, &middle)
            .await
            .unwrap(),
    );
    let answer = client.middle().await.unwrap();
    let (middle_server, leaf_received) = answer.split_once('|').unwrap();
    let middle_server = TraceContext::parse(middle_server, None).unwrap();
    let leaf_received = TraceContext::parse(leaf_received, None).unwrap();
    let trace = format!("{:032x}", middle_server.trace_id());
    assert_eq!(leaf_received.trace_id(), middle_server.trace_id());

    let spans = of_trace(&trace);
    let span = |name: &str, method: &str| spans[&(name.to_owned(), method.to_owned())].clone();
    let edge_client = span("rpc.client", "middle");
    let middle_srv = span("rpc.server", "middle");
    let middle_client = span("rpc.client", "leaf");
    let leaf_srv = span("rpc.server", "leaf");
    assert_eq!(spans.len(), 4, "{spans:#?}");
    // The chain of parents.
    assert_eq!(edge_client["parent_id"], "", "the edge starts the trace");
    assert_eq!(middle_srv["parent_id"], edge_client["span_id"]);
    assert_eq!(middle_client["parent_id"], middle_srv["span_id"]);
    assert_eq!(leaf_srv["parent_id"], middle_client["span_id"]);
    // What went over the wire, and what the middle's handler saw as current.
    assert_eq!(
        format!("{:016x}", leaf_received.span_id()),
        middle_client["span_id"]
    );
    assert_eq!(
        format!("{:016x}", middle_server.span_id()),
        middle_srv["span_id"]
    );
    // Java's attributes.
    for s in [&edge_client, &middle_srv, &middle_client, &leaf_srv] {
        assert_eq!(s["rpc.system"], "apache_dubbo");
    }
    assert_eq!(middle_srv["rpc.service"], "org.rubbo.test.Middle");
    assert_eq!(middle_srv["otel.name"], "org.rubbo.test.Middle/middle");
    assert_eq!(middle_srv["otel.kind"], "server");
    assert_eq!(middle_client["otel.kind"], "client");
    assert_eq!(leaf_srv["net.peer.name"], "127.0.0.1");

    consumer.shutdown().await;
    for app in apps {
        app.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_traceparent_is_continued() {
    spans();
    let (apps, middle) = chain().await;
    // No tracing filter here: the traceparent is the caller's own, as Java sends it.
    let consumer = Rubbo::builder().application("java-like").build().unwrap();
    let java_trace = "0af7651916cd43dd8448eb211c80319c";
    let java_span = "b7ad6b7169203331";
    let client = MiddleClient::new(
        consumer
            .refer_url(&MiddleClient::SERVICE, &middle)
            .await
            .unwrap(),
    )
    .with_attachment("traceparent", format!("00-{java_trace}-{java_span}-01"))
    .with_attachment("tracestate", "rojo=00f067aa0ba902b7");
    let answer = client.middle().await.unwrap();
    let (_, leaf_received) = answer.split_once('|').unwrap();
    let leaf_received = TraceContext::parse(leaf_received, None).unwrap();
    assert_eq!(format!("{:032x}", leaf_received.trace_id()), java_trace);
    let spans = of_trace(java_trace);
    let middle_srv = &spans[&("rpc.server".to_owned(), "middle".to_owned())];
    assert_eq!(middle_srv["parent_id"], java_span);
    let leaf_srv = &spans[&("rpc.server".to_owned(), "leaf".to_owned())];
    assert_eq!(leaf_srv["trace_id"], java_trace);
    consumer.shutdown().await;
    for app in apps {
        app.shutdown().await;
    }
}
