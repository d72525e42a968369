//! The provider side: one HTTP/2 server per bind address, routing each
//! `POST /{service}/{method}` to its exported service, in IDL (protobuf) mode for the
//! methods the provider URL lists in `idl-methods` and in wrapper mode otherwise.
//!
//! One port for HTTP/2 with prior knowledge (gRPC) and HTTP/1.1: HTTP/1.x requests and
//! HTTP/2 requests that are not gRPC are Triple's JSON form ([`crate::rest`]); bytes
//! that are neither get HTTP/1's `400` and a closed connection. An HTTP/1.1 request
//! asking for h2c is upgraded (`upgrade.rs`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use parking_lot::Mutex;
use prost::Message;
use rubbo_common::{
    Arguments, Attachments, Encoded, Invocation, Outcome, Payload, Peer, RpcError, RpcResult, Url,
    keys,
};
use rubbo_remoting::TlsAcceptor;
use rubbo_serialization::{PROTOBUF, is_protobuf};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tracing::{Instrument, debug, info, warn};

use crate::body::{ReqBody, TriBody, UnaryBody};
use crate::coalesce::{Busy, Coalesce};
use crate::compress::{self, CallCoding, Encoding, Named};
use crate::config::{H2Settings, Transport};
use crate::error::TripleError;
use crate::frame;
use crate::headers::{self, GRPC, GRPC_MESSAGE, GRPC_STATUS};
use crate::health;
use crate::json::{GRPC_JSON, JsonCodec, grpc_json};
use crate::native::{self, sniff};
use crate::schemas::Schemas;
use crate::status::{self, Code};
use crate::stream::{MessageDecoder, StreamBody};
use crate::upgrade;
use crate::wrapper::{TripleRequestWrapper, TripleResponseWrapper};
use rubbo_common::executor::{Executions, Exhausted};
use rubbo_common::exporters::{ExporterMap, exporter_key};
use rubbo_common::stream::{MessageStream, StreamKind, StreamSlot};

/// What one server needs to answer requests.
#[derive(Debug, Clone)]
pub(crate) struct Handler {
    pub(crate) exporters: ExporterMap,
    /// The largest request message, in bytes (`payload`; 0 or less: none).
    pub(crate) payload: i64,
    /// The bound on calls at once (`threadpool`, `threads`, `queues`), if any.
    pub(crate) executions: Option<Arc<Executions>>,
    /// What replies are compressed with when the client takes it
    /// (`dubbo.rpc.tri.compressor`; `None`: identity).
    pub(crate) compressor: Option<Encoding>,
    /// The protocol's protobuf schemas (reflection, JSON).
    pub(crate) schemas: Schemas,
    /// The health statuses `Watch` reports.
    pub(crate) health: Arc<health::Statuses>,
    /// Which transport serves HTTP/2 with prior knowledge (`triple.transport`).
    pub(crate) transport: Transport,
}

/// A running server: its accept loop owns every connection task.
#[derive(Debug)]
pub(crate) struct Server {
    local: SocketAddr,
    health: Arc<health::Statuses>,
    executions: Option<Arc<Executions>>,
    stop: watch::Sender<bool>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Server {
    /// Binds `addr` and starts serving.
    pub(crate) async fn bind(
        addr: &str,
        settings: H2Settings,
        handler: Handler,
        grace: Duration,
        tls: Option<TlsAcceptor>,
    ) -> std::io::Result<Server> {
        let listener = TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let health = handler.health.clone();
        let executions = handler.executions.clone();
        let (stop, stopped) = watch::channel(false);
        let span = tracing::debug_span!("triple.server", addr = %local);
        let task = tokio::spawn(
            accept_loop(listener, settings, handler, stopped, grace, tls).instrument(span),
        );
        info!(addr = %local, "triple server listening");
        Ok(Server {
            local,
            health,
            executions,
            stop,
            task: Mutex::new(Some(task)),
        })
    }

    /// The bound address.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The health statuses of its services.
    pub(crate) fn health(&self) -> &health::Statuses {
        &self.health
    }

    /// The bound on calls handled at once, when there is one.
    pub(crate) fn executions(&self) -> Option<Arc<Executions>> {
        self.executions.clone()
    }

    /// Stops accepting, lets every connection finish its calls (GOAWAY), within the
    /// grace period. Health watchers see `NOT_SERVING` first.
    pub(crate) async fn shutdown(&self) {
        self.health.terminate();
        let _ = self.stop.send(true);
        let task = self.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    /// Drops the listener and every connection at once.
    pub(crate) fn abort(&self) {
        if let Some(task) = self.task.lock().take() {
            task.abort();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    settings: H2Settings,
    handler: Handler,
    mut stopped: watch::Receiver<bool>,
    grace: Duration,
    tls: Option<TlsAcceptor>,
) {
    let local = listener.local_addr().ok();
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, remote)) => {
                    let Some(local) = local else { continue };
                    let span = tracing::debug_span!("triple.conn", peer = %remote);
                    let _ = stream.set_nodelay(true);
                    let peer = Arc::new(Peer { remote, local });
                    let (handler, stopped) = (handler.clone(), stopped.clone());
                    match tls.clone() {
                        None => {
                            let conn = serve_conn(stream, peer, settings, handler, stopped);
                            conns.spawn(conn.instrument(span));
                        }
                        // The handshake (bounded) runs in the connection's own task.
                        Some(tls) => {
                            let conn = async move {
                                match tls.accept(stream, remote).await {
                                    Ok(s) => serve_conn(s, peer, settings, handler, stopped).await,
                                    Err(e) => warn!(peer = %remote, error = %e, "TLS handshake failed, connection closed"),
                                }
                            };
                            conns.spawn(conn.instrument(span));
                        }
                    }
                }
                Err(e) => {
                    warn!(error = %e, "accept failed");
                    // Out of file descriptors and the like: give the system a moment.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
            _ = stopped.changed() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener);
    let drained =
        tokio::time::timeout(grace, async { while conns.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        warn!(
            connections = conns.len(),
            "grace period over, closing connections"
        );
    }
}

/// How long a new connection may take to show whether it is HTTP/2 with prior
/// knowledge (hyper's HTTP/1 header read timeout).
const SNIFF_TIMEOUT: Duration = Duration::from_secs(30);

async fn serve_conn<IO>(
    mut stream: IO,
    peer: Arc<Peer>,
    settings: H2Settings,
    handler: Handler,
    stopped: watch::Receiver<bool>,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    if handler.transport == Transport::Hyper {
        return serve_hyper(stream, peer, settings, handler, stopped).await;
    }
    match tokio::time::timeout(SNIFF_TIMEOUT, sniff::sniff(&mut stream)).await {
        Ok(Ok(sniff::Sniffed::Preface)) => {
            let busy = Arc::new(Busy::default());
            native::serve(stream, peer, settings, Arc::new(handler), busy, stopped).await;
        }
        Ok(Ok(sniff::Sniffed::Other(prefix))) => {
            let stream = sniff::Rewind::new(prefix, stream);
            serve_hyper(stream, peer, settings, handler, stopped).await;
        }
        Ok(Err(e)) => debug!(error = %e, "connection failed before its first bytes"),
        Err(_) => debug!("no request within {SNIFF_TIMEOUT:?}, connection closed"),
    }
}

async fn serve_hyper<IO>(
    stream: IO,
    peer: Arc<Peer>,
    settings: H2Settings,
    handler: Handler,
    mut stopped: watch::Receiver<bool>,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new());
    builder
        .http2()
        .timer(TokioTimer::new())
        .initial_stream_window_size(settings.initial_window)
        .initial_connection_window_size(settings.initial_window)
        .max_frame_size(settings.max_frame)
        .max_header_list_size(settings.max_header_list)
        .max_concurrent_streams(settings.max_concurrent_streams);
    // An h2c upgrade accepted on this connection (`upgrade.rs`) waits here for the
    // HTTP/1 side to end.
    let upgrades = upgrade::Slot::default();
    // Responses finished while other calls are still running are written together.
    let busy = Arc::new(Busy::default());
    let io = Coalesce::new(stream, busy.clone(), 0);
    // Shared by the calls of the connection: one reference count per call.
    let handler = Arc::new(handler);
    let service = calls(
        handler.clone(),
        peer.clone(),
        Some((upgrades.clone(), settings)),
        busy.clone(),
    );
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        _ = stopped.changed() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    match result {
        Ok(()) => debug!("connection closed"),
        Err(e) => debug!(error = %e, "connection ended with an error"),
    }
    let pending = upgrades.lock().take();
    if let Some(pending) = pending {
        // The upgraded connection runs on the same (coalescing) stream.
        serve_upgraded(pending, settings, calls(handler, peer, None, busy), stopped).await;
    }
}

/// The service of one connection: every request to the handler; on HTTP/1.1, with
/// `upgrades`, an h2c upgrade request to [`upgrade::accept`].
fn calls(
    handler: Arc<Handler>,
    peer: Arc<Peer>,
    upgrades: Option<(upgrade::Slot, H2Settings)>,
    busy: Arc<Busy>,
) -> impl hyper::service::Service<
    Request<Incoming>,
    Response = Response<TriBody>,
    Error = Infallible,
    Future: Send + 'static,
> + Clone
+ Send
+ 'static {
    service_fn(move |req: Request<Incoming>| {
        let handler = handler.clone();
        let peer = peer.clone();
        let upgrade = match &upgrades {
            Some((slot, settings)) if upgrade::is_h2c(&req) => Some((slot.clone(), *settings)),
            _ => None,
        };
        let working = busy.enter();
        async move {
            let response = match upgrade {
                // Rare: boxed, so the future of every call stays small (hyper moves
                // it into a task of its own).
                Some((slot, settings)) => {
                    Box::pin(upgrade::accept(req, &slot, handler.payload, settings)).await
                }
                None => handler.handle(req.map(ReqBody::Hyper), peer).await,
            };
            drop(working);
            Ok::<_, Infallible>(response)
        }
    })
}

/// Serves HTTP/2 on a connection upgraded from HTTP/1.1, stream 1 being the
/// upgraded request.
async fn serve_upgraded<S>(
    pending: upgrade::Pending,
    settings: H2Settings,
    service: S,
    mut stopped: watch::Receiver<bool>,
) where
    S: hyper::service::HttpService<Incoming, ResBody = TriBody> + Send + 'static,
    S::Future: Send + 'static,
{
    let io = match pending.connection().await {
        Ok(io) => io,
        Err(e) => {
            debug!(error = %e, "h2c upgrade: the connection was not handed over");
            return;
        }
    };
    debug!("connection upgraded to h2c");
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .initial_stream_window_size(settings.initial_window)
        .initial_connection_window_size(settings.initial_window)
        .max_frame_size(settings.max_frame)
        .max_header_list_size(settings.max_header_list)
        .max_concurrent_streams(settings.max_concurrent_streams);
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    // The server began stopping while the HTTP/1 side ran: that change was seen.
    if *stopped.borrow() {
        conn.as_mut().graceful_shutdown();
    }
    let result = tokio::select! {
        r = conn.as_mut() => r,
        _ = stopped.changed() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    match result {
        Ok(()) => debug!("upgraded connection closed"),
        Err(e) => debug!(error = %e, "upgraded connection ended with an error"),
    }
}

/// A refusal before the call reached a service: trailers-only, `grpc-status` and
/// `grpc-message` in the one HEADERS frame.
pub(crate) fn refuse(http: StatusCode, code: Code, message: &str) -> Response<UnaryBody> {
    let mut r = Response::new(UnaryBody::empty());
    *r.status_mut() = http;
    let h = r.headers_mut();
    h.insert(http::header::CONTENT_TYPE, HeaderValue::from_static(GRPC));
    put_status(h, code, message);
    r
}

pub(crate) fn put_status(h: &mut HeaderMap, code: Code, message: &str) {
    let value = match code {
        Code::Ok => HeaderValue::from_static("0"),
        _ => HeaderValue::from(code.as_i32()),
    };
    h.insert(GRPC_STATUS, value);
    if !message.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&status::encode_message(message)) {
            h.insert(GRPC_MESSAGE, v);
        }
    }
}

/// The status of a call over the server's bound.
fn exhausted(full: &Exhausted, inv: &Invocation) -> (Code, String) {
    let local = inv.peer().map(|p| p.local);
    if full.should_log() {
        let bound = full.bound();
        warn!(service = %inv.interface(), method = %inv.method(), threads = bound.threads, queues = bound.queues, rejected = full.rejected(), "thread pool is exhausted, request rejected");
    }
    let (ip, port) = local.map_or((String::new(), 0), |a| (a.ip().to_string(), a.port()));
    (Code::ResourceExhausted, full.message("tri", &ip, port))
}

/// The status of a request message that could not be read.
fn code_for_decode(e: &TripleError) -> Code {
    match e {
        TripleError::TooLarge { .. } => Code::ResourceExhausted,
        TripleError::Compressed => Code::Unimplemented,
        _ => Code::Internal,
    }
}

impl Handler {
    pub(crate) async fn handle(&self, req: Request<ReqBody>, peer: Arc<Peer>) -> Response<TriBody> {
        let received = Instant::now();
        if crate::rest::wants_rest(&req) {
            // Rare: boxed, so the future of every gRPC call stays small.
            return Box::pin(self.rest(req, peer, received))
                .await
                .map(TriBody::from);
        }
        // A cheap clone (shared bytes), not a copy of the path.
        let uri = req.uri().clone();
        let path = uri.path();
        let content_type = headers::get(req.headers(), http::header::CONTENT_TYPE).unwrap_or("");
        if !content_type.starts_with(GRPC) {
            warn!(path, content_type, "not a gRPC request");
            return tri(refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Code::Unimplemented,
                &format!(
                    "content-type {content_type:?} is not supported: only application/grpc \
                     and application/grpc+proto are served for now"
                ),
            ));
        }
        if req.method() != Method::POST {
            return tri(refuse(
                StatusCode::METHOD_NOT_ALLOWED,
                Code::Unimplemented,
                "gRPC requests are POST",
            ));
        }
        let request_encoding = match headers::get(req.headers(), headers::GRPC_ENCODING) {
            None => None,
            Some(enc) => match Encoding::parse(enc) {
                Named::Identity => None,
                Named::Known(e) => Some(e),
                Named::Unknown => {
                    warn!(path, encoding = enc, "unsupported grpc-encoding");
                    let mut r = refuse(
                        StatusCode::OK,
                        Code::Unimplemented,
                        &format!(
                            "grpc-encoding '{enc}' is not supported ({})",
                            compress::ACCEPTED
                        ),
                    );
                    r.headers_mut().insert(
                        compress::GRPC_ACCEPT_ENCODING,
                        HeaderValue::from_static(compress::ACCEPTED),
                    );
                    return tri(r);
                }
            },
        };
        let coding = CallCoding::new(
            request_encoding,
            headers::get(req.headers(), compress::GRPC_ACCEPT_ENCODING),
            self.compressor,
        );
        let deadline = headers::get(req.headers(), headers::GRPC_TIMEOUT)
            .and_then(status::parse_timeout)
            .or_else(|| {
                headers::get(req.headers(), headers::SERVICE_TIMEOUT)
                    .and_then(|ms| ms.trim().parse::<u64>().ok())
                    .map(Duration::from_millis)
            })
            .map(|t| received + t);
        let call = self.call(req, path, peer, deadline, coding);
        let response = match deadline {
            Some(d) => match tokio::time::timeout_at(d.into(), call).await {
                Ok(r) => r,
                Err(_) => {
                    warn!(path, "deadline exceeded, call cancelled");
                    Err((
                        Code::DeadlineExceeded,
                        format!(
                            "deadline exceeded after {} ms",
                            received.elapsed().as_millis()
                        ),
                    ))
                }
            },
            None => call.await,
        };
        response.unwrap_or_else(|(code, message)| tri(refuse(StatusCode::OK, code, &message)))
    }

    /// Reads, routes and runs one call, then writes its response.
    async fn call(
        &self,
        req: Request<ReqBody>,
        path: &str,
        peer: Arc<Peer>,
        deadline: Option<Instant>,
        coding: CallCoding,
    ) -> Result<Response<TriBody>, (Code, String)> {
        let (service_path, method) = match path.trim_start_matches('/').rsplit_once('/') {
            Some((s, m)) if !s.is_empty() && !m.is_empty() => (s, m),
            _ => {
                warn!(path, "bad path");
                return Ok(tri(refuse(
                    StatusCode::NOT_FOUND,
                    Code::Unimplemented,
                    &format!("Invoker for gRPC not found: bad path {path}"),
                )));
            }
        };
        if crate::builtin::is_builtin(service_path) {
            // Rare: boxed, so the future of every call stays small.
            return Box::pin(self.builtin(req, &peer, service_path, method, deadline, coding))
                .await;
        }
        let group = headers::get(req.headers(), headers::SERVICE_GROUP);
        let version = headers::get(req.headers(), headers::SERVICE_VERSION);
        let exported = {
            let map = self.exporters.read();
            match map.find(service_path, group, version) {
                Some(e) => e.clone(),
                None => {
                    let key = exporter_key(group, service_path, version);
                    let known: Vec<&str> = map.keys().collect();
                    warn!(service = %key, method, "unknown service");
                    return Ok(tri(refuse(
                        StatusCode::NOT_FOUND,
                        Code::Unimplemented,
                        &format!(
                            "Invoker for gRPC not found: {key} (method {method}) in [{}]",
                            known.join(", ")
                        ),
                    )));
                }
            }
        };
        let idl = is_idl(exported.invoker.url(), method);
        // JSON messages (`application/grpc+json`) are transcoded with the schema.
        let mut json = None;
        if idl {
            let content_type =
                headers::get(req.headers(), http::header::CONTENT_TYPE).unwrap_or("");
            if content_type == GRPC_JSON {
                let schema = self.schemas.method(&exported.interface, method);
                json = Some(schema.map(|m| JsonCodec::new(&m)).ok_or_else(|| {
                    (
                        Code::Unimplemented,
                        format!(
                            "{method} of {} has no schema to read JSON with",
                            exported.interface
                        ),
                    )
                })?);
            } else if content_type != GRPC && content_type != headers::GRPC_PROTO {
                warn!(
                    service_path,
                    method, content_type, "IDL method, not protobuf"
                );
                return Err((
                    Code::Unimplemented,
                    format!(
                        "content-type {content_type:?} is not supported by {method}: it is \
                         served in IDL (protobuf) mode, as application/grpc, \
                         application/grpc+proto or application/grpc+json"
                    ),
                ));
            }
        }
        let mut attachments = headers::attachments_from(req.headers());
        let app = headers::get(req.headers(), headers::CONSUMER_APP_NAME).map(str::to_owned);
        // IDL rpcs and wrapper-mode `StreamObserver` methods alike: each message is
        // a protobuf message or a wrapper, which the service decodes.
        let streaming = stream_kind(exported.invoker.url(), method);
        // A streaming call: its requests as they come, decoded as the service reads
        // them (so the peer's window opens only as fast as that).
        // Compressed requests: the service sees their encoding (Java has no such
        // view; the gRPC interop service checks it).
        let mut compressed = None;
        let (arguments, parameter_types, serialize_type) = if let Some(kind) = streaming {
            let decoder = MessageDecoder::request(req.into_body(), self.payload, coding.request);
            let mut requests = MessageStream::new(decoder);
            if let Some(codec) = &json {
                requests = codec.requests_to_protobuf(requests);
            }
            compressed = coding.request;
            (
                Arguments::Stream(StreamSlot::new(kind, requests)),
                None,
                None,
            )
        } else {
            let (message, was_compressed) = self
                .read_message(req, &peer, method, coding.request)
                .await?;
            if was_compressed {
                compressed = coding.request;
            }
            self.unary_arguments(message, &peer, method, idl, json.as_ref())?
        };
        let mut inv = Invocation::new(exported.interface.clone(), method).with_arguments(arguments);
        if let Some(types) = parameter_types {
            inv = inv.with_parameter_types(types);
        }
        if let Some(v) = &exported.version {
            inv = inv.with_version(v.clone());
        }
        if let Some(g) = &exported.group {
            inv = inv.with_group(g.clone());
        }
        if let Some(app) = app {
            attachments.insert(keys::REMOTE_APPLICATION_KEY.to_owned(), app.into());
        }
        if let Some(e) = compressed {
            attachments.insert(compress::COMPRESSOR_KEY.to_owned(), e.name().into());
        }
        *inv.attachments_mut() = attachments;
        let remote = peer.remote;
        inv.set_peer(peer);
        if let Some(d) = deadline {
            inv.set_deadline(d);
        }
        debug!(service = %exported.interface, method, peer = %remote, streaming = ?streaming, "invoke");
        // Over the bound: RESOURCE_EXHAUSTED at once, with the dubbo protocol's text.
        let _running = match &self.executions {
            None => None,
            Some(pool) => Some(
                pool.try_admit()
                    .map_err(|e| exhausted(&e, &inv))?
                    .run()
                    .await,
            ),
        };
        let mut result = exported.invoker.invoke(inv).await;
        if let Some(codec) = &json {
            result = codec.result_to_json(result);
        }
        let max = self.payload;
        let response = match (serialize_type, streaming) {
            (Some(t), _) => tri(respond(result, &t, method, coding, max)),
            (None, Some(kind)) if kind.streams_replies() => {
                respond_stream(result, method, deadline, coding, max)
            }
            (None, _) => tri(respond_idl(result, method, coding, max)),
        };
        Ok(if json.is_some() {
            grpc_json(response)
        } else {
            response
        })
    }

    /// The arguments of a unary call: its one message, as it came (IDL mode) or
    /// unwrapped, with the wrapper's parameter types and serialization.
    #[allow(clippy::type_complexity)]
    fn unary_arguments(
        &self,
        message: Bytes,
        peer: &Peer,
        method: &str,
        idl: bool,
        json: Option<&JsonCodec>,
    ) -> Result<(Arguments, Option<String>, Option<String>), (Code, String)> {
        let mut message = message;
        if let Some(codec) = json {
            message = codec.request_to_protobuf(&message).map_err(|e| {
                warn!(peer = %peer.remote, method, error = %e, "bad JSON request message");
                (
                    Code::InvalidArgument,
                    format!("the request message is not its JSON: {e}"),
                )
            })?;
        }
        // IDL mode: the message is the request, handed on as it came. Wrapper mode:
        // the arguments inside the wrapper, and the wrapper's serialization answers.
        let (arguments, parameter_types, serialize_type) = if idl {
            let encoded = Encoded::new(&PROTOBUF, message);
            (Arguments::Encoded { count: 1, encoded }, None, None)
        } else {
            let wrapper = TripleRequestWrapper::decode_strict(message).map_err(|e| {
                warn!(peer = %peer.remote, method, error = %e, "bad request wrapper");
                (code_for_decode(&e), e.to_string())
            })?;
            let arguments = wrapper.arguments().map_err(|e| {
                warn!(peer = %peer.remote, method, error = %e, "undecodable arguments");
                (Code::Internal, format!("cannot decode the arguments: {e}"))
            })?;
            let types = wrapper.descriptor();
            (arguments, Some(types), Some(wrapper.serialize_type))
        };
        Ok((arguments, parameter_types, serialize_type))
    }

    /// Reads the one request message of a unary call (within `payload`, also once
    /// decompressed with the call's `encoding`), and whether it was compressed.
    pub(crate) async fn read_message(
        &self,
        req: Request<ReqBody>,
        peer: &Peer,
        method: &str,
        encoding: Option<Encoding>,
    ) -> Result<(Bytes, bool), (Code, String)> {
        let limit = if self.payload > 0 {
            usize::try_from(self.payload)
                .unwrap_or(usize::MAX)
                .saturating_add(frame::PREFIX_LEN)
        } else {
            usize::MAX
        };
        let body = match Limited::new(req.into_body(), limit).collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                warn!(peer = %peer.remote, method, limit, "request too large");
                return Err((
                    Code::ResourceExhausted,
                    format!(
                        "request message larger than {} bytes (payload)",
                        self.payload
                    ),
                ));
            }
            Err(e) => {
                debug!(peer = %peer.remote, error = %e, "request body failed");
                return Err((Code::Cancelled, format!("request body failed: {e}")));
            }
        };
        let compressed = body.first().is_some_and(|f| f & 1 != 0);
        let message = frame::decode_unary_with(&body, self.payload, encoding).map_err(|e| {
            warn!(peer = %peer.remote, method, error = %e, "bad request message");
            (code_for_decode(&e), e.to_string())
        })?;
        Ok((message, compressed))
    }
}

/// The streaming shape of `method` (IDL, or wrapper mode) of the service exported
/// at `url`, from its `stream-methods` (`None`: unary).
pub(crate) fn stream_kind(url: &Url, method: &str) -> Option<StreamKind> {
    StreamKind::of_method(url.get_param(keys::STREAM_METHODS_KEY)?, method)
}

/// A unary response as a Triple body.
pub(crate) fn tri(r: Response<UnaryBody>) -> Response<TriBody> {
    r.map(TriBody::from)
}

/// The response of a call whose replies are a stream: the headers at once (with the
/// result's header attachments), then each message as the stream yields it and the
/// connection can take it, then trailers with the result's attachments and the
/// status (an error mid-stream is the status; past `deadline`, `DEADLINE_EXCEEDED`;
/// a message over `max` bytes, `RESOURCE_EXHAUSTED`).
fn respond_stream(
    result: Result<RpcResult, RpcError>,
    method: &str,
    deadline: Option<Instant>,
    coding: CallCoding,
    max: i64,
) -> Response<TriBody> {
    let mut result = match result {
        Ok(r) => r,
        Err(e) => return tri(failed(&e, method)),
    };
    let header_attachments = result.take_header_attachments();
    let (outcome, attachments) = result.into_parts();
    let messages = match outcome {
        Outcome::Value(Payload::Stream(slot)) => match slot.take() {
            Ok(s) => s,
            Err(e) => return tri(failed(&e, method)),
        },
        // One reply, sent as a stream of one.
        Outcome::Value(Payload::Encoded(e)) if is_protobuf(e.serialization) => {
            MessageStream::once(e.bytes)
        }
        Outcome::Value(Payload::Null) => MessageStream::empty(),
        Outcome::Value(_) => {
            warn!(
                method,
                "streaming method returned a value that is not a stream"
            );
            return tri(refuse(
                StatusCode::OK,
                Code::Internal,
                &format!("{method} is a streaming method but returned no stream"),
            ));
        }
        Outcome::Exception(e) => {
            let e = RpcError::from_biz(e);
            return tri(refuse(StatusCode::OK, Code::Unknown, e.message()));
        }
    };
    let encoding = coding.reply(&header_attachments);
    let mut r = Response::new(TriBody::Stream(StreamBody::response(
        messages,
        attachments,
        deadline,
        encoding,
        max,
    )));
    let h = r.headers_mut();
    headers::put_attachments(h, &header_attachments);
    h.insert(http::header::CONTENT_TYPE, HeaderValue::from_static(GRPC));
    put_encoding(h, encoding);
    r
}

/// Whether `method` of the service exported at `url` is served in IDL mode: it is
/// listed in `idl-methods`; or the service has IDL methods and this is none of its
/// methods (so its dispatcher answers `UNIMPLEMENTED`, not the wrapper decoder).
pub(crate) fn is_idl(url: &Url, method: &str) -> bool {
    let listed = |key: &str| {
        url.get_param(key)
            .is_some_and(|list| list.split(',').any(|m| m.trim() == method))
    };
    match url.get_param(keys::IDL_METHODS_KEY) {
        Some(list) if !list.trim().is_empty() => {
            listed(keys::IDL_METHODS_KEY) || !listed(keys::METHODS_KEY)
        }
        _ => false,
    }
}

/// The response of an IDL-mode call: the reply message in the body, the result's
/// header attachments in the response headers, its attachments and `grpc-status`
/// 0 in the trailers, or an error status (a business exception too, as Java's IDL
/// mode sends it: `UNKNOWN` with the message, no exception object). A reply over
/// `max` bytes (`payload`) is not sent: `RESOURCE_EXHAUSTED`.
pub(crate) fn respond_idl(
    result: Result<RpcResult, RpcError>,
    method: &str,
    coding: CallCoding,
    max: i64,
) -> Response<UnaryBody> {
    let mut result = match result {
        Ok(r) => r,
        Err(e) => return failed(&e, method),
    };
    let header_attachments = result.take_header_attachments();
    let (outcome, attachments) = result.into_parts();
    let message = match outcome {
        Outcome::Value(Payload::Encoded(e)) if is_protobuf(e.serialization) => e.bytes,
        // An empty message: every field at its default.
        Outcome::Value(Payload::Null) => Bytes::new(),
        Outcome::Value(_) => {
            warn!(
                method,
                "IDL method returned a value that is not a protobuf message"
            );
            return refuse(
                StatusCode::OK,
                Code::Internal,
                &format!(
                    "{method} is an IDL method but returned a value that is not a protobuf message"
                ),
            );
        }
        Outcome::Exception(e) => {
            debug!(method, exception = %e, "business exception");
            let e = RpcError::from_biz(e);
            return refuse(StatusCode::OK, Code::Unknown, e.message());
        }
    };
    if let Err(e) = status::check_outgoing(message.len(), max, "reply") {
        warn!(method, error = %e, "reply too large");
        return failed(&e, method);
    }
    let encoding = coding.reply(&header_attachments);
    let data = match frame::encode_with(&message, encoding) {
        Ok(d) => d,
        Err(e) => {
            warn!(method, error = %e, "cannot frame the response");
            return refuse(StatusCode::OK, Code::Internal, &e.to_string());
        }
    };
    answered(data, &attachments, &header_attachments, encoding)
}

/// A call that failed before it produced an outcome: its status, trailers-only.
fn failed(e: &RpcError, method: &str) -> Response<UnaryBody> {
    debug!(method, error = %e, "call failed");
    refuse(
        StatusCode::OK,
        status::code_for_error(e),
        status::message_for_error(e),
    )
}

/// A successful response: the framed message `data`, `header_attachments` in the
/// headers, `attachments` and `grpc-status` 0 in the trailers.
fn answered(
    data: Bytes,
    attachments: &Attachments,
    header_attachments: &Attachments,
    encoding: Option<Encoding>,
) -> Response<UnaryBody> {
    let mut trailers = HeaderMap::new();
    headers::put_attachments(&mut trailers, attachments);
    put_status(&mut trailers, Code::Ok, "");
    let mut r = Response::new(UnaryBody::new(Some(data), Some(trailers)));
    let h = r.headers_mut();
    headers::put_attachments(h, header_attachments);
    h.insert(http::header::CONTENT_TYPE, HeaderValue::from_static(GRPC));
    put_encoding(h, encoding);
    r
}

/// The response headers about compression: what the messages are compressed with
/// (`grpc-encoding`, when they are) and what requests may be (`grpc-accept-encoding`).
fn put_encoding(h: &mut HeaderMap, encoding: Option<Encoding>) {
    if let Some(e) = encoding {
        h.insert(headers::GRPC_ENCODING, HeaderValue::from_static(e.name()));
    }
    h.insert(
        compress::GRPC_ACCEPT_ENCODING,
        HeaderValue::from_static(compress::ACCEPTED),
    );
}

/// The response of a call that reached the service: the outcome in the body (also a
/// business exception, flagged by `tri-exception-code`), the header attachments in
/// the headers, the attachments and `grpc-status` 0 in the trailers; or an error
/// status (`RESOURCE_EXHAUSTED` for a reply over `max` bytes, `payload`).
fn respond(
    result: Result<RpcResult, RpcError>,
    serialize_type: &str,
    method: &str,
    coding: CallCoding,
    max: i64,
) -> Response<UnaryBody> {
    let mut result = match result {
        Ok(r) => r,
        Err(e) => return failed(&e, method),
    };
    let header_attachments = result.take_header_attachments();
    let (outcome, attachments) = result.into_parts();
    let encoding = coding.reply(&header_attachments);
    let cannot_encode = |e: &dyn std::fmt::Display| {
        warn!(method, error = %e, "cannot encode the response");
        refuse(
            StatusCode::OK,
            Code::Internal,
            &format!("cannot encode the response: {e}"),
        )
    };
    let wrapped = match TripleResponseWrapper::for_outcome(&outcome, serialize_type) {
        Ok(w) => w.encode_to_vec(),
        Err(e) => return cannot_encode(&e),
    };
    if let Err(e) = status::check_outgoing(wrapped.len(), max, "reply") {
        warn!(method, error = %e, "reply too large");
        return failed(&e, method);
    }
    let data = match frame::encode_with(&wrapped, encoding) {
        Ok(d) => d,
        Err(e) => return cannot_encode(&e),
    };
    let mut r = answered(data, &attachments, &header_attachments, encoding);
    if let Outcome::Exception(e) = &outcome {
        let h = r.headers_mut();
        debug!(method, exception = %e, "business exception");
        h.insert(
            headers::EXCEPTION_CODE,
            HeaderValue::from_static(status::BIZ_EXCEPTION_CODE),
        );
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idl_methods_and_unknown_methods_of_an_idl_service_are_served_unwrapped() {
        let idl = Url::parse("tri://h:1/p.Greeter?methods=Greet&idl-methods=Greet").unwrap();
        assert!(is_idl(&idl, "Greet"));
        assert!(
            is_idl(&idl, "Shout"),
            "its dispatcher answers UNIMPLEMENTED"
        );
        let wrapper = Url::parse("tri://h:1/a.Echo?methods=echo,ping").unwrap();
        assert!(!is_idl(&wrapper, "echo"));
        assert!(!is_idl(&wrapper, "unknown"));
        let mixed = Url::parse("tri://h:1/a.M?methods=greet,echo&idl-methods=greet").unwrap();
        assert!(is_idl(&mixed, "greet"));
        assert!(!is_idl(&mixed, "echo"));
    }
}
