//! `exception`: which business exceptions a consumer sees as thrown (Java's
//! `ExceptionFilter`).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rubbo_common::filter::Activate;
use rubbo_common::{
    BizException, BoxInvoker, Filter, Invocation, InvokeFuture, Invoker, Outcome, RpcError,
    RpcResult,
};
use tracing::error;

use crate::support::delegate_to_next;

/// The class an exception that may not cross is replaced by.
pub const RUNTIME_EXCEPTION: &str = "java.lang.RuntimeException";

/// Lets a business exception through when a consumer can be expected to have its
/// class, and otherwise replaces it by a `java.lang.RuntimeException` whose message
/// is the original's class and message, logging it. Provider side, order 0.
///
/// Passed through, as Java's `ExceptionFilter` passes them: JDK exceptions (`java.`,
/// `javax.`, `jakarta.`), Dubbo's `RpcException`, and exceptions of the service's own
/// code base. Java tells the last by the jar the class was loaded from and by the
/// method's `throws` clause; a Rust service has neither, so the class counts as the
/// service's own when it shares the interface's first two package segments
/// (`org.example.billing.BillingException` for `org.example.billing.Billing`, or
/// `org.example.Common` for `org.example.billing.Billing`).
#[derive(Debug, Default, Clone, Copy)]
pub struct ExceptionFilter;

impl Filter for ExceptionFilter {
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        let interface = Arc::from(next.url().service_interface().unwrap_or_default());
        Arc::new(Exceptions { next, interface })
    }

    fn activate(&self) -> Activate {
        Activate::provider(0)
    }
}

#[derive(Debug)]
struct Exceptions {
    next: BoxInvoker,
    /// The service's interface, read once.
    interface: Arc<str>,
}

/// The first two segments of a class's package (or its one-segment package).
fn package_root(class: &str) -> Option<&str> {
    let package = &class[..class.rfind('.')?];
    match package.match_indices('.').nth(1) {
        Some((second, _)) => Some(&package[..second]),
        None => Some(package),
    }
}

/// Whether a consumer of `interface` may see `class` thrown.
pub fn passes(class: &str, interface: &str) -> bool {
    const JDK: [&str; 3] = ["java.", "javax.", "jakarta."];
    if JDK.iter().any(|p| class.starts_with(p)) || class.ends_with(".RpcException") {
        return true;
    }
    match (package_root(class), package_root(interface)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

impl Invoker for Exceptions {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let consumer = inv.peer().map(|p| p.remote);
        let method = inv.method_arc();
        Box::pin(Checked {
            call: self.next.invoke(inv),
            interface: self.interface.clone(),
            method,
            consumer,
        })
    }

    delegate_to_next!();
}

/// The call's future, its result checked when it is ready. A plain future rather than
/// an `async` block: a result without an exception (nearly every one) goes out as it
/// came, with no move through the block's state.
struct Checked {
    call: InvokeFuture,
    interface: Arc<str>,
    method: Arc<str>,
    consumer: Option<SocketAddr>,
}

impl Future for Checked {
    type Output = Result<RpcResult, RpcError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Returned as the inner future gave it, changed in place when it must be.
        let mut poll = self.call.as_mut().poll(cx);
        if let Poll::Ready(Ok(result)) = &mut poll {
            if result
                .exception()
                .is_some_and(|e| !passes(&e.class, &self.interface))
            {
                let taken = std::mem::replace(result, RpcResult::null());
                *result = self.replace(taken);
            }
        }
        poll
    }
}

impl Checked {
    /// `result`'s exception, which may not cross, replaced (and logged).
    fn replace(&self, result: RpcResult) -> RpcResult {
        let (outcome, attachments) = result.into_parts();
        let Outcome::Exception(e) = outcome else {
            return RpcResult::from_parts(outcome, attachments);
        };
        error!(
            service = %self.interface,
            method = %self.method,
            consumer = ?self.consumer,
            exception = %e,
            "unchecked and undeclared exception, sent as RuntimeException"
        );
        let replaced = BizException::new(RUNTIME_EXCEPTION, Some(e.to_string()));
        RpcResult::from_parts(Outcome::Exception(replaced), attachments)
    }
}

#[cfg(test)]
mod tests {
    use super::passes;

    #[test]
    fn jdk_rpc_and_own_package_exceptions_pass() {
        let svc = "org.rubbo.interop.InteropService";
        assert!(passes("java.lang.IllegalStateException", svc));
        assert!(passes("javax.validation.ValidationException", svc));
        assert!(passes("org.apache.dubbo.rpc.RpcException", svc));
        assert!(passes("org.rubbo.interop.InteropException", svc));
        assert!(passes("org.rubbo.common.Failure", svc));
        assert!(!passes("com.thirdparty.Boom", svc));
        assert!(!passes("Boom", svc));
    }
}
