//! The body of a request on the native transport: the DATA the connection task
//! received for the stream, handed over as the call reads it. Each chunk read is
//! reported back ([`Event::Release`]), and only then does the connection return
//! its bytes to the peer's windows: a call that does not read keeps the peer waiting.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use h2::Reason;
use http::HeaderMap;
use http_body::{Body, Frame};
use tokio::sync::mpsc;

use super::conn::Event;
use crate::body::BodyError;

/// What the connection hands a request body.
#[derive(Debug)]
pub(crate) enum Chunk {
    /// Message bytes (the payload of one DATA frame).
    Data(Bytes),
    /// The request's trailers (they end the body).
    Trailers(HeaderMap),
    /// The stream was reset, or the connection ended first.
    Reset(Reason),
}

/// A request body fed by the connection task. The queue holds at most what the
/// stream's flow-control window let the peer send: bounded by the window, not by a
/// count.
#[derive(Debug)]
pub(crate) struct RecvBody {
    id: u32,
    rx: mpsc::UnboundedReceiver<Chunk>,
    events: mpsc::UnboundedSender<Event>,
    done: bool,
}

impl RecvBody {
    pub(super) fn new(
        id: u32,
        rx: mpsc::UnboundedReceiver<Chunk>,
        events: mpsc::UnboundedSender<Event>,
    ) -> Self {
        RecvBody {
            id,
            rx,
            events,
            done: false,
        }
    }

    /// Whether the body ended (the last frame was read).
    pub(crate) fn is_end_stream(&self) -> bool {
        self.done
    }

    fn poll_chunk(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let chunk = match self.rx.poll_recv(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(c) => c,
        };
        Poll::Ready(match chunk {
            Some(Chunk::Data(b)) => {
                // The peer may send these bytes again.
                let _ = self.events.send(Event::Release(self.id, b.len()));
                Some(Ok(Frame::data(b)))
            }
            Some(Chunk::Trailers(t)) => {
                self.done = true;
                Some(Ok(Frame::trailers(t)))
            }
            Some(Chunk::Reset(r)) => {
                self.done = true;
                Some(Err(BodyError::Reset(r)))
            }
            None => {
                self.done = true;
                None
            }
        })
    }
}

impl Body for RecvBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        self.get_mut().poll_chunk(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

impl Drop for RecvBody {
    /// What was received and not read goes back to the connection's window.
    fn drop(&mut self) {
        let mut unread = 0;
        while let Ok(c) = self.rx.try_recv() {
            if let Chunk::Data(b) = c {
                unread += b.len();
            }
        }
        if unread > 0 {
            let _ = self.events.send(Event::Release(self.id, unread));
        }
    }
}
