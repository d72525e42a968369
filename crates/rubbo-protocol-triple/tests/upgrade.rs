//! The h2c upgrade on the Triple port, over real sockets on 127.0.0.1: raw bytes
//! (the HTTP/1.1 upgrade request, the `101`, then HTTP/2 frames written and read by
//! hand) prove the upgraded request is answered on stream 1 and a later request on
//! stream 3; curl, when installed, does the same as a user would.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use rubbo_common::{
    Arguments, BoxInvoker, Encoded, Invocation, InvokeFuture, Invoker, Payload, Protocol, RpcError,
    RpcResult, Url, Value,
};
use rubbo_protocol_triple::TripleProtocol;
use rubbo_serialization::PROTOBUF;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SERVICE: &str = "test.Up";
const STEP: Duration = Duration::from_secs(10);

async fn bounded<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(STEP, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: nothing within {STEP:?}"))
}

/// `Echo` (IDL) echoes its message; `echo` (wrapper mode, so JSON over HTTP) its
/// one argument.
#[derive(Debug)]
struct Provider(Url);

impl Invoker for Provider {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        Box::pin(async move {
            match (inv.method(), inv.arguments()) {
                ("Echo", Arguments::Encoded { encoded, .. }) => Ok(RpcResult::value(
                    Payload::Encoded(Encoded::new(&PROTOBUF, encoded.bytes.clone())),
                )),
                // The JSON form calls `$invoke(method, types, args)`.
                ("$invoke", Arguments::Values(v)) => match &v[2] {
                    Value::List(args) => Ok(RpcResult::value(Payload::Value(
                        args.items.first().cloned().unwrap_or(Value::Null),
                    ))),
                    other => panic!("{other:?}"),
                },
                (m, _) => Err(RpcError::method_not_found(m.to_owned())),
            }
        })
    }

    fn url(&self) -> &Url {
        &self.0
    }
}

async fn serve(params: &str) -> (TripleProtocol, u16) {
    let url = Url::parse(&format!(
        "tri://127.0.0.1:0/{SERVICE}?interface={SERVICE}&methods=Echo,echo&idl-methods=Echo&{params}"
    ))
    .unwrap();
    let protocol = TripleProtocol::new();
    let provider: BoxInvoker = Arc::new(Provider(url));
    std::mem::forget(protocol.export(provider).await.unwrap());
    let port = protocol.server_addrs()[0].port();
    (protocol, port)
}

fn grpc_message(payload: &[u8]) -> Bytes {
    let mut b = BytesMut::new();
    b.put_u8(0);
    b.put_u32(payload.len() as u32);
    b.put_slice(payload);
    b.freeze()
}

/// The HTTP/1.1 upgrade request, with `body`.
fn upgrade_request(port: u16, path: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: Upgrade, HTTP2-Settings\r\n\
         Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\ncontent-type: {content_type}\r\n\
         te: trailers\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// Reads an HTTP/1.1 response head (and, when `content_length` says so, its body).
async fn read_http1(s: &mut TcpStream) -> (String, Vec<u8>) {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        assert_eq!(bounded("head", s.read(&mut byte)).await.unwrap(), 1, "EOF");
        buf.push(byte[0]);
    }
    let head = String::from_utf8(buf).unwrap();
    let len = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(|v| v.trim().parse::<usize>().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    bounded("body", s.read_exact(&mut body)).await.unwrap();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        // Chunks: a hex size line, the bytes, CRLF; size 0 ends.
        loop {
            let mut line = Vec::new();
            while !line.ends_with(b"\r\n") {
                bounded("chunk", s.read_exact(&mut byte)).await.unwrap();
                line.push(byte[0]);
            }
            let size =
                usize::from_str_radix(std::str::from_utf8(&line).unwrap().trim(), 16).unwrap();
            let mut chunk = vec![0u8; size + 2];
            bounded("chunk", s.read_exact(&mut chunk)).await.unwrap();
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
    (head, body)
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut b = BytesMut::new();
    b.put_uint(payload.len() as u64, 3);
    b.put_u8(kind);
    b.put_u8(flags);
    b.put_u32(stream);
    b.put_slice(payload);
    b.to_vec()
}

struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Bytes,
}

async fn read_frame(s: &mut TcpStream) -> Frame {
    let mut h = [0u8; 9];
    bounded("frame", s.read_exact(&mut h)).await.unwrap();
    let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
    let mut payload = vec![0u8; len];
    bounded("frame payload", s.read_exact(&mut payload))
        .await
        .unwrap();
    let mut id = &h[5..9];
    Frame {
        kind: h[3],
        flags: h[4],
        stream: id.get_u32() & 0x7fff_ffff,
        payload: payload.into(),
    }
}

/// What came back on one stream: the first header block, the DATA bytes, and
/// whether a frame ended the stream.
#[derive(Default)]
struct Answer {
    headers: Option<Bytes>,
    data: Vec<u8>,
}

/// Reads frames until `stream` ends, acknowledging SETTINGS and opening windows.
async fn answer(s: &mut TcpStream, stream: u32) -> Answer {
    let mut a = Answer::default();
    loop {
        let f = read_frame(s).await;
        match f.kind {
            0x4 if f.flags & 1 == 0 => s.write_all(&frame(0x4, 1, 0, &[])).await.unwrap(),
            0x6 if f.flags & 1 == 0 => s.write_all(&frame(0x6, 1, 0, &f.payload)).await.unwrap(),
            0x7 => panic!("GOAWAY: {:?}", f.payload),
            0x3 if f.stream == stream => panic!("stream {stream} reset: {:?}", f.payload),
            _ if f.stream != stream => {}
            0x1 => {
                a.headers.get_or_insert(f.payload.clone());
            }
            0x0 => a.data.extend_from_slice(&f.payload),
            _ => {}
        }
        if f.stream == stream && f.flags & 1 != 0 && matches!(f.kind, 0x0 | 0x1) {
            return a;
        }
    }
}

/// A literal header field without indexing, new name, no Huffman (names and values
/// here are under 127 bytes).
fn literal(out: &mut Vec<u8>, name: &str, value: &str) {
    out.push(0);
    out.push(name.len() as u8);
    out.extend_from_slice(name.as_bytes());
    out.push(value.len() as u8);
    out.extend_from_slice(value.as_bytes());
}

/// The client preface and SETTINGS (a 16 MiB stream window), and a 16 MiB
/// connection window.
fn preface() -> Vec<u8> {
    let mut b = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    b.extend(frame(0x4, 0, 0, &[0, 4, 1, 0, 0, 0]));
    b.extend(frame(0x8, 0, 0, &(16u32 << 20).to_be_bytes()));
    b
}

#[tokio::test]
async fn an_upgraded_grpc_request_is_answered_on_stream_1_and_later_streams_work() {
    let (_p, port) = serve("").await;
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let first = grpc_message(b"first message");
    s.write_all(&upgrade_request(
        port,
        &format!("/{SERVICE}/Echo"),
        "application/grpc",
        &first,
    ))
    .await
    .unwrap();
    let (head, _) = read_http1(&mut s).await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert!(head.to_ascii_lowercase().contains("upgrade: h2c"), "{head}");
    s.write_all(&preface()).await.unwrap();

    let one = answer(&mut s, 1).await;
    // `:status: 200` is HPACK's static entry 8 (0x88).
    assert_eq!(one.headers.unwrap()[0], 0x88, ":status 200 on stream 1");
    assert_eq!(one.data, &first[..], "stream 1 echoes the upgraded request");

    // A later request on the same connection: an ordinary HTTP/2 stream.
    let mut block = Vec::new();
    for (n, v) in [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", &format!("/{SERVICE}/Echo")[..]),
        (":authority", "127.0.0.1"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ] {
        literal(&mut block, n, v);
    }
    let second = grpc_message(b"second message");
    s.write_all(&frame(0x1, 0x4, 3, &block)).await.unwrap();
    s.write_all(&frame(0x0, 0x1, 3, &second)).await.unwrap();
    let three = answer(&mut s, 3).await;
    assert_eq!(three.headers.unwrap()[0], 0x88, ":status 200 on stream 3");
    assert_eq!(three.data, &second[..]);
}

#[tokio::test]
async fn an_upgraded_json_request_with_a_large_body_is_answered_over_http2() {
    let (_p, port) = serve("").await;
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    // Larger than HTTP/2's default 64 KiB window, and several DATA frames.
    let text = "x".repeat(200_000);
    let body = format!("[\"{text}\"]");
    s.write_all(&upgrade_request(
        port,
        &format!("/{SERVICE}/echo"),
        "application/json",
        body.as_bytes(),
    ))
    .await
    .unwrap();
    let (head, _) = read_http1(&mut s).await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    s.write_all(&preface()).await.unwrap();
    let one = answer(&mut s, 1).await;
    assert_eq!(one.headers.unwrap()[0], 0x88);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&one.data).unwrap(),
        serde_json::Value::String(text)
    );
}

#[tokio::test]
async fn requests_without_upgrade_stay_http1_and_oversized_upgrades_are_refused() {
    let (_p, port) = serve("payload=1000").await;
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let body = br#"["hi"]"#;
    let req = format!(
        "POST /{SERVICE}/echo HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let (head, got) = read_http1(&mut s).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(got, br#""hi""#);

    // An upgrade whose body is over `payload`: 413 over HTTP/1.1, no upgrade.
    let big = format!("[\"{}\"]", "y".repeat(2000));
    s.write_all(&upgrade_request(
        port,
        &format!("/{SERVICE}/echo"),
        "application/json",
        big.as_bytes(),
    ))
    .await
    .unwrap();
    let (head, _) = read_http1(&mut s).await;
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
}

#[tokio::test]
async fn curl_upgrades_to_h2c_when_installed() {
    let Ok(out) = std::process::Command::new("curl").arg("--version").output() else {
        eprintln!("curl not installed: skipped");
        return;
    };
    if !String::from_utf8_lossy(&out.stdout).contains("HTTP2") {
        eprintln!("curl without HTTP/2: skipped");
        return;
    }
    let (_p, port) = serve("").await;
    let run = tokio::process::Command::new("curl")
        .args([
            "-sv",
            "--max-time",
            "10",
            "--http2",
            "-H",
            "content-type: application/json",
            "-d",
            r#"["hi"]"#,
            &format!("http://127.0.0.1:{port}/{SERVICE}/echo"),
        ])
        .output();
    let out = bounded("curl", run).await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("HTTP/1.1 101"), "{err}");
    assert!(err.contains("HTTP/2 200"), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), r#""hi""#);
}
