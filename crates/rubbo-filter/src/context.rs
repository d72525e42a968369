//! `context`: the service sees the consumer's attachments without the keys the
//! framework uses to route and control the call (Java's `ContextFilter`).

use std::sync::Arc;

use rubbo_common::filter::Activate;
use rubbo_common::keys::{
    ASYNC_KEY, DUBBO_VERSION_KEY, FORCE_TAG_KEY, GROUP_KEY, INTERFACE_KEY, PATH_KEY, TAG_KEY,
    TIMEOUT_ATTACHMENT_KEY, TIMEOUT_KEY, TOKEN_KEY, VERSION_KEY,
};
use rubbo_common::{BoxInvoker, Filter, Invocation, InvokeFuture, Invoker};

use crate::support::delegate_to_next;

/// The attachments a service does not see (Java's `ContextFilter.UNLOADING_KEYS`).
pub const UNLOADING_KEYS: [&str; 11] = [
    PATH_KEY,
    INTERFACE_KEY,
    GROUP_KEY,
    VERSION_KEY,
    DUBBO_VERSION_KEY,
    TOKEN_KEY,
    TIMEOUT_KEY,
    TIMEOUT_ATTACHMENT_KEY,
    ASYNC_KEY,
    TAG_KEY,
    FORCE_TAG_KEY,
];

/// Removes [`UNLOADING_KEYS`] from the attachments the service receives. Provider
/// side, order 30000.
///
/// Java keeps two maps: the invocation keeps every key (so `TokenFilter` still reads
/// `token`) and the service's `RpcContext` gets the stripped copy. Rubbo has one map,
/// so this filter runs after the built-in filters that read those keys (Java's order
/// is `Integer.MIN_VALUE`); what the service sees is the same.
#[derive(Debug, Default, Clone, Copy)]
pub struct ContextFilter;

impl Filter for ContextFilter {
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        Arc::new(Context { next })
    }

    fn activate(&self) -> Activate {
        Activate::provider(30_000)
    }
}

#[derive(Debug)]
struct Context {
    next: BoxInvoker,
}

impl Invoker for Context {
    fn invoke(&self, mut inv: Invocation) -> InvokeFuture {
        inv.attachments_mut()
            .retain(|k, _| !UNLOADING_KEYS.contains(&k.as_str()));
        self.next.invoke(inv)
    }

    delegate_to_next!();
}
