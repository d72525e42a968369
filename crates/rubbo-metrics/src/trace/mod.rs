//! Distributed tracing: W3C trace context through the attachments, and a `tracing`
//! span per call.

mod context;
mod filter;
#[cfg(feature = "opentelemetry")]
mod otel;

pub use context::{TRACEPARENT, TRACESTATE, TraceContext};
pub use filter::{ORDER, TracingFilter};
