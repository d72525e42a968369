//! [`TraceContext`]: a W3C trace context (`traceparent`, `tracestate`), and the one
//! a provider call runs in.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

/// The attachment (dubbo) or header (Triple) carrying the trace and parent span
/// (W3C Trace Context, what Java's OpenTelemetry propagator writes).
pub const TRACEPARENT: &str = "traceparent";
/// The attachment carrying vendor trace state, passed on as received.
pub const TRACESTATE: &str = "tracestate";

/// The `sampled` trace flag.
const SAMPLED: u8 = 0x01;

tokio::task_local! {
    static CURRENT: TraceContext;
}

/// One span of a trace: the trace id, this span's id, its parent's (none for a
/// root), the trace flags and the vendor `tracestate`.
///
/// ```
/// use rubbo_metrics::TraceContext;
///
/// let parent = TraceContext::parse(
///     "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
///     Some("congo=t61rcWkgMzE"),
/// )
/// .unwrap();
/// let child = parent.child();
/// assert_eq!(child.trace_id(), parent.trace_id());
/// assert_eq!(child.parent_id(), Some(parent.span_id()));
/// let header = child.traceparent();
/// assert!(header.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"));
/// assert!(header.ends_with("-01"));
/// assert_eq!(child.tracestate(), Some("congo=t61rcWkgMzE"));
/// assert!(TraceContext::parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01", None).is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: u128,
    span_id: u64,
    parent_id: Option<u64>,
    flags: u8,
    state: Option<Arc<str>>,
}

/// A random non-zero id.
fn nonzero<T: PartialEq + Default>(mut next: impl FnMut() -> T) -> T {
    loop {
        let v = next();
        if v != T::default() {
            return v;
        }
    }
}

impl TraceContext {
    /// A new trace: random ids, sampled, no parent.
    pub fn root() -> Self {
        TraceContext {
            trace_id: nonzero(rand::random::<u128>),
            span_id: nonzero(rand::random::<u64>),
            parent_id: None,
            flags: SAMPLED,
            state: None,
        }
    }

    /// A span of the same trace whose parent is this one.
    pub fn child(&self) -> Self {
        TraceContext {
            trace_id: self.trace_id,
            span_id: nonzero(rand::random::<u64>),
            parent_id: Some(self.span_id),
            flags: self.flags,
            state: self.state.clone(),
        }
    }

    /// The remote span a `traceparent` value names (version `00`, lowercase hex,
    /// non-zero ids; a later version's extra fields are ignored, as the
    /// specification asks), with the `tracestate` received beside it. `None` for a
    /// value that is not one.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let mut parts = traceparent.trim().split('-');
        let version = parts.next()?;
        let trace = parts.next()?;
        let span = parts.next()?;
        let flags = parts.next()?;
        let hex = |s: &str, len: usize| {
            s.len() == len
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        if !hex(version, 2)
            || version == "ff"
            || !hex(trace, 32)
            || !hex(span, 16)
            || !hex(flags, 2)
        {
            return None;
        }
        if version == "00" && parts.next().is_some() {
            return None;
        }
        let trace_id = u128::from_str_radix(trace, 16).ok().filter(|t| *t != 0)?;
        let span_id = u64::from_str_radix(span, 16).ok().filter(|s| *s != 0)?;
        Some(TraceContext {
            trace_id,
            span_id,
            parent_id: None,
            flags: u8::from_str_radix(flags, 16).ok()?,
            state: tracestate
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(Arc::from),
        })
    }

    /// The same span under the ids OpenTelemetry gave it.
    #[cfg_attr(not(feature = "opentelemetry"), allow(dead_code))]
    pub(crate) fn with_ids(mut self, trace_id: u128, span_id: u64) -> Self {
        self.trace_id = trace_id;
        self.span_id = span_id;
        self
    }

    /// The trace flags.
    #[cfg_attr(not(feature = "opentelemetry"), allow(dead_code))]
    pub(crate) fn flags(&self) -> u8 {
        self.flags
    }

    /// The trace id.
    pub fn trace_id(&self) -> u128 {
        self.trace_id
    }

    /// This span's id.
    pub fn span_id(&self) -> u64 {
        self.span_id
    }

    /// The parent span's id; `None` for a root or a remote span.
    pub fn parent_id(&self) -> Option<u64> {
        self.parent_id
    }

    /// Whether the trace is sampled.
    pub fn is_sampled(&self) -> bool {
        self.flags & SAMPLED != 0
    }

    /// The vendor trace state, as received.
    pub fn tracestate(&self) -> Option<&str> {
        self.state.as_deref()
    }

    /// The `traceparent` value naming this span as the parent.
    pub fn traceparent(&self) -> String {
        format!(
            "00-{:032x}-{:016x}-{:02x}",
            self.trace_id, self.span_id, self.flags
        )
    }

    /// The trace id as 32 hex digits (what trace back ends show).
    pub fn trace_id_hex(&self) -> impl fmt::Display + use<> {
        Hex32(self.trace_id)
    }

    /// The span id as 16 hex digits.
    pub fn span_id_hex(&self) -> impl fmt::Display + use<> {
        Hex16(self.span_id)
    }

    /// The span a provider call is being served in, inside the call (and the
    /// futures it awaits on its task); `None` outside one or with tracing off.
    /// Consumer calls made there are its children.
    pub fn current() -> Option<TraceContext> {
        CURRENT.try_with(Clone::clone).ok()
    }

    /// Runs `fut` with `self` as the [`current`](Self::current) span.
    pub async fn scope<F: Future>(self, fut: F) -> F::Output {
        CURRENT.scope(self, fut).await
    }
}

struct Hex32(u128);

impl fmt::Display for Hex32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

struct Hex16(u64);

impl fmt::Display for Hex16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// A parent id as hex, or empty for none.
pub(crate) struct ParentHex(pub(crate) Option<u64>);

impl fmt::Display for ParentHex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(p) => write!(f, "{p:016x}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_what_w3c_rejects() {
        let root = TraceContext::root();
        assert!(root.is_sampled() && root.parent_id().is_none());
        let back = TraceContext::parse(&root.traceparent(), None).unwrap();
        assert_eq!(
            (back.trace_id(), back.span_id()),
            (root.trace_id(), root.span_id())
        );
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert!(TraceContext::parse(bad, None).is_none(), "{bad}");
        }
        // A later version may carry more fields.
        assert!(
            TraceContext::parse(
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-x",
                None
            )
            .is_some_and(|c| !c.is_sampled())
        );
    }

    #[tokio::test]
    async fn current_is_set_inside_scope_only() {
        assert!(TraceContext::current().is_none());
        let ctx = TraceContext::root();
        let seen = ctx.clone().scope(async { TraceContext::current() }).await;
        assert_eq!(seen, Some(ctx));
    }
}
