//! [`TracingFilter`]: one `tracing` span per call, joined to the caller's trace
//! through W3C `traceparent` (Java's `ObservationSenderFilter` and
//! `ObservationReceiverFilter` with the OpenTelemetry bridge).

use std::sync::Arc;

use rubbo_common::filter::Activate;
use rubbo_common::{
    BoxInvoker, Filter, Invocation, InvokeFuture, Invoker, RpcError, RpcResult, Side, Url,
};
use tracing::field::{Empty, display};
use tracing::{Instrument, Span, info_span};

use super::context::{ParentHex, TRACEPARENT, TRACESTATE, TraceContext};

/// Java's order of both observation filters: `Integer.MIN_VALUE + 50`, the
/// outermost.
pub const ORDER: i32 = i32::MIN + 50;

/// Traces calls. On a consumer (name `observationsender`, once per call around the
/// cluster) each call gets a client span, a child of the provider call it is made
/// from ([`TraceContext::current`]) or a new trace, and carries it to the provider
/// in the `traceparent` (and `tracestate`) attachment, which Triple sends as
/// headers. On a provider (name `observationreceiver`) each call gets a server span,
/// a child of the `traceparent` it came with (a new trace without one), current
/// while the service runs.
///
/// The span is a `tracing` span named `rpc.client` / `rpc.server` at INFO with
/// Java's attributes: `otel.name` (`interface/method`, Java's contextual name),
/// `otel.kind`, `rpc.system=apache_dubbo`, `rpc.service`, `rpc.method`, and on the
/// provider `net.peer.name` / `net.peer.port`; with `trace_id`, `span_id` and
/// `parent_id` in hex, and `otel.status_code=ERROR` with `error` when the call
/// fails. Both run unasked wherever they are registered: the bootstrap registers
/// them when tracing is enabled.
///
/// ```
/// use rubbo_common::{filter::Stage, Filter};
/// use rubbo_metrics::TracingFilter;
///
/// assert!(TracingFilter::sender().activate().runs_in(Stage::Cluster));
/// assert!(TracingFilter::receiver().activate().runs_in(Stage::Provider));
/// fn _dyn_ok(_: &dyn Filter) {}
/// _dyn_ok(&TracingFilter::sender());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TracingFilter {
    side: Side,
}

impl TracingFilter {
    /// The consumer side (Java's `observationsender`).
    pub fn sender() -> Self {
        TracingFilter {
            side: Side::Consumer,
        }
    }

    /// The provider side (Java's `observationreceiver`).
    pub fn receiver() -> Self {
        TracingFilter {
            side: Side::Provider,
        }
    }
}

impl Filter for TracingFilter {
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        match self.side {
            Side::Consumer => Arc::new(Sender { next }),
            Side::Provider => Arc::new(Receiver { next }),
        }
    }

    fn activate(&self) -> Activate {
        match self.side {
            Side::Consumer => Activate::cluster(ORDER),
            Side::Provider => Activate::provider(ORDER),
        }
    }
}

/// `interface/method`, Java's span name.
struct Contextual<'a>(&'a str, &'a str);

impl std::fmt::Display for Contextual<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.0, self.1)
    }
}

/// Gives `span` its trace context: `ctx`, or with the `opentelemetry` feature and a
/// `tracing-opentelemetry` layer installed, the ids OpenTelemetry gave the span
/// (joined to the `remote` caller's span); and records the ids on the span.
fn adopt(span: &Span, remote: Option<&TraceContext>, ctx: TraceContext) -> TraceContext {
    #[cfg(feature = "opentelemetry")]
    let ctx = super::otel::adopt(span, remote, ctx);
    #[cfg(not(feature = "opentelemetry"))]
    let _ = remote;
    span.record("trace_id", display(ctx.trace_id_hex()));
    span.record("span_id", display(ctx.span_id_hex()));
    span.record("parent_id", display(ParentHex(ctx.parent_id())));
    ctx
}

/// Marks `span` failed when `result` is an error or an exception.
fn record_outcome(span: &Span, result: &Result<RpcResult, RpcError>) {
    let error = match result {
        Err(e) => e.to_string(),
        Ok(r) => match r.exception() {
            Some(ex) => ex.to_string(),
            None => return,
        },
    };
    span.record("otel.status_code", "ERROR");
    span.record("error", display(error));
}

#[derive(Debug)]
struct Sender {
    next: BoxInvoker,
}

impl Invoker for Sender {
    fn invoke(&self, mut inv: Invocation) -> InvokeFuture {
        let ctx = match TraceContext::current() {
            Some(parent) => parent.child(),
            None => TraceContext::root(),
        };
        let span = info_span!(
            "rpc.client",
            otel.name = %Contextual(inv.interface(), inv.method()),
            otel.kind = "client",
            rpc.system = "apache_dubbo",
            rpc.service = inv.interface(),
            rpc.method = inv.method(),
            trace_id = Empty,
            span_id = Empty,
            parent_id = Empty,
            otel.status_code = Empty,
            error = Empty,
        );
        let ctx = adopt(&span, None, ctx);
        inv.set_attachment(TRACEPARENT, ctx.traceparent());
        if let Some(state) = ctx.tracestate() {
            inv.set_attachment(TRACESTATE, state.to_owned());
        }
        let call = span.in_scope(|| self.next.invoke(inv));
        let recorded = span.clone();
        Box::pin(
            async move {
                let result = call.await;
                record_outcome(&recorded, &result);
                result
            }
            .instrument(span),
        )
    }

    fn url(&self) -> &Url {
        self.next.url()
    }

    fn is_available(&self) -> bool {
        self.next.is_available()
    }

    fn destroy(&self) {
        self.next.destroy()
    }
}

#[derive(Debug)]
struct Receiver {
    next: BoxInvoker,
}

impl Invoker for Receiver {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let remote = inv
            .attachment_str(TRACEPARENT)
            .and_then(|tp| TraceContext::parse(tp, inv.attachment_str(TRACESTATE)));
        let ctx = remote
            .as_ref()
            .map_or_else(TraceContext::root, TraceContext::child);
        let peer = inv.peer();
        let span = info_span!(
            "rpc.server",
            otel.name = %Contextual(inv.interface(), inv.method()),
            otel.kind = "server",
            rpc.system = "apache_dubbo",
            rpc.service = inv.interface(),
            rpc.method = inv.method(),
            net.peer.name = peer.map(|p| display(p.remote.ip())),
            net.peer.port = peer.map(|p| p.remote.port()),
            trace_id = Empty,
            span_id = Empty,
            parent_id = Empty,
            otel.status_code = Empty,
            error = Empty,
        );
        let ctx = adopt(&span, remote.as_ref(), ctx);
        let call = span.in_scope(|| self.next.invoke(inv));
        let recorded = span.clone();
        Box::pin(
            ctx.scope(async move {
                let result = call.await;
                record_outcome(&recorded, &result);
                result
            })
            .instrument(span),
        )
    }

    fn url(&self) -> &Url {
        self.next.url()
    }

    fn is_available(&self) -> bool {
        self.next.is_available()
    }

    fn destroy(&self) {
        self.next.destroy()
    }
}
