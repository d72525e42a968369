//! With the `opentelemetry` feature and a `tracing-opentelemetry` layer, the spans of
//! a consumer -> middle -> leaf chain are exported as one OpenTelemetry trace whose
//! parents chain, the ids on the wire are the exported spans' own, and a remote
//! caller's span (a Java consumer's) is the exported server span's parent. The hops
//! are in memory: the "wire" copies the attachments into a new invocation, as a
//! protocol does.
#![cfg(feature = "opentelemetry")]
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use opentelemetry::trace::{SpanId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, Sampler, SdkTracerProvider};
use rubbo_common::{BoxInvoker, Filter, Invocation, InvokeFuture, Invoker, RpcResult, Url};
use rubbo_metrics::{TraceContext, TracingFilter};
use tracing::subscriber::DefaultGuard;
use tracing_subscriber::layer::SubscriberExt;

/// A provider's service: calls `downstream` if any, answers what it received.
#[derive(Debug)]
struct Service {
    url: Url,
    /// The service and method it calls, and through what.
    downstream: Option<(&'static str, &'static str, BoxInvoker)>,
}

impl Invoker for Service {
    fn invoke(&self, _inv: Invocation) -> InvokeFuture {
        let downstream = self.downstream.clone();
        Box::pin(async move {
            assert!(TraceContext::current().is_some());
            if let Some((service, method, d)) = downstream {
                d.invoke(Invocation::new(service, method)).await?;
            }
            Ok(RpcResult::null())
        })
    }
    fn url(&self) -> &Url {
        &self.url
    }
}

/// The network: the provider gets a new invocation with the attachments only.
#[derive(Debug)]
struct Wire {
    url: Url,
    provider: BoxInvoker,
    seen: Arc<parking_lot::Mutex<Vec<String>>>,
}

impl Invoker for Wire {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let mut received = Invocation::new(inv.interface(), inv.method());
        for (k, v) in inv.attachments() {
            received.set_attachment(k.clone(), v.clone());
        }
        self.seen.lock().push(
            inv.attachment_str("traceparent")
                .unwrap_or_default()
                .to_owned(),
        );
        self.provider.invoke(received)
    }
    fn url(&self) -> &Url {
        &self.url
    }
}

fn url() -> Url {
    Url::new("dubbo", "127.0.0.1", 20880)
}

/// A consumer of `service` (behind a traced provider), through the wire.
fn traced(service: Service, seen: &Arc<parking_lot::Mutex<Vec<String>>>) -> BoxInvoker {
    let provider = TracingFilter::receiver().layer(Arc::new(service));
    TracingFilter::sender().layer(Arc::new(Wire {
        url: url(),
        provider,
        seen: seen.clone(),
    }))
}

/// A tracer provider exporting spans in memory through the OpenTelemetry layer (with `sampler`, else the
/// SDK's default), while the guard holds this thread's default subscriber.
fn capture(sampler: Option<Sampler>) -> (SdkTracerProvider, InMemorySpanExporter, DefaultGuard) {
    let exporter = InMemorySpanExporter::default();
    let mut builder = SdkTracerProvider::builder().with_simple_exporter(exporter.clone());
    if let Some(sampler) = sampler {
        builder = builder.with_sampler(sampler);
    }
    let provider = builder.build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("rubbo-test")));
    let guard = tracing::subscriber::set_default(subscriber);
    (provider, exporter, guard)
}

#[tokio::test]
async fn exported_spans_chain_and_carry_the_wire_ids() {
    let (provider, exporter, _guard) = capture(None);

    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let leaf = traced(
        Service {
            url: url(),
            downstream: None,
        },
        &seen,
    );
    let middle = traced(
        Service {
            url: url(),
            downstream: Some(("org.example.Leaf", "leaf", leaf)),
        },
        &seen,
    );
    // A Java consumer's span, sent by hand (no sender filter on its side).
    let java_trace = "0af7651916cd43dd8448eb211c80319c";
    let java_span = "b7ad6b7169203331";
    let server = TracingFilter::receiver().layer(Arc::new(Service {
        url: url(),
        downstream: Some(("org.example.Middle", "middle", middle)),
    }));
    let inv = Invocation::new("org.example.Edge", "edge")
        .with_attachment("traceparent", format!("00-{java_trace}-{java_span}-01"));
    server.invoke(inv).await.unwrap();
    drop(_guard);
    provider.force_flush().unwrap();

    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 5, "{spans:#?}");
    for s in &spans {
        assert_eq!(
            format!("{}", s.span_context.trace_id()),
            java_trace,
            "{s:#?}"
        );
    }
    use opentelemetry::trace::SpanKind::{Client, Server};
    let span = |name: &str, kind: opentelemetry::trace::SpanKind| {
        spans
            .iter()
            .find(|s| s.name == name && s.span_kind == kind)
            .unwrap_or_else(|| panic!("no {kind:?} {name}: {spans:#?}"))
    };
    let edge = span("org.example.Edge/edge", Server);
    let m_client = span("org.example.Middle/middle", Client);
    let m_server = span("org.example.Middle/middle", Server);
    let l_client = span("org.example.Leaf/leaf", Client);
    let l_server = span("org.example.Leaf/leaf", Server);
    // Java's span is the remote parent; then each span parents the next.
    assert_eq!(edge.parent_span_id, SpanId::from_hex(java_span).unwrap());
    assert!(edge.parent_span_is_remote);
    assert_eq!(m_client.parent_span_id, edge.span_context.span_id());
    assert_eq!(m_server.parent_span_id, m_client.span_context.span_id());
    assert_eq!(l_client.parent_span_id, m_server.span_context.span_id());
    assert_eq!(l_server.parent_span_id, l_client.span_context.span_id());
    // The ids on the wire are the exported client spans'.
    let wire = seen.lock().clone();
    assert_eq!(
        wire,
        [
            format!("00-{java_trace}-{}-01", m_client.span_context.span_id()),
            format!("00-{java_trace}-{}-01", l_client.span_context.span_id()),
        ]
    );
    let attr = |s: &opentelemetry_sdk::trace::SpanData, k: &str| {
        s.attributes
            .iter()
            .find(|kv| kv.key.as_str() == k)
            .map(|kv| kv.value.to_string())
    };
    assert_eq!(
        attr(l_server, "rpc.system").as_deref(),
        Some("apache_dubbo")
    );
    assert_eq!(
        attr(l_server, "rpc.service").as_deref(),
        Some("org.example.Leaf")
    );
}

/// A caller that did not sample its trace (`traceparent` flags `00`, a Java consumer
/// under `dubbo.tracing.sampling.probability`) is followed with a parent-based sampler,
/// as Java's: no span of the call is exported, and the calls made from it pass the
/// unsampled flag on.
#[tokio::test]
async fn an_unsampled_caller_is_followed() {
    let (provider, exporter, _guard) =
        capture(Some(Sampler::ParentBased(Box::new(Sampler::AlwaysOn))));

    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let leaf = traced(
        Service {
            url: url(),
            downstream: None,
        },
        &seen,
    );
    let server = TracingFilter::receiver().layer(Arc::new(Service {
        url: url(),
        downstream: Some(("org.example.Leaf", "leaf", leaf)),
    }));
    let java_trace = "0af7651916cd43dd8448eb211c80319c";
    let inv = Invocation::new("org.example.Edge", "edge").with_attachment(
        "traceparent",
        format!("00-{java_trace}-b7ad6b7169203331-00"),
    );
    server.invoke(inv).await.unwrap();
    drop(_guard);
    provider.force_flush().unwrap();

    let spans = exporter.get_finished_spans().unwrap();
    assert!(spans.is_empty(), "{spans:#?}");
    let wire = seen.lock().clone();
    assert_eq!(wire.len(), 1);
    assert!(
        wire[0].starts_with(&format!("00-{java_trace}-")),
        "{wire:?}"
    );
    assert!(wire[0].ends_with("-00"), "{wire:?}");
}
