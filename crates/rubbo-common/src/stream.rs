//! Streams of messages through the invoker seam: what a streaming call carries in its
//! [`Invocation`](crate::Invocation) ([`Arguments::Stream`](crate::Arguments::Stream))
//! and its [`RpcResult`](crate::RpcResult) ([`Payload::Stream`](crate::Payload::Stream)).
//!
//! - [`MessageStream`]: a pull-based stream of encoded messages (`Result<Bytes,
//!   RpcError>`), inbound (decoded off the wire as the application polls it, so the
//!   peer's window is returned only as messages are consumed) or outbound (polled by
//!   the protocol only when the connection can take more). An `Err` item ends the
//!   stream with that error (Triple: the trailers' status); its end is the half-close.
//! - [`channel`]: a bounded push side for a [`MessageStream`]: [`StreamSender::send`]
//!   completes only when the stream has room (at most `capacity` messages wait), with
//!   [`StreamSender::is_ready`] and [`StreamSender::ready`] as Java's
//!   `isReady`/`onReady`, and [`StreamSender::closed`] to see a cancelled call.
//! - [`StreamSlot`]: the take-once holder that keeps an invocation `Clone`. A
//!   streaming call is never retried once its stream was taken by a protocol invoker:
//!   failover stops at the first failure after that ([`crate::Arguments::stream_started`]).
//!
//! Each element is one whole message in the method's encoding (a protobuf message in
//! IDL mode; a wrapper-mode `StreamObserver` would put a wrapper-encoded message in
//! each).

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;

use crate::{Attachments, ErrorKind, RpcError};

/// How many messages a [`channel`] holds before [`StreamSender::send`] waits, unless
/// told otherwise (small: the HTTP/2 window is the real buffer).
pub const DEFAULT_STREAM_BUFFER: usize = 4;

/// The streaming shape of a method (a unary method has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamKind {
    /// Many requests, one reply.
    Client,
    /// One request, many replies.
    Server,
    /// Many requests, many replies.
    Bidi,
}

impl StreamKind {
    /// The name in the provider URL's `stream-methods` (`client`, `server`, `bidi`).
    pub fn as_str(self) -> &'static str {
        match self {
            StreamKind::Client => "client",
            StreamKind::Server => "server",
            StreamKind::Bidi => "bidi",
        }
    }

    /// The kind of a `stream-methods` name.
    pub fn parse(name: &str) -> Option<StreamKind> {
        match name.trim() {
            "client" => Some(StreamKind::Client),
            "server" => Some(StreamKind::Server),
            "bidi" => Some(StreamKind::Bidi),
            _ => None,
        }
    }

    /// Whether the requests are a stream (client and bidirectional streaming).
    pub fn streams_requests(self) -> bool {
        matches!(self, StreamKind::Client | StreamKind::Bidi)
    }

    /// Whether the replies are a stream (server and bidirectional streaming).
    pub fn streams_replies(self) -> bool {
        matches!(self, StreamKind::Server | StreamKind::Bidi)
    }

    /// The kind of `method` in a `stream-methods` list (`A:server,B:bidi`).
    ///
    /// ```
    /// use rubbo_common::stream::StreamKind;
    /// let list = "Watch:server,Chat:bidi";
    /// assert_eq!(StreamKind::of_method(list, "Chat"), Some(StreamKind::Bidi));
    /// assert_eq!(StreamKind::of_method(list, "Greet"), None);
    /// ```
    pub fn of_method(list: &str, method: &str) -> Option<StreamKind> {
        list.split(',').find_map(|entry| {
            let (name, kind) = entry.split_once(':')?;
            (name.trim() == method)
                .then(|| StreamKind::parse(kind))
                .flatten()
        })
    }
}

/// The boxed stream inside a [`MessageStream`].
pub type BoxMessageStream = Pin<Box<dyn Stream<Item = Result<Bytes, RpcError>> + Send + 'static>>;

/// A stream of encoded messages, each `Ok` one whole message; an `Err` is the last
/// item (the stream failed with it), and the end of the stream is the half-close.
///
/// ```
/// use futures::StreamExt;
/// use rubbo_common::stream::MessageStream;
///
/// # futures::executor::block_on(async {
/// let mut s = MessageStream::once(bytes::Bytes::from_static(b"hi"));
/// assert_eq!(s.next().await.unwrap().unwrap(), "hi");
/// assert!(s.next().await.is_none());
/// # });
/// ```
pub struct MessageStream {
    inner: BoxMessageStream,
    headers: Option<Arc<Mutex<Attachments>>>,
    trailers: Option<Arc<Mutex<Attachments>>>,
}

impl MessageStream {
    /// Wraps any stream of encoded messages.
    pub fn new(stream: impl Stream<Item = Result<Bytes, RpcError>> + Send + 'static) -> Self {
        MessageStream {
            inner: Box::pin(stream),
            headers: None,
            trailers: None,
        }
    }

    /// This stream, reporting in [`headers`](Self::headers) what its producer stores
    /// in `slot` once the peer's response headers came (a bidirectional call returns
    /// its replies before they do).
    pub fn with_headers(mut self, slot: Arc<Mutex<Attachments>>) -> Self {
        self.headers = Some(slot);
        self
    }

    /// The attachments of the response headers (gRPC's initial metadata) when they
    /// came after the call returned (a bidirectional call's): empty until then, and
    /// for other calls (whose results carry them as header attachments).
    pub fn headers(&self) -> Attachments {
        self.headers
            .as_ref()
            .and_then(|t| t.lock().ok().map(|t| t.clone()))
            .unwrap_or_default()
    }

    /// This stream, reporting in [`trailers`](Self::trailers) what its producer
    /// stores in `slot` when the stream ends (a protocol: the trailing metadata).
    pub fn with_trailers(mut self, slot: Arc<Mutex<Attachments>>) -> Self {
        self.trailers = Some(slot);
        self
    }

    /// The attachments that came after the last message (Triple: the trailers'
    /// metadata, gRPC's trailing metadata); empty until the stream ended.
    pub fn trailers(&self) -> Attachments {
        self.trailers
            .as_ref()
            .and_then(|t| t.lock().ok().map(|t| t.clone()))
            .unwrap_or_default()
    }

    /// A stream of one message (the request of a server-streaming call).
    pub fn once(message: Bytes) -> Self {
        Self::new(futures::stream::once(std::future::ready(Ok(message))))
    }

    /// A stream that ends at once.
    pub fn empty() -> Self {
        Self::new(futures::stream::empty())
    }

    /// A stream that fails at once with `error`.
    pub fn failed(error: RpcError) -> Self {
        Self::new(futures::stream::once(std::future::ready(Err(error))))
    }

    /// The boxed stream.
    pub fn into_inner(self) -> BoxMessageStream {
        self.inner
    }
}

impl Stream for MessageStream {
    type Item = Result<Bytes, RpcError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl fmt::Debug for MessageStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MessageStream")
    }
}

/// A [`MessageStream`] fed by a bounded [`StreamSender`]: at most `capacity` messages
/// (at least 1) wait between the sender and whoever polls the stream.
///
/// ```
/// use futures::StreamExt;
/// use rubbo_common::stream::channel;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let (tx, mut rx) = channel(1);
/// assert!(tx.is_ready());
/// tx.send("a".into()).await.unwrap();
/// assert!(!tx.is_ready(), "one message waits: the next send waits for room");
/// drop(tx); // the half-close
/// assert_eq!(rx.next().await.unwrap().unwrap(), "a");
/// assert!(rx.next().await.is_none());
/// # });
/// ```
pub fn channel(capacity: usize) -> (StreamSender, MessageStream) {
    let (tx, rx) = tokio::sync::mpsc::channel(capacity.max(1));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        let item = rx.recv().await?;
        Some((item, rx))
    });
    (StreamSender { tx }, MessageStream::new(stream))
}

/// The push side of a [`channel`]: one message at a time, each `send` completing only
/// when there is room. Dropping it (or [`close`](Self::close)) ends the stream
/// normally; [`fail`](Self::fail) ends it with an error.
#[derive(Clone)]
pub struct StreamSender {
    tx: tokio::sync::mpsc::Sender<Result<Bytes, RpcError>>,
}

impl StreamSender {
    /// Sends one encoded message, waiting while the stream is full. Fails with a
    /// `Network` error when the stream is gone (the call was cancelled, reset or
    /// ended).
    pub async fn send(&self, message: Bytes) -> Result<(), RpcError> {
        self.tx.send(Ok(message)).await.map_err(|_| cancelled())
    }

    /// Whether a [`send`](Self::send) now would complete without waiting (Java's
    /// `isReady`).
    pub fn is_ready(&self) -> bool {
        !self.tx.is_closed() && self.tx.capacity() > 0
    }

    /// Waits until a message can be sent without waiting (Java's `onReady`); fails
    /// when the stream is gone.
    pub async fn ready(&self) -> Result<(), RpcError> {
        self.tx.reserve().await.map(drop).map_err(|_| cancelled())
    }

    /// Whether the stream is gone (the peer cancelled, or the call ended).
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Completes when the stream is gone: the peer cancelled or the call ended.
    pub async fn closed(&self) {
        self.tx.closed().await;
    }

    /// Ends the stream with `error` (Triple: the trailers' status), once the messages
    /// before it are taken.
    pub async fn fail(self, error: RpcError) {
        let _ = self.tx.send(Err(error)).await;
    }

    /// Ends the stream normally (the same as dropping the sender).
    pub fn close(self) {}
}

impl fmt::Debug for StreamSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamSender")
            .field("ready", &self.is_ready())
            .field("closed", &self.is_closed())
            .finish()
    }
}

fn cancelled() -> RpcError {
    RpcError::network("the stream is closed: the call was cancelled or has ended")
}

/// A [`MessageStream`] in an invocation or result, taken once by whoever consumes it
/// (the protocol invoker, the dispatcher, the caller); clones share it, so a cloned
/// invocation (a failover retry) finds it taken.
#[derive(Clone)]
pub struct StreamSlot {
    kind: StreamKind,
    stream: Arc<Mutex<Option<MessageStream>>>,
}

impl StreamSlot {
    /// A slot holding `stream` of a `kind` method.
    pub fn new(kind: StreamKind, stream: MessageStream) -> Self {
        StreamSlot {
            kind,
            stream: Arc::new(Mutex::new(Some(stream))),
        }
    }

    /// The streaming shape of the call.
    pub fn kind(&self) -> StreamKind {
        self.kind
    }

    /// Takes the stream; an error if it was taken already (a streaming call is not
    /// sent twice).
    pub fn take(&self) -> Result<MessageStream, RpcError> {
        self.stream
            .lock()
            .ok()
            .and_then(|mut s| s.take())
            .ok_or_else(|| {
                RpcError::new(
                    ErrorKind::Unknown,
                    "the message stream was taken already: a streaming call is sent once \
                     and never retried",
                )
            })
    }

    /// Whether the stream was taken.
    pub fn is_taken(&self) -> bool {
        self.stream.lock().map(|s| s.is_none()).unwrap_or(true)
    }
}

impl fmt::Debug for StreamSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamSlot")
            .field("kind", &self.kind)
            .field("taken", &self.is_taken())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    #[tokio::test]
    async fn a_full_channel_makes_send_wait_until_a_message_is_taken() {
        let (tx, mut rx) = channel(2);
        tx.send("1".into()).await.unwrap();
        tx.send("2".into()).await.unwrap();
        assert!(!tx.is_ready());
        let third = tokio::spawn({
            let tx = tx.clone();
            async move { tx.send("3".into()).await }
        });
        tokio::task::yield_now().await;
        assert!(!third.is_finished(), "the third send waits for room");
        assert_eq!(rx.next().await.unwrap().unwrap(), "1");
        tokio::time::timeout(std::time::Duration::from_secs(5), third)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(rx.next().await.unwrap().unwrap(), "2");
        // One message waits ("3"): the error takes the free place, after it.
        tx.fail(RpcError::timeout("late")).await;
        let rest: Vec<_> = rx.collect().await;
        assert_eq!(rest.len(), 2);
        assert_eq!(rest[0].as_ref().unwrap(), "3");
        assert_eq!(rest[1].as_ref().unwrap_err().kind(), ErrorKind::Timeout);
    }

    #[tokio::test]
    async fn a_dropped_stream_fails_the_sender_and_wakes_closed() {
        let (tx, rx) = channel(1);
        drop(rx);
        assert!(tx.is_closed() && !tx.is_ready());
        tx.closed().await;
        assert_eq!(
            tx.send("x".into()).await.unwrap_err().kind(),
            ErrorKind::Network
        );
    }

    #[test]
    fn a_slot_gives_its_stream_once_to_all_its_clones() {
        let slot = StreamSlot::new(StreamKind::Bidi, MessageStream::empty());
        let clone = slot.clone();
        assert!(slot.take().is_ok());
        assert!(clone.is_taken());
        assert!(!clone.take().unwrap_err().is_retryable());
    }
}
