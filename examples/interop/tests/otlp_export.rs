//! Rubbo's OTLP export (the facade's `otlp` feature), configured by Java's
//! `dubbo.tracing.*` keys only: a Rust consumer calls a Rust provider over dubbo on
//! 127.0.0.1, and an OTLP gRPC receiver in this test gets the client and the server
//! span, one trace, the server span the client span's child, with Dubbo's attributes;
//! [`Rubbo::shutdown`] exports them (the batch delay is 5 s, the test asserts right
//! after the shutdown returns).
//!
//! One test in this file: the first application built sets the process's global
//! subscriber.

use std::sync::Arc;
use std::time::Duration;

use interop::{InteropProvider, InteropService, InteropServiceClient, InteropServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use parking_lot::Mutex;
use rubbo::Rubbo;
use rubbo::config::Config;

/// The spans received, with their resource's `service.name`.
#[derive(Debug, Clone, Default)]
struct Receiver(Arc<Mutex<Vec<(String, Span)>>>);

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut spans = self.0.lock();
        for rs in request.into_inner().resource_spans {
            let app = rs
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| kv.value.as_ref()?.value.as_ref())
                .map(|v| match v {
                    any_value::Value::StringValue(s) => s.clone(),
                    other => format!("{other:?}"),
                })
                .unwrap_or_default();
            for ss in rs.scope_spans {
                spans.extend(ss.spans.into_iter().map(|s| (app.clone(), s)));
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a str> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(s) => Some(s.as_str()),
            _ => None,
        })
}

fn config(application: &str, endpoint: &str) -> Config {
    Config::loader()
        .code("dubbo.application.name", application)
        .code("dubbo.protocol.name", "dubbo")
        .code("dubbo.protocol.port", "0")
        .code("dubbo.protocol.host", "127.0.0.1")
        .code("dubbo.tracing.enabled", "true")
        .code("dubbo.tracing.sampling.probability", "1.0")
        .code(
            "dubbo.tracing.tracing-exporter.otlp-config.endpoint",
            endpoint,
        )
        .load()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_of_a_call_are_exported_over_otlp_and_flushed_at_shutdown() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let received = Receiver::default();
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(received.clone()))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );

    // Built first: its exporter's layer is the global subscriber's.
    let provider = Rubbo::from_config(&config("otlp-provider", &endpoint)).unwrap();
    let url = provider
        .export(InteropServiceServer::new(Arc::new(
            InteropProvider::default(),
        )))
        .await
        .unwrap();
    let consumer = Rubbo::from_config(&config("otlp-consumer", &endpoint)).unwrap();
    let client = InteropServiceClient::new(
        consumer
            .refer_url(
                &InteropServiceClient::SERVICE,
                &format!("dubbo://127.0.0.1:{}", url.port()),
            )
            .await
            .unwrap(),
    );
    let answer = tokio::time::timeout(Duration::from_secs(10), client.echo(Some("otlp".into())))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answer.as_deref(), Some("otlp"));

    let started = tokio::time::Instant::now();
    consumer.shutdown().await;
    provider.shutdown().await;
    // Well within the 5 s batch delay: what is here came from the shutdown's flush.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let spans = received.0.lock().clone();
    server.abort();

    let find = |kind: SpanKind| {
        spans
            .iter()
            .find(|(_, s)| s.kind == kind as i32 && attr(s, "rpc.method") == Some("echo"))
            .unwrap_or_else(|| panic!("no {kind:?} span among {spans:#?}"))
    };
    let (app, client_span) = find(SpanKind::Client);
    let (_, server_span) = find(SpanKind::Server);
    assert_eq!(app, "otlp-provider");
    assert_eq!(server_span.trace_id, client_span.trace_id);
    assert_eq!(server_span.parent_span_id, client_span.span_id);
    assert!(client_span.parent_span_id.is_empty());
    for s in [client_span, server_span] {
        assert_eq!(s.name, "org.rubbo.interop.InteropService/echo");
        assert_eq!(attr(s, "rpc.system"), Some("apache_dubbo"));
        assert_eq!(
            attr(s, "rpc.service"),
            Some("org.rubbo.interop.InteropService")
        );
    }
}
