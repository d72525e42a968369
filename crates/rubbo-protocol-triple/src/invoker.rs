//! The consumer side: an invoker calling one provider over the shared HTTP/2
//! connection of its address. A call whose argument is one protobuf message (what
//! `rubbo-build` clients send) goes in IDL mode, the message as it is; any other in
//! wrapper mode.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri, Version};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use prost::Message;
use rubbo_common::keys::{self, Timeout};
use rubbo_common::{
    Arguments, Encoded, ErrorKind, Invocation, InvokeFuture, Invoker, Payload, RpcError, RpcResult,
    Url,
};
use rubbo_serialization::{PROTOBUF, is_protobuf};
use tracing::{Instrument, debug, warn};

use crate::body::{TriBody, UnaryBody};
use crate::channel::Channel;
use crate::coalesce::BusyGuard;
use crate::compress::{self, Encoding, Named};
use crate::error::TripleError;
use crate::frame;
use crate::headers::{self, GRPC, GRPC_MESSAGE, GRPC_PROTO, GRPC_STATUS};
use crate::status::{self, Code, Status};
use crate::stream::{Deadlined, MessageDecoder, StreamBody};
use crate::wrapper::{TripleRequestWrapper, TripleResponseWrapper};
use rubbo_common::stream::{MessageStream, StreamKind, StreamSlot};

/// Calls one provider at [`url()`](Invoker::url) over Triple.
#[derive(Debug, Clone)]
pub struct TripleInvoker {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    url: Url,
    channel: Arc<Channel>,
    /// `/{service path}/`: the `:path` of every call, before the method.
    path_prefix: String,
    /// The request URI of each method the URL lists (`methods`), built once; a
    /// service has few methods, so a scan beats hashing the name on every call.
    uris: Vec<(Box<str>, Uri)>,
    /// What every request carries: content-type, te, service version and group,
    /// the consumer's application.
    base_headers: HeaderMap,
    payload: i64,
    /// What requests are compressed with (`dubbo.rpc.tri.compressor`; `None`:
    /// identity).
    compressor: Option<Encoding>,
    destroyed: AtomicBool,
    /// The timeout headers of the last call: calls made back to back mostly have
    /// the same milliseconds left, so their values are shared, not formatted anew.
    last_timeout: parking_lot::Mutex<Option<TimeoutHeaders>>,
}

/// The `grpc-timeout` and `timeout` values of one timeout.
#[derive(Debug)]
struct TimeoutHeaders {
    /// The milliseconds rounded up (`grpc-timeout`) and down (`timeout`).
    ceil_ms: u128,
    floor_ms: u128,
    grpc: HeaderValue,
    plain: HeaderValue,
}

impl Inner {
    /// The `grpc-timeout` and `timeout` header values of `timeout`.
    fn timeout_headers(&self, timeout: Duration) -> (HeaderValue, HeaderValue) {
        let ceil_ms = timeout.as_nanos().div_ceil(1_000_000);
        let floor_ms = timeout.as_millis();
        let mut last = self.last_timeout.lock();
        if let Some(t) = last.as_ref() {
            if t.ceil_ms == ceil_ms && t.floor_ms == floor_ms {
                return (t.grpc.clone(), t.plain.clone());
            }
        }
        let grpc = grpc_timeout_value(timeout);
        let plain = HeaderValue::from(u64::try_from(floor_ms).unwrap_or(u64::MAX));
        *last = Some(TimeoutHeaders {
            ceil_ms,
            floor_ms,
            grpc: grpc.clone(),
            plain: plain.clone(),
        });
        (grpc, plain)
    }
}

impl TripleInvoker {
    pub(crate) fn new(url: Url, channel: Arc<Channel>, compressor: Option<Encoding>) -> Self {
        let path = url
            .path()
            .or_else(|| url.service_interface())
            .unwrap_or_default()
            .to_owned();
        let mut h = HeaderMap::new();
        h.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static(GRPC_PROTO),
        );
        h.insert(http::header::TE, HeaderValue::from_static("trailers"));
        // As Java: what we take back, always; what we send with, when not identity.
        h.insert(
            compress::GRPC_ACCEPT_ENCODING,
            HeaderValue::from_static(compress::ACCEPTED),
        );
        if let Some(e) = compressor {
            h.insert(headers::GRPC_ENCODING, HeaderValue::from_static(e.name()));
        }
        let mut put = |name: &'static str, value: Option<&str>| {
            if let Some(v) = value
                .filter(|v| !v.is_empty())
                .and_then(|v| HeaderValue::from_str(v).ok())
            {
                h.insert(name, v);
            }
        };
        put(headers::SERVICE_VERSION, url.version());
        put(headers::SERVICE_GROUP, url.group());
        put(
            headers::CONSUMER_APP_NAME,
            url.get_param(keys::APPLICATION_KEY),
        );
        let path_prefix = format!("/{path}/");
        let uris = url
            .get_param(keys::METHODS_KEY)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .filter_map(|m| {
                let uri = request_uri(&channel, &path_prefix, m).ok()?;
                Some((Box::from(m), uri))
            })
            .collect();
        TripleInvoker {
            inner: Arc::new(Inner {
                path_prefix,
                uris,
                base_headers: h,
                payload: url.param::<keys::Payload>(),
                compressor,
                channel,
                url,
                destroyed: AtomicBool::new(false),
                last_timeout: parking_lot::Mutex::new(None),
            }),
        }
    }

    /// Builds the request of `inv`, how long it may take and whether it is in IDL mode.
    fn prepare(&self, inv: &Invocation) -> Result<(Request<TriBody>, Duration, bool), RpcError> {
        let inner = &self.inner;
        if inner.destroyed.load(Ordering::Acquire) {
            return Err(RpcError::network(format!(
                "invoker for {} is destroyed",
                inner.url.address()
            )));
        }
        // The call's deadline (the consumer's `deadline` filter sets one) wins over the
        // URL's timeout.
        let timeout = match inv.deadline() {
            Some(d) => d.saturating_duration_since(Instant::now()),
            None => inner.url.method_param::<Timeout>(inv.method()),
        };
        // A streaming call's body is set once the connection is ready
        // (`invoke_stream`): its stream is taken only then.
        let (body, idl) = if let Arguments::Stream(_) = inv.arguments() {
            (TriBody::Unary(UnaryBody::empty()), true)
        } else {
            let idl = idl_message(inv.arguments());
            let message = match idl {
                Some(m) => m.clone(),
                None => TripleRequestWrapper::for_invocation(inv)
                    .map_err(|e| RpcError::serialization(format!("cannot encode request: {e}")))?
                    .encode_to_vec()
                    .into(),
            };
            status::check_outgoing(message.len(), inner.payload, "request")?;
            let body = frame::encode_with(&message, inner.compressor)
                .map_err(|e| RpcError::serialization(format!("cannot encode request: {e}")))?;
            (
                TriBody::Unary(UnaryBody::new(Some(body), None)),
                idl.is_some(),
            )
        };
        let method = inv.method();
        let uri = match inner.uris.iter().find(|(m, _)| **m == *method) {
            Some((_, uri)) => uri.clone(),
            None => request_uri(&inner.channel, &inner.path_prefix, inv.method()).map_err(|e| {
                RpcError::serialization(format!("bad request path for {}: {e}", inv.method()))
            })?,
        };
        let mut req = Request::new(body);
        *req.method_mut() = Method::POST;
        *req.uri_mut() = uri;
        *req.version_mut() = Version::HTTP_2;
        // Sized for every header up front: a clone of the fixed headers has no room
        // left, and the two timeout headers made it grow (and rehash) on every call.
        let h = req.headers_mut();
        h.reserve(inner.base_headers.len() + 2 + inv.attachments().len());
        if !inv.attachments().is_empty() {
            headers::put_attachments(h, inv.attachments());
        }
        // The fixed headers win over attachments of the same name.
        for (name, value) in &inner.base_headers {
            h.insert(name.clone(), value.clone());
        }
        let (grpc_timeout, timeout_ms) = inner.timeout_headers(timeout);
        h.insert(GRPC_TIMEOUT_HEADER, grpc_timeout);
        // Java sends the timeout as an attachment too.
        h.insert(TIMEOUT_HEADER, timeout_ms);
        Ok((req, timeout, idl))
    }

    /// A streaming call: the request body is fed from the invocation's stream as the
    /// connection takes it; the replies are a stream (server and bidirectional
    /// streaming) or one message (client streaming). The timeout covers the whole
    /// stream; the stream is taken only once the connection is ready, so a call that
    /// could not connect may be retried, and one that sent anything is not.
    fn invoke_stream(
        &self,
        mut req: Request<TriBody>,
        slot: StreamSlot,
        timeout: Duration,
        method: std::sync::Arc<str>,
        in_flight: BusyGuard,
    ) -> InvokeFuture {
        let inner = self.inner.clone();
        let deadline = Instant::now() + timeout;
        Box::pin(async move {
            let exchange = async {
                let mut sender = inner.channel.sender().await?;
                sender.ready().await.map_err(network)?;
                let messages = slot.take()?;
                let (cancel, cancelled) = tokio::sync::oneshot::channel();
                *req.body_mut() = TriBody::Stream(StreamBody::request(
                    messages,
                    cancelled,
                    inner.compressor,
                    inner.payload,
                ));
                let response = sender.send_request(req);
                if slot.kind() == StreamKind::Bidi {
                    // The replies at once, the response headers read on their first
                    // poll: a bidirectional call's requests may have to flow before
                    // the peer answers anything (grpc-go sends no headers until its
                    // first reply).
                    return Ok(lazy_replies(
                        response,
                        inner.payload,
                        cancel,
                        deadline,
                        in_flight,
                    ));
                }
                let resp = response.await.map_err(network)?;
                if slot.kind().streams_replies() {
                    let trailers: Metadata = Default::default();
                    let (messages, headers) =
                        open_replies(resp, inner.payload, cancel, trailers.clone())?;
                    let messages =
                        MessageStream::new(Deadlined::new(messages, deadline, Some(in_flight)))
                            .with_trailers(trailers);
                    let mut result =
                        RpcResult::value(Payload::Stream(StreamSlot::new(slot.kind(), messages)));
                    if !headers.is_empty() {
                        *result.header_attachments_mut() = headers;
                    }
                    Ok(result)
                } else {
                    let r = read_response(resp, inner.payload, true).await;
                    drop(cancel);
                    drop(in_flight);
                    r
                }
            };
            match tokio::time::timeout(timeout, exchange).await {
                Ok(r) => r,
                Err(_) => Err(RpcError::timeout(format!(
                    "no response from {} for {method} within {} ms",
                    inner.channel.addr(),
                    timeout.as_millis()
                ))),
            }
        })
    }
}

/// `grpc-timeout`, parsed once.
const GRPC_TIMEOUT_HEADER: HeaderName = HeaderName::from_static(headers::GRPC_TIMEOUT);
/// `timeout` (Java's attachment), parsed once.
const TIMEOUT_HEADER: HeaderName = HeaderName::from_static(keys::TIMEOUT_KEY);
/// The response headers read on every call, parsed once (a name given as a string is
/// parsed at each lookup).
const GRPC_STATUS_HEADER: HeaderName = HeaderName::from_static(GRPC_STATUS);
const GRPC_MESSAGE_HEADER: HeaderName = HeaderName::from_static(GRPC_MESSAGE);
const GRPC_ENCODING_HEADER: HeaderName = HeaderName::from_static(headers::GRPC_ENCODING);
const EXCEPTION_CODE_HEADER: HeaderName = HeaderName::from_static(headers::EXCEPTION_CODE);

/// The `grpc-timeout` header of `timeout`, as [`status::format_timeout`] writes it,
/// without formatting machinery or a `String` per call.
fn grpc_timeout_value(timeout: Duration) -> HeaderValue {
    const MAX: u128 = 99_999_999;
    let ns = timeout.as_nanos();
    let ms = ns.div_ceil(1_000_000);
    let (n, unit) = if ms <= MAX {
        (ms, b'm')
    } else {
        let s = ns.div_ceil(1_000_000_000);
        if s <= MAX {
            (s, b'S')
        } else {
            (s.div_ceil(3600).min(MAX), b'H')
        }
    };
    // At most 8 digits, then the unit.
    let mut buf = [0u8; 9];
    buf[8] = unit;
    let mut at = 8;
    let mut n = n;
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    match HeaderValue::from_bytes(&buf[at..]) {
        Ok(v) => v,
        // Digits and a letter are always a valid value.
        Err(_) => HeaderValue::from_static("0m"),
    }
}

/// The URI of `method` on the provider at `addr` whose paths start with `prefix`.
fn request_uri(channel: &Channel, prefix: &str, method: &str) -> Result<Uri, http::Error> {
    Uri::builder()
        .scheme(if channel.is_tls() { "https" } else { "http" })
        .authority(channel.addr())
        .path_and_query(format!("{prefix}{method}"))
        .build()
}

/// The request message of an IDL-mode call: the one argument, a protobuf message.
fn idl_message(args: &Arguments) -> Option<&Bytes> {
    match args {
        Arguments::Encoded { count: 1, encoded } if is_protobuf(encoded.serialization) => {
            Some(&encoded.bytes)
        }
        _ => None,
    }
}

impl Invoker for TripleInvoker {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let span = tracing::debug_span!("triple.call", method = %inv.method(), peer = %self.inner.url.address());
        let (req, timeout, idl) = match self.prepare(&inv) {
            Ok(p) => p,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        // Over `max.pending` calls in flight on the connection: refused at once.
        let in_flight = match self.inner.channel.call_started() {
            Ok(g) => g,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let method = inv.method_arc();
        if let Arguments::Stream(slot) = inv.arguments() {
            let slot = slot.clone();
            drop(inv);
            return Box::pin(
                self.invoke_stream(req, slot, timeout, method, in_flight)
                    .instrument(span),
            );
        }
        drop(inv);
        let inner = self.inner.clone();
        let deadline = Instant::now() + timeout;
        let call = async move {
            let _in_flight = in_flight;
            let exchange = async {
                let mut sender = inner.channel.sender().await?;
                sender.ready().await.map_err(network)?;
                let resp = sender.send_request(req).await.map_err(network)?;
                read_response(resp, inner.payload, idl).await
            };
            match tokio::time::timeout(timeout, exchange).await {
                // A stream the peer reset once the deadline had passed (grpc-go resets
                // it at the `grpc-timeout` it was sent) timed out; the timer may just
                // not have fired yet.
                Ok(Err(e)) if e.kind() == ErrorKind::Network && Instant::now() >= deadline => {
                    Err(RpcError::timeout(format!(
                        "no response from {} for {method} within {} ms ({})",
                        inner.channel.addr(),
                        timeout.as_millis(),
                        e.message()
                    ))
                    .with_source(e))
                }
                Ok(r) => r,
                // Dropping the exchange resets the stream (RST_STREAM CANCEL).
                Err(_) => Err(RpcError::timeout(format!(
                    "no response from {} for {method} within {} ms",
                    inner.channel.addr(),
                    timeout.as_millis()
                ))),
            }
        };
        Box::pin(call.instrument(span))
    }

    fn url(&self) -> &Url {
        &self.inner.url
    }

    fn is_available(&self) -> bool {
        !self.inner.destroyed.load(Ordering::Acquire) && self.inner.channel.is_available()
    }

    fn destroy(&self) {
        self.inner.destroyed.store(true, Ordering::Release);
    }
}

fn network(e: hyper::Error) -> RpcError {
    RpcError::network(format!("HTTP/2 exchange failed: {e}")).with_source(e)
}

type Metadata = std::sync::Arc<std::sync::Mutex<rubbo_common::Attachments>>;

/// The replies of a bidirectional call whose response has not come yet: the first
/// poll waits for the response headers (stored as the stream's headers); a
/// trailers-only error response is the stream's one item.
fn lazy_replies(
    response: impl std::future::Future<Output = Result<http::Response<Incoming>, hyper::Error>>
    + Send
    + 'static,
    payload: i64,
    cancel: tokio::sync::oneshot::Sender<()>,
    deadline: Instant,
    in_flight: BusyGuard,
) -> RpcResult {
    use futures::TryFutureExt;
    let headers: Metadata = Default::default();
    let trailers: Metadata = Default::default();
    let (h, t) = (headers.clone(), trailers.clone());
    let opened = async move {
        let resp = response.await.map_err(network)?;
        let (messages, got) = open_replies(resp, payload, cancel, t)?;
        if let Ok(mut h) = h.lock() {
            *h = got;
        }
        Ok::<_, RpcError>(messages)
    };
    let messages = MessageStream::new(opened.try_flatten_stream());
    let messages = MessageStream::new(Deadlined::new(messages, deadline, Some(in_flight)))
        .with_headers(headers)
        .with_trailers(trailers);
    RpcResult::value(Payload::Stream(StreamSlot::new(StreamKind::Bidi, messages)))
}

/// The `grpc-encoding` of a response (`None`: identity); one we do not take is an
/// `INTERNAL` error, as grpc's clients answer it.
fn response_encoding(h: &HeaderMap) -> Result<Option<Encoding>, RpcError> {
    match headers::get(h, &GRPC_ENCODING_HEADER).map(Encoding::parse) {
        None | Some(Named::Identity) => Ok(None),
        Some(Named::Known(e)) => Ok(Some(e)),
        Some(Named::Unknown) => Err(status::error_for_status(
            Code::Internal,
            &format!(
                "the response's grpc-encoding {:?} is not one this client takes ({})",
                headers::get(h, &GRPC_ENCODING_HEADER).unwrap_or_default(),
                compress::ACCEPTED
            ),
        )),
    }
}

/// Reads the headers of a response whose replies are a stream: a trailers-only
/// response is its status (an error, or an empty stream); otherwise the replies,
/// decoded as the caller polls them until the trailers' status (whose attachments
/// go to `trailers`). Also gives the response headers' attachments.
fn open_replies(
    resp: http::Response<Incoming>,
    payload: i64,
    cancel: tokio::sync::oneshot::Sender<()>,
    trailers: Metadata,
) -> Result<(MessageStream, rubbo_common::Attachments), RpcError> {
    let (parts, body) = resp.into_parts();
    let content_type = headers::get(&parts.headers, http::header::CONTENT_TYPE).unwrap_or("");
    if !content_type.starts_with(GRPC) {
        let code = Code::from_http(parts.status.as_u16());
        return Err(status::error_for_status(
            code,
            &format!(
                "HTTP {} with invalid content-type {content_type:?}",
                parts.status
            ),
        ));
    }
    let header_attachments = headers::attachments_from_response_headers(&parts.headers);
    let messages = if let Some(code) = headers::get(&parts.headers, &GRPC_STATUS_HEADER) {
        let code = Code::from_i32(code.trim().parse().unwrap_or(2));
        if code != Code::Ok {
            let message = parts
                .headers
                .get(&GRPC_MESSAGE_HEADER)
                .map(|m| status::decode_message(m.as_bytes()))
                .unwrap_or_default();
            debug!(status = %code, error = %message, "error response");
            return Err(status::error_for_status(code, &message));
        }
        MessageStream::empty()
    } else {
        let encoding = response_encoding(&parts.headers)?;
        let decoder =
            MessageDecoder::response(body, payload, trailers.clone(), Some(cancel), encoding);
        MessageStream::new(decoder).with_trailers(trailers)
    };
    Ok((messages, header_attachments))
}

/// Reads a unary response: the status from the trailers (or from the headers of a
/// trailers-only response), then the one message: the reply itself in IDL mode
/// (`idl`), a response wrapper otherwise. The trailers' attachments become the
/// result's attachments, the response headers' its header attachments.
async fn read_response(
    resp: http::Response<Incoming>,
    payload: i64,
    idl: bool,
) -> Result<RpcResult, RpcError> {
    let (parts, body) = resp.into_parts();
    let content_type = headers::get(&parts.headers, http::header::CONTENT_TYPE).unwrap_or("");
    if !content_type.starts_with(GRPC) {
        let code = Code::from_http(parts.status.as_u16());
        return Err(status::error_for_status(
            code,
            &format!(
                "HTTP {} with invalid content-type {content_type:?}",
                parts.status
            ),
        ));
    }
    let exception = headers::get(&parts.headers, &EXCEPTION_CODE_HEADER)
        .and_then(|c| c.trim().parse::<i32>().ok())
        .is_some_and(|c| c != 0);
    let limit = if payload > 0 {
        usize::try_from(payload)
            .unwrap_or(usize::MAX)
            .saturating_add(frame::PREFIX_LEN)
    } else {
        usize::MAX
    };
    let collected = Limited::new(body, limit).collect().await.map_err(|e| {
        if e.is::<http_body_util::LengthLimitError>() {
            // As gRPC clients refuse a message over their receive limit: the body is
            // dropped here (the stream is reset, the provider stops sending) and the
            // call fails with `RESOURCE_EXHAUSTED`; no retry makes the reply smaller.
            let message = format!("response message larger than {payload} bytes (payload)");
            warn!(limit = payload, "response too large");
            RpcError::new(ErrorKind::Serialization, message.clone())
                .with_source(Status::new(Code::ResourceExhausted, message))
        } else {
            RpcError::network(format!("response body failed: {e}"))
        }
    })?;
    let trailers = collected.trailers();
    let status_from = trailers
        .filter(|t| t.contains_key(&GRPC_STATUS_HEADER))
        .unwrap_or(&parts.headers);
    let code = match headers::get(status_from, &GRPC_STATUS_HEADER) {
        Some(s) => Code::from_i32(s.trim().parse().unwrap_or(2)),
        None => {
            let code = if parts.status.is_success() {
                Code::Unknown
            } else {
                Code::from_http(parts.status.as_u16())
            };
            return Err(status::error_for_status(
                code,
                &format!("missing grpc-status (HTTP {})", parts.status),
            ));
        }
    };
    if code != Code::Ok {
        let message = status_from
            .get(&GRPC_MESSAGE_HEADER)
            .map(|m| status::decode_message(m.as_bytes()))
            .unwrap_or_default();
        debug!(status = %code, error = %message, "error response");
        return Err(status::error_for_status(code, &message));
    }
    let trailer_attachments = trailers.map(headers::attachments_from);
    let data = collected.to_bytes();
    let encoding = response_encoding(&parts.headers)?;
    let message = frame::decode_unary_with(&data, payload, encoding).map_err(|e| {
        let message = format!("bad response message: {e}");
        match e {
            // A compressed reply that inflates past `payload`.
            TripleError::TooLarge { .. } => {
                RpcError::new(ErrorKind::Serialization, message.clone())
                    .with_source(Status::new(Code::ResourceExhausted, message))
            }
            _ => RpcError::serialization(message),
        }
    })?;
    let mut result = if idl {
        RpcResult::value(Payload::Encoded(Encoded::new(&PROTOBUF, message)))
    } else {
        TripleResponseWrapper::decode_strict(message)
            .and_then(|w| w.into_result(exception))
            .map_err(|e| RpcError::serialization(format!("cannot decode response: {e}")))?
    };
    if let Some(t) = trailer_attachments {
        result.attachments_mut().extend(t);
    }
    // Boxed only when there are some: most responses carry none.
    let from_headers = headers::attachments_from_response_headers(&parts.headers);
    if !from_headers.is_empty() {
        *result.header_attachments_mut() = from_headers;
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::H2Settings;

    fn invoker() -> TripleInvoker {
        let url = Url::parse("tri://127.0.0.1:1/demo.Echo?methods=Echo&application=app").unwrap();
        let channel = Channel::new(
            "127.0.0.1:1".into(),
            H2Settings::default(),
            Duration::from_secs(1),
            None,
            0,
        );
        TripleInvoker::new(url, Arc::new(channel), None)
    }

    fn call(
        invoker: &TripleInvoker,
        left: Duration,
        attachment: Option<(&str, &str)>,
    ) -> HeaderMap {
        let mut inv = Invocation::new("demo.Echo", "Echo");
        inv.set_deadline(Instant::now() + left);
        if let Some((k, v)) = attachment {
            inv.set_attachment(k, v);
        }
        let (req, _, _) = invoker.prepare(&inv).unwrap();
        assert_eq!(req.uri(), "http://127.0.0.1:1/demo.Echo/Echo");
        req.headers().clone()
    }

    #[test]
    fn each_request_carries_the_fixed_headers_and_its_own_timeout() {
        let invoker = invoker();
        let names = |h: &HeaderMap| h.keys().map(|k| k.as_str().to_owned()).collect::<Vec<_>>();
        let fixed = [
            "content-type",
            "te",
            "grpc-accept-encoding",
            "tri-consumer-appname",
            "grpc-timeout",
            "timeout",
        ];
        let mut seen = Vec::new();
        // The same timeout twice (the shared values), then others.
        for secs in [30, 30, 5, 30, 200_000] {
            let h = call(&invoker, Duration::from_secs(secs), None);
            assert_eq!(names(&h), fixed, "in this order");
            let timeout_ms: u64 = headers::get(&h, "timeout").unwrap().parse().unwrap();
            // A little time passes between the deadline and the headers.
            assert!(timeout_ms <= secs * 1000 && timeout_ms + 1000 > secs * 1000);
            seen.push(headers::get(&h, "grpc-timeout").unwrap().to_owned());
        }
        assert!(seen[0].ends_with('m') && seen[2].ends_with('m'), "{seen:?}");
        assert_ne!(seen[1], seen[2]);
        assert!(seen[4].ends_with('S'), "{seen:?}");
        // Attachments go before the fixed headers, which win over one of the same name.
        let h = call(&invoker, Duration::from_secs(1), Some(("trace-id", "t-1")));
        assert_eq!(headers::get(&h, "trace-id"), Some("t-1"));
        assert_eq!(names(&h)[0], "trace-id");
        let h = call(&invoker, Duration::from_secs(1), Some(("te", "gzip")));
        assert_eq!(headers::get(&h, "te"), Some("trailers"));
        assert_eq!(h.get_all("te").iter().count(), 1);
    }

    #[test]
    fn the_grpc_timeout_header_is_what_format_timeout_writes() {
        let cases = [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_micros(1500),
            Duration::from_millis(999),
            Duration::from_millis(1000),
            Duration::from_millis(99_999_999),
            Duration::from_millis(100_000_000),
            Duration::from_secs(200_000),
            Duration::from_secs(99_999_999),
            Duration::from_secs(100_000_000),
            Duration::from_secs(u64::MAX / 4),
            Duration::MAX,
        ];
        for d in cases {
            assert_eq!(
                grpc_timeout_value(d).to_str().unwrap(),
                status::format_timeout(d),
                "{d:?}"
            );
        }
    }
}
