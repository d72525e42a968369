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
//! A response attachment goes back in the trailers on Triple (with the result on
//! dubbo). [`set_response_header`] puts one in Triple's response *headers* instead
//! (gRPC's initial metadata, sent before the reply); dubbo has no response headers
//! and does not send those. A binary value ([`Value::Binary`]) under key `k` travels
//! as the gRPC metadata `k-bin`, in base64 on the wire and raw bytes to the user.
//!
//! The context is a tokio task-local set around the handler's future: work moved to
//! another task (`tokio::spawn`) does not see it; read what you need first and pass
//! it along. Outside a call the readers return `None` and
//! [`set_response_attachment`] returns `false`.
//!
//! **Consumer side.** Request attachments come from the generated client's
//! `with_attachment`; the provider's response attachments of the calls made inside
//! [`capture_response`] are collected (and [`capture_metadata`] tells the response
//! headers' apart from the trailers'):
//!
//! ```no_run
//! # async fn demo(call: impl std::future::Future<Output = ()>) {
//! let ((), response) = rubbo::context::capture_response(call).await;
//! println!("{:?}", response.get("served-by"));
//! # }
//! ```

use std::future::Future;

use parking_lot::Mutex;
use rubbo_common::{Attachments, Invocation, RpcResult, Value};

tokio::task_local! {
    static PROVIDER: Context;
    static CONSUMER: Mutex<ResponseMetadata>;
}

/// The provider-side context of one call: the invocation as received (arguments
/// already handed to the handler) and the response attachments being collected.
#[derive(Debug)]
pub struct Context {
    invocation: Invocation,
    /// Absent until a handler sets one (as the headers): most calls have none.
    response: Mutex<Option<Attachments>>,
    /// Absent until a handler sets one: most calls have none.
    response_headers: Mutex<Option<Attachments>>,
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
        self.response
            .lock()
            .get_or_insert_with(Attachments::new)
            .insert(key.into(), value.into());
    }

    /// Adds a response attachment sent in the response headers (Triple's HEADERS
    /// frame, gRPC's initial metadata) rather than the trailers; the dubbo protocol
    /// does not send it.
    pub fn set_response_header(&self, key: impl Into<String>, value: impl Into<Value>) {
        self.response_headers
            .lock()
            .get_or_insert_with(Attachments::new)
            .insert(key.into(), value.into());
    }
}

/// The response metadata of the calls made inside [`capture_metadata`].
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ResponseMetadata {
    /// What the provider sent in its response headers (Triple; gRPC's initial
    /// metadata), `content-type` and the like left out.
    pub headers: Attachments,
    /// The response attachments: Triple's trailers (gRPC's trailing metadata, without
    /// `grpc-status` and `grpc-message`), the result's attachments on dubbo.
    pub attachments: Attachments,
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

/// Adds a response header attachment to the current provider call (see
/// [`Context::set_response_header`]); `false` outside one.
pub fn set_response_header(key: impl Into<String>, value: impl Into<Value>) -> bool {
    let (key, value) = (key.into(), value.into());
    with(|c| c.set_response_header(key, value)).is_some()
}

/// Runs `fut` and returns its output with the response attachments of every call a
/// generated client completed inside it (later calls overwrite equal keys).
pub async fn capture_response<F: Future>(fut: F) -> (F::Output, Attachments) {
    let (out, metadata) = capture_metadata(fut).await;
    (out, metadata.attachments)
}

/// Runs `fut` and returns its output with the response headers and response
/// attachments of every call a generated client completed inside it (later calls
/// overwrite equal keys).
///
/// ```no_run
/// # async fn demo(call: impl std::future::Future<Output = ()>) {
/// let ((), response) = rubbo::context::capture_metadata(call).await;
/// println!("headers {:?}, trailers {:?}", response.headers, response.attachments);
/// # }
/// ```
pub async fn capture_metadata<F: Future>(fut: F) -> (F::Output, ResponseMetadata) {
    let cell = Mutex::new(ResponseMetadata::default());
    CONSUMER
        .scope(cell, async move {
            let out = fut.await;
            let got = CONSUMER
                .try_with(|c| std::mem::take(&mut *c.lock()))
                .unwrap_or_default();
            (out, got)
        })
        .await
}

/// Records a result's response metadata for an enclosing [`capture_metadata`], if
/// any.
pub(crate) fn record_response(result: &RpcResult) {
    let (attachments, headers) = (result.attachments(), result.header_attachments());
    if attachments.is_empty() && headers.is_empty() {
        return;
    }
    let copy = |a: &Attachments| {
        a.iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
    };
    let _ = CONSUMER.try_with(|c| {
        let mut c = c.lock();
        c.attachments.extend(copy(attachments));
        c.headers.extend(copy(headers));
    });
}

/// What a handler set for the response: attachments and header attachments.
#[derive(Debug, Default)]
pub(crate) struct Response {
    pub(crate) attachments: Option<Attachments>,
    pub(crate) headers: Option<Attachments>,
}

impl Response {
    /// Adds both to `result`.
    pub(crate) fn apply(self, result: &mut RpcResult) {
        if let Some(attachments) = self.attachments.filter(|a| !a.is_empty()) {
            result.attachments_mut().extend(attachments);
        }
        // Only when set: most results have none, and need no box for them.
        if let Some(headers) = self.headers.filter(|h| !h.is_empty()) {
            result.header_attachments_mut().extend(headers);
        }
    }
}

/// Runs a handler future inside the provider context of `invocation`; returns its
/// output and the response attachments it set.
pub(crate) async fn provide<F: Future>(invocation: Invocation, fut: F) -> (F::Output, Response) {
    let ctx = Context {
        invocation,
        response: Mutex::new(None),
        response_headers: Mutex::new(None),
    };
    PROVIDER
        .scope(ctx, async move {
            let out = fut.await;
            let response = PROVIDER
                .try_with(|c| Response {
                    attachments: c.response.lock().take(),
                    headers: c.response_headers.lock().take(),
                })
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
            assert!(set_response_header("h", "z"));
            attachment_str("k")
        })
        .await;
        assert_eq!(seen.as_deref(), Some("v"));
        assert_eq!(
            response.attachments.as_ref().and_then(|a| a.get("x")),
            Some(&Value::from("y"))
        );
        assert_eq!(
            response.headers.as_ref().and_then(|h| h.get("h")),
            Some(&Value::from("z"))
        );
        assert!(
            !response
                .attachments
                .as_ref()
                .is_some_and(|a| a.contains_key("h"))
        );
        assert!(!set_response_header("h", "z"), "outside a call");
        assert_eq!(attachment("k"), None);
    }

    #[tokio::test]
    async fn consumer_capture_collects_recorded_attachments() {
        record_response(&RpcResult::null().with_attachment("lost", 1));
        let ((), got) = capture_response(async {
            record_response(&RpcResult::null().with_attachment("a", "1"));
        })
        .await;
        assert_eq!(got.len(), 1);
        assert_eq!(got.get("a"), Some(&Value::from("1")));

        let mut r = RpcResult::null().with_attachment("t", "1");
        r.header_attachments_mut()
            .insert("h".into(), Value::Binary(vec![0xab]));
        let ((), got) = capture_metadata(async { record_response(&r) }).await;
        assert_eq!(got.attachments.get("t"), Some(&Value::from("1")));
        assert_eq!(got.headers.get("h"), Some(&Value::Binary(vec![0xab])));
        assert!(!got.attachments.contains_key("h") && !got.headers.contains_key("t"));
    }
}
