//! The provider side: one remoting server per bind address, an exporter map per
//! server keyed by `{group}/{path}:{version}`, and the request handler that routes
//! each request to its service.

use std::net::SocketAddr;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use std::time::{Duration, Instant};

use rubbo_common::keys;
use rubbo_common::{Invocation, InvokeFuture, Peer, RpcError, RpcResult};
use rubbo_remoting::{ConnectionInfo, Handler, Request, Response, Status};
use tracing::{debug, warn};

use crate::body;
use rubbo_common::exporters::{Exported, ExporterMap, exporter_key};

use crate::codec::{self, DecodedRequest};
use crate::status::status_for_error;

/// Routes requests of one server to its exported services.
#[derive(Debug, Clone)]
pub(crate) struct DubboHandler {
    pub(crate) exporters: ExporterMap,
    pub(crate) payload: i64,
}

impl Handler for DubboHandler {
    fn handle(&self, req: Request, conn: &ConnectionInfo) -> BoxFuture<'static, Option<Response>> {
        let (id, serialization, two_way) = (req.id, req.serialization, req.two_way);
        let endpoints = &conn.endpoints;
        let conn = Link {
            peer: conn.peer,
            local: conn.local,
        };
        let payload = self.payload;
        // Decoding, routing and building the invocation happen here, before the future
        // exists: it keeps only what crosses the service's await, so it stays small
        // (its size decides how costly its allocation and every move of it are).
        let answer = match self.start(req, conn, endpoints) {
            Ok(call) => {
                return async move {
                    let result = call.call.await;
                    if !two_way {
                        return None;
                    }
                    let reply = call.reply;
                    Some(reply.answer(finish(result, reply, payload, conn), conn))
                }
                .boxed();
            }
            Err(failure) => two_way.then(|| Reply::error(id, serialization, failure, conn)),
        };
        futures::future::ready(answer).boxed()
    }
}

type Failure = (Status, String);

/// The two addresses of the connection a request came on (copied into the call).
#[derive(Debug, Clone, Copy)]
struct Link {
    peer: SocketAddr,
    local: SocketAddr,
}

/// How to answer one request.
#[derive(Debug, Clone, Copy)]
struct Reply {
    id: i64,
    serialization: u8,
    /// The consumer reads response attachments (its dubbo version says so).
    with_attachments: bool,
    /// The expected size of the response body.
    capacity: usize,
}

impl Reply {
    fn answer(self, encoded: Result<bytes::Bytes, Failure>, conn: Link) -> Response {
        match encoded {
            Ok(body) => Response::ok(self.id, self.serialization, body),
            Err(failure) => Self::error(self.id, self.serialization, failure, conn),
        }
    }

    fn error(id: i64, serialization: u8, (status, text): Failure, conn: Link) -> Response {
        debug!(id, status = status.as_u8(), peer = %conn.peer, error = %text, "error response");
        Response::new(id, serialization, status, codec::encode_error_text(&text))
    }
}

/// A request on its way to its service.
struct Pending {
    call: InvokeFuture,
    reply: Reply,
}

/// The response body for a call's outcome: a business exception is a result, any
/// other error an error status.
fn finish(
    result: Result<RpcResult, RpcError>,
    reply: Reply,
    payload: i64,
    conn: Link,
) -> Result<bytes::Bytes, Failure> {
    let result = match result {
        Ok(r) => r,
        Err(e) if e.is_biz() => {
            RpcResult::from_exception(e.biz_exception().cloned().unwrap_or_else(|| {
                rubbo_common::BizException::new(
                    "java.lang.RuntimeException",
                    Some(e.message().to_owned()),
                )
            }))
        }
        Err(e) => return Err((status_for_error(&e), e.message().to_owned())),
    };
    let body = body::encode(reply.capacity, |buf| {
        codec::encode_response(&result, reply.with_attachments, buf)
    })
    .map_err(|e| {
        warn!(error = %e, "cannot encode the response");
        (
            Status::BAD_RESPONSE,
            format!("Fail to encode response: {e}"),
        )
    })?;
    if payload > 0 && body.len() as i64 > payload {
        return Err((
            Status::SERIALIZATION_ERROR,
            format!(
                "Data length too large: {}, max payload: {}, channel: {} -> {}",
                body.len(),
                payload,
                conn.local,
                conn.peer
            ),
        ));
    }
    Ok(body)
}

impl DubboHandler {
    /// Decodes `req`, finds its service and starts the call.
    fn start(&self, req: Request, conn: Link, endpoints: &Arc<Peer>) -> Result<Pending, Failure> {
        let received = Instant::now();
        if let Some(broken) = &req.broken {
            warn!(peer = %conn.peer, reason = %broken, "bad request");
            return Err((
                Status::BAD_REQUEST,
                format!("Fail to decode request due to: {broken}"),
            ));
        }
        let decoded = codec::decode_request(req.serialization, &req.body).map_err(|e| {
            warn!(peer = %conn.peer, error = %e, "undecodable request body");
            (
                Status::BAD_REQUEST,
                format!("Fail to decode request due to: {e}"),
            )
        })?;
        let reply = Reply {
            id: req.id,
            serialization: req.serialization,
            with_attachments: codec::supports_response_attachments(&decoded.dubbo_version),
            // Responses are usually about as large as requests (echo-like calls).
            capacity: req.body.len().clamp(64, 64 * 1024),
        };
        let exported = self.lookup(&decoded, conn.local)?;
        let mut inv = Invocation::new(exported.interface.clone(), decoded.method)
            .with_version(decoded.version)
            .with_parameter_types(decoded.parameter_types)
            .with_arguments(decoded.arguments);
        let routing = decoded.routing;
        if let Some(g) = routing.group {
            inv = inv.with_group(g);
        }
        // The consumer's `timeout` is this call's deadline on the provider side.
        if let Some(ms) = routing.timeout_ms {
            inv.set_deadline(received + Duration::from_millis(ms));
        }
        *inv.attachments_mut() = decoded.attachments;
        // The codec keeps `token` out of the map (it reads it as routing); the token
        // filter reads it from the invocation, as Java's does.
        if let Some(token) = routing.token {
            inv.set_attachment(keys::TOKEN_KEY, &*token);
        }
        inv.set_peer(endpoints.clone());
        Ok(Pending {
            call: exported.invoker.invoke(inv),
            reply,
        })
    }

    fn lookup(&self, req: &DecodedRequest, local: SocketAddr) -> Result<Arc<Exported>, Failure> {
        let path = req.service_path();
        let version = Some(req.service_version());
        let group = req.routing.group.as_deref();
        let map = self.exporters.read();
        if let Some(e) = map.find_exact(path, group, version) {
            return Ok(e.clone());
        }
        let key = exporter_key(group, path, version);
        let known: Vec<&str> = map.keys().collect();
        warn!(service = %key, method = %req.method, "unknown service");
        Err((
            Status::SERVICE_NOT_FOUND,
            format!(
                "Not found exported service: {key}:{} in [{}], may be version or group mismatch (method {}({}))",
                local.port(),
                known.join(", "),
                req.method,
                req.parameter_types
            ),
        ))
    }
}
