//! The OTLP collector stand-in of the cross-language trace (interop cell 15): an OTLP
//! gRPC trace receiver on 127.0.0.1 (what Java Dubbo 3.3's `OtlpGrpcSpanExporter` and
//! Rubbo's exporter send to), that waits (bounded) for the trace of one call through
//! three processes and checks it:
//!
//! ```text
//! Java consumer (client span) -> Rust relay (server span, client span) -> Java provider (server span)
//! ```
//!
//! The four spans share one trace id, each is the parent of the next, and each carries
//! `rpc.system=apache_dubbo`, `rpc.service` and `rpc.method` (the called service and
//! method). The processes are told apart by their resource's `service.name` (their
//! application names). Prints `READY grpc <port>` once listening, an `INFO` line per
//! span received, one `PASS <check>` / `FAIL <check>: detail` line per check, and exits
//! 0 when all pass.
//!
//! ```text
//! interop-otlp-collector --port 4317 --client-app interop-trace-consumer \
//!     --relay-app interop-trace-relay --server-app interop-provider \
//!     --service org.rubbo.interop.InteropService --method echo --wait-secs 60
//! ```

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tonic::codec::CompressionEncoding;

/// Receives OTLP traces and checks the cross-language chain.
#[derive(Debug, Parser)]
struct Args {
    /// Port (0 = any free port).
    #[arg(long, default_value_t = 4317)]
    port: u16,
    /// The Java consumer's application name (`service.name`).
    #[arg(long, default_value = "interop-trace-consumer")]
    client_app: String,
    /// The Rust relay's application name.
    #[arg(long, default_value = "interop-trace-relay")]
    relay_app: String,
    /// The Java provider's application name.
    #[arg(long, default_value = "interop-provider")]
    server_app: String,
    /// The service every span must name.
    #[arg(long, default_value = "org.rubbo.interop.InteropService")]
    service: String,
    /// The method every span must name.
    #[arg(long, default_value = "echo")]
    method: String,
    /// How long to wait for the whole chain.
    #[arg(long, default_value_t = 60)]
    wait_secs: u64,
}

/// One span as received.
#[derive(Debug, Clone)]
struct Received {
    app: String,
    name: String,
    kind: i32,
    trace_id: Vec<u8>,
    span_id: Vec<u8>,
    parent_id: Vec<u8>,
    attributes: Vec<(String, String)>,
}

impl Received {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn is(&self, app: &str, kind: SpanKind) -> bool {
        self.app == app && self.kind == kind as i32
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn value_text(kv: &KeyValue) -> String {
    match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

#[derive(Debug, Default)]
struct Store {
    spans: Mutex<Vec<Received>>,
    changed: Notify,
}

#[derive(Debug, Clone)]
struct Collector(Arc<Store>);

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut got = Vec::new();
        for rs in request.into_inner().resource_spans {
            let app = rs
                .resource
                .as_ref()
                .and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name"))
                .map(value_text)
                .unwrap_or_default();
            for ss in rs.scope_spans {
                for s in ss.spans {
                    got.push(Received {
                        app: app.clone(),
                        name: s.name,
                        kind: s.kind,
                        trace_id: s.trace_id,
                        span_id: s.span_id,
                        parent_id: s.parent_span_id,
                        attributes: s
                            .attributes
                            .iter()
                            .map(|kv| (kv.key.clone(), value_text(kv)))
                            .collect(),
                    });
                }
            }
        }
        for s in &got {
            println!(
                "INFO span app={} kind={} name={} trace={} span={} parent={} rpc.system={:?} rpc.service={:?} rpc.method={:?}",
                s.app,
                s.kind,
                s.name,
                hex(&s.trace_id),
                hex(&s.span_id),
                hex(&s.parent_id),
                s.attr("rpc.system"),
                s.attr("rpc.service"),
                s.attr("rpc.method"),
            );
        }
        self.0.spans.lock().extend(got);
        self.0.changed.notify_waiters();
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

/// The chain found so far: the longest run of the four spans from a Java client span.
#[derive(Debug, Default)]
struct Chain {
    links: Vec<Received>,
}

const STEPS: [(&str, &str); 4] = [
    ("java-client-span", "the Java consumer's client span"),
    (
        "rust-server-span",
        "the Rust relay's server span, child of the Java client span",
    ),
    (
        "rust-client-span",
        "the Rust relay's client span, child of its server span",
    ),
    (
        "java-server-span",
        "the Java provider's server span, child of the Rust client span",
    ),
];

fn find_chain(spans: &[Received], args: &Args) -> Chain {
    let wanted = [
        (args.client_app.as_str(), SpanKind::Client),
        (args.relay_app.as_str(), SpanKind::Server),
        (args.relay_app.as_str(), SpanKind::Client),
        (args.server_app.as_str(), SpanKind::Server),
    ];
    let mut best = Chain::default();
    for root in spans.iter().filter(|s| s.is(wanted[0].0, wanted[0].1)) {
        let mut links = vec![root.clone()];
        for &(app, kind) in &wanted[1..] {
            let prev = &links[links.len() - 1];
            match spans.iter().find(|s| {
                s.is(app, kind) && s.trace_id == prev.trace_id && s.parent_id == prev.span_id
            }) {
                Some(next) => links.push(next.clone()),
                None => break,
            }
        }
        if links.len() > best.links.len() {
            best = Chain { links };
        }
    }
    best
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
        .await
        .with_context(|| format!("cannot bind 127.0.0.1:{}", args.port))?;
    let port = listener.local_addr()?.port();
    let store = Arc::new(Store::default());
    let service = TraceServiceServer::new(Collector(store.clone()))
        .accept_compressed(CompressionEncoding::Gzip);
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    println!("READY grpc {port}");

    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.wait_secs);
    let chain = loop {
        let changed = store.changed.notified();
        let chain = find_chain(&store.spans.lock(), &args);
        if chain.links.len() == STEPS.len() {
            break chain;
        }
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            break find_chain(&store.spans.lock(), &args);
        }
    };

    let mut failed = 0;
    for (i, (check, what)) in STEPS.iter().enumerate() {
        let Some(span) = chain.links.get(i) else {
            println!(
                "FAIL {check}: no {what} within {}s ({} spans received)",
                args.wait_secs,
                store.spans.lock().len()
            );
            failed += 1;
            continue;
        };
        let mut wrong = Vec::new();
        for (key, want) in [
            ("rpc.system", "apache_dubbo"),
            ("rpc.service", args.service.as_str()),
            ("rpc.method", args.method.as_str()),
        ] {
            if span.attr(key) != Some(want) {
                wrong.push(format!("{key}={:?}, want {want:?}", span.attr(key)));
            }
        }
        if wrong.is_empty() {
            println!(
                "PASS {check} (trace {}, span {}, parent {})",
                hex(&span.trace_id),
                hex(&span.span_id),
                hex(&span.parent_id)
            );
        } else {
            println!("FAIL {check}: {}", wrong.join(", "));
            failed += 1;
        }
    }
    server.abort();
    println!("{} passed, {failed} failed", STEPS.len() - failed);
    std::process::exit(i32::from(failed > 0));
}
