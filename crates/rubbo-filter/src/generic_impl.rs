//! `genericimpl`: a generic reference's `$invoke` calls say so to the provider
//! (Java's `GenericImplFilter`).

use std::sync::Arc;

use rubbo_common::filter::Activate;
use rubbo_common::keys::GENERIC_KEY;
use rubbo_common::{
    BoxInvoker, Filter, GENERIC_ASYNC_METHOD, GENERIC_METHOD, Invocation, InvokeFuture, Invoker,
};

use crate::support::{delegate_to_next, is_config_empty};

/// On a reference with `generic` set (`true`, `bean`, `nativejava`...), adds the
/// `generic` attachment with that mode to each `$invoke` / `$invokeAsync` call that
/// has none, so the provider reads and answers in that mode. Consumer side, order
/// 20000, when the URL has `generic`.
#[derive(Debug, Default, Clone, Copy)]
pub struct GenericImplFilter;

impl Filter for GenericImplFilter {
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        let mode = next.url().get_param(GENERIC_KEY);
        if is_config_empty(mode) {
            return next;
        }
        let mode = mode.unwrap_or_default().to_owned();
        Arc::new(GenericImpl { next, mode })
    }

    fn activate(&self) -> Activate {
        Activate::consumer(20_000).when_keys(&[GENERIC_KEY])
    }
}

#[derive(Debug)]
struct GenericImpl {
    next: BoxInvoker,
    mode: String,
}

impl Invoker for GenericImpl {
    fn invoke(&self, mut inv: Invocation) -> InvokeFuture {
        let generic = inv.method() == GENERIC_METHOD || inv.method() == GENERIC_ASYNC_METHOD;
        if generic && inv.attachment_str(GENERIC_KEY).is_none() {
            inv.set_attachment(GENERIC_KEY, self.mode.clone());
        }
        self.next.invoke(inv)
    }

    delegate_to_next!();
}
