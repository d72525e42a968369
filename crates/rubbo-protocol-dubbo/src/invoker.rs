//! The consumer side: an invoker that calls one provider over a shared connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rubbo_common::keys::{self, Timeout};
use rubbo_common::{Invocation, InvokeFuture, Invoker, RpcError, RpcResult, Serialization, Url};
use rubbo_remoting::Clients;
use tracing::{Instrument, debug};

use crate::body;
use crate::codec::{self, EncodedMeta, RequestMeta};
use crate::status::{error_for_remoting, error_for_status};

/// Calls one provider at [`url()`](Invoker::url) over the dubbo protocol.
#[derive(Debug, Clone)]
pub struct DubboInvoker {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    url: Url,
    clients: Clients,
    path: String,
    interface: Option<String>,
    version: Option<String>,
    group: Option<String>,
    application: Option<String>,
    token: Option<String>,
    payload: i64,
    /// The serialization requests are sent in (the URL's `serialization`), chosen at
    /// refer time; its wire id goes in every request header.
    serialization: &'static dyn Serialization,
    /// Whether the connections are this invoker's own (`connections=N`) rather than
    /// the shared one, which closes when its last user drops it.
    exclusive: bool,
    destroyed: AtomicBool,
    /// The size of the last request body, the capacity hint for the next one.
    last_request_len: AtomicUsize,
    /// What every request of this invoker repeats, encoded once.
    encoded: Option<EncodedMeta>,
    /// The timeout and one-way setting of every method, when the URL sets none per
    /// method (read once instead of per call).
    uniform: Option<(Duration, bool)>,
}

impl DubboInvoker {
    pub(crate) fn new(
        url: Url,
        clients: Clients,
        exclusive: bool,
        serialization: &'static dyn Serialization,
    ) -> Self {
        let owned = |s: Option<&str>| s.filter(|s| !s.is_empty()).map(str::to_owned);
        let path = url
            .path()
            .or_else(|| url.service_interface())
            .unwrap_or_default()
            .to_owned();
        let mut inner = Inner {
            interface: owned(url.get_param(keys::INTERFACE_KEY)),
            version: owned(url.version()),
            group: owned(url.group()),
            application: owned(url.get_param(keys::APPLICATION_KEY)),
            token: owned(url.get_param(keys::TOKEN_KEY)).filter(|t| t != "false"),
            payload: url.param::<keys::Payload>(),
            serialization,
            path,
            clients,
            exclusive,
            url,
            destroyed: AtomicBool::new(false),
            last_request_len: AtomicUsize::new(128),
            encoded: None,
            uniform: None,
        };
        inner.uniform = (!inner.url.has_method_params()).then(|| {
            let oneway = !inner.url.param::<keys::Return>();
            (inner.url.param::<Timeout>(), oneway)
        });
        // Strings always encode; on the impossible failure calls encode it all.
        inner.encoded = EncodedMeta::new(&inner.meta(0)).ok();
        DubboInvoker {
            inner: Arc::new(inner),
        }
    }
}

impl Inner {
    /// What every request of this invoker carries, with `timeout_ms`.
    fn meta(&self, timeout_ms: u64) -> RequestMeta<'_> {
        RequestMeta {
            path: &self.path,
            version: self.version.as_deref(),
            group: self.group.as_deref(),
            interface: self.interface.as_deref(),
            timeout_ms,
            application: self.application.as_deref(),
            token: self.token.as_deref(),
            encoded: self.encoded.as_ref(),
        }
    }
}

impl DubboInvoker {
    /// Encodes the request of `inv`: what a call sends, and how long it may wait.
    ///
    /// Done before the call's future is built, so that future holds neither the
    /// invocation nor the encoder: its size decides how costly its allocation is.
    fn prepare(&self, inv: &Invocation) -> Result<Prepared, RpcError> {
        let inner = &self.inner;
        if inner.destroyed.load(Ordering::Acquire) {
            return Err(RpcError::network(format!(
                "invoker for {} is destroyed",
                inner.url.address()
            )));
        }
        let method = inv.method();
        let (timeout, oneway) = inner.uniform.unwrap_or_else(|| {
            let oneway = !inner.url.method_param::<keys::Return>(method);
            (inner.url.method_param::<Timeout>(method), oneway)
        });
        // The call's deadline (the consumer's `deadline` filter sets one from the
        // `timeout` attachment or the URL) wins over the URL's timeout; what remains of
        // it, rounded up to the millisecond, is what the provider is told.
        let deadline = inv.deadline();
        let timeout = match deadline {
            Some(deadline) => remaining(deadline),
            None => timeout,
        };
        let meta = inner.meta(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
        let hint = inner
            .last_request_len
            .load(Ordering::Relaxed)
            .clamp(128, 64 * 1024);
        let body = body::encode(hint, |buf| codec::encode_request(inv, &meta, buf))
            .map_err(|e| RpcError::serialization(format!("cannot encode request: {e}")))?;
        inner.last_request_len.store(body.len(), Ordering::Relaxed);
        if inner.payload > 0 && body.len() as i64 > inner.payload {
            return Err(RpcError::serialization(format!(
                "Data length too large: {}, max payload: {}",
                body.len(),
                inner.payload
            )));
        }
        Ok(Prepared {
            body,
            timeout,
            deadline,
            oneway,
        })
    }
}

/// The time left until `deadline`, rounded up to whole milliseconds (a deadline of
/// `timeout` ms set a moment ago still sends `timeout`, not one less).
fn remaining(deadline: Instant) -> Duration {
    Duration::from_millis(rubbo_common::ceil_ms(
        deadline.saturating_duration_since(Instant::now()),
    ))
}

/// `call` boxed, inside `span` only when a subscriber records it: the wrapper would
/// otherwise be polled on every wake-up for nothing.
fn boxed_in(
    span: tracing::Span,
    call: impl std::future::Future<Output = Result<RpcResult, RpcError>> + Send + 'static,
) -> InvokeFuture {
    if span.is_disabled() {
        Box::pin(call)
    } else {
        Box::pin(call.instrument(span))
    }
}

/// An encoded request, ready to send.
struct Prepared {
    body: bytes::Bytes,
    timeout: Duration,
    /// The call's deadline, when it has one: the exchange fails it then.
    deadline: Option<Instant>,
    oneway: bool,
}

impl Invoker for DubboInvoker {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let span = tracing::debug_span!("dubbo.call", method = %inv.method(), peer = %self.inner.url.address());
        let prepared = {
            let _entered = (!span.is_disabled()).then(|| span.enter());
            self.prepare(&inv)
        };
        drop(inv);
        let Prepared {
            body,
            timeout,
            deadline,
            oneway,
        } = match prepared {
            Ok(p) => p,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let serialization = self.inner.serialization.id();
        if oneway {
            let inner = self.inner.clone();
            let call = async move {
                inner
                    .clients
                    .send_oneway(body, serialization)
                    .await
                    .map_err(error_for_remoting)?;
                Ok(RpcResult::null())
            };
            return boxed_in(span, call);
        }
        // The request's future holds its connection, not this invoker.
        let request = self
            .inner
            .clients
            .request_until(body, serialization, timeout, deadline);
        let call = async move {
            let resp = request.await.map_err(error_for_remoting)?;
            if !resp.status.is_ok() {
                let text = codec::decode_error_text(resp.serialization, &resp.body);
                debug!(status = resp.status.as_u8(), error = %text, "error response");
                return Err(error_for_status(resp.status, text));
            }
            codec::decode_response(resp.serialization, &resp.body)
                .map_err(|e| RpcError::serialization(format!("cannot decode response: {e}")))
        };
        boxed_in(span, call)
    }

    fn url(&self) -> &Url {
        &self.inner.url
    }

    fn is_available(&self) -> bool {
        !self.inner.destroyed.load(Ordering::Acquire) && self.inner.clients.is_available()
    }

    fn destroy(&self) {
        if !self.inner.destroyed.swap(true, Ordering::AcqRel) && self.inner.exclusive {
            self.inner.clients.close();
        }
    }
}
