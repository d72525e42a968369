//! JSON for IDL (protobuf) methods, transcoded with the service's schema
//! ([`Schemas`]) in the proto3 JSON mapping, as Java writes and reads it
//! (`JsonPbCodec`: `JsonFormat.printer().omittingInsignificantWhitespace()`, whose
//! output leaves out fields at their default and names fields in lowerCamelCase, and
//! `JsonFormat.parser().ignoringUnknownFields()`):
//!
//! - HTTP/1.1 (and HTTP/2 that is not gRPC), Triple's plain form:
//!   `curl -H 'content-type: application/json' -d '{"name":"x"}'
//!   http://host:port/org.rubbo.interop.Greeter/Greet` answers the reply message as
//!   JSON. The body is the request message (Java: a protobuf method has one
//!   parameter, and the whole body is it). A body that is not the message's JSON is
//!   `400` with Java's error body.
//! - gRPC with `content-type: application/grpc+json`: each length-prefixed message is
//!   the message's JSON, and so are the replies (`content-type:
//!   application/grpc+json`), unary and streaming alike. A message that is not the
//!   message's JSON fails the call with `INVALID_ARGUMENT`. Java 3.3's gRPC codec
//!   does not look at the `+json` suffix (`GrpcCompositeCodec` parses every IDL
//!   message as protobuf), so a Java server cannot answer such a call; this follows
//!   the gRPC meaning of the content type instead.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderValue, Response, StatusCode};
use prost::Message;
use prost_reflect::{DeserializeOptions, DynamicMessage, MessageDescriptor, MethodDescriptor};
use rubbo_common::exporters::Exported;
use rubbo_common::stream::MessageStream;
use rubbo_common::{
    Arguments, Attachments, Encoded, ErrorKind, Invocation, Outcome, Payload, Peer, RpcError,
    RpcResult,
};
use rubbo_serialization::{PROTOBUF, is_protobuf};
use tracing::{debug, warn};

use crate::body::{TriBody, UnaryBody};
use crate::rest::{self, JSON};
use crate::server::Handler;
use crate::status::{self, Code};

/// The gRPC content type whose messages are JSON.
pub(crate) const GRPC_JSON: &str = "application/grpc+json";

/// The JSON forms of one IDL rpc: its request and reply message types.
#[derive(Debug, Clone)]
pub(crate) struct JsonCodec {
    input: MessageDescriptor,
    output: MessageDescriptor,
}

impl JsonCodec {
    /// The codec of `method`, from its schema.
    pub(crate) fn new(method: &MethodDescriptor) -> Self {
        JsonCodec {
            input: method.input(),
            output: method.output(),
        }
    }

    /// The protobuf encoding of the request message written as `json` (an empty body
    /// is the empty message).
    pub(crate) fn request_to_protobuf(&self, json: &[u8]) -> Result<Bytes, String> {
        to_protobuf(&self.input, json)
    }

    /// The JSON of the reply message encoded as `protobuf`.
    pub(crate) fn reply_to_json(&self, protobuf: &[u8]) -> Result<Bytes, RpcError> {
        to_json(&self.output, protobuf)
    }

    /// A request stream of JSON messages as protobuf ones: a message that is not the
    /// request's JSON ends it with `INVALID_ARGUMENT`.
    pub(crate) fn requests_to_protobuf(&self, requests: MessageStream) -> MessageStream {
        let input = self.input.clone();
        MessageStream::new(requests.map(move |m| {
            m.and_then(|json| to_protobuf(&input, &json).map_err(|e| invalid(&input, &e)))
        }))
    }

    /// A reply stream of protobuf messages as JSON ones.
    pub(crate) fn replies_to_json(&self, replies: MessageStream) -> MessageStream {
        let output = self.output.clone();
        MessageStream::new(replies.map(move |m| m.and_then(|pb| to_json(&output, &pb))))
    }

    /// The call's result with its reply message as JSON (a stream of replies too;
    /// the bytes keep their protobuf tag, for the response writer).
    pub(crate) fn result_to_json(
        &self,
        result: Result<RpcResult, RpcError>,
    ) -> Result<RpcResult, RpcError> {
        let mut result = result?;
        let headers = result.take_header_attachments();
        let (outcome, attachments) = result.into_parts();
        let outcome = match outcome {
            Outcome::Value(Payload::Encoded(e)) if is_protobuf(e.serialization) => {
                Outcome::Value(protobuf(self.reply_to_json(&e.bytes)?))
            }
            Outcome::Value(Payload::Null) => Outcome::Value(protobuf(self.reply_to_json(&[])?)),
            Outcome::Value(Payload::Stream(slot)) => {
                let replies = self.replies_to_json(slot.take()?);
                Outcome::Value(Payload::Stream(rubbo_common::stream::StreamSlot::new(
                    slot.kind(),
                    replies,
                )))
            }
            other => other,
        };
        let mut r = RpcResult::from_parts(outcome, attachments);
        if !headers.is_empty() {
            *r.header_attachments_mut() = headers;
        }
        Ok(r)
    }
}

/// The error of a message that is not `desc`'s JSON.
fn invalid(desc: &MessageDescriptor, e: &str) -> RpcError {
    crate::stream::stream_error(
        Code::InvalidArgument,
        &format!("the message is not the JSON of {}: {e}", desc.full_name()),
    )
}

fn protobuf(bytes: Bytes) -> Payload {
    Payload::Encoded(Encoded::new(&PROTOBUF, bytes))
}

fn to_protobuf(desc: &MessageDescriptor, json: &[u8]) -> Result<Bytes, String> {
    if json.iter().all(u8::is_ascii_whitespace) {
        return Ok(Bytes::new());
    }
    let mut de = serde_json::Deserializer::from_slice(json);
    let options = DeserializeOptions::new().deny_unknown_fields(false);
    let message = DynamicMessage::deserialize_with_options(desc.clone(), &mut de, &options)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|e| e.to_string())?;
    Ok(Bytes::from(message.encode_to_vec()))
}

fn to_json(desc: &MessageDescriptor, protobuf: &[u8]) -> Result<Bytes, RpcError> {
    let message = DynamicMessage::decode(desc.clone(), protobuf).map_err(|e| {
        RpcError::serialization(format!(
            "the reply is not a {} message: {e}",
            desc.full_name()
        ))
    })?;
    serde_json::to_vec(&message)
        .map(Bytes::from)
        .map_err(|e| RpcError::serialization(format!("cannot write the reply as JSON: {e}")))
}

/// The content type of a gRPC response whose messages are JSON.
pub(crate) fn grpc_json(mut r: Response<TriBody>) -> Response<TriBody> {
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(GRPC_JSON),
    );
    r
}

/// What the plain-HTTP form needs to call an IDL method.
#[derive(Debug)]
pub(crate) struct RestCall {
    pub(crate) exported: Arc<Exported>,
    pub(crate) method: String,
    pub(crate) attachments: Attachments,
    pub(crate) peer: Arc<Peer>,
    pub(crate) deadline: Option<Instant>,
    pub(crate) received: Instant,
}

impl Handler {
    /// Serves one plain-HTTP request to an IDL method: `body` is the request
    /// message's JSON, the answer the reply's.
    pub(crate) async fn rest_idl(&self, call: RestCall, body: Bytes) -> Response<UnaryBody> {
        let RestCall {
            exported,
            method,
            attachments,
            peer,
            deadline,
            received,
        } = call;
        let Some(schema) = self.schemas.method(&exported.interface, &method) else {
            warn!(service = %exported.interface, method, "HTTP request for an unknown IDL method");
            return rest::error(
                StatusCode::NOT_FOUND,
                &format!(
                    "no method {method} in the described service {}",
                    exported.interface
                ),
            );
        };
        if schema.is_client_streaming() || schema.is_server_streaming() {
            return rest::error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &format!("{method} is a streaming rpc: call it with gRPC"),
            );
        }
        let codec = JsonCodec::new(&schema);
        let message = match codec.request_to_protobuf(&body) {
            Ok(m) => m,
            Err(e) => {
                warn!(peer = %peer.remote, method, error = %e, "bad JSON request message");
                return rest::error(
                    StatusCode::BAD_REQUEST,
                    &format!(
                        "the body is not the JSON of {}: {e}",
                        schema.input().full_name()
                    ),
                );
            }
        };
        let mut inv = Invocation::new(exported.interface.clone(), method.as_str()).with_arguments(
            Arguments::Encoded {
                count: 1,
                encoded: Encoded::new(&PROTOBUF, message),
            },
        );
        if let Some(v) = &exported.version {
            inv = inv.with_version(v.clone());
        }
        if let Some(g) = &exported.group {
            inv = inv.with_group(g.clone());
        }
        *inv.attachments_mut() = attachments;
        let remote = peer.remote;
        inv.set_peer(peer);
        if let Some(d) = deadline {
            inv.set_deadline(d);
        }
        debug!(service = %exported.interface, method, peer = %remote, "HTTP invoke (IDL, JSON)");
        let result = rest::within(deadline, received, exported.invoker.invoke(inv)).await;
        match codec.result_to_json(result).map(|r| r.into_parts().0) {
            Ok(Outcome::Value(Payload::Encoded(e))) => {
                let mut r = Response::new(UnaryBody::new(Some(e.bytes), None));
                r.headers_mut()
                    .insert(http::header::CONTENT_TYPE, HeaderValue::from_static(JSON));
                r
            }
            Ok(Outcome::Value(_)) => rest::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("{method} returned a value that is not a protobuf message"),
            ),
            Ok(Outcome::Exception(e)) => {
                debug!(method, exception = %e, "business exception over HTTP");
                let e = RpcError::from_biz(e);
                rest::error(StatusCode::INTERNAL_SERVER_ERROR, e.message())
            }
            Err(e) if e.kind() == ErrorKind::MethodNotFound => {
                rest::error(StatusCode::NOT_FOUND, status::message_for_error(&e))
            }
            Err(e) => {
                debug!(method, error = %e, "HTTP call failed");
                // The status the method failed with, as gRPC carries it.
                rest::error(
                    rest::http_status(status::code_for_error(&e)),
                    status::message_for_error(&e),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schemas::Schemas;

    fn codec() -> JsonCodec {
        let s = Schemas::default();
        JsonCodec::new(&s.method("grpc.health.v1.Health", "Check").unwrap())
    }

    #[test]
    fn json_and_protobuf_go_both_ways_in_the_proto3_mapping() {
        let c = codec();
        let pb = c
            .request_to_protobuf(br#"{"service":"a.B","unknown":1}"#)
            .unwrap();
        assert_eq!(
            crate::health::request(&pb).unwrap().service,
            "a.B",
            "unknown fields are ignored, as Java's parser does"
        );
        assert_eq!(c.request_to_protobuf(b" ").unwrap(), Bytes::new());
        let reply = crate::health::HealthCheckResponse { status: 1 }.encode_to_vec();
        assert_eq!(
            &c.reply_to_json(&reply).unwrap()[..],
            br#"{"status":"SERVING"}"#
        );
        // Defaults are left out, as Java's printer does.
        assert_eq!(&c.reply_to_json(&[]).unwrap()[..], b"{}");
    }

    #[test]
    fn bad_json_is_refused_with_the_reason() {
        let c = codec();
        assert!(c.request_to_protobuf(b"{nope").is_err());
        let e = c.request_to_protobuf(br#"{"service":5}"#).unwrap_err();
        assert!(!e.is_empty());
        assert!(
            c.request_to_protobuf(br#"{"service":"a"} trailing"#)
                .is_err()
        );
    }
}
