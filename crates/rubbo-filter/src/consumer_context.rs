//! `consumercontext`: what a consumer call carries through the whole cluster (Java's
//! `ConsumerContextFilter`): with `enable-timeout-countdown=true`, one deadline for
//! the call, shared by its retries.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rubbo_common::filter::Activate;
use rubbo_common::keys::{ENABLE_TIMEOUT_COUNTDOWN_KEY, Timeout};
use rubbo_common::{BoxInvoker, Filter, Invocation, InvokeFuture, Invoker};

use crate::deadline::timeout_of;
use crate::support::delegate_to_next;

/// Around the cluster invoker, once per call. With `enable-timeout-countdown=true` on
/// the reference, sets the call's deadline before the first attempt, so a retry gets
/// only what remains (Java's timeout countdown); otherwise it adds nothing to the call
/// path. Consumer side (cluster), first.
#[derive(Debug, Default, Clone, Copy)]
pub struct ConsumerContextFilter;

impl Filter for ConsumerContextFilter {
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        let url = next.url();
        if !url.get_bool(ENABLE_TIMEOUT_COUNTDOWN_KEY, false) {
            return next;
        }
        let uniform = (!url.has_method_params()).then(|| url.param::<Timeout>());
        Arc::new(ConsumerContext { next, uniform })
    }

    fn activate(&self) -> Activate {
        Activate::cluster(i32::MIN)
    }
}

#[derive(Debug)]
struct ConsumerContext {
    next: BoxInvoker,
    uniform: Option<Duration>,
}

impl Invoker for ConsumerContext {
    fn invoke(&self, mut inv: Invocation) -> InvokeFuture {
        if inv.deadline().is_none() {
            let timeout = timeout_of(&inv, self.next.url(), self.uniform);
            inv.set_deadline(Instant::now() + timeout);
        }
        self.next.invoke(inv)
    }

    delegate_to_next!();
}
