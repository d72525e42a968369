//! The services every Triple server serves itself, beside the exported ones: gRPC
//! health (`Check`, `Watch`) and server reflection (v1 and v1alpha).

use std::time::Instant;

use crate::body::ReqBody;
use http::{HeaderValue, Request, Response};
use rubbo_common::stream::MessageStream;
use rubbo_common::{Attachments, Peer};
use tracing::debug;

use crate::body::TriBody;
use crate::compress::CallCoding;
use crate::headers::GRPC;
use crate::server::{Handler, respond_idl, tri};
use crate::status::Code;
use crate::stream::{MessageDecoder, StreamBody};
use crate::{health, reflection};

/// Whether `service` is one of the built-in services.
pub(crate) fn is_builtin(service: &str) -> bool {
    matches!(
        service,
        health::SERVICE | reflection::V1 | reflection::V1ALPHA
    )
}

/// A response streaming `messages`, then `grpc-status` (past `deadline`,
/// `DEADLINE_EXCEEDED`).
fn streamed(messages: MessageStream, deadline: Option<Instant>, max: i64) -> Response<TriBody> {
    // Replies of the built-in services go uncompressed (identity).
    let body = StreamBody::response(messages, Attachments::default(), deadline, None, max);
    let mut r = Response::new(TriBody::Stream(body));
    r.headers_mut()
        .insert(http::header::CONTENT_TYPE, HeaderValue::from_static(GRPC));
    r
}

impl Handler {
    /// Serves `method` of the built-in `service`.
    pub(crate) async fn builtin(
        &self,
        req: Request<ReqBody>,
        peer: &Peer,
        service: &str,
        method: &str,
        deadline: Option<Instant>,
        coding: CallCoding,
    ) -> Result<Response<TriBody>, (Code, String)> {
        debug!(service, method, peer = %peer.remote, "built-in service");
        match (service, method) {
            (health::SERVICE, "Check") => {
                let (body, _) = self.read_message(req, peer, method, coding.request).await?;
                let result = health::check(&self.exporters, &body)?;
                Ok(tri(respond_idl(Ok(result), method, coding, self.payload)))
            }
            (health::SERVICE, "Watch") => {
                let (body, _) = self.read_message(req, peer, method, coding.request).await?;
                let request = health::request(&body)?;
                Ok(streamed(
                    self.health.watch(request.service),
                    deadline,
                    self.payload,
                ))
            }
            (reflection::V1 | reflection::V1ALPHA, reflection::METHOD) => {
                let requests = MessageStream::new(MessageDecoder::request(
                    req.into_body(),
                    self.payload,
                    coding.request,
                ));
                let replies =
                    reflection::serve(requests, self.exporters.clone(), self.schemas.clone());
                Ok(streamed(replies, deadline, self.payload))
            }
            _ => Err((
                Code::Unimplemented,
                format!("{service}/{method} is not served"),
            )),
        }
    }
}
