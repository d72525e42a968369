//! `tps`: at most `tps` calls of a service per `tps.interval` on a provider (Java's
//! `TpsLimitFilter`, `DefaultTPSLimiter` and `StatItem`); more are refused, not queued.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rubbo_common::filter::Activate;
use rubbo_common::keys::{TPS_KEY, Tps, TpsInterval};
use rubbo_common::{BoxInvoker, ErrorKind, Filter, Invocation, InvokeFuture, Invoker, RpcError};
use tracing::warn;

use crate::support::{delegate_to_next, fail};

/// Refuses a call with `LimitExceeded` once `tps` calls of its service were let through
/// in the current `tps.interval` (default 60 000 ms). Provider side, when the URL has
/// `tps`.
///
/// As in Java, there is one counter per exported service (not per method) and the
/// window is fixed: it starts at the first limited call and restarts with the first
/// call after it ends, with a full allowance. `tps` and `tps.interval` are read for the
/// called method (`{method}.tps`, then `tps`); a call whose values differ from the
/// counter's restarts the counter with them, as Java's limiter rebuilds its `StatItem`.
/// A `tps` of 0 or less lets every call through.
#[derive(Debug, Default, Clone, Copy)]
pub struct TpsLimitFilter;

impl Filter for TpsLimitFilter {
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        Arc::new(TpsLimit {
            next,
            window: Mutex::new(None),
        })
    }

    fn activate(&self) -> Activate {
        Activate::provider(0).when_keys(&[TPS_KEY])
    }
}

#[derive(Debug)]
struct TpsLimit {
    next: BoxInvoker,
    /// The service's counter, made by its first limited call (Java's `StatItem`).
    window: Mutex<Option<Window>>,
}

/// One fixed window: `rate` calls allowed from `start` for `interval`.
#[derive(Debug)]
struct Window {
    rate: i64,
    interval: Duration,
    start: Instant,
    /// Calls still allowed in this window.
    left: i64,
}

impl TpsLimit {
    /// Whether a call with these settings may pass now; counts it if so.
    fn allow(&self, rate: i64, interval: Duration) -> bool {
        let now = Instant::now();
        let mut window = self.window.lock();
        match window.as_mut() {
            Some(w) if w.rate == rate && w.interval == interval => {
                if now.duration_since(w.start) > w.interval {
                    w.start = now;
                    w.left = w.rate;
                }
            }
            _ => {
                *window = Some(Window {
                    rate,
                    interval,
                    start: now,
                    left: rate,
                });
            }
        }
        match window.as_mut() {
            Some(w) if w.left > 0 => {
                w.left -= 1;
                true
            }
            _ => false,
        }
    }
}

impl Invoker for TpsLimit {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let url = self.next.url();
        let rate = url.method_param::<Tps>(inv.method());
        if rate <= 0 {
            // Java drops the service's counter when the limit is off.
            *self.window.lock() = None;
            return self.next.invoke(inv);
        }
        let interval = url.method_param::<TpsInterval>(inv.method());
        if self.allow(rate, interval) {
            return self.next.invoke(inv);
        }
        warn!(
            service = %inv.interface(),
            method = %inv.method(),
            tps = rate,
            interval_ms = interval.as_millis() as u64,
            "tps limit reached"
        );
        fail(RpcError::new(
            ErrorKind::LimitExceeded,
            format!(
                "Failed to invoke service {}.{} because exceed max service tps.",
                url.service_interface().unwrap_or(inv.interface()),
                inv.method()
            ),
        ))
    }

    delegate_to_next!();
}
