//! Call context: Dubbo's `RpcContext`, scoped to one call.
//!
//! **Provider side.** While a generated server runs a handler, the handler (and any
//! future it awaits on the same task) can read the request's attachments and add
//! response attachments:
//!
//! ```
//! use rubbo::context;
//!
//! async fn handler_body() -> Option<String> {
//!     context::set_response_attachment("served-by", "rust");
//!     context::attachment_str("trace-id")
//! }
//! ```
//!
//! The context is a tokio task-local set around the handler's future: work moved to
//! another task (`tokio::spawn`) does not see it; read what you need first and pass
//! it along. Outside a call the readers return `None` and
//! [`set_response_attachment`] returns `false`.
//!
//! **Consumer side.** Request attachments come from the generated client's
//! `with_attachment`; the provider's response attachments of the calls made inside
//! [`capture_response`] are collected:
//!
//! ```no_run
//! # async fn demo(call: impl std::future::Future<Output = ()>) {
//! let ((), response) = rubbo::context::capture_response(call).await;
//! println!("{:?}", response.get("served-by"));
//! # }
//! ```

use std::future::Future;

use parking_lot::Mutex;
use rubbo_common::{Attachments, Invocation, Value};

tokio::task_local! {
    static PROVIDER: Context;
    static CONSUMER: Mutex<Attachments>;
}

/// The provider-side context of one call: the invocation as received (arguments
/// already handed to the handler) and the response attachments being collected.
#[derive(Debug)]
pub struct Context {
    invocation: Invocation,
    response: Mutex<Attachments>,
}

impl Context {
    /// The invocation: service, method, descriptors, request attachments.
    pub fn invocation(&self) -> &Invocation {
        &self.invocation
    }

    /// The request attachment `key`.
    pub fn attachment(&self, key: &str) -> Option<&Value> {
        self.invocation.attachments().get(key)
    }

    /// All request attachments.
    pub fn attachments(&self) -> &Attachments {
        self.invocation.attachments()
    }

    /// Adds a response attachment, sent back with the result.
    pub fn set_response_attachment(&self, key: impl Into<String>, value: impl Into<Value>) {
        self.response.lock().insert(key.into(), value.into());
    }
}

/// Runs `f` with the current provider context; `None` outside a provider call.
pub fn with<R>(f: impl FnOnce(&Context) -> R) -> Option<R> {
    PROVIDER.try_with(f).ok()
}

/// The request attachment `key` of the current provider call.
pub fn attachment(key: &str) -> Option<Value> {
    with(|c| c.attachment(key).cloned()).flatten()
}

/// The request attachment `key` of the current provider call, if it is a string.
pub fn attachment_str(key: &str) -> Option<String> {
    with(|c| c.attachment(key).and_then(Value::as_str).map(str::to_owned)).flatten()
}

/// Adds a response attachment to the current provider call; `false` outside one.
pub fn set_response_attachment(key: impl Into<String>, value: impl Into<Value>) -> bool {
    let (key, value) = (key.into(), value.into());
    with(|c| c.set_response_attachment(key, value)).is_some()
}

/// Runs `fut` and returns its output with the response attachments of every call a
/// generated client completed inside it (later calls overwrite equal keys).
pub async fn capture_response<F: Future>(fut: F) -> (F::Output, Attachments) {
    let cell = Mutex::new(Attachments::new());
    let (out, cell) = CONSUMER
        .scope(cell, async move {
            let out = fut.await;
            let got = CONSUMER
                .try_with(|c| std::mem::take(&mut *c.lock()))
                .unwrap_or_default();
            (out, got)
        })
        .await;
    (out, cell)
}

/// Records response attachments for an enclosing [`capture_response`], if any.
pub(crate) fn record_response(attachments: &Attachments) {
    if attachments.is_empty() {
        return;
    }
    let _ = CONSUMER.try_with(|c| {
        c.lock()
            .extend(attachments.iter().map(|(k, v)| (k.clone(), v.clone())))
    });
}

/// Runs a handler future inside the provider context of `invocation`; returns its
/// output and the response attachments it set.
pub(crate) async fn provide<F: Future>(invocation: Invocation, fut: F) -> (F::Output, Attachments) {
    let ctx = Context {
        invocation,
        response: Mutex::new(Attachments::new()),
    };
    PROVIDER
        .scope(ctx, async move {
            let out = fut.await;
            let response = PROVIDER
                .try_with(|c| std::mem::take(&mut *c.response.lock()))
                .unwrap_or_default();
            (out, response)
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn provider_context_is_scoped_to_the_call() {
        assert_eq!(attachment("k"), None);
        assert!(!set_response_attachment("x", "y"));
        let inv = Invocation::new("S", "m").with_attachment("k", "v");
        let (seen, response) = provide(inv, async {
            tokio::task::yield_now().await;
            assert!(set_response_attachment("x", "y"));
            attachment_str("k")
        })
        .await;
        assert_eq!(seen.as_deref(), Some("v"));
        assert_eq!(response.get("x"), Some(&Value::from("y")));
        assert_eq!(attachment("k"), None);
    }

    #[tokio::test]
    async fn consumer_capture_collects_recorded_attachments() {
        record_response(&Attachments::from([("lost".to_owned(), Value::from(1))]));
        let ((), got) = capture_response(async {
            record_response(&Attachments::from([("a".to_owned(), Value::from("1"))]));
        })
        .await;
        assert_eq!(got.len(), 1);
        assert_eq!(got.get("a"), Some(&Value::from("1")));
    }
}
