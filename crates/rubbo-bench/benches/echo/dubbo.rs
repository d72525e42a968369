//! Rubbo over `dubbo://`: the real protocol stack as the bootstrap builds it
//! (`DubboProtocol` export and refer inside the built-in provider and consumer filter
//! chains, Hessian 2 bodies, `rubbo-remoting` exchange on one connection).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, ensure};
use rubbo_common::filter::{Stage, build_chain};
use rubbo_common::{
    Arguments, BoxInvoker, Exporter, ExtensionTable, Filter, FilteredProtocol, Invocation,
    InvokeFuture, Invoker, Payload, Protocol, RpcResult, Url,
};
use rubbo_protocol_dubbo::DubboProtocol;

/// `RUBBO_BENCH_OBSERVE` (`metrics`, `metrics-full`, `tracing`, comma separated): the
/// observability filters the bootstrap adds when they are on; `metrics-full` is
/// metrics with Java's histogram and sliding-window aggregates on too
/// (`dubbo.metrics.histogram.enabled`, `dubbo.metrics.aggregation.enabled`).
fn observed() -> ExtensionTable<dyn Filter> {
    let mut t = ExtensionTable::new("filter", "");
    let observe = std::env::var("RUBBO_BENCH_OBSERVE").unwrap_or_default();
    let wants = |what: &str| observe.split(',').any(|s| s.trim() == what);
    if wants("metrics-full") {
        let metrics = rubbo_metrics::Metrics::new("bench")
            .with_histogram(true)
            .with_aggregation(Some(rubbo_metrics::Aggregation::default()));
        rubbo_metrics::register_metrics_filters(&mut t, &metrics);
    } else if wants("metrics") {
        rubbo_metrics::register_metrics_filters(&mut t, &rubbo_metrics::Metrics::new("bench"));
    }
    if wants("tracing") {
        rubbo_metrics::register_tracing_filters(&mut t);
    }
    t
}

/// `protocol` inside the built-in filter chains (and the [`observed`] ones), as
/// `Rubbo::builder()` uses it.
fn filtered(protocol: &DubboProtocol) -> FilteredProtocol {
    let mut table = rubbo_filter::builtin_filters();
    let extra = observed();
    for name in extra.names() {
        if let Ok(f) = extra.get(&name) {
            table.register(name, f);
        }
    }
    FilteredProtocol::new(Arc::new(protocol.clone()), Arc::new(table))
}

const IFACE: &str = "org.rubbo.bench.EchoService";

/// The provider: decodes the string argument and returns it.
#[derive(Debug)]
struct EchoService {
    url: Url,
}

impl Invoker for EchoService {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        Box::pin(async move {
            // As a generated server decodes its arguments (`rubbo::codegen`).
            let (s,): (String,) = rubbo_serialization::decode_arguments(inv.arguments())?;
            Ok(RpcResult::value(Payload::typed(s)))
        })
    }

    fn url(&self) -> &Url {
        &self.url
    }
}

/// An exported provider; call [`Server::stop`] to unexport it and close the port.
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    protocol: DubboProtocol,
    exporter: Box<dyn Exporter>,
}

impl Server {
    pub(crate) async fn stop(self) {
        self.exporter.unexport().await;
        self.protocol.destroy().await;
    }
}

pub(crate) async fn serve() -> anyhow::Result<Server> {
    let protocol = DubboProtocol::new();
    let url = Url::parse(&format!(
        "dubbo://127.0.0.1:0/{IFACE}?version=1.0.0&side=provider&methods=echo"
    ))?;
    let exporter = filtered(&protocol)
        .export(Arc::new(EchoService { url }))
        .await?;
    let addr = protocol
        .server_addr("127.0.0.1:0")
        .context("the provider has no bound address")?;
    Ok(Server {
        addr,
        protocol,
        exporter,
    })
}

/// A referred invoker (one connection) plus the call it repeats; cheap to clone.
#[derive(Clone)]
pub(crate) struct Client {
    protocol: Arc<DubboProtocol>,
    invoker: BoxInvoker,
    /// Service, version, method and descriptor, built once: `Invocation` clones share them.
    template: Invocation,
    /// Leaked once per cell so the typed argument needs no copy per call.
    payload: &'static str,
}

impl Client {
    pub(crate) async fn connect(addr: SocketAddr, payload: &'static str) -> anyhow::Result<Self> {
        let protocol = DubboProtocol::new();
        let invoker = filtered(&protocol)
            .refer(Url::parse(&format!(
                "dubbo://{addr}/{IFACE}?version=1.0.0&timeout=10000&methods=echo"
            ))?)
            .await?;
        // The consumer's once-per-call (cluster) observability filters, if any.
        let invoker = build_chain(invoker, &observed(), Stage::Cluster)?;
        let template = Invocation::new(IFACE, "echo")
            .with_version("1.0.0")
            .with_parameter_types("Ljava/lang/String;");
        Ok(Client {
            protocol: Arc::new(protocol),
            invoker,
            template,
            payload,
        })
    }

    pub(crate) async fn close(self) {
        self.protocol.destroy().await;
    }
}

impl crate::load::EchoClient for Client {
    async fn echo(&self) -> anyhow::Result<()> {
        let inv = self
            .template
            .clone()
            .with_arguments(Arguments::typed(1, (self.payload,)));
        let reply = self.invoker.invoke(inv).await?;
        // As a generated client decodes its result (`rubbo::codegen`).
        let s: String = rubbo_serialization::decode_payload(
            reply.payload().context("echo returned no value")?,
        )?;
        ensure!(s == self.payload, "rubbo echo returned another string");
        Ok(())
    }
}
