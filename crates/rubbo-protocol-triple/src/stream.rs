//! Streaming calls on HTTP/2: the inbound message decoder and the outbound body.
//!
//! Flow control, both ways, with no unbounded queue:
//!
//! - Inbound, [`MessageDecoder`] polls the request body only when the application
//!   asks for the next message and the buffer holds no whole one. hyper returns a
//!   DATA frame's bytes to the peer's window when that frame is polled, so a slow
//!   reader leaves the window closed and the peer's sender waits. At most one message
//!   (within `payload`) plus one frame is buffered.
//! - Outbound, [`StreamBody`] is polled by hyper only when the HTTP/2 stream has send
//!   capacity (hyper reserves capacity before it polls the body), and it pulls one
//!   message at a time from the caller's [`MessageStream`] (a bounded
//!   [`channel`](rubbo_common::stream::channel), or any stream): when the peer's
//!   window is 0 the caller's `send` waits.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Instant;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use futures::Stream;
use http::HeaderMap;
use http_body::{Body, Frame};
use hyper::body::Incoming;
use rubbo_common::stream::MessageStream;
use rubbo_common::{Attachments, RpcError};
use tokio::sync::oneshot;

use crate::body::ReqBody;
use crate::coalesce::BusyGuard;
use crate::compress::Encoding;
use crate::error::TripleError;
use crate::frame::{self, PREFIX_LEN};
use crate::headers::{self, GRPC_MESSAGE, GRPC_STATUS};
use crate::status::{self, Code, Status};

/// How far ahead of the arrived bytes a partial message may reserve (a peer's declared
/// length is not a reason to allocate).
const RESERVE_AHEAD: usize = 64 * 1024;

/// Decodes the gRPC messages of a request or response body as they are polled.
pub(crate) struct MessageDecoder {
    body: Option<ReqBody>,
    /// The rest of the last DATA frame, while `buf` is empty: whole messages are
    /// sliced out of it without a copy (most frames hold whole small messages).
    chunk: Bytes,
    /// Bytes of a message split across frames, copied together.
    buf: BytesMut,
    /// The largest message (0 or less: none).
    payload: i64,
    /// Consumer side: the body ends with trailers whose `grpc-status` ends the
    /// stream; their attachments go here.
    trailers: Option<Arc<Mutex<Attachments>>>,
    /// Whether the stream ended (after an error, nothing more is read).
    done: bool,
    /// The stream's `grpc-encoding`: messages with the compressed flag are
    /// decompressed with it (`None`: identity, the flag is an error).
    encoding: Option<Encoding>,
    /// Drops with the decoder: tells the request body of the same call that the
    /// caller gave up its replies (consumer side).
    _cancel: Option<oneshot::Sender<()>>,
}

impl MessageDecoder {
    /// The decoder of a request body (provider side): the end of the body is the end
    /// of the stream.
    pub(crate) fn request(body: ReqBody, payload: i64, encoding: Option<Encoding>) -> Self {
        MessageDecoder {
            body: Some(body),
            chunk: Bytes::new(),
            buf: BytesMut::new(),
            payload,
            trailers: None,
            done: false,
            encoding,
            _cancel: None,
        }
    }

    /// The decoder of a response body (consumer side): the trailers' status ends the
    /// stream, their attachments are stored in `trailers`; dropping it drops `cancel`.
    pub(crate) fn response(
        body: Incoming,
        payload: i64,
        trailers: Arc<Mutex<Attachments>>,
        cancel: Option<oneshot::Sender<()>>,
        encoding: Option<Encoding>,
    ) -> Self {
        MessageDecoder {
            body: Some(ReqBody::Hyper(body)),
            chunk: Bytes::new(),
            buf: BytesMut::new(),
            payload,
            trailers: Some(trailers),
            done: false,
            encoding,
            _cancel: cancel,
        }
    }

    /// The next whole message in the buffer, if there is one.
    fn split_message(&mut self) -> Result<Option<Bytes>, TripleError> {
        if self.buf.is_empty() && !self.chunk.is_empty() {
            if let Some((compressed, len)) = self.prefix(&self.chunk)? {
                if self.chunk.len() >= PREFIX_LEN + len {
                    self.chunk.advance(PREFIX_LEN);
                    let message = self.chunk.split_to(len);
                    return self.decompress(compressed, message).map(Some);
                }
            }
            // A message that goes on in the next frames: gathered in `buf`.
            self.buf.extend_from_slice(&self.chunk);
            self.chunk = Bytes::new();
        }
        let Some((compressed, len)) = self.prefix(&self.buf)? else {
            return Ok(None);
        };
        if self.buf.len() < PREFIX_LEN + len {
            // Room for the rest of this message, but never more than one frame's worth
            // ahead of the bytes that arrived: a declared length alone (up to
            // `payload`) must not allocate.
            let missing = PREFIX_LEN + len - self.buf.len();
            self.buf.reserve(missing.min(RESERVE_AHEAD));
            return Ok(None);
        }
        self.buf.advance(PREFIX_LEN);
        let message = self.buf.split_to(len).freeze();
        self.decompress(compressed, message).map(Some)
    }

    /// The compressed flag and length of the message `b` starts with (`None`: its
    /// prefix is not all there).
    fn prefix(&self, b: &[u8]) -> Result<Option<(bool, usize)>, TripleError> {
        if b.len() < PREFIX_LEN {
            return Ok(None);
        }
        let flags = b[0];
        if flags & 0xfe != 0 {
            return Err(TripleError::BadFlags(flags));
        }
        let compressed = flags & 1 != 0;
        if compressed && self.encoding.is_none() {
            return Err(TripleError::Compressed);
        }
        let len = u32::from_be_bytes([b[1], b[2], b[3], b[4]]) as usize;
        if self.payload > 0 && len as u64 > self.payload as u64 {
            return Err(TripleError::TooLarge {
                len,
                max: usize::try_from(self.payload).unwrap_or(usize::MAX),
            });
        }
        Ok(Some((compressed, len)))
    }

    fn decompress(&self, compressed: bool, message: Bytes) -> Result<Bytes, TripleError> {
        match self.encoding {
            Some(e) if compressed => e.decompress(&message, self.payload),
            _ => Ok(message),
        }
    }

    fn finish(&mut self, trailers: Option<HeaderMap>) -> Option<Result<Bytes, RpcError>> {
        self.done = true;
        self.body = None;
        if !self.chunk.is_empty() {
            self.buf.extend_from_slice(&self.chunk);
            self.chunk = Bytes::new();
        }
        if !self.buf.is_empty() {
            let need = if self.buf.len() >= PREFIX_LEN {
                let b = &self.buf;
                PREFIX_LEN + u32::from_be_bytes([b[1], b[2], b[3], b[4]]) as usize
            } else {
                PREFIX_LEN
            };
            let e = TripleError::Truncated {
                have: self.buf.len(),
                need,
            };
            return Some(Err(stream_error(Code::Internal, &e.to_string())));
        }
        let slot = self.trailers.as_ref()?;
        let Some(t) = trailers else {
            return Some(Err(stream_error(
                Code::Internal,
                "the response stream ended without trailers (no grpc-status)",
            )));
        };
        if let Ok(mut s) = slot.lock() {
            s.extend(headers::attachments_from(&t));
        }
        let code = headers::get(&t, GRPC_STATUS)
            .map(|s| Code::from_i32(s.trim().parse().unwrap_or(2)))
            .unwrap_or(Code::Unknown);
        if code == Code::Ok {
            return None;
        }
        let message = t
            .get(GRPC_MESSAGE)
            .map(|m| status::decode_message(m.as_bytes()))
            .unwrap_or_default();
        Some(Err(status::error_for_status(code, &message)))
    }
}

/// An error of a stream, carrying its gRPC status.
pub(crate) fn stream_error(code: Code, message: &str) -> RpcError {
    status::error_for_status(code, message)
}

impl Stream for MessageDecoder {
    type Item = Result<Bytes, RpcError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            match this.split_message() {
                Ok(Some(m)) => return Poll::Ready(Some(Ok(m))),
                Ok(None) => {}
                Err(e) => {
                    this.done = true;
                    this.body = None;
                    let code = match e {
                        TripleError::TooLarge { .. } => Code::ResourceExhausted,
                        TripleError::Compressed => Code::Unimplemented,
                        _ => Code::Internal,
                    };
                    return Poll::Ready(Some(Err(stream_error(code, &e.to_string()))));
                }
            }
            let Some(body) = this.body.as_mut() else {
                return Poll::Ready(this.finish(None));
            };
            match ready!(Pin::new(body).poll_frame(cx)) {
                Some(Ok(f)) => match f.into_data() {
                    Ok(data) => {
                        if this.buf.is_empty() && this.chunk.is_empty() {
                            this.chunk = data;
                        } else {
                            // `split_message` moved what was left of the last
                            // frame into `buf` (a message that did not end in it).
                            this.buf.extend_from_slice(&data);
                        }
                    }
                    Err(f) => {
                        if let Ok(t) = f.into_trailers() {
                            return Poll::Ready(this.finish(Some(t)));
                        }
                    }
                },
                Some(Err(e)) => {
                    this.done = true;
                    this.body = None;
                    let code = if e.is_timeout() {
                        Code::DeadlineExceeded
                    } else {
                        Code::Cancelled
                    };
                    return Poll::Ready(Some(Err(stream_error(
                        code,
                        &format!("the stream was reset or broke: {e}"),
                    )
                    .with_source(e))));
                }
                None => return Poll::Ready(this.finish(None)),
            }
        }
    }
}

/// What ends a [`StreamBody`].
enum End {
    /// A request body: nothing, or a reset (RST_STREAM) on an error.
    Request {
        /// Fires (its sender dropped) when the caller drops the reply stream.
        cancelled: Option<oneshot::Receiver<()>>,
    },
    /// A response body: trailers with these attachments and the status.
    Response {
        attachments: Attachments,
        deadline: Option<(Instant, Pin<Box<tokio::time::Sleep>>)>,
    },
}

/// Messages already at hand are sent in one DATA frame up to this many bytes (gRPC
/// framing included), as tonic's encoder does: one small frame per message makes
/// framing most of the bytes, and h2 (since 0.4.20) answers a peer whose small DATA
/// frames pile up unread with GOAWAY `ENHANCE_YOUR_CALM` ("too_many_data_frames").
const BATCH: usize = 16 * 1024;

/// A body fed from a [`MessageStream`]: the messages ready when it is polled, in one
/// DATA frame of at most [`BATCH`] bytes before compression (a larger message is its
/// own frame).
pub(crate) struct StreamBody {
    messages: MessageStream,
    /// An item polled after a batch was full (or that ends the stream): handled first
    /// at the next poll, after the batch before it went out.
    held: Option<Option<Result<Bytes, RpcError>>>,
    end: End,
    done: bool,
    /// What each message is compressed with (`None`: nothing).
    encoding: Option<Encoding>,
    /// The largest message sent (`payload`; 0 or less: no limit): a larger one ends
    /// the stream with `RESOURCE_EXHAUSTED` instead of being sent.
    max: i64,
}

impl StreamBody {
    /// The body of a streaming request: ends with the stream; an error (or the
    /// caller dropping the reply stream, `cancelled`) resets the HTTP/2 stream.
    pub(crate) fn request(
        messages: MessageStream,
        cancelled: oneshot::Receiver<()>,
        encoding: Option<Encoding>,
        max: i64,
    ) -> Self {
        StreamBody {
            messages,
            held: None,
            end: End::Request {
                cancelled: Some(cancelled),
            },
            done: false,
            encoding,
            max,
        }
    }

    /// The body of a streaming response: then trailers with `attachments` and
    /// `grpc-status` (0, or the error's); past `deadline`, `DEADLINE_EXCEEDED`.
    pub(crate) fn response(
        messages: MessageStream,
        attachments: Attachments,
        deadline: Option<Instant>,
        encoding: Option<Encoding>,
        max: i64,
    ) -> Self {
        StreamBody {
            messages,
            held: None,
            end: End::Response {
                attachments,
                deadline: deadline.map(|d| (d, Box::pin(tokio::time::sleep_until(d.into())))),
            },
            done: false,
            encoding,
            max,
        }
    }

    /// Whether a message of `len` bytes is over the limit.
    fn too_large(&self, len: usize) -> bool {
        self.max > 0 && len as u64 > self.max as u64
    }

    fn trailers(&mut self, status: Option<Status>) -> Frame<Bytes> {
        self.done = true;
        let mut t = HeaderMap::new();
        if let End::Response { attachments, .. } = &self.end {
            headers::put_attachments(&mut t, attachments);
        }
        let (code, message) = status
            .map(|s| (s.code(), s.message().to_owned()))
            .unwrap_or((Code::Ok, String::new()));
        crate::server::put_status(&mut t, code, &message);
        Frame::trailers(t)
    }

    /// `first` framed, followed by the messages the stream has ready while the frame
    /// stays within [`BATCH`]; the first item that does not fit (or ends the stream) is
    /// held for the next poll. Uncompressed messages are framed straight into the
    /// batch (no buffer of their own).
    ///
    /// With `head` (the native transport), a message of [`BATCH`] bytes or more that is
    /// not compressed is not copied behind its prefix: the prefix goes to `head` and the
    /// message's own bytes are the frame's data, the two sent as one.
    fn batch(
        &mut self,
        first: Bytes,
        cx: &mut Context<'_>,
        head: Option<&mut Option<[u8; PREFIX_LEN]>>,
    ) -> Result<Bytes, RpcError> {
        let encoding = self.encoding;
        if PREFIX_LEN + first.len() >= BATCH {
            if let (Some(head), None, Ok(len)) = (head, encoding, u32::try_from(first.len())) {
                let l = len.to_be_bytes();
                *head = Some([0, l[0], l[1], l[2], l[3]]);
                return Ok(first);
            }
            return encode(&first, encoding);
        }
        let put = |out: &mut BytesMut, m: &[u8]| -> Result<(), RpcError> {
            if encoding.is_some() {
                out.extend_from_slice(&encode(m, encoding)?);
            } else {
                // Within the batch, so the length fits the prefix's u32.
                out.put_u8(0);
                out.put_u32(m.len() as u32);
                out.extend_from_slice(m);
            }
            Ok(())
        };
        let mut out = BytesMut::with_capacity(PREFIX_LEN + first.len());
        put(&mut out, &first)?;
        loop {
            match Pin::new(&mut self.messages).poll_next(cx) {
                // The frame stays within the batch (before compression).
                Poll::Ready(Some(Ok(m)))
                    if out.len() + PREFIX_LEN + m.len() <= BATCH && !self.too_large(m.len()) =>
                {
                    if out.capacity() - out.len() < PREFIX_LEN + m.len() {
                        out.reserve(BATCH - out.len());
                    }
                    put(&mut out, &m)?;
                }
                Poll::Ready(item) => {
                    self.held = Some(item);
                    break;
                }
                Poll::Pending => break,
            }
        }
        Ok(out.freeze())
    }
}

/// `m` framed as one message, compressed with `encoding` if there is one.
fn encode(m: &[u8], encoding: Option<Encoding>) -> Result<Bytes, RpcError> {
    frame::encode_with(m, encoding).map_err(|e| RpcError::serialization(e.to_string()))
}

impl StreamBody {
    /// The next frame, as [`Body::poll_frame`], except that a large uncompressed
    /// message comes without its 5-byte gRPC prefix, which is put in `head` (see
    /// [`StreamBody::batch`]): the native transport writes the two as one DATA frame
    /// without copying the message.
    pub(crate) fn poll_frame_split(
        &mut self,
        cx: &mut Context<'_>,
        head: &mut Option<[u8; PREFIX_LEN]>,
    ) -> Poll<Option<Result<Frame<Bytes>, RpcError>>> {
        self.poll_frame_with(cx, Some(head))
    }

    fn poll_frame_with(
        &mut self,
        cx: &mut Context<'_>,
        head: Option<&mut Option<[u8; PREFIX_LEN]>>,
    ) -> Poll<Option<Result<Frame<Bytes>, RpcError>>> {
        let this = self;
        if this.done {
            return Poll::Ready(None);
        }
        match &mut this.end {
            End::Request { cancelled } => {
                if let Some(c) = cancelled {
                    if Pin::new(c).poll(cx).is_ready() {
                        this.done = true;
                        return Poll::Ready(Some(Err(RpcError::network(
                            "the caller dropped the reply stream: the call is cancelled",
                        ))));
                    }
                }
            }
            End::Response { deadline, .. } => {
                if let Some((at, sleep)) = deadline {
                    if Instant::now() >= *at || sleep.as_mut().poll(cx).is_ready() {
                        let st = Status::new(Code::DeadlineExceeded, "deadline exceeded");
                        tracing::debug!("stream deadline exceeded");
                        return Poll::Ready(Some(Ok(this.trailers(Some(st)))));
                    }
                }
            }
        }
        let item = match this.held.take() {
            Some(item) => item,
            None => ready!(Pin::new(&mut this.messages).poll_next(cx)),
        };
        // A message over the limit is not sent: it ends the stream as an error would.
        let item = match item {
            Some(Ok(m)) if this.too_large(m.len()) => {
                let what = match this.end {
                    End::Request { .. } => "request",
                    End::Response { .. } => "reply",
                };
                let e = status::check_outgoing(m.len(), this.max, what)
                    .err()
                    .unwrap_or_else(|| RpcError::serialization("message too large"));
                tracing::warn!(error = %e, "stream message too large");
                Some(Err(e))
            }
            item => item,
        };
        match item {
            Some(Ok(m)) => Poll::Ready(Some(this.batch(m, cx, head).map(Frame::data))),
            Some(Err(e)) => match this.end {
                End::Request { .. } => {
                    this.done = true;
                    Poll::Ready(Some(Err(e)))
                }
                End::Response { .. } => {
                    tracing::debug!(error = %e, "response stream failed");
                    Poll::Ready(Some(Ok(this.trailers(Some(Status::from_error(&e))))))
                }
            },
            None => match this.end {
                End::Request { .. } => {
                    this.done = true;
                    Poll::Ready(None)
                }
                End::Response { .. } => Poll::Ready(Some(Ok(this.trailers(None)))),
            },
        }
    }
}

impl Body for StreamBody {
    type Data = Bytes;
    type Error = RpcError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, RpcError>>> {
        self.get_mut().poll_frame_with(cx, None)
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

use std::future::Future as _;

/// A reply stream with the call's deadline: past it, a `DEADLINE_EXCEEDED` error
/// ends the stream (and dropping the inner decoder resets the HTTP/2 stream).
pub(crate) struct Deadlined<S> {
    inner: Option<S>,
    deadline: Instant,
    sleep: Pin<Box<tokio::time::Sleep>>,
    /// The call counted in flight on its connection (`max.pending`) while its
    /// replies can still come.
    in_flight: Option<BusyGuard>,
}

impl<S> Deadlined<S> {
    pub(crate) fn new(inner: S, deadline: Instant, in_flight: Option<BusyGuard>) -> Self {
        Deadlined {
            inner: Some(inner),
            deadline,
            sleep: Box::pin(tokio::time::sleep_until(deadline.into())),
            in_flight,
        }
    }
}

impl<S: Stream<Item = Result<Bytes, RpcError>> + Unpin> Stream for Deadlined<S> {
    type Item = Result<Bytes, RpcError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        // Past the deadline nothing more is delivered, even what already arrived
        // (the timer may fire a little late).
        let passed = Instant::now() >= this.deadline;
        if !passed {
            if let Poll::Ready(item) = Pin::new(inner).poll_next(cx) {
                if item.is_none() {
                    // Ended: no longer in flight.
                    this.in_flight = None;
                }
                return Poll::Ready(item);
            }
        }
        if passed || this.sleep.as_mut().poll(cx).is_ready() {
            this.inner = None;
            this.in_flight = None;
            return Poll::Ready(Some(Err(RpcError::timeout(
                "the stream's deadline passed before it ended",
            )
            .with_source(Status::new(Code::DeadlineExceeded, "deadline exceeded")))));
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    /// Every frame of `body` until it ends: DATA bytes, and whether trailers or an error
    /// came last.
    async fn frames(mut body: StreamBody) -> (Vec<Bytes>, Option<Result<HeaderMap, String>>) {
        let mut data = Vec::new();
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(f) if f.is_data() => data.push(f.into_data().unwrap()),
                Ok(f) => return (data, Some(Ok(f.into_trailers().unwrap()))),
                Err(e) => return (data, Some(Err(e.to_string()))),
            }
        }
        (data, None)
    }

    /// The messages of gRPC-framed `bytes` (uncompressed), checking the framing.
    fn unframe(bytes: &[u8]) -> Vec<Vec<u8>> {
        unframe_with(bytes, None)
    }

    /// The messages of gRPC-framed `bytes`, each compressed with `encoding` if given.
    fn unframe_with(mut bytes: &[u8], encoding: Option<Encoding>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            assert_eq!(bytes[0], u8::from(encoding.is_some()), "compressed flag");
            let len = u32::from_be_bytes(bytes[1..5].try_into().unwrap()) as usize;
            let m = &bytes[5..5 + len];
            out.push(match encoding {
                Some(e) => e.decompress(m, 0).unwrap().to_vec(),
                None => m.to_vec(),
            });
            bytes = &bytes[5 + len..];
        }
        out
    }

    /// A request body of `messages`, and the sender whose drop cancels it (the reply
    /// decoder holds it in a call).
    fn request_with(
        messages: Vec<Result<Bytes, RpcError>>,
        encoding: Option<Encoding>,
    ) -> (StreamBody, oneshot::Sender<()>) {
        let (cancel, cancelled) = oneshot::channel();
        let body = StreamBody::request(
            MessageStream::new(futures::stream::iter(messages)),
            cancelled,
            encoding,
            0,
        );
        (body, cancel)
    }

    fn request(messages: Vec<Result<Bytes, RpcError>>) -> (StreamBody, oneshot::Sender<()>) {
        request_with(messages, None)
    }

    #[tokio::test]
    async fn ready_compressed_messages_share_frames_too() {
        let sent: Vec<Bytes> = (0..1000u32)
            .map(|i| Bytes::from(format!("compressed note {i}").repeat(4)))
            .collect();
        let (body, _cancel) =
            request_with(sent.iter().cloned().map(Ok).collect(), Some(Encoding::Gzip));
        let (data, end) = frames(body).await;
        assert!(end.is_none());
        assert!(data.len() < 100, "{} frames for 1,000 messages", data.len());
        let got: Vec<Vec<u8>> = data
            .iter()
            .flat_map(|f| unframe_with(f, Some(Encoding::Gzip)))
            .collect();
        let want: Vec<Vec<u8>> = sent.iter().map(|b| b.to_vec()).collect();
        assert_eq!(got, want);
    }

    #[tokio::test]
    async fn ready_small_messages_share_frames_within_the_batch_in_order() {
        let sent: Vec<Bytes> = (0..10_000u32)
            .map(|i| Bytes::from(format!("note {i}")))
            .collect();
        let (body, _cancel) = request(sent.iter().cloned().map(Ok).collect());
        let (data, end) = frames(body).await;
        assert!(end.is_none(), "a request body ends without trailers");
        assert!(
            data.len() < 10_000 / 100,
            "{} frames for 10,000 ready messages",
            data.len()
        );
        assert!(data.iter().all(|f| f.len() <= BATCH));
        let got: Vec<Vec<u8>> = data.iter().flat_map(|f| unframe(f)).collect();
        let want: Vec<Vec<u8>> = sent.iter().map(|b| b.to_vec()).collect();
        assert_eq!(got, want);
    }

    #[tokio::test]
    async fn a_large_message_is_its_own_frame_and_an_error_follows_what_came_before() {
        let big = Bytes::from(vec![7u8; BATCH]);
        let messages = vec![
            Ok(Bytes::from_static(b"a")),
            Ok(Bytes::from_static(b"b")),
            Ok(big.clone()),
            Ok(Bytes::from_static(b"c")),
            Err(RpcError::network("the caller failed")),
            Ok(Bytes::from_static(b"never")),
        ];
        let (body, _cancel) = request(messages);
        let (data, end) = frames(body).await;
        let per_frame: Vec<Vec<Vec<u8>>> = data.iter().map(|f| unframe(f)).collect();
        assert_eq!(
            per_frame,
            vec![
                vec![b"a".to_vec(), b"b".to_vec()],
                vec![big.to_vec()],
                vec![b"c".to_vec()],
            ]
        );
        assert!(matches!(end, Some(Err(e)) if e.contains("the caller failed")));
    }

    #[tokio::test]
    async fn split_a_large_message_comes_uncopied_with_its_prefix_apart() {
        let big = Bytes::from(vec![7u8; BATCH]);
        let small = Bytes::from_static(b"s");
        let mut body = StreamBody::response(
            MessageStream::new(futures::stream::iter([Ok(big.clone()), Ok(small)])),
            Attachments::default(),
            None,
            None,
            0,
        );
        let mut head = None;
        let f = std::future::poll_fn(|cx| body.poll_frame_split(cx, &mut head)).await;
        let data = f.unwrap().unwrap().into_data().unwrap();
        assert_eq!(data.as_ptr(), big.as_ptr(), "the message's own bytes");
        assert_eq!(head, Some([0, 0, 0, 0x40, 0]), "flag and length 16 384");
        // A small one is framed in the batch, as before.
        let mut head = None;
        let f = std::future::poll_fn(|cx| body.poll_frame_split(cx, &mut head)).await;
        assert_eq!(
            unframe(&f.unwrap().unwrap().into_data().unwrap()),
            vec![b"s".to_vec()]
        );
        assert_eq!(head, None);

        // Compressed: framed (and compressed) whole, no prefix apart.
        let mut body = StreamBody::response(
            MessageStream::new(futures::stream::iter([Ok(big.clone())])),
            Attachments::default(),
            None,
            Some(Encoding::Gzip),
            0,
        );
        let f = std::future::poll_fn(|cx| body.poll_frame_split(cx, &mut head)).await;
        let data = f.unwrap().unwrap().into_data().unwrap();
        assert_eq!(head, None);
        assert_eq!(
            unframe_with(&data, Some(Encoding::Gzip)),
            vec![big.to_vec()]
        );
    }

    #[tokio::test]
    async fn a_response_ends_with_ok_trailers_after_its_batched_messages() {
        let body = StreamBody::response(
            MessageStream::new(futures::stream::iter(
                (0..3).map(|i| Ok(Bytes::from(vec![i; 3]))),
            )),
            Attachments::default(),
            None,
            None,
            0,
        );
        let (data, end) = frames(body).await;
        assert_eq!(data.len(), 1);
        assert_eq!(unframe(&data[0]).len(), 3);
        let trailers = end.unwrap().unwrap();
        assert_eq!(trailers.get(GRPC_STATUS).unwrap(), "0");
    }

    #[tokio::test]
    async fn a_message_over_the_limit_is_not_sent_and_ends_the_stream_resource_exhausted() {
        let messages = vec![
            Ok(Bytes::from_static(b"small")),
            Ok(Bytes::from(vec![1u8; 11])),
            Ok(Bytes::from_static(b"never")),
        ];
        let body = StreamBody::response(
            MessageStream::new(futures::stream::iter(messages)),
            Attachments::default(),
            None,
            None,
            10,
        );
        let (data, end) = frames(body).await;
        let sent: Vec<Vec<u8>> = data.iter().flat_map(|f| unframe(f)).collect();
        assert_eq!(sent, vec![b"small".to_vec()], "only what came before it");
        let trailers = end.unwrap().unwrap();
        assert_eq!(
            trailers.get(GRPC_STATUS).unwrap(),
            "8",
            "RESOURCE_EXHAUSTED"
        );
        let message = trailers.get(GRPC_MESSAGE).unwrap().to_str().unwrap();
        assert!(message.contains("max payload: 10"), "{message}");

        // A request stream: an error, so the HTTP/2 stream is reset, not sent.
        let (cancel, cancelled) = oneshot::channel::<()>();
        let body = StreamBody::request(
            MessageStream::new(futures::stream::iter(vec![Ok(Bytes::from(vec![0u8; 11]))])),
            cancelled,
            None,
            10,
        );
        let (data, end) = frames(body).await;
        drop(cancel);
        assert!(data.is_empty());
        assert!(matches!(end, Some(Err(e)) if e.contains("Data length too large: 11")));
    }

    /// The messages a request decoder reads from `wire` cut into DATA frames of
    /// `cut` bytes (the last error as a string).
    async fn decode_cut(wire: &[u8], cut: usize) -> (Vec<Bytes>, Option<String>) {
        let mut frames = wire.chunks(cut).map(Bytes::copy_from_slice);
        let first = frames.next();
        let body = crate::native::RecvBody::complete(first, frames.collect(), None);
        let mut decoder = MessageDecoder::request(ReqBody::Native(body), 0, None);
        let mut got = Vec::new();
        while let Some(m) = futures::StreamExt::next(&mut decoder).await {
            match m {
                Ok(m) => got.push(m),
                Err(e) => return (got, Some(e.to_string())),
            }
        }
        (got, None)
    }

    #[tokio::test]
    async fn the_decoder_reads_messages_whole_in_split_over_and_across_frames() {
        let sent: Vec<Bytes> = [0usize, 3, 21, 1, 40_000, 16, 5, 70_000, 2]
            .iter()
            .enumerate()
            .map(|(i, &n)| Bytes::from((0..n).map(|k| (k * 7 + i) as u8).collect::<Vec<_>>()))
            .collect();
        let mut wire = Vec::new();
        for m in &sent {
            wire.push(0);
            wire.extend_from_slice(&(m.len() as u32).to_be_bytes());
            wire.extend_from_slice(m);
        }
        // Frames that hold several messages, end inside a prefix or a message, or
        // hold a message's middle only.
        for cut in [1, 2, 4, 5, 6, 9, 26, 1000, 16_384, wire.len()] {
            let (got, error) = decode_cut(&wire, cut).await;
            assert_eq!(error, None, "cut {cut}");
            assert_eq!(got, sent, "cut {cut}");
            // A body that ends inside its last message is an error after the
            // messages before it.
            let (got, error) = decode_cut(&wire[..wire.len() - 1], cut).await;
            assert_eq!(got, sent[..sent.len() - 1], "cut {cut}, truncated");
            assert!(error.is_some_and(|e| e.contains("runcated")), "cut {cut}");
        }
    }
}
