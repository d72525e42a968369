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
