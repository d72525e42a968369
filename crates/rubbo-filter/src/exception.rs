//! `exception`: which business exceptions a consumer sees as thrown (Java's
//! `ExceptionFilter`).

use std::sync::Arc;

use rubbo_common::filter::Activate;
use rubbo_common::{
    BizException, BoxInvoker, Filter, Invocation, InvokeFuture, Invoker, Outcome, RpcResult,
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
        let interface = self.interface.clone();
        let method = inv.method_arc();
        let consumer = inv.peer().map(|p| p.remote);
        let call = self.next.invoke(inv);
        Box::pin(async move {
            let result = call.await?;
            let Some(e) = result.exception() else {
                return Ok(result);
            };
            if passes(&e.class, &interface) {
                return Ok(result);
            }
            error!(
                service = %interface,
                %method,
                consumer = ?consumer,
                exception = %e,
                "unchecked and undeclared exception, sent as RuntimeException"
            );
            let (outcome, attachments) = result.into_parts();
            let Outcome::Exception(e) = outcome else {
                return Ok(RpcResult::from_parts(outcome, attachments));
            };
            let replaced = BizException::new(RUNTIME_EXCEPTION, Some(e.to_string()));
            Ok(RpcResult::from_parts(
                Outcome::Exception(replaced),
                attachments,
            ))
        })
    }

    delegate_to_next!();
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
