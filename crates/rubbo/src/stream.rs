//! Typed message streams of IDL (protobuf) streaming rpcs, tonic's shape.
//!
//! - [`Streaming<T>`]: the messages that come in (a server's requests of a client or
//!   bidirectional streaming rpc, a client's replies of a server or bidirectional
//!   one), decoded as you poll them: the peer's HTTP/2 window opens only as fast as
//!   you read, so a slow reader slows the writer.
//! - [`Outbound<T>`]: the messages that go out, pulled one at a time as the
//!   connection can take them: from any `Stream` ([`Outbound::from_stream`]) or from
//!   a bounded [`channel`], whose [`Sender::send`] waits while the peer's window is
//!   closed and at most `capacity` messages are queued.
//!
//! Dropping a [`Streaming`] on the client cancels the call (RST_STREAM); a server
//! whose peer reset the stream sees its [`Sender::send`] fail and its
//! [`Streaming`] end with `CANCELLED`. An error mid-stream is a gRPC status in the
//! trailers.
//!
//! ```
//! use futures::StreamExt;
//! use rubbo::stream::{Outbound, Streaming, channel};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! // What a server-streaming handler could return: replies written by a task.
//! let (tx, replies): (_, Outbound<String>) = channel(2);
//! tokio::spawn(async move {
//!     for word in ["a", "b"] {
//!         if tx.send(word.to_owned()).await.is_err() {
//!             break; // the call was cancelled
//!         }
//!     }
//! });
//! // The same messages as the peer would decode them.
//! let mut incoming: Streaming<String> = Streaming::new(replies.into_message_stream());
//! assert_eq!(incoming.message().await.unwrap().as_deref(), Some("a"));
//! assert_eq!(incoming.next().await.unwrap().unwrap(), "b");
//! assert!(incoming.message().await.unwrap().is_none());
//! # });
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};
use prost::Message;
use rubbo_common::stream::{self as common, MessageStream, StreamSender};
use rubbo_common::{Attachments, RpcError};
use rubbo_protocol_triple::Status;

pub use rubbo_common::stream::{DEFAULT_STREAM_BUFFER, StreamKind};

/// Incoming messages of a streaming rpc, decoded as they are polled.
pub struct Streaming<T> {
    inner: MessageStream,
    _message: PhantomData<fn() -> T>,
}

impl<T> Streaming<T> {
    /// Decodes the messages of `inner`.
    pub fn new(inner: MessageStream) -> Self {
        Streaming {
            inner,
            _message: PhantomData,
        }
    }

    /// The initial metadata (the response headers' attachments) of a bidirectional
    /// call, once the first reply (or the end) was read; other calls report theirs
    /// with the call's result (`context::capture_metadata`).
    pub fn headers(&self) -> Attachments {
        self.inner.headers()
    }

    /// The trailing metadata (the trailers' attachments), once the stream ended.
    pub fn trailers(&self) -> Attachments {
        self.inner.trailers()
    }
}

impl<T: Message + Default> Streaming<T> {
    /// The next message; `None` at the end of the stream; the status it failed with.
    pub async fn message(&mut self) -> Result<Option<T>, Status> {
        self.next().await.transpose()
    }
}

impl<T: Message + Default> Stream for Streaming<T> {
    type Item = Result<T, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.inner).poll_next(cx).map(|item| {
            item.map(|r| match r {
                Ok(bytes) => T::decode(bytes)
                    .map_err(|e| Status::internal(format!("cannot decode a message: {e}"))),
                Err(e) => Err(Status::from_error(&e)),
            })
        })
    }
}

impl<T> fmt::Debug for Streaming<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Streaming")
    }
}

/// Outgoing messages of a streaming rpc, encoded and sent one at a time as the
/// connection can take them.
pub struct Outbound<T> {
    inner: MessageStream,
    _message: PhantomData<fn(T)>,
}

impl<T: Message + 'static> Outbound<T> {
    /// The messages of `stream`, then the end of the stream.
    pub fn from_stream(stream: impl Stream<Item = T> + Send + 'static) -> Self {
        Self::wrap(MessageStream::new(
            stream.map(|m| Ok(m.encode_to_vec().into())),
        ))
    }

    /// The messages of `stream`; an `Err` ends the stream with that status.
    pub fn try_from_stream(stream: impl Stream<Item = Result<T, Status>> + Send + 'static) -> Self {
        Self::wrap(MessageStream::new(stream.map(|r| {
            r.map(|m| m.encode_to_vec().into()).map_err(RpcError::from)
        })))
    }

    /// These messages, then the end of the stream.
    pub fn from_messages(messages: impl IntoIterator<Item = T>) -> Self
    where
        T: Send,
    {
        let v: Vec<T> = messages.into_iter().collect();
        Self::from_stream(futures::stream::iter(v))
    }
}

impl<T> Outbound<T> {
    fn wrap(inner: MessageStream) -> Self {
        Outbound {
            inner,
            _message: PhantomData,
        }
    }

    /// No message: the stream ends at once.
    pub fn empty() -> Self {
        Self::wrap(MessageStream::empty())
    }

    /// The encoded messages.
    pub fn into_message_stream(self) -> MessageStream {
        self.inner
    }
}

impl<T> fmt::Debug for Outbound<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Outbound")
    }
}

/// A bounded stream of outgoing messages: the [`Sender`] writes, the [`Outbound`]
/// goes to the call (a handler's reply, a client's requests). At most `capacity`
/// messages wait (at least 1; [`DEFAULT_STREAM_BUFFER`] is a good default).
pub fn channel<T>(capacity: usize) -> (Sender<T>, Outbound<T>) {
    let (tx, rx) = common::channel(capacity);
    (
        Sender {
            inner: tx,
            _message: PhantomData,
        },
        Outbound::wrap(rx),
    )
}

/// The writing half of a [`channel`]. Dropping every clone ends the stream normally.
pub struct Sender<T> {
    inner: StreamSender,
    _message: PhantomData<fn(T)>,
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            inner: self.inner.clone(),
            _message: PhantomData,
        }
    }
}

impl<T: Message> Sender<T> {
    /// Sends one message, waiting while the stream is full (the peer reads slowly or
    /// its window is closed); `CANCELLED` once the call is gone (reset, cancelled,
    /// ended).
    pub async fn send(&self, message: T) -> Result<(), Status> {
        self.inner
            .send(message.encode_to_vec().into())
            .await
            .map_err(|e| Status::new(rubbo_protocol_triple::Code::Cancelled, e.message()))
    }
}

impl<T> Sender<T> {
    /// Whether a send now would not wait (Java's `isReady`).
    pub fn is_ready(&self) -> bool {
        self.inner.is_ready()
    }

    /// Waits until a send would not wait (Java's `onReady`); `CANCELLED` once the call
    /// is gone.
    pub async fn ready(&self) -> Result<(), Status> {
        self.inner
            .ready()
            .await
            .map_err(|e| Status::new(rubbo_protocol_triple::Code::Cancelled, e.message()))
    }

    /// Whether the call is gone (the peer cancelled or the call ended).
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Completes when the call is gone.
    pub async fn closed(&self) {
        self.inner.closed().await
    }

    /// Ends the stream with `status` (sent in the trailers), after the messages
    /// before it.
    pub async fn fail(self, status: Status) {
        self.inner.fail(status.into()).await
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}
