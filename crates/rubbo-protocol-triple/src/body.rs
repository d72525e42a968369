//! The body of a unary gRPC message: at most one DATA frame, then trailers.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

/// One data chunk, then optional trailers.
#[derive(Debug, Default)]
pub(crate) struct UnaryBody {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl UnaryBody {
    /// A body of `data` followed by `trailers`.
    pub(crate) fn new(data: Option<Bytes>, trailers: Option<HeaderMap>) -> Self {
        UnaryBody { data, trailers }
    }

    /// No body at all: the headers end the stream (a trailers-only response).
    pub(crate) fn empty() -> Self {
        Self::default()
    }
}

impl Body for UnaryBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(d) = this.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(d))));
        }
        Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        // Never exact: an exact hint makes hyper add `content-length`, which gRPC
        // messages do not carry.
        let mut h = SizeHint::new();
        h.set_lower(self.data.as_ref().map_or(0, |d| d.len() as u64));
        h
    }
}

/// The body of every Triple request and response: one message (unary) or a stream.
pub(crate) enum TriBody {
    /// One message and trailers, or nothing.
    Unary(UnaryBody),
    /// Messages pulled from a stream as the connection can take them.
    Stream(crate::stream::StreamBody),
}

impl From<UnaryBody> for TriBody {
    fn from(b: UnaryBody) -> Self {
        TriBody::Unary(b)
    }
}

impl std::fmt::Debug for TriBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TriBody::Unary(b) => b.fmt(f),
            TriBody::Stream(_) => f.write_str("StreamBody"),
        }
    }
}

impl TriBody {
    /// The next frame, as [`Body::poll_frame`]; a large uncompressed stream message
    /// comes without its gRPC prefix, which is put in `head`
    /// ([`StreamBody::poll_frame_split`](crate::stream::StreamBody::poll_frame_split)).
    pub(crate) fn poll_frame_split(
        &mut self,
        cx: &mut Context<'_>,
        head: &mut Option<[u8; crate::frame::PREFIX_LEN]>,
    ) -> Poll<Option<Result<Frame<Bytes>, rubbo_common::RpcError>>> {
        match self {
            TriBody::Stream(b) => b.poll_frame_split(cx, head),
            TriBody::Unary(_) => Pin::new(self).poll_frame(cx),
        }
    }
}

impl Body for TriBody {
    type Data = Bytes;
    type Error = rubbo_common::RpcError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.get_mut() {
            TriBody::Unary(b) => Pin::new(b)
                .poll_frame(cx)
                .map(|f| f.map(|f| f.map_err(|e| match e {}))),
            TriBody::Stream(b) => Pin::new(b).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            TriBody::Unary(b) => b.is_end_stream(),
            TriBody::Stream(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            TriBody::Unary(b) => b.size_hint(),
            TriBody::Stream(_) => SizeHint::new(),
        }
    }
}

/// The body of a request the server reads (and of a response the client reads):
/// hyper's, or one of the native HTTP/2 transport ([`crate::native`]).
#[derive(Debug)]
pub(crate) enum ReqBody {
    /// A body read by hyper.
    Hyper(hyper::body::Incoming),
    /// A body read by the native transport.
    Native(crate::native::RecvBody),
}

/// Why a [`ReqBody`] failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    /// hyper's error.
    #[error(transparent)]
    Hyper(#[from] hyper::Error),
    /// The peer reset the stream (RST_STREAM with this error code), or the
    /// connection ended before the body did.
    #[error("stream reset: {0}")]
    Reset(h2::Reason),
}

impl BodyError {
    /// Whether it is a timeout (hyper's).
    pub(crate) fn is_timeout(&self) -> bool {
        match self {
            BodyError::Hyper(e) => e.is_timeout(),
            BodyError::Reset(_) => false,
        }
    }
}

impl From<hyper::body::Incoming> for ReqBody {
    fn from(b: hyper::body::Incoming) -> Self {
        ReqBody::Hyper(b)
    }
}

impl Body for ReqBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self.get_mut() {
            ReqBody::Hyper(b) => Pin::new(b)
                .poll_frame(cx)
                .map(|f| f.map(|f| f.map_err(BodyError::from))),
            ReqBody::Native(b) => Pin::new(b).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ReqBody::Hyper(b) => b.is_end_stream(),
            ReqBody::Native(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ReqBody::Hyper(b) => b.size_hint(),
            ReqBody::Native(_) => SizeHint::new(),
        }
    }
}
