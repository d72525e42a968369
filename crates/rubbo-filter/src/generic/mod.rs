//! `generic`: `$invoke(method, parameterTypes, args)` reaches the real method, and its
//! result comes back generalized (Java's `GenericFilter`), so a consumer without the
//! service's types can call it.

mod convert;

use std::sync::Arc;

use rubbo_common::filter::Activate;
use rubbo_common::{
    BoxInvoker, Filter, Invocation, InvokeFuture, Invoker, Outcome, Payload, RpcResult,
};

use crate::support::{delegate_to_next, fail};
pub use convert::GENERIC_EXCEPTION;

/// Serves `$invoke` / `$invokeAsync` with three arguments: the call goes to the named
/// method with the parameter types given as Java names; the result comes back with
/// objects as maps (their class under `class`) and a business exception wrapped in
/// `GenericException`, as Java's `GenericFilter` sends them. Provider side, order
/// -20000.
#[derive(Debug, Default, Clone, Copy)]
pub struct GenericFilter;

impl Filter for GenericFilter {
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        Arc::new(Generic { next })
    }

    fn activate(&self) -> Activate {
        Activate::provider(-20_000)
    }
}

#[derive(Debug)]
struct Generic {
    next: BoxInvoker,
}

impl Invoker for Generic {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        if !convert::is_generic(inv.method()) || inv.arguments().len() != 3 {
            return self.next.invoke(inv);
        }
        match convert::unwrap_generic(&inv) {
            Ok(real) => generalized(self.next.invoke(real)),
            Err(e) => fail(e),
        }
    }

    delegate_to_next!();
}

/// A generic call's result, generalized as Java's `GenericFilter` does: values to
/// maps and lists, exceptions wrapped.
fn generalized(call: InvokeFuture) -> InvokeFuture {
    Box::pin(async move {
        let (outcome, attachments) = call.await?.into_parts();
        let outcome = match outcome {
            Outcome::Value(p) => Outcome::Value(match p {
                Payload::Null => Payload::Null,
                p => Payload::Value(convert::generalize(p.to_value()?)),
            }),
            Outcome::Exception(e) => Outcome::Exception(convert::wrap_exception(e)),
        };
        Ok(RpcResult::from_parts(outcome, attachments))
    })
}
