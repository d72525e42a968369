//! The provider side: one remoting server per bind address, an exporter map per
//! server keyed by `{group}/{path}:{version}`, and the request handler that routes
//! each request to its service.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use parking_lot::RwLock;
use rubbo_common::keys::{self, Executes};
use rubbo_common::{
    BoxInvoker, ErrorKind, Invocation, InvokeFuture, Outcome, Payload, RpcError, RpcResult,
};
use rubbo_remoting::{ConnectionInfo, Handler, Request, Response, Status};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::{debug, warn};

use crate::codec::{self, DecodedRequest};
use crate::status::status_for_error;
use crate::{body, descriptor, generic};

/// The exporter-map key: `{group}/{path}:{version}`, where version `0.0.0` or `*`
/// and an empty group count as absent (Java's `GroupServiceKeyCache`).
pub(crate) fn exporter_key(group: Option<&str>, path: &str, version: Option<&str>) -> String {
    let version = version.filter(|v| !v.is_empty() && *v != "0.0.0" && *v != "*");
    rubbo_common::service_key(group, path, version)
}

/// One exported service.
#[derive(Debug)]
pub(crate) struct Exported {
    pub(crate) invoker: BoxInvoker,
    /// The interface name, shared into every invocation.
    interface: Arc<str>,
    /// The exporter key's parts, to match requests without building the key.
    group: Option<String>,
    version: Option<String>,
    /// `executes`: the service's concurrency limit, when set.
    limit: Option<Arc<Semaphore>>,
    token: Option<String>,
}

impl Exported {
    pub(crate) fn new(invoker: BoxInvoker) -> Self {
        let url = invoker.url();
        let executes = url.param::<Executes>();
        let token = url
            .get_param(keys::TOKEN_KEY)
            .filter(|t| !t.is_empty() && *t != "false")
            .map(str::to_owned);
        let norm = |v: Option<&str>| {
            v.filter(|v| !v.is_empty() && *v != "0.0.0" && *v != "*")
                .map(str::to_owned)
        };
        Exported {
            interface: Arc::from(url.service_interface().unwrap_or_default()),
            group: url.group().map(str::to_owned),
            version: norm(url.version()),
            limit: (executes > 0).then(|| Arc::new(Semaphore::new(executes as usize))),
            invoker,
            token,
        }
    }
}

impl Exported {
    /// Whether a request for `group` / `version` reaches this service (stored under
    /// its bare path key).
    fn matches(&self, group: Option<&str>, version: Option<&str>) -> bool {
        let version = version.filter(|v| !v.is_empty() && *v != "0.0.0" && *v != "*");
        self.group.as_deref() == group.filter(|g| !g.is_empty())
            && self.version.as_deref() == version
    }
}

/// The services of one server, by exporter key and by path (the per-request lookup
/// goes by path and compares group and version, so it builds no key string).
#[derive(Debug, Default)]
pub(crate) struct Exporters {
    by_key: BTreeMap<String, Arc<Exported>>,
    by_path: HashMap<String, Vec<(String, Arc<Exported>)>>,
}

impl Exporters {
    pub(crate) fn insert(&mut self, key: String, path: &str, e: Arc<Exported>) {
        self.remove(&key);
        self.by_path
            .entry(path.to_owned())
            .or_default()
            .push((key.clone(), e.clone()));
        self.by_key.insert(key, e);
    }

    pub(crate) fn remove(&mut self, key: &str) {
        if self.by_key.remove(key).is_some() {
            self.by_path.retain(|_, v| {
                v.retain(|(k, _)| k != key);
                !v.is_empty()
            });
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    fn find(
        &self,
        path: &str,
        group: Option<&str>,
        version: Option<&str>,
    ) -> Option<&Arc<Exported>> {
        self.by_path
            .get(path)?
            .iter()
            .map(|(_, e)| e)
            .find(|e| e.matches(group, version))
    }

    fn keys(&self) -> impl Iterator<Item = &str> {
        self.by_key.keys().map(String::as_str)
    }
}

/// The shared exporter table of one server.
pub(crate) type ExporterMap = Arc<RwLock<Exporters>>;

/// Routes requests of one server to its exported services.
#[derive(Debug, Clone)]
pub(crate) struct DubboHandler {
    pub(crate) exporters: ExporterMap,
    pub(crate) payload: i64,
}

impl Handler for DubboHandler {
    fn handle(&self, req: Request, conn: &ConnectionInfo) -> BoxFuture<'static, Option<Response>> {
        let (id, serialization, two_way) = (req.id, req.serialization, req.two_way);
        let conn = *conn;
        let payload = self.payload;
        // Decoding, routing and building the invocation happen here, before the future
        // exists: it keeps only what crosses the service's await, so it stays small
        // (its size decides how costly its allocation and every move of it are).
        let answer = match self.start(req, conn) {
            Ok(Started::Call(call)) => {
                return async move {
                    let result = call.call.await;
                    drop(call.permit);
                    if !two_way {
                        return None;
                    }
                    let reply = call.reply;
                    Some(reply.answer(finish(result, reply, payload, conn), conn))
                }
                .boxed();
            }
            // A one-way request gets no answer: nothing to encode.
            Ok(Started::Answered(result, reply)) => {
                two_way.then(|| reply.answer(finish(Ok(result), reply, payload, conn), conn))
            }
            Err(failure) => two_way.then(|| Reply::error(id, serialization, failure, conn)),
        };
        futures::future::ready(answer).boxed()
    }
}

type Failure = (Status, String);

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
    fn answer(self, encoded: Result<bytes::Bytes, Failure>, conn: ConnectionInfo) -> Response {
        match encoded {
            Ok(body) => Response::ok(self.id, self.serialization, body),
            Err(failure) => Self::error(self.id, self.serialization, failure, conn),
        }
    }

    fn error(
        id: i64,
        serialization: u8,
        (status, text): Failure,
        conn: ConnectionInfo,
    ) -> Response {
        debug!(id, status = status.as_u8(), peer = %conn.peer, error = %text, "error response");
        Response::new(id, serialization, status, codec::encode_error_text(&text))
    }
}

/// A request on its way to its service.
struct Pending {
    call: InvokeFuture,
    /// The service's `executes` slot, held until the call ends.
    permit: Option<OwnedSemaphorePermit>,
    reply: Reply,
}

enum Started {
    /// The service is working on it.
    Call(Pending),
    /// Answered without the service (`$echo`).
    Answered(RpcResult, Reply),
}

/// The response body for a call's outcome: a business exception is a result, any
/// other error an error status.
fn finish(
    result: Result<RpcResult, RpcError>,
    reply: Reply,
    payload: i64,
    conn: ConnectionInfo,
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
    fn start(&self, req: Request, conn: ConnectionInfo) -> Result<Started, Failure> {
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
        let status = |e: RpcError| (status_for_error(&e), e.message().to_owned());
        if let Some(token) = &exported.token {
            if decoded.routing.token.as_deref() != Some(token.as_str()) {
                return Err(status(RpcError::new(
                    ErrorKind::Forbidden,
                    format!(
                        "invalid token from consumer {}, the service requires a token",
                        conn.peer
                    ),
                )));
            }
        }
        let permit = match &exported.limit {
            Some(sem) => Some(sem.clone().try_acquire_owned().map_err(|_| {
                status(RpcError::new(
                    ErrorKind::LimitExceeded,
                    format!(
                        "Server side ({}) thread pool is exhausted: service {} reached its executes limit",
                        conn.local, decoded.path
                    ),
                ))
            })?),
            None => None,
        };
        if &*decoded.method == "$echo" && &*decoded.parameter_types == descriptor::ECHO_DESC {
            // EchoFilter: the argument comes back as sent.
            let value = match decoded.arguments {
                rubbo_common::Arguments::Encoded { encoded, .. } => Payload::Encoded(encoded),
                other => Payload::Value(
                    other
                        .to_values()
                        .map_err(status)?
                        .into_iter()
                        .next()
                        .unwrap_or_default(),
                ),
            };
            return Ok(Started::Answered(RpcResult::value(value), reply));
        }
        let generic = generic::is_generic(&decoded.method)
            && &*decoded.parameter_types == descriptor::GENERIC_DESC;
        let mut inv = Invocation::new(exported.interface.clone(), decoded.method)
            .with_version(decoded.version)
            .with_parameter_types(decoded.parameter_types)
            .with_arguments(decoded.arguments);
        if let Some(g) = decoded
            .attachments
            .get(keys::GROUP_KEY)
            .and_then(|v| v.as_str())
        {
            inv = inv.with_group(g.to_owned());
        }
        *inv.attachments_mut() = decoded.attachments;
        let call = if generic {
            let real = generic::unwrap_generic(&inv).map_err(status)?;
            call_generic(exported.invoker.invoke(real))
        } else {
            exported.invoker.invoke(inv)
        };
        Ok(Started::Call(Pending {
            call,
            permit,
            reply,
        }))
    }

    fn lookup(&self, req: &DecodedRequest, local: SocketAddr) -> Result<Arc<Exported>, Failure> {
        let path = req.service_path();
        let version = Some(req.service_version());
        let group = req.routing.group.as_deref();
        let map = self.exporters.read();
        if let Some(e) = map.find(path, group, version) {
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

/// A generic call's result, generalized as Java's `GenericFilter` does: values to
/// maps and lists, exceptions wrapped.
fn call_generic(call: InvokeFuture) -> InvokeFuture {
    Box::pin(async move {
        let (outcome, attachments) = call.await?.into_parts();
        let outcome = match outcome {
            Outcome::Value(p) => Outcome::Value(match p {
                Payload::Null => Payload::Null,
                p => Payload::Value(generic::generalize(p.to_value()?)),
            }),
            Outcome::Exception(e) => Outcome::Exception(generic::wrap_exception(e)),
        };
        Ok(RpcResult::from_parts(outcome, attachments))
    })
}
