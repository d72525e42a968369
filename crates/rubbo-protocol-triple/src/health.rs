//! gRPC health checking (`grpc.health.v1.Health`, the protocol of
//! `grpc/health/v1/health.proto`) on every Triple server, as Java Dubbo 3.3 serves it
//! (`TriHealthImpl`): `Check` with an empty service name asks about the server
//! (`SERVING` while it serves), with a service name about that service (`SERVING` when
//! it is exported here, by interface name or service key; gRPC's `NOT_FOUND` status
//! otherwise). `Watch` (a server stream) is not served yet.
//!
//! The two messages are written here with prost's derive rather than generated: they
//! are two fields in all, and the protocol crate must not need `protoc` to build.

use bytes::Bytes;
use prost::Message;
use rubbo_common::exporters::ExporterMap;
use rubbo_common::{Encoded, Payload, RpcResult};
use rubbo_serialization::PROTOBUF;

use crate::status::Code;

/// The health service's gRPC name.
pub(crate) const SERVICE: &str = "grpc.health.v1.Health";

/// `HealthCheckRequest`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct HealthCheckRequest {
    /// The service asked about; empty: the server.
    #[prost(string, tag = "1")]
    pub(crate) service: String,
}

/// `HealthCheckResponse`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct HealthCheckResponse {
    /// `ServingStatus`: 0 UNKNOWN, 1 SERVING, 2 NOT_SERVING, 3 SERVICE_UNKNOWN.
    #[prost(int32, tag = "1")]
    pub(crate) status: i32,
}

/// `ServingStatus.SERVING`.
pub(crate) const SERVING: i32 = 1;

/// Answers `method` of the health service for the request message `message`: the
/// result to write, or the status to fail with.
pub(crate) fn answer(
    exporters: &ExporterMap,
    method: &str,
    message: &[u8],
) -> Result<RpcResult, (Code, String)> {
    if method != "Check" {
        return Err((
            Code::Unimplemented,
            format!("{SERVICE}/{method} is not served (Check is; Watch comes with streaming)"),
        ));
    }
    let req = HealthCheckRequest::decode(message).map_err(|e| {
        (
            Code::InvalidArgument,
            format!("bad HealthCheckRequest: {e}"),
        )
    })?;
    let known = req.service.is_empty() || {
        let map = exporters.read();
        map.find(&req.service, None, None).is_some() || map.keys().any(|k| k == req.service)
    };
    if !known {
        return Err((Code::NotFound, format!("unknown service {}", req.service)));
    }
    let reply = HealthCheckResponse { status: SERVING }.encode_to_vec();
    Ok(RpcResult::value(Payload::Encoded(Encoded::new(
        &PROTOBUF,
        Bytes::from(reply),
    ))))
}
