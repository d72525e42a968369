//! `token`: a provider with `token` set serves only consumers that send it (Java's
//! `TokenFilter`).

use std::sync::Arc;

use rubbo_common::filter::Activate;
use rubbo_common::keys::TOKEN_KEY;
use rubbo_common::{BoxInvoker, ErrorKind, Filter, Invocation, InvokeFuture, Invoker, RpcError};
use tracing::warn;

use crate::support::{delegate_to_next, fail, is_config_empty};

/// Rejects calls whose `token` attachment differs from the provider URL's `token`.
/// Provider side, when the URL has `token`; a `token` of `false`, `0` or empty
/// requires none.
#[derive(Debug, Default, Clone, Copy)]
pub struct TokenFilter;

impl Filter for TokenFilter {
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        let token = next.url().get_param(TOKEN_KEY);
        if is_config_empty(token) {
            return next;
        }
        let token = token.unwrap_or_default().to_owned();
        Arc::new(Token { next, token })
    }

    fn activate(&self) -> Activate {
        Activate::provider(0).when_keys(&[TOKEN_KEY])
    }
}

#[derive(Debug)]
struct Token {
    next: BoxInvoker,
    token: String,
}

impl Invoker for Token {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let sent = inv.attachment_str(TOKEN_KEY);
        if sent == Some(self.token.as_str()) {
            return self.next.invoke(inv);
        }
        let consumer = inv
            .peer()
            .map_or_else(|| "unknown".to_owned(), |p| p.remote.to_string());
        warn!(service = %inv.interface(), method = %inv.method(), %consumer, "invalid token");
        fail(RpcError::new(
            ErrorKind::Forbidden,
            format!(
                "Invalid token! Forbid invoke remote service {} method {}() from consumer {} to provider {}, consumer incorrect token is {}",
                inv.interface(),
                inv.method(),
                consumer,
                self.next.url().address(),
                sent.unwrap_or("null")
            ),
        ))
    }

    delegate_to_next!();
}
