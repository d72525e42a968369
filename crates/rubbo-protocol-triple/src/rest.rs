//! Triple's plain-HTTP form (Java 3.3's "REST" basic mapping): any HTTP/1.x request,
//! and HTTP/2 requests that are not gRPC, at `/{interface}/{method}` with a JSON body,
//! answered with the JSON of the result:
//!
//! ```text
//! curl -H 'content-type: application/json' -d '["hi"]' \
//!     http://127.0.0.1:50051/org.rubbo.interop.InteropService/echo
//! "hi"
//! ```
//!
//! The body is a JSON array with one element per parameter, or one bare JSON value for
//! a method of one parameter (an array body always means the argument list); no body
//! means no arguments. The call runs as a generic call (`$invoke` with the method
//! name and no parameter types, so the method is found by name, as Java's
//! `GenericFilter` allows for a method that is not overloaded), through the provider
//! filters like every call; Java objects in the result come back as JSON objects of
//! their fields. Errors map their gRPC status to HTTP as Java does
//! (`{"status":"404","message":"..."}`). Group and version come from
//! `tri-service-group` / `tri-service-version` (or `rest-service-group` /
//! `rest-service-version`).
//!
//! IDL (protobuf) methods take and answer their messages' JSON instead, transcoded
//! with the service's schema (`json.rs`): `-d '{"name":"x"}'`.
//!
//! An HTTP/1.1 request asking to upgrade to h2c is upgraded (`upgrade.rs`) and served
//! here as an HTTP/2 request on stream 1.

use std::sync::Arc;
use std::time::Instant;

use crate::body::ReqBody;
use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use rubbo_common::descriptor::GENERIC_DESC;
use rubbo_common::exporters::exporter_key;
use rubbo_common::{
    Arguments, ErrorKind, GENERIC_METHOD, Invocation, InvokeFuture, Outcome, Peer, RpcError,
    RpcResult, Value, generic_arguments, keys,
};
use rubbo_hessian2::json_to_value;
use serde_json::{Map as JsonMap, Value as Json, json};
use tracing::{debug, warn};

use crate::body::UnaryBody;
use crate::headers;
use crate::server::Handler;
use crate::status::{self, Code};

/// `content-type` of every answer.
pub(crate) const JSON: &str = "application/json";
/// Group and version headers of Java's REST mapping, beside Triple's.
const REST_SERVICE_GROUP: &str = "rest-service-group";
const REST_SERVICE_VERSION: &str = "rest-service-version";

/// Whether a request is for this form rather than gRPC: every HTTP/1.x request, and
/// HTTP/2 ones whose content type is not gRPC's.
pub(crate) fn wants_rest(req: &Request<ReqBody>) -> bool {
    if req.version() != http::Version::HTTP_2 {
        return true;
    }
    let ct = headers::get(req.headers(), http::header::CONTENT_TYPE).unwrap_or("");
    !ct.starts_with(headers::GRPC)
}

/// The HTTP status Java answers a gRPC status with (`TriRpcStatus` → HTTP).
pub(crate) fn http_status(code: Code) -> StatusCode {
    match code.as_i32() {
        0 => StatusCode::OK,
        1 => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
        3 | 9 | 11 => StatusCode::BAD_REQUEST,
        4 => StatusCode::GATEWAY_TIMEOUT,
        5 => StatusCode::NOT_FOUND,
        6 | 10 => StatusCode::CONFLICT,
        7 => StatusCode::FORBIDDEN,
        8 => StatusCode::TOO_MANY_REQUESTS,
        12 => StatusCode::NOT_IMPLEMENTED,
        14 => StatusCode::SERVICE_UNAVAILABLE,
        16 => StatusCode::UNAUTHORIZED,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

fn json_response(status: StatusCode, body: &Json) -> Response<UnaryBody> {
    let text = serde_json::to_vec(body).unwrap_or_else(|_| b"null".to_vec());
    let mut r = Response::new(UnaryBody::new(Some(Bytes::from(text)), None));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(http::header::CONTENT_TYPE, HeaderValue::from_static(JSON));
    r
}

/// Java's error body: `{"status":"<http code>","message":"..."}`.
pub(crate) fn error(status: StatusCode, message: &str) -> Response<UnaryBody> {
    json_response(
        status,
        &json!({ "status": status.as_u16().to_string(), "message": message }),
    )
}

/// The result of `call`, or a timeout past `deadline`.
pub(crate) async fn within(
    deadline: Option<Instant>,
    received: Instant,
    call: InvokeFuture,
) -> Result<RpcResult, RpcError> {
    match deadline {
        Some(d) => match tokio::time::timeout_at(d.into(), call).await {
            Ok(r) => r,
            Err(_) => Err(RpcError::timeout(format!(
                "deadline exceeded after {} ms",
                received.elapsed().as_millis()
            ))),
        },
        None => call.await,
    }
}

/// A result value as plain JSON, as Java's JSON codec writes objects: a Java object
/// (or a generalized one, a map with its `class`) as an object of its fields, an enum
/// as its name, binary as base64, a date as epoch milliseconds.
fn plain_json(v: &Value) -> Json {
    use base64::Engine as _;
    match v {
        Value::Null | Value::Ref(_) => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => json!(i),
        Value::Long(i) => json!(i),
        Value::Double(d) => serde_json::Number::from_f64(*d).map_or(Json::Null, Json::Number),
        Value::String(s) => Json::String(s.clone()),
        Value::Binary(b) => Json::String(base64::engine::general_purpose::STANDARD.encode(b)),
        Value::Date(ms) => json!(ms),
        Value::List(l) => Json::Array(l.items.iter().map(plain_json).collect()),
        Value::Map(m) => {
            let mut o = JsonMap::new();
            for (k, v) in &m.entries {
                let key = match k {
                    Value::String(s) => s.clone(),
                    other => match plain_json(other) {
                        Json::String(s) => s,
                        j => j.to_string(),
                    },
                };
                // A generalized POJO (the generic call's result) names its class: not
                // part of its JSON.
                if key == "class" && matches!(v, Value::String(_)) {
                    continue;
                }
                o.insert(key, plain_json(v));
            }
            Json::Object(o)
        }
        Value::Object(obj) => {
            // An enum (Hessian writes it as an object with its `name`).
            if obj.fields.len() == 1 && &*obj.fields[0].0 == "name" {
                if let Value::String(n) = &obj.fields[0].1 {
                    return Json::String(n.clone());
                }
            }
            Json::Object(
                obj.fields
                    .iter()
                    .map(|(k, v)| (k.to_string(), plain_json(v)))
                    .collect(),
            )
        }
    }
}

/// The call's arguments from the body: a JSON array is the argument list, any other
/// JSON value the one argument, an empty body no arguments.
fn arguments(body: &[u8]) -> Result<Vec<Value>, String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let j: Json = serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    Ok(match j {
        Json::Array(items) => items.iter().map(json_to_value).collect(),
        one => vec![json_to_value(&one)],
    })
}

impl Handler {
    /// Serves one request of the plain-HTTP form.
    pub(crate) async fn rest(
        &self,
        req: Request<ReqBody>,
        peer: Arc<Peer>,
        received: Instant,
    ) -> Response<UnaryBody> {
        let path = req.uri().path().to_owned();
        let Some((service_path, method)) = path
            .trim_start_matches('/')
            .rsplit_once('/')
            .filter(|(s, m)| !s.is_empty() && !m.is_empty())
        else {
            warn!(path, "HTTP request for no service");
            return error(
                StatusCode::NOT_FOUND,
                &format!("no service at {path}: expected /{{interface}}/{{method}}"),
            );
        };
        let h = req.headers();
        let mut attachments = headers::attachments_from(h);
        let group = headers::get(h, headers::SERVICE_GROUP)
            .or_else(|| headers::get(h, REST_SERVICE_GROUP))
            .map(str::to_owned);
        let version = headers::get(h, headers::SERVICE_VERSION)
            .or_else(|| headers::get(h, REST_SERVICE_VERSION))
            .map(str::to_owned);
        let deadline = headers::get(h, headers::SERVICE_TIMEOUT)
            .and_then(|ms| ms.trim().parse::<u64>().ok())
            .map(|ms| received + std::time::Duration::from_millis(ms));
        let exported = {
            let map = self.exporters.read();
            match map.find(service_path, group.as_deref(), version.as_deref()) {
                Some(e) => e.clone(),
                None => {
                    let key = exporter_key(group.as_deref(), service_path, version.as_deref());
                    warn!(service = %key, method, "HTTP request for an unknown service");
                    return error(
                        StatusCode::NOT_FOUND,
                        &format!("service {key} not found (method {method})"),
                    );
                }
            }
        };
        let limit = if self.payload > 0 {
            usize::try_from(self.payload).unwrap_or(usize::MAX)
        } else {
            usize::MAX
        };
        let body = match Limited::new(req.into_body(), limit).collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                warn!(peer = %peer.remote, method, limit, "HTTP request too large");
                return error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("request body larger than {} bytes (payload)", self.payload),
                );
            }
            Err(e) => {
                debug!(peer = %peer.remote, error = %e, "HTTP request body failed");
                return error(
                    StatusCode::BAD_REQUEST,
                    &format!("request body failed: {e}"),
                );
            }
        };
        if crate::server::is_idl(exported.invoker.url(), method) {
            let call = crate::json::RestCall {
                method: method.to_owned(),
                exported,
                attachments,
                peer,
                deadline,
                received,
            };
            return self.rest_idl(call, body).await;
        }
        let args = match arguments(&body) {
            Ok(a) => a,
            Err(e) => {
                warn!(peer = %peer.remote, method, error = %e, "bad HTTP request body");
                return error(StatusCode::BAD_REQUEST, &e);
            }
        };
        let mut inv = Invocation::new(exported.interface.clone(), GENERIC_METHOD)
            .with_parameter_types(GENERIC_DESC)
            .with_arguments(Arguments::Values(generic_arguments(method, &[], args)));
        if let Some(v) = &exported.version {
            inv = inv.with_version(v.clone());
        }
        if let Some(g) = &exported.group {
            inv = inv.with_group(g.clone());
        }
        attachments.insert(keys::GENERIC_KEY.to_owned(), "true".into());
        *inv.attachments_mut() = attachments;
        let remote = peer.remote;
        inv.set_peer(peer);
        if let Some(d) = deadline {
            inv.set_deadline(d);
        }
        debug!(service = %exported.interface, method, peer = %remote, "HTTP invoke");
        let result = within(deadline, received, exported.invoker.invoke(inv)).await;
        match result {
            Ok(r) => match r.into_parts().0 {
                Outcome::Value(p) => match p.to_value() {
                    Ok(v) => json_response(StatusCode::OK, &plain_json(&v)),
                    Err(e) => {
                        warn!(method, error = %e, "cannot write the result as JSON");
                        error(StatusCode::INTERNAL_SERVER_ERROR, e.message())
                    }
                },
                Outcome::Exception(e) => {
                    let e = e.unwrap_generic();
                    debug!(method, exception = %e, "business exception over HTTP");
                    error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        &format!("{}: {}", e.class, e.message.as_deref().unwrap_or("")),
                    )
                }
            },
            // No such method: no mapping for the path, 404 as Java's REST layer answers.
            Err(e) if e.kind() == ErrorKind::MethodNotFound => {
                warn!(method, error = %e, "HTTP request for an unknown method");
                error(StatusCode::NOT_FOUND, e.message())
            }
            Err(e) => {
                debug!(method, error = %e, "HTTP call failed");
                error(http_status(status::code_for_error(&e)), e.message())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_array_body_is_the_argument_list_and_anything_else_one_argument() {
        assert_eq!(arguments(b"").unwrap(), Vec::<Value>::new());
        assert_eq!(arguments(b" \n").unwrap(), Vec::<Value>::new());
        assert_eq!(
            arguments(br#"["hi", 7]"#).unwrap(),
            vec![Value::from("hi"), Value::Int(7)]
        );
        assert_eq!(arguments(br#""hi""#).unwrap(), vec![Value::from("hi")]);
        assert!(arguments(b"{nope").unwrap_err().contains("not JSON"));
    }

    #[test]
    fn results_are_plain_json_and_errors_map_like_java() {
        let user = Value::Object(
            rubbo_hessian2::Object::new("org.rubbo.interop.User")
                .with_field("id", 5)
                .with_field("name", "five")
                .with_field(
                    "gender",
                    Value::Object(
                        rubbo_hessian2::Object::new("org.rubbo.interop.Gender")
                            .with_field("name", "MALE"),
                    ),
                ),
        );
        assert_eq!(
            plain_json(&user),
            json!({"id": 5, "name": "five", "gender": "MALE"})
        );
        assert_eq!(http_status(Code::NotFound), StatusCode::NOT_FOUND);
        assert_eq!(
            http_status(Code::Unimplemented),
            StatusCode::NOT_IMPLEMENTED
        );
        assert_eq!(
            http_status(Code::DeadlineExceeded),
            StatusCode::GATEWAY_TIMEOUT
        );
        assert_eq!(
            http_status(Code::Unknown),
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }
}
