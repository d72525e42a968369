//! `echo`: `$echo(Object)` answers its argument without reaching the service (Java's
//! `EchoFilter`), so a consumer can check a provider is alive.

use std::sync::Arc;

use rubbo_common::filter::Activate;
use rubbo_common::{
    Arguments, BoxInvoker, ECHO_METHOD, Filter, Invocation, InvokeFuture, Invoker, Payload,
    RpcError, RpcResult,
};

use crate::support::delegate_to_next;

/// Answers `$echo` calls with their argument. Provider side, order -110000.
#[derive(Debug, Default, Clone, Copy)]
pub struct EchoFilter;

impl Filter for EchoFilter {
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        Arc::new(Echo { next })
    }

    fn activate(&self) -> Activate {
        Activate::provider(-110_000)
    }
}

#[derive(Debug)]
struct Echo {
    next: BoxInvoker,
}

/// The argument of a one-argument call, as the result: still encoded when it came so.
fn echo(inv: Invocation) -> Result<RpcResult, RpcError> {
    let value = match inv.arguments() {
        Arguments::Encoded { encoded, .. } => Payload::Encoded(encoded.clone()),
        other => Payload::Value(other.to_values()?.into_iter().next().unwrap_or_default()),
    };
    Ok(RpcResult::value(value))
}

impl Invoker for Echo {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        if inv.method() == ECHO_METHOD && inv.arguments().len() == 1 {
            return Box::pin(std::future::ready(echo(inv)));
        }
        self.next.invoke(inv)
    }

    delegate_to_next!();
}
