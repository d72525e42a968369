//! The body of a request on the native transport: the DATA the connection task
//! received for the stream, handed over as the call reads it. Each chunk read is
//! reported back ([`Event::Release`]), and only then does the connection return
//! its bytes to the peer's windows: a call that does not read keeps the peer waiting.
//! A request that ended before its call started needs no channel: its DATA and
//! trailers are handed over whole ([`RecvBody::complete`]).

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
    /// `None`: a request received whole before its call started (`ready`, `trailers`).
    rx: Option<mpsc::UnboundedReceiver<Chunk>>,
    events: Option<mpsc::UnboundedSender<Event>>,
    ready: Option<Bytes>,
    more: std::vec::IntoIter<Bytes>,
    trailers: Option<HeaderMap>,
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
            rx: Some(rx),
            events: Some(events),
            ready: None,
            more: Vec::new().into_iter(),
            trailers: None,
            done: false,
        }
    }

    /// The body of a request that ended before its call started: its DATA (already
    /// given back to the peer's window: the call takes it all at once) and trailers.
    pub(crate) fn complete(
        data: Option<Bytes>,
        more: Vec<Bytes>,
        trailers: Option<HeaderMap>,
    ) -> Self {
        RecvBody {
            id: 0,
            rx: None,
            events: None,
            ready: data,
            more: more.into_iter(),
            trailers,
            done: false,
        }
    }

    /// Whether the body ended (the last frame was read, or nothing is left).
    pub(crate) fn is_end_stream(&self) -> bool {
        self.done
            || (self.rx.is_none()
                && self.ready.is_none()
                && self.more.len() == 0
                && self.trailers.is_none())
    }

    fn poll_chunk(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let Some(rx) = self.rx.as_mut() else {
            return Poll::Ready(
                if let Some(b) = self.ready.take().or_else(|| self.more.next()) {
                    Some(Ok(Frame::data(b)))
                } else if let Some(t) = self.trailers.take() {
                    self.done = true;
                    Some(Ok(Frame::trailers(t)))
                } else {
                    self.done = true;
                    None
                },
            );
        };
        let chunk = match rx.poll_recv(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(c) => c,
        };
        Poll::Ready(match chunk {
            Some(Chunk::Data(b)) => {
                // The peer may send these bytes again.
                if let Some(events) = &self.events {
                    let _ = events.send(Event::Release(self.id, b.len()));
                }
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
        RecvBody::is_end_stream(self)
    }
}

impl Drop for RecvBody {
    /// What was received and not read goes back to the connection's window.
    fn drop(&mut self) {
        let (Some(rx), Some(events)) = (self.rx.as_mut(), &self.events) else {
            return;
        };
        let mut unread = 0;
        while let Ok(c) = rx.try_recv() {
            if let Chunk::Data(b) = c {
                unread += b.len();
            }
        }
        if unread > 0 {
            let _ = events.send(Event::Release(self.id, unread));
        }
    }
}
