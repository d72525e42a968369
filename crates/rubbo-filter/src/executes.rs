//! `executelimit`: at most `executes` calls of a method run at once on a provider
//! (Java's `ExecuteLimitFilter`); more are refused, not queued.

use std::sync::Arc;

use rubbo_common::filter::Activate;
use rubbo_common::keys::{EXECUTES_KEY, Executes};
use rubbo_common::{BoxInvoker, ErrorKind, Filter, Invocation, InvokeFuture, Invoker, RpcError};
use tracing::warn;

use crate::support::{MethodSlots, delegate_to_next, fail};

/// Refuses a call with `LimitExceeded` while `executes` calls of its method (the
/// method-level `{method}.executes` or the service's `executes`) are running. Provider
/// side, when the URL has `executes`.
#[derive(Debug, Default, Clone, Copy)]
pub struct ExecuteLimitFilter;

impl Filter for ExecuteLimitFilter {
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        Arc::new(ExecuteLimit {
            next,
            methods: MethodSlots::default(),
        })
    }

    fn activate(&self) -> Activate {
        Activate::provider(0).when_keys(&[EXECUTES_KEY])
    }
}

#[derive(Debug)]
struct ExecuteLimit {
    next: BoxInvoker,
    /// The running calls of each limited method.
    methods: MethodSlots,
}

impl Invoker for ExecuteLimit {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let max = self.next.url().method_param::<Executes>(inv.method());
        if max == 0 {
            return self.next.invoke(inv);
        }
        let Ok(permit) = self.methods.get(inv.method(), max).try_acquire_owned() else {
            warn!(service = %inv.interface(), method = %inv.method(), max, "executes limit reached");
            return fail(RpcError::new(
                ErrorKind::LimitExceeded,
                format!(
                    "Failed to invoke method {} in provider {}, cause: The service using threads greater than <dubbo:service executes=\"{}\" /> limited.",
                    inv.method(),
                    self.next.url().address(),
                    max
                ),
            ));
        };
        let call = self.next.invoke(inv);
        Box::pin(async move {
            let result = call.await;
            drop(permit);
            result
        })
    }

    delegate_to_next!();
}
