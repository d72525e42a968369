//! `deadline` (consumer): every call to a provider carries a deadline, from the
//! reference's `timeout` (method-level first) or the call's own `timeout`
//! attachment; the protocol invoker waits until it and sends what remains as the
//! `timeout` the provider sees.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rubbo_common::filter::Activate;
use rubbo_common::keys::{TIMEOUT_KEY, Timeout};
use rubbo_common::{BoxInvoker, Filter, Invocation, InvokeFuture, Invoker};

use crate::support::delegate_to_next;

/// Sets [`Invocation::deadline`] on each call to a provider that has none yet: now
/// plus the call's `timeout` attachment, or else the URL's `{method}.timeout` /
/// `timeout` (default 1000 ms). Consumer side (per provider), first in the chain.
///
/// A deadline set before (by the caller, or once per call by `consumercontext` with
/// `enable-timeout-countdown`) is kept, so retries share it.
#[derive(Debug, Default, Clone, Copy)]
pub struct DeadlineFilter;

impl Filter for DeadlineFilter {
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        let url = next.url();
        // Read once when no method sets its own.
        let uniform = (!url.has_method_params()).then(|| url.param::<Timeout>());
        Arc::new(Deadline { next, uniform })
    }

    fn activate(&self) -> Activate {
        Activate::consumer(i32::MIN)
    }
}

#[derive(Debug)]
struct Deadline {
    next: BoxInvoker,
    uniform: Option<Duration>,
}

/// The timeout of `inv` on an invoker of `url`: its `timeout` attachment, else the
/// URL's.
pub(crate) fn timeout_of(
    inv: &Invocation,
    url: &rubbo_common::Url,
    uniform: Option<Duration>,
) -> Duration {
    inv.attachment_str(TIMEOUT_KEY)
        .and_then(|t| t.trim().parse().ok())
        .map(Duration::from_millis)
        .unwrap_or_else(|| uniform.unwrap_or_else(|| url.method_param::<Timeout>(inv.method())))
}

impl Invoker for Deadline {
    fn invoke(&self, mut inv: Invocation) -> InvokeFuture {
        if inv.deadline().is_none() {
            let timeout = timeout_of(&inv, self.next.url(), self.uniform);
            inv.set_deadline(Instant::now() + timeout);
        }
        self.next.invoke(inv)
    }

    delegate_to_next!();
}
