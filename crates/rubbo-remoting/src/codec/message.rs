//! Requests and responses with opaque bodies.

use std::fmt;

use bytes::Bytes;

use super::event;
use super::header::{FLAG_EVENT, FLAG_REQUEST, FLAG_TWOWAY, HESSIAN2, Header, SERIALIZATION_MASK};
use crate::Status;

/// A Dubbo request frame. The body is opaque here (the protocol layer encodes it).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Request {
    /// Request id.
    pub id: i64,
    /// The sender waits for a response.
    pub two_way: bool,
    /// Event frame (heartbeat, readonly).
    pub event: bool,
    /// Serialization id of the body.
    pub serialization: u8,
    /// The body bytes (empty when [`broken`](Request::broken) is set).
    pub body: Bytes,
    /// Set when the transport could not deliver the body; the handler should
    /// answer [`Status::BAD_REQUEST`] with the reason.
    pub broken: Option<BrokenRequest>,
}

impl Request {
    /// A two-way, non-event request.
    pub fn new(id: i64, serialization: u8, body: Bytes) -> Self {
        Request {
            id,
            two_way: true,
            event: false,
            serialization,
            body,
            broken: None,
        }
    }

    /// A one-way, non-event request.
    pub fn oneway(id: i64, serialization: u8, body: Bytes) -> Self {
        Request {
            two_way: false,
            ..Request::new(id, serialization, body)
        }
    }

    /// A hessian2 heartbeat request (flag `0xE2`, body `0x4E`).
    pub fn heartbeat(id: i64) -> Self {
        Request {
            event: true,
            ..Request::new(id, HESSIAN2, Bytes::from_static(event::HESSIAN2_NULL))
        }
    }

    /// The one-way readonly event a provider sends when it shuts down (body `"R"`).
    pub fn readonly(id: i64) -> Self {
        Request {
            two_way: false,
            event: true,
            ..Request::new(id, HESSIAN2, Bytes::from_static(event::READONLY_EVENT_BODY))
        }
    }

    /// The one-way event that clears a readonly mark (body `"W"`).
    pub fn writable(id: i64) -> Self {
        Request {
            body: Bytes::from_static(event::WRITABLE_EVENT_BODY),
            ..Request::readonly(id)
        }
    }

    /// An event request whose body is the readonly string `"R"`.
    pub fn is_readonly_event(&self) -> bool {
        self.event && self.body[..] == *event::READONLY_EVENT_BODY
    }

    /// An event request whose body is the writable string `"W"`.
    pub fn is_writable_event(&self) -> bool {
        self.event && self.body[..] == *event::WRITABLE_EVENT_BODY
    }

    /// An event that is neither readonly nor writable: a heartbeat.
    pub fn is_heartbeat(&self) -> bool {
        self.event && !self.is_readonly_event() && !self.is_writable_event()
    }

    /// The frame header for this request (body length saturates at `i32::MAX`).
    pub fn header(&self) -> Header {
        let mut flag = FLAG_REQUEST | (self.serialization & SERIALIZATION_MASK);
        if self.two_way {
            flag |= FLAG_TWOWAY;
        }
        if self.event {
            flag |= FLAG_EVENT;
        }
        Header {
            flag,
            status: 0,
            id: self.id,
            body_len: body_len(&self.body),
        }
    }
}

/// Why a [`Request`] reached the handler without its body.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BrokenRequest {
    /// The body length exceeded the payload limit; the body was skipped.
    PayloadTooLarge {
        /// Announced body length.
        len: usize,
        /// Configured limit.
        max: usize,
    },
}

impl fmt::Display for BrokenRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BrokenRequest::PayloadTooLarge { len, max } => {
                write!(f, "Data length too large: {len}, max payload: {max}")
            }
        }
    }
}

/// A Dubbo response frame. The body is opaque here; for a status other than
/// [`Status::OK`] it is a serialized error string.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Response {
    /// The id of the request answered.
    pub id: i64,
    /// Status byte.
    pub status: Status,
    /// Event (heartbeat) reply.
    pub event: bool,
    /// Serialization id of the body.
    pub serialization: u8,
    /// The body bytes.
    pub body: Bytes,
}

impl Response {
    /// A non-event response.
    pub fn new(id: i64, serialization: u8, status: Status, body: Bytes) -> Self {
        Response {
            id,
            status,
            event: false,
            serialization,
            body,
        }
    }

    /// A status-20 non-event response.
    pub fn ok(id: i64, serialization: u8, body: Bytes) -> Self {
        Response::new(id, serialization, Status::OK, body)
    }

    /// The reply to a heartbeat request: same id and serialization, status 20, and the
    /// request's body echoed (the null encoding of that serialization, `0x4E` for hessian2).
    pub fn heartbeat(req: &Request) -> Self {
        Response {
            event: true,
            ..Response::ok(req.id, req.serialization, req.body.clone())
        }
    }

    /// The frame header for this response (body length saturates at `i32::MAX`).
    pub fn header(&self) -> Header {
        let mut flag = self.serialization & SERIALIZATION_MASK;
        if self.event {
            flag |= FLAG_EVENT;
        }
        Header {
            flag,
            status: self.status.as_u8(),
            id: self.id,
            body_len: body_len(&self.body),
        }
    }
}

fn body_len(body: &Bytes) -> i32 {
    i32::try_from(body.len()).unwrap_or(i32::MAX)
}

/// A request or a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A request frame.
    Request(Request),
    /// A response frame.
    Response(Response),
}

impl Frame {
    /// The frame header.
    pub fn header(&self) -> Header {
        match self {
            Frame::Request(r) => r.header(),
            Frame::Response(r) => r.header(),
        }
    }

    /// The frame body.
    pub fn body(&self) -> &Bytes {
        match self {
            Frame::Request(r) => &r.body,
            Frame::Response(r) => &r.body,
        }
    }
}
