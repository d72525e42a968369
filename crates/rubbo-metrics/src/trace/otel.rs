//! The OpenTelemetry side of the tracing filters (feature `opentelemetry`).

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::context::TraceContext;

/// Makes the OpenTelemetry span of `span` a child of the `remote` caller's span, and
/// answers `ctx` under the ids OpenTelemetry gave it; `ctx` as is when no
/// `tracing-opentelemetry` layer records `span`.
pub(super) fn adopt(span: &Span, remote: Option<&TraceContext>, ctx: TraceContext) -> TraceContext {
    if let Some(r) = remote {
        let state = r
            .tracestate()
            .and_then(|s| s.parse::<TraceState>().ok())
            .unwrap_or_default();
        let parent = SpanContext::new(
            TraceId::from_bytes(r.trace_id().to_be_bytes()),
            SpanId::from_bytes(r.span_id().to_be_bytes()),
            TraceFlags::new(r.flags()),
            true,
            state,
        );
        let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(parent));
    }
    let otel = span.context();
    let sc = otel.span().span_context().clone();
    if !sc.is_valid() {
        return ctx;
    }
    ctx.with_ids(
        u128::from_be_bytes(sc.trace_id().to_bytes()),
        u64::from_be_bytes(sc.span_id().to_bytes()),
    )
}
