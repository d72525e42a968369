//! `timeout` (provider): a call that finished after its deadline is logged (Java's
//! `TimeoutFilter`): the consumer has given up on it, and the operator should know.

use std::sync::Arc;
use std::time::Instant;

use rubbo_common::filter::Activate;
use rubbo_common::{BoxInvoker, Filter, Invocation, InvokeFuture, Invoker};
use tracing::{Level, warn};

use crate::support::delegate_to_next;

/// Logs a warning for each call that completes past its deadline (set by the
/// protocol from the consumer's `timeout` attachment or `grpc-timeout`). The result
/// is still sent. Provider side, order 0. When `warn` is not enabled for this
/// crate, the filter passes calls through untouched.
#[derive(Debug, Default, Clone, Copy)]
pub struct TimeoutFilter;

impl Filter for TimeoutFilter {
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        Arc::new(Timeout { next })
    }

    fn activate(&self) -> Activate {
        Activate::provider(0)
    }
}

#[derive(Debug)]
struct Timeout {
    next: BoxInvoker,
}

impl Invoker for Timeout {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        // The filter only logs: with its warning off (no subscriber, or a level above
        // `warn`), it adds nothing to the call.
        let Some(deadline) = inv.deadline().filter(|_| tracing::enabled!(Level::WARN)) else {
            return self.next.invoke(inv);
        };
        let method = inv.method_arc();
        let call = self.next.invoke(inv);
        // One clock read per call, at the end: how far past the deadline it ended is
        // what the operator needs (the deadline is the consumer's timeout from arrival).
        Box::pin(async move {
            let result = call.await;
            let now = Instant::now();
            if now > deadline {
                warn!(
                    %method,
                    overran_ms = now.duration_since(deadline).as_millis() as u64,
                    "invoke timed out: the consumer's deadline passed before the call ended"
                );
            }
            result
        })
    }

    delegate_to_next!();
}
