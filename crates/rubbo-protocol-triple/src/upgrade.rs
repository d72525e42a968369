//! The h2c upgrade (RFC 7540 §3.2): an HTTP/1.1 request with `Upgrade: h2c`,
//! `HTTP2-Settings` and `Connection: Upgrade, HTTP2-Settings` is answered
//! `101 Switching Protocols`; then the connection speaks HTTP/2, the upgraded request
//! is answered on stream 1, and later requests are ordinary HTTP/2 streams. Java's
//! Triple port takes it too (`TripleHttp2Protocol`, Netty's `Http2ServerUpgradeCodec`).
//!
//! Why by hand: hyper 1.x hands over the upgraded connection (`hyper::upgrade`), but
//! neither hyper nor h2 can start an HTTP/2 server whose stream 1 is already open
//! (h2's servers take streams only from HEADERS frames). So the upgraded request is
//! turned into the frames the client would have sent with prior knowledge, and the
//! [`Injected`] reader hands them to the HTTP/2 server inside the client's byte
//! stream: a HEADERS block (HPACK literals without indexing, which need no table
//! state, split into CONTINUATION frames as needed) and the body as DATA frames, on
//! stream 1, ending the stream. They go in right after the client acknowledges our
//! SETTINGS (h2 applies our stream window only then), or before the client's first
//! HEADERS frame if that comes first (stream ids must grow), at a frame boundary.
//!
//! Bounds: the request's headers by `max-header-list-size` (431 otherwise), its body
//! by `payload` and by the stream window (413 otherwise), the body read by
//! [`BODY_TIMEOUT`], the wait for the client's preface and SETTINGS ACK by
//! [`ACK_TIMEOUT`]. The `HTTP2-Settings` payload is not applied: clients send the
//! same values in the SETTINGS frame that follows their preface.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{CONNECTION, CONTENT_TYPE, HOST, UPGRADE};
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, Version};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::upgrade::OnUpgrade;
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tracing::{debug, warn};

use crate::body::{TriBody, UnaryBody};
use crate::config::H2Settings;

/// How long the upgraded request's body may take to arrive.
pub(crate) const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long, after the `101`, the client may take to send its preface and
/// acknowledge our SETTINGS before the connection is closed.
pub(crate) const ACK_TIMEOUT: Duration = Duration::from_secs(10);

/// The client connection preface (RFC 9113 §3.4).
const PREFACE_LEN: usize = 24;
/// Frames we write for stream 1 stay within HTTP/2's default SETTINGS_MAX_FRAME_SIZE,
/// which every server takes.
const FRAME: usize = 16_384;
const HEADERS: u8 = 0x1;
const DATA: u8 = 0x0;
const SETTINGS: u8 = 0x4;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const ACK: u8 = 0x1;

/// Headers of the HTTP/1.1 request that do not go on to HTTP/2 (connection-specific,
/// RFC 9113 §8.2.2, and the upgrade's own).
const DROPPED: &[&str] = &[
    "connection",
    "upgrade",
    "http2-settings",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "host",
    "content-length",
];

/// An accepted upgrade, waiting for hyper to hand over the connection once the
/// `101` is written.
#[derive(Debug)]
pub(crate) struct Pending {
    on_upgrade: OnUpgrade,
    /// The upgraded request as HTTP/2 frames on stream 1.
    frames: Bytes,
}

/// Where a connection's service leaves an accepted upgrade for the connection task.
pub(crate) type Slot = Arc<Mutex<Option<Pending>>>;

/// Whether `req` asks to upgrade to h2c, as RFC 7540 §3.2 spells it.
pub(crate) fn is_h2c(req: &Request<Incoming>) -> bool {
    req.version() == Version::HTTP_11
        && req.headers().contains_key(UPGRADE)
        && has_token(req.headers(), UPGRADE, "h2c")
        && req.headers().contains_key("http2-settings")
        && has_token(req.headers(), CONNECTION, "upgrade")
        && has_token(req.headers(), CONNECTION, "http2-settings")
}

fn has_token(h: &HeaderMap, name: http::header::HeaderName, token: &str) -> bool {
    h.get_all(name).iter().any(|v| {
        v.to_str()
            .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    })
}

/// An HTTP/1.1 answer that does not upgrade.
fn refuse(status: StatusCode, message: &str) -> Response<TriBody> {
    let body = serde_json::json!({ "status": status.as_u16().to_string(), "message": message });
    let text = serde_json::to_vec(&body).unwrap_or_default();
    let mut r = Response::new(TriBody::from(UnaryBody::new(Some(Bytes::from(text)), None)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// Takes the upgrade: reads the request's body (within `payload` and the stream
/// window), turns the request into stream 1's frames, leaves them in `slot` for the
/// connection task and answers `101`. A request that does not fit is answered over
/// HTTP/1.1 and the connection stays HTTP/1.1.
pub(crate) async fn accept(
    mut req: Request<Incoming>,
    slot: &Slot,
    payload: i64,
    settings: H2Settings,
) -> Response<TriBody> {
    let block = match header_block(&req, settings.max_header_list as usize) {
        Ok(b) => b,
        Err(size) => {
            warn!(
                size,
                max = settings.max_header_list,
                "h2c upgrade request headers too large"
            );
            return refuse(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                &format!(
                    "request headers of {size} bytes exceed {} (max-header-list-size)",
                    settings.max_header_list
                ),
            );
        }
    };
    let on_upgrade = hyper::upgrade::on(&mut req);
    let payload_limit = if payload > 0 {
        usize::try_from(payload).unwrap_or(usize::MAX)
    } else {
        usize::MAX
    };
    let limit = payload_limit.min(settings.initial_window as usize);
    let read = Limited::new(req.into_body(), limit).collect();
    let body = match tokio::time::timeout(BODY_TIMEOUT, read).await {
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            warn!(limit, "h2c upgrade request body too large");
            return refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("an upgraded request's body is at most {limit} bytes"),
            );
        }
        Ok(Err(e)) => {
            debug!(error = %e, "h2c upgrade request body failed");
            return refuse(
                StatusCode::BAD_REQUEST,
                &format!("request body failed: {e}"),
            );
        }
        Err(_) => {
            warn!("h2c upgrade request body timed out");
            return refuse(
                StatusCode::REQUEST_TIMEOUT,
                &format!("the request body took over {} s", BODY_TIMEOUT.as_secs()),
            );
        }
    };
    *slot.lock() = Some(Pending {
        on_upgrade,
        frames: stream_one(&block, &body),
    });
    debug!(body = body.len(), "h2c upgrade accepted");
    let mut r = Response::new(TriBody::from(UnaryBody::empty()));
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(UPGRADE, HeaderValue::from_static("h2c"));
    r
}

impl Pending {
    /// The upgraded connection, with stream 1's frames fed to the HTTP/2 server that
    /// reads it.
    pub(crate) async fn connection(
        self,
    ) -> Result<Injected<hyper_util::rt::TokioIo<hyper::upgrade::Upgraded>>, hyper::Error> {
        let io = self.on_upgrade.await?;
        Ok(Injected::new(hyper_util::rt::TokioIo::new(io), self.frames))
    }
}

/// The HPACK block of `req` as an HTTP/2 request, every field a literal without
/// indexing with a literal name (RFC 7541 §6.2.2); `Err(size)` past `max` (RFC
/// 9113's list size: name, value and 32 per field).
fn header_block(req: &Request<Incoming>, max: usize) -> Result<Bytes, usize> {
    let h = req.headers();
    let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let authority = h
        .get(HOST)
        .map(HeaderValue::as_bytes)
        .or_else(|| req.uri().authority().map(|a| a.as_str().as_bytes()));
    let mut fields: Vec<(&[u8], &[u8])> = vec![
        (b":method", req.method().as_str().as_bytes()),
        (b":scheme", b"http"),
        (b":path", path.as_bytes()),
    ];
    if let Some(a) = authority {
        fields.push((b":authority", a));
    }
    for (name, value) in h {
        let n = name.as_str();
        // `te` may only say `trailers` in HTTP/2.
        if DROPPED.contains(&n) || (n == "te" && value.as_bytes() != b"trailers") {
            continue;
        }
        fields.push((n.as_bytes(), value.as_bytes()));
    }
    let size: usize = fields.iter().map(|(n, v)| n.len() + v.len() + 32).sum();
    if size > max {
        return Err(size);
    }
    let mut block = BytesMut::with_capacity(size);
    for (n, v) in fields {
        block.put_u8(0);
        hpack_string(&mut block, n);
        hpack_string(&mut block, v);
    }
    Ok(block.freeze())
}

/// An HPACK string literal, not Huffman-coded: its length as a 7-bit prefix integer,
/// then its bytes.
fn hpack_string(out: &mut BytesMut, s: &[u8]) {
    hpack_int(out, s.len(), 7, 0);
    out.put_slice(s);
}

/// An HPACK integer with an `n`-bit prefix (RFC 7541 §5.1); `high` holds the bits
/// above the prefix.
fn hpack_int(out: &mut BytesMut, mut v: usize, n: u8, high: u8) {
    let max = (1usize << n) - 1;
    if v < max {
        out.put_u8(high | v as u8);
        return;
    }
    out.put_u8(high | max as u8);
    v -= max;
    while v >= 128 {
        out.put_u8((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.put_u8(v as u8);
}

fn frame_header(out: &mut BytesMut, len: usize, kind: u8, flags: u8, stream: u32) {
    out.put_uint(len as u64, 3);
    out.put_u8(kind);
    out.put_u8(flags);
    out.put_u32(stream);
}

/// Stream 1 as the client would have sent it: HEADERS (and CONTINUATIONs) of
/// `block`, then `body` in DATA frames; the last frame ends the stream.
fn stream_one(block: &[u8], body: &[u8]) -> Bytes {
    let frames = block.len().div_ceil(FRAME).max(1) + body.len().div_ceil(FRAME);
    let mut out = BytesMut::with_capacity(block.len() + body.len() + 9 * frames);
    let mut chunks = block.chunks(FRAME).peekable();
    let mut first = true;
    loop {
        let chunk = chunks.next().unwrap_or_default();
        let last = chunks.peek().is_none();
        let (kind, mut flags) = if first {
            (HEADERS, if body.is_empty() { END_STREAM } else { 0 })
        } else {
            (CONTINUATION, 0)
        };
        if last {
            flags |= END_HEADERS;
        }
        frame_header(&mut out, chunk.len(), kind, flags, 1);
        out.put_slice(chunk);
        first = false;
        if last {
            break;
        }
    }
    let mut chunks = body.chunks(FRAME).peekable();
    while let Some(chunk) = chunks.next() {
        let flags = if chunks.peek().is_none() {
            END_STREAM
        } else {
            0
        };
        frame_header(&mut out, chunk.len(), DATA, flags, 1);
        out.put_slice(chunk);
    }
    out.freeze()
}

/// Where the reader is in the client's bytes, until stream 1 went in.
#[derive(Debug, Clone, Copy)]
enum Scan {
    /// The preface: this many bytes left.
    Preface(usize),
    /// A frame header, this much of it read.
    Header(usize),
    /// A frame's payload: this many bytes left; then stream 1 goes in if `then`.
    Payload(usize, bool),
    /// Stream 1 went in: the rest passes through.
    Through,
}

/// The upgraded connection, whose reads carry stream 1's frames in at the right
/// point of the client's bytes; writes pass through.
#[derive(Debug)]
pub(crate) struct Injected<T> {
    io: T,
    scan: Scan,
    /// A frame header being read.
    header: [u8; 9],
    /// Stream 1's frames, until they go in.
    frames: Option<Bytes>,
    /// Bytes to hand out before reading more.
    out: Bytes,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl<T> Injected<T> {
    fn new(io: T, frames: Bytes) -> Self {
        Injected {
            io,
            scan: Scan::Preface(PREFACE_LEN),
            header: [0; 9],
            frames: Some(frames),
            out: Bytes::new(),
            deadline: Box::pin(tokio::time::sleep(ACK_TIMEOUT)),
        }
    }

    /// Hands out stream 1's frames next; after them everything passes through.
    fn inject(&mut self) {
        self.out = self.frames.take().unwrap_or_default();
        self.scan = Scan::Through;
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Injected<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if buf.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            if !this.out.is_empty() {
                let n = this.out.len().min(buf.remaining());
                buf.put_slice(&this.out.split_to(n));
                return Poll::Ready(Ok(()));
            }
            if let Scan::Through = this.scan {
                return Pin::new(&mut this.io).poll_read(cx, buf);
            }
            if this.deadline.as_mut().poll(cx).is_ready() {
                warn!("h2c upgrade: no SETTINGS acknowledgement from the client in time");
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "h2c upgrade: the client did not acknowledge SETTINGS in time",
                )));
            }
            match this.scan {
                Scan::Through => {}
                Scan::Preface(0) | Scan::Payload(0, false) => this.scan = Scan::Header(0),
                // The SETTINGS ACK went through: stream 1 goes in.
                Scan::Payload(0, true) => this.inject(),
                Scan::Preface(left) | Scan::Payload(left, _) => {
                    // Only a few small frames come before stream 1 goes in: they
                    // pass through a small buffer, at most what is left of this one.
                    let mut tmp = [0u8; 512];
                    let want = left.min(tmp.len()).min(buf.remaining());
                    let mut rb = ReadBuf::new(&mut tmp[..want]);
                    ready!(Pin::new(&mut this.io).poll_read(cx, &mut rb))?;
                    let n = rb.filled().len();
                    if n == 0 {
                        return Poll::Ready(Ok(())); // the end of the stream
                    }
                    buf.put_slice(&tmp[..n]);
                    this.scan = match this.scan {
                        Scan::Preface(l) => Scan::Preface(l - n),
                        Scan::Payload(l, ack) => Scan::Payload(l - n, ack),
                        other => other,
                    };
                    return Poll::Ready(Ok(()));
                }
                Scan::Header(have) if have < 9 => {
                    let mut rb = ReadBuf::new(&mut this.header[have..]);
                    ready!(Pin::new(&mut this.io).poll_read(cx, &mut rb))?;
                    let n = rb.filled().len();
                    if n == 0 {
                        return Poll::Ready(Ok(()));
                    }
                    this.scan = Scan::Header(have + n);
                }
                Scan::Header(_) => {
                    let h = this.header;
                    let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
                    let (kind, flags) = (h[3], h[4]);
                    if kind == HEADERS {
                        // A new stream before the ACK: stream 1 must come first.
                        this.inject();
                        let mut out = BytesMut::from(&this.out[..]);
                        out.put_slice(&h);
                        this.out = out.freeze();
                    } else {
                        this.out = Bytes::copy_from_slice(&h);
                        this.scan = Scan::Payload(len, kind == SETTINGS && flags & ACK != 0);
                    }
                }
            }
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Injected<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}
