//! The native HTTP/2 transport (`triple.transport=native`), over real sockets on
//! 127.0.0.1, with a client that writes frames by hand (h2's frame codec decodes
//! what comes back): a call and a PING are answered; protocol violations get GOAWAY
//! or RST_STREAM with RFC 9113's code, and the server keeps serving other
//! connections; streams over the limit are refused; a client's RST_STREAM cancels
//! the call; shutdown sends GOAWAY and lets the running call finish.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use futures::{SinkExt, StreamExt};
use h2::Reason;
use h2::frame::{self as h2f, StreamId};
use http::{HeaderMap, Method, Uri};
use rubbo_common::stream::{MessageStream, StreamKind, StreamSlot};
use rubbo_common::{
    BoxInvoker, Encoded, Exporter, Invocation, InvokeFuture, Invoker, Payload, Protocol, RpcResult,
    Url,
};
use rubbo_protocol_triple::TripleProtocol;
use rubbo_serialization::PROTOBUF;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

const SERVICE: &str = "test.Native";
const STEP: Duration = Duration::from_secs(10);
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

async fn bounded<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(STEP, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: nothing within {STEP:?}"))
}

/// `Echo` echoes its message; `Hold` waits for the gate, counting the calls that
/// started and the ones dropped before they finished.
#[derive(Debug)]
struct Provider {
    url: Url,
    gate: watch::Receiver<bool>,
    started: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
}

struct CountDrop(Arc<AtomicUsize>, bool);

impl Drop for CountDrop {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Invoker for Provider {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let mut gate = self.gate.clone();
        let started = self.started.clone();
        let dropped = self.dropped.clone();
        Box::pin(async move {
            let message = match inv.arguments() {
                rubbo_common::Arguments::Encoded { encoded, .. } => encoded.bytes.clone(),
                _ => Bytes::new(),
            };
            if inv.method() == "Sink" {
                // Client streaming: reads nothing until the gate opens, then counts.
                let mut requests = inv.arguments().as_stream().unwrap().take()?;
                started.fetch_add(1, Ordering::SeqCst);
                let _ = gate.wait_for(|open| *open).await;
                let mut n = 0u64;
                while let Some(m) = requests.next().await {
                    m?;
                    n += 1;
                }
                return Ok(RpcResult::value(Payload::Encoded(Encoded::new(
                    &PROTOBUF,
                    Bytes::copy_from_slice(&n.to_be_bytes()),
                ))));
            }
            if inv.method() == "Big" {
                // Server streaming: two messages too large to share a frame.
                let messages = futures::stream::iter([Ok(big(1)), Ok(big(2))]);
                return Ok(RpcResult::value(Payload::Stream(StreamSlot::new(
                    StreamKind::Server,
                    MessageStream::new(messages),
                ))));
            }
            if inv.method() == "Panic" {
                panic!("the handler panics (test)");
            }
            if inv.method() == "PanicLater" {
                // Waits first, so it panics in a task of its own.
                tokio::task::yield_now().await;
                panic!("the handler panics in its task (test)");
            }
            if inv.method() == "Hold" {
                started.fetch_add(1, Ordering::SeqCst);
                let mut guard = CountDrop(dropped, false);
                let _ = gate.wait_for(|open| *open).await;
                guard.1 = true;
            }
            Ok(RpcResult::value(Payload::Encoded(Encoded::new(
                &PROTOBUF, message,
            ))))
        })
    }

    fn url(&self) -> &Url {
        &self.url
    }
}

struct Server {
    protocol: TripleProtocol,
    port: u16,
    gate: watch::Sender<bool>,
    started: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
    _exporter: Box<dyn Exporter>,
}

async fn serve(params: &str) -> Server {
    serve_on("native", params).await
}

async fn serve_on(transport: &str, params: &str) -> Server {
    let url = Url::parse(&format!(
        "tri://127.0.0.1:0/{SERVICE}?interface={SERVICE}&methods=Echo,Hold,Sink,Big,Panic,PanicLater&idl-methods=Echo,Hold,Sink,Big,Panic,PanicLater\
         &stream-methods=Sink:client,Big:server&triple.transport={transport}&{params}"
    ))
    .unwrap();
    let protocol = TripleProtocol::new();
    let (gate, rx) = watch::channel(false);
    let started = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicUsize::new(0));
    let provider: BoxInvoker = Arc::new(Provider {
        url,
        gate: rx,
        started: started.clone(),
        dropped: dropped.clone(),
    });
    let exporter = protocol.export(provider).await.unwrap();
    let port = protocol.server_addrs()[0].port();
    Server {
        protocol,
        port,
        gate,
        started,
        dropped,
        _exporter: exporter,
    }
}

/// Waits (bounded) until `cond` holds.
async fn until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + STEP;
    while !cond() {
        assert!(Instant::now() < deadline, "{what}: not within {STEP:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn grpc_message(payload: &[u8]) -> Bytes {
    let mut b = BytesMut::new();
    b.put_u8(0);
    b.put_u32(payload.len() as u32);
    b.put_slice(payload);
    b.freeze()
}

/// A message of the `Big` stream: 20 000 bytes, a pattern starting at `seed`.
fn big(seed: u8) -> Bytes {
    (0..20_000u32)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

type Client = h2::Codec<TcpStream, Bytes>;

/// A connection that sent the preface and its (empty) SETTINGS.
async fn connect(port: u16) -> Client {
    connect_with(port, h2f::Settings::default()).await
}

/// A connection that sent the preface and `settings`.
async fn connect_with(port: u16, settings: h2f::Settings) -> Client {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(PREFACE).await.unwrap();
    let mut c: Client = h2::Codec::new(s);
    c.set_max_recv_frame_size(16_777_215);
    bounded("settings", c.send(settings.into())).await.unwrap();
    c
}

/// The HEADERS of a gRPC call of `method` on `stream`.
fn request(stream: u32, method: &str, end: bool) -> h2f::Frame {
    let uri: Uri = format!("http://127.0.0.1/{SERVICE}/{method}")
        .parse()
        .unwrap();
    let mut fields = HeaderMap::new();
    fields.insert("content-type", "application/grpc".parse().unwrap());
    fields.insert("te", "trailers".parse().unwrap());
    let mut h = h2f::Headers::new(
        StreamId::from(stream),
        h2f::Pseudo::request(Method::POST, uri, None),
        fields,
    );
    if end {
        h.set_end_stream();
    }
    h.into()
}

fn data(stream: u32, payload: Bytes, end: bool) -> h2f::Frame {
    let mut d = h2f::Data::new(StreamId::from(stream), payload);
    d.set_end_stream(end);
    d.into()
}

/// Sends a unary call of `method` with `message` on `stream`.
async fn call(c: &mut Client, stream: u32, method: &str, message: &[u8]) {
    c.feed(request(stream, method, false)).await.unwrap();
    c.send(data(stream, grpc_message(message), true))
        .await
        .unwrap();
}

/// The next frame that is not connection housekeeping (SETTINGS, WINDOW_UPDATE).
async fn next(c: &mut Client) -> Option<h2f::Frame> {
    loop {
        match bounded("frame", c.next()).await {
            Some(Ok(h2f::Frame::Settings(s))) => {
                if !s.is_ack() {
                    c.send(h2f::Settings::ack().into()).await.unwrap();
                }
            }
            Some(Ok(h2f::Frame::WindowUpdate(_))) => {}
            Some(Ok(f)) => return Some(f),
            Some(Err(e)) => panic!("bad frame from the server: {e:?}"),
            None => return None,
        }
    }
}

/// Reads the answer of `stream`: its status, DATA and trailers' `grpc-status`.
async fn answer(c: &mut Client, stream: u32) -> (u16, Vec<u8>, String) {
    let (mut status, mut body, mut grpc) = (0, Vec::new(), String::new());
    loop {
        let f = next(c).await.expect("connection closed before the answer");
        match f {
            h2f::Frame::Headers(h) if u32::from(h.stream_id()) == stream => {
                let end = h.is_end_stream();
                let (pseudo, fields) = h.into_parts();
                if let Some(s) = pseudo.status {
                    status = s.as_u16();
                }
                if let Some(g) = fields.get("grpc-status") {
                    grpc = g.to_str().unwrap().to_owned();
                }
                if end {
                    return (status, body, grpc);
                }
            }
            h2f::Frame::Data(d) if u32::from(d.stream_id()) == stream => {
                let end = d.is_end_stream();
                body.extend_from_slice(d.payload());
                if end {
                    return (status, body, grpc);
                }
            }
            // A stream refused or reset before: its DATA in flight got STREAM_CLOSED.
            h2f::Frame::Reset(r)
                if u32::from(r.stream_id()) != stream && r.reason() == Reason::STREAM_CLOSED => {}
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// Reads until GOAWAY; its code. The server then closes the connection.
async fn goaway(c: &mut Client) -> Reason {
    loop {
        match bounded("goaway", c.next()).await {
            Some(Ok(h2f::Frame::GoAway(g))) => {
                let reason = g.reason();
                // Nothing after it but the end of the connection.
                loop {
                    match bounded("close", c.next()).await {
                        None | Some(Err(_)) => return reason,
                        Some(Ok(h2f::Frame::Settings(_) | h2f::Frame::WindowUpdate(_))) => {}
                        Some(Ok(f)) => panic!("{f:?} after GOAWAY"),
                    }
                }
            }
            Some(Ok(_)) => {}
            other => panic!("connection ended without GOAWAY: {other:?}"),
        }
    }
}

/// A call on a fresh connection by Rubbo's own client: the server still serves.
async fn still_serves(port: u16) {
    let client = TripleProtocol::new()
        .refer(
            Url::parse(&format!(
                "tri://127.0.0.1:{port}/{SERVICE}?interface={SERVICE}&timeout=10000"
            ))
            .unwrap(),
        )
        .await
        .unwrap();
    let inv = Invocation::new(SERVICE, "Echo").with_arguments(rubbo_common::Arguments::Encoded {
        count: 1,
        encoded: Encoded::new(&PROTOBUF, Bytes::from_static(b"again")),
    });
    let r = bounded("call", client.invoke(inv)).await.unwrap();
    match r.into_parts().0 {
        rubbo_common::Outcome::Value(Payload::Encoded(e)) => assert_eq!(&e.bytes[..], b"again"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_call_and_a_ping_are_answered() {
    let server = serve("").await;
    let mut c = connect(server.port).await;
    call(&mut c, 1, "Echo", b"hello").await;
    c.send(h2f::Ping::new(*b"12345678").into()).await.unwrap();
    let mut pong = false;
    let (mut status, mut body, mut grpc) = (0, Vec::new(), String::new());
    // The PONG and the answer, in either order.
    while !pong || grpc.is_empty() {
        match next(&mut c).await.unwrap() {
            h2f::Frame::Ping(p) => {
                assert!(p.is_ack());
                assert_eq!(p.payload(), b"12345678");
                pong = true;
            }
            h2f::Frame::Headers(h) => {
                let (pseudo, fields) = h.into_parts();
                if let Some(s) = pseudo.status {
                    status = s.as_u16();
                    assert_eq!(fields["content-type"], "application/grpc");
                }
                if let Some(g) = fields.get("grpc-status") {
                    grpc = g.to_str().unwrap().to_owned();
                }
            }
            h2f::Frame::Data(d) => body.extend_from_slice(d.payload()),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((status, grpc.as_str()), (200, "0"));
    assert_eq!(body, grpc_message(b"hello"));
    // More calls on the same connection.
    call(&mut c, 3, "Echo", b"two").await;
    assert_eq!(
        answer(&mut c, 3).await,
        (200, grpc_message(b"two").to_vec(), "0".into())
    );
    still_serves(server.port).await;
}

#[tokio::test]
async fn an_unknown_method_is_unimplemented_trailers_only() {
    let server = serve("").await;
    let mut c = connect(server.port).await;
    let uri: Uri = "http://127.0.0.1/test.Nobody/Echo".parse().unwrap();
    let mut fields = HeaderMap::new();
    fields.insert("content-type", "application/grpc".parse().unwrap());
    let h = h2f::Headers::new(
        StreamId::from(1),
        h2f::Pseudo::request(Method::POST, uri, None),
        fields,
    );
    c.feed(h.into()).await.unwrap();
    c.send(data(1, grpc_message(b"x"), true)).await.unwrap();
    let (status, body, grpc) = answer(&mut c, 1).await;
    // UNIMPLEMENTED, as on hyper (HTTP 404, as Java answers it).
    assert_eq!((status, body.len(), grpc.as_str()), (404, 0, "12"));
}

/// Each violation on its own connection: the right GOAWAY, then the server still
/// answers a new connection.
#[tokio::test]
async fn connection_errors_get_goaway_and_the_server_keeps_serving() {
    let server = serve("triple.max-frame-size=16384").await;
    let port = server.port;

    // The first frame is not SETTINGS.
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(PREFACE).await.unwrap();
    let mut c: Client = h2::Codec::new(s);
    c.send(h2f::Ping::new(*b"abcdefgh").into()).await.unwrap();
    assert_eq!(goaway(&mut c).await, Reason::PROTOCOL_ERROR, "PING first");

    // A frame over our SETTINGS_MAX_FRAME_SIZE.
    let mut c = connect(port).await;
    let mut big = vec![0, 0x80, 0x00, 0, 0, 0, 0, 0, 1];
    big.extend_from_slice(&[0; 0x8000]);
    c.get_mut().write_all(&big).await.unwrap();
    assert_eq!(goaway(&mut c).await, Reason::FRAME_SIZE_ERROR, "oversized");

    // DATA on a stream never opened.
    let mut c = connect(port).await;
    c.send(data(5, grpc_message(b"x"), true)).await.unwrap();
    assert_eq!(goaway(&mut c).await, Reason::PROTOCOL_ERROR, "idle stream");

    // A connection window over 2^31 - 1.
    let mut c = connect(port).await;
    c.send(h2f::WindowUpdate::new(StreamId::zero(), 0x7fff_ffff).into())
        .await
        .unwrap();
    assert_eq!(
        goaway(&mut c).await,
        Reason::FLOW_CONTROL_ERROR,
        "window overflow"
    );

    // A stream id the client may not use (even), and one going backwards.
    let mut c = connect(port).await;
    c.send(request(2, "Echo", true)).await.unwrap();
    assert_eq!(goaway(&mut c).await, Reason::PROTOCOL_ERROR, "even stream");
    let mut c = connect(port).await;
    call(&mut c, 5, "Echo", b"a").await;
    answer(&mut c, 5).await;
    c.send(request(3, "Echo", true)).await.unwrap();
    assert_eq!(
        goaway(&mut c).await,
        Reason::STREAM_CLOSED,
        "stream 3 after 5"
    );

    // Not HTTP/2 past the first bytes of the preface: hyper's HTTP/1 answers 400 or
    // closes, and nothing hangs.
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n")
        .await
        .unwrap();
    let mut reply = Vec::new();
    bounded("bad preface", s.read_to_end(&mut reply))
        .await
        .unwrap();
    assert!(
        reply.is_empty() || reply.starts_with(b"HTTP/1.1 4"),
        "{:?}",
        String::from_utf8_lossy(&reply)
    );

    still_serves(port).await;
}

#[tokio::test]
async fn streams_over_the_limit_are_refused() {
    let server = serve("triple.max-concurrent-streams=1").await;
    let mut c = connect(server.port).await;
    call(&mut c, 1, "Hold", b"first").await;
    until("the first call started", || {
        server.started.load(Ordering::SeqCst) == 1
    })
    .await;
    call(&mut c, 3, "Echo", b"second").await;
    match next(&mut c).await.unwrap() {
        h2f::Frame::Reset(r) => {
            assert_eq!(u32::from(r.stream_id()), 3);
            assert_eq!(r.reason(), Reason::REFUSED_STREAM);
        }
        other => panic!("expected RST_STREAM, got {other:?}"),
    }
    server.gate.send(true).unwrap();
    assert_eq!(
        answer(&mut c, 1).await,
        (200, grpc_message(b"first").to_vec(), "0".into())
    );
    // With the first done, a new stream is served.
    call(&mut c, 5, "Echo", b"third").await;
    assert_eq!(answer(&mut c, 5).await.2, "0");
}

#[tokio::test]
async fn a_reset_from_the_client_cancels_the_call() {
    let server = serve("").await;
    let mut c = connect(server.port).await;
    call(&mut c, 1, "Hold", b"x").await;
    until("the call started", || {
        server.started.load(Ordering::SeqCst) == 1
    })
    .await;
    c.send(h2f::Reset::new(StreamId::from(1), Reason::CANCEL).into())
        .await
        .unwrap();
    until("the call was dropped", || {
        server.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
    // The connection goes on.
    call(&mut c, 3, "Echo", b"y").await;
    assert_eq!(answer(&mut c, 3).await.2, "0");
}

#[tokio::test]
async fn shutdown_sends_goaway_and_the_running_call_finishes() {
    let server = serve("").await;
    let mut c = connect(server.port).await;
    call(&mut c, 1, "Hold", b"last").await;
    until("the call started", || {
        server.started.load(Ordering::SeqCst) == 1
    })
    .await;
    let destroy = tokio::spawn(server.protocol.destroy());
    match next(&mut c).await.unwrap() {
        h2f::Frame::GoAway(g) => {
            assert_eq!(g.reason(), Reason::NO_ERROR);
            assert_eq!(u32::from(g.last_stream_id()), 1);
        }
        other => panic!("expected GOAWAY, got {other:?}"),
    }
    server.gate.send(true).unwrap();
    assert_eq!(
        answer(&mut c, 1).await,
        (200, grpc_message(b"last").to_vec(), "0".into())
    );
    assert!(next(&mut c).await.is_none(), "closed once drained");
    bounded("shutdown", destroy).await.unwrap();
}

/// Sends `total` bytes of gRPC messages on `stream`, in DATA frames of 16 KiB.
async fn fill(c: &mut Client, stream: u32, total: usize) -> u64 {
    let (mut sent, mut messages) = (0, 0);
    while sent < total {
        let frame = (total - sent).min(16_384);
        c.feed(data(stream, grpc_message(&vec![7; frame - 5]), false))
            .await
            .unwrap();
        sent += frame;
        messages += 1;
    }
    SinkExt::flush(c).await.unwrap();
    messages
}

#[tokio::test]
async fn the_window_reopens_only_as_the_call_reads() {
    let server = serve("triple.initial-window-size=65535").await;
    // A call that reads nothing: the peer may send 65 535 bytes, and not one more.
    let mut c = connect(server.port).await;
    c.send(request(1, "Sink", false)).await.unwrap();
    fill(&mut c, 1, 65_535).await;
    until("the call started", || {
        server.started.load(Ordering::SeqCst) == 1
    })
    .await;
    c.send(data(1, Bytes::from_static(b"x"), false))
        .await
        .unwrap();
    assert_eq!(goaway(&mut c).await, Reason::FLOW_CONTROL_ERROR);

    // A call that reads: its windows come back, and it saw every message.
    let mut c = connect(server.port).await;
    c.send(request(1, "Sink", false)).await.unwrap();
    let messages = fill(&mut c, 1, 65_535).await;
    until("the call started", || {
        server.started.load(Ordering::SeqCst) == 2
    })
    .await;
    server.gate.send(true).unwrap();
    let (mut conn_back, mut stream_back) = (0u64, 0u64);
    while conn_back < 32_767 || stream_back < 32_767 {
        match bounded("window update", c.next()).await {
            Some(Ok(h2f::Frame::WindowUpdate(w))) => {
                let inc = u64::from(w.size_increment());
                match u32::from(w.stream_id()) {
                    0 => conn_back += inc,
                    1 => stream_back += inc,
                    other => panic!("window update for stream {other}"),
                }
            }
            Some(Ok(h2f::Frame::Settings(s))) if !s.is_ack() => {
                c.send(h2f::Settings::ack().into()).await.unwrap();
            }
            Some(Ok(h2f::Frame::Settings(_))) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    c.send(data(1, Bytes::new(), true)).await.unwrap();
    let (status, body, grpc) = answer(&mut c, 1).await;
    assert_eq!((status, grpc.as_str()), (200, "0"));
    assert_eq!(body, grpc_message(&messages.to_be_bytes()));
}

/// Large stream messages go out uncopied behind their gRPC prefix, in the same DATA
/// frames: through a stream window opened a few bytes at a time, so that frames end
/// inside a prefix and right after one, the peer still gets every byte in order and
/// never more than its window.
#[tokio::test]
async fn large_stream_messages_arrive_whole_through_a_window_opened_bytes_at_a_time() {
    let server = serve("").await;
    let mut settings = h2f::Settings::default();
    settings.set_initial_window_size(Some(3));
    let mut c = connect_with(server.port, settings).await;
    call(&mut c, 1, "Big", b"").await;
    let mut want = grpc_message(&big(1)).to_vec();
    want.extend_from_slice(&grpc_message(&big(2)));
    let steps = [1u32, 4, 2, 6, 5_000, 3, 1, 20_000, 7, 30_000];
    let (mut window, mut step, mut body, mut frames) = (3i64, 0, Vec::new(), 0);
    let grpc = loop {
        match next(&mut c)
            .await
            .expect("connection closed before the answer")
        {
            h2f::Frame::Headers(h) => {
                if h.is_end_stream() {
                    let (_, fields) = h.into_parts();
                    break fields
                        .get("grpc-status")
                        .unwrap()
                        .to_str()
                        .unwrap()
                        .to_owned();
                }
            }
            h2f::Frame::Data(d) => {
                let n = d.payload().len() as i64;
                assert!(n <= window, "a DATA frame of {n} bytes with {window} open");
                window -= n;
                body.extend_from_slice(d.payload());
                frames += 1;
                if window == 0 {
                    let inc = steps[step % steps.len()];
                    step += 1;
                    window += i64::from(inc);
                    c.send(h2f::WindowUpdate::new(StreamId::from(1), inc).into())
                        .await
                        .unwrap();
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(grpc, "0");
    assert!(frames > 10, "{frames} frames");
    assert_eq!(body.len(), want.len());
    assert!(body == want, "the bytes differ from the messages sent");
}

/// `triple.transport=hyper` keeps prior-knowledge HTTP/2 on hyper: the same call and
/// the same answer over raw frames.
#[tokio::test]
async fn the_hyper_transport_still_serves_when_chosen() {
    let server = serve_on("hyper", "").await;
    let mut c = connect(server.port).await;
    call(&mut c, 1, "Echo", b"on hyper").await;
    assert_eq!(
        answer(&mut c, 1).await,
        (200, grpc_message(b"on hyper").to_vec(), "0".into())
    );
    still_serves(server.port).await;
}

#[tokio::test]
async fn a_request_whose_data_comes_later_is_answered_and_one_that_stays_open_starts() {
    let server = serve("").await;
    let mut c = connect(server.port).await;
    // The DATA of a unary call in a later write than its HEADERS.
    bounded("headers", c.send(request(1, "Echo", false)))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(30)).await;
    bounded("data", c.send(data(1, grpc_message(b"late"), true)))
        .await
        .unwrap();
    let (status, body, grpc) = answer(&mut c, 1).await;
    assert_eq!((status, grpc.as_str()), (200, "0"));
    assert_eq!(body, grpc_message(b"late"));
    // A client-streaming call whose client sends nothing yet: its handler still
    // starts (it may answer before any request message).
    bounded("headers", c.send(request(3, "Sink", false)))
        .await
        .unwrap();
    until("the call started", || {
        server.started.load(Ordering::SeqCst) == 1
    })
    .await;
    server.gate.send(true).unwrap();
    bounded("data", c.send(data(3, grpc_message(b"one"), true)))
        .await
        .unwrap();
    let (status, body, grpc) = answer(&mut c, 3).await;
    assert_eq!((status, grpc.as_str()), (200, "0"));
    assert_eq!(body, grpc_message(&1u64.to_be_bytes()));
}

#[tokio::test]
async fn a_handler_that_panics_resets_its_stream_and_the_connection_serves_on() {
    for method in ["Panic", "PanicLater"] {
        a_panicking_handler(method).await;
    }
}

async fn a_panicking_handler(method: &str) {
    let server = serve("").await;
    let mut c = connect(server.port).await;
    call(&mut c, 1, method, b"boom").await;
    match next(&mut c).await {
        Some(h2f::Frame::Reset(r)) => {
            assert_eq!(u32::from(r.stream_id()), 1);
            assert_eq!(r.reason(), Reason::INTERNAL_ERROR);
        }
        other => panic!("expected RST_STREAM, got {other:?}"),
    }
    call(&mut c, 3, "Echo", b"after").await;
    let (status, body, grpc) = answer(&mut c, 3).await;
    assert_eq!((status, grpc.as_str()), (200, "0"));
    assert_eq!(body, grpc_message(b"after"));
}

/// A socket that keeps a copy of every byte read from it.
struct Recording {
    io: TcpStream,
    seen: Arc<std::sync::Mutex<Vec<u8>>>,
}

impl tokio::io::AsyncRead for Recording {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.io).poll_read(cx, buf);
        let new = buf.filled()[before..].to_vec();
        self.seen.lock().unwrap().extend_from_slice(&new);
        r
    }
}

impl tokio::io::AsyncWrite for Recording {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The header blocks of the response HEADERS frames (not END_STREAM) in `wire`.
fn response_blocks(wire: &[u8]) -> Vec<Vec<u8>> {
    let mut blocks = Vec::new();
    let mut rest = wire;
    while rest.len() >= 9 {
        let len = (usize::from(rest[0]) << 16) | (usize::from(rest[1]) << 8) | usize::from(rest[2]);
        let (kind, flags) = (rest[3], rest[4]);
        if kind == 0x1 && flags & 0x1 == 0 {
            blocks.push(rest[9..9 + len].to_vec());
        }
        rest = &rest[9 + len..];
    }
    blocks
}

#[tokio::test]
async fn response_headers_are_indexed_unless_the_client_has_no_dynamic_table() {
    let server = serve("").await;
    for table in [None, Some(0)] {
        let mut s = TcpStream::connect(("127.0.0.1", server.port))
            .await
            .unwrap();
        s.write_all(PREFACE).await.unwrap();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut c = h2::Codec::<_, Bytes>::new(Recording {
            io: s,
            seen: seen.clone(),
        });
        let mut settings = h2f::Settings::default();
        if let Some(size) = table {
            // HPACK table size 0: the server must not index (RFC 7541 §4.2).
            c.set_recv_header_table_size(size);
            settings.set_header_table_size(Some(size as u32));
        }
        bounded("settings", c.send(settings.into())).await.unwrap();
        for stream in [1, 3] {
            c.feed(request(stream, "Echo", false)).await.unwrap();
            c.send(data(stream, grpc_message(b"small"), true))
                .await
                .unwrap();
            loop {
                match bounded("frame", c.next()).await {
                    Some(Ok(h2f::Frame::Headers(h))) if h.is_end_stream() => {
                        assert_eq!(h.into_parts().1["grpc-status"], "0");
                        break;
                    }
                    Some(Ok(_)) => {}
                    other => panic!("{other:?}"),
                }
            }
        }
        let blocks = response_blocks(&seen.lock().unwrap());
        let [first, second] = &blocks[..] else {
            panic!("{blocks:?}")
        };
        match table {
            // The second answer's fields are indices into the table the first filled.
            None => assert!(second.len() < first.len() / 2, "{first:?} {second:?}"),
            // A size update to 0 first, then the same literals every time.
            Some(_) => {
                assert_eq!(first[0], 0x20, "{first:?}");
                assert_eq!(&first[1..], &second[..]);
            }
        }
    }
}

#[tokio::test]
async fn many_calls_at_once_on_one_connection_are_all_answered() {
    let server = serve("").await;
    let mut c = connect(server.port).await;
    // More calls than one run of reads starts, in one write.
    let n = 300u32;
    for i in 0..n {
        let stream = 2 * i + 1;
        c.feed(request(stream, "Echo", false)).await.unwrap();
        c.feed(data(stream, grpc_message(&i.to_be_bytes()), true))
            .await
            .unwrap();
    }
    bounded("flush", SinkExt::flush(&mut c)).await.unwrap();
    let mut bodies = std::collections::HashMap::<u32, Vec<u8>>::new();
    let mut done = 0;
    while done < n {
        match next(&mut c).await.expect("connection closed") {
            h2f::Frame::Headers(h) => {
                let id = u32::from(h.stream_id());
                let end = h.is_end_stream();
                let fields = h.into_parts().1;
                if end {
                    assert_eq!(fields["grpc-status"], "0", "stream {id}");
                    let i = (id - 1) / 2;
                    assert_eq!(bodies[&id], grpc_message(&i.to_be_bytes()), "stream {id}");
                    done += 1;
                } else {
                    assert_eq!(fields["content-type"], "application/grpc");
                }
            }
            h2f::Frame::Data(d) => {
                let id = u32::from(d.stream_id());
                bodies.entry(id).or_default().extend_from_slice(d.payload());
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_request_in_several_frames_with_trailers_is_answered_whole() {
    let server = serve("").await;
    let mut c = connect(server.port).await;
    let message = grpc_message(b"in three pieces");
    // One write: HEADERS, the message in three DATA frames, then trailers that end it.
    c.feed(request(1, "Echo", false)).await.unwrap();
    for piece in [&message[..3], &message[3..9], &message[9..]] {
        c.feed(data(1, Bytes::copy_from_slice(piece), false))
            .await
            .unwrap();
    }
    let mut trailers = h2f::Headers::trailers(StreamId::from(1), HeaderMap::new());
    trailers.set_end_stream();
    bounded("send", c.send(trailers.into())).await.unwrap();
    let (status, body, grpc) = answer(&mut c, 1).await;
    assert_eq!((status, grpc.as_str()), (200, "0"));
    assert_eq!(body, message);
}

#[tokio::test]
async fn data_of_a_reset_call_goes_back_to_the_connection_window() {
    let server = serve("triple.initial-window-size=65535").await;
    let mut c = connect(server.port).await;
    // Three times 30 000 bytes on streams the client resets before they end: more
    // than the connection's window, so the server must take each back.
    for stream in [1, 3, 5] {
        c.feed(request(stream, "Echo", false)).await.unwrap();
        for _ in 0..2 {
            c.feed(data(stream, Bytes::from(vec![0u8; 15_000]), false))
                .await
                .unwrap();
        }
        c.feed(h2f::Reset::new(StreamId::from(stream), Reason::CANCEL).into())
            .await
            .unwrap();
    }
    bounded("flush", SinkExt::flush(&mut c)).await.unwrap();
    call(&mut c, 7, "Echo", b"still open").await;
    let (status, body, grpc) = answer(&mut c, 7).await;
    assert_eq!((status, grpc.as_str()), (200, "0"));
    assert_eq!(body, grpc_message(b"still open"));
}
