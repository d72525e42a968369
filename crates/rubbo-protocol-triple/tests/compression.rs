//! Message compression over real sockets on 127.0.0.1: Rubbo's client and server
//! both ways (unary and streams, every encoding), and a plain HTTP/2 client for what
//! is on the wire: the compressed flag and `grpc-encoding` of replies, a zip bomb,
//! an unknown encoding.
#![allow(clippy::unwrap_used, missing_docs)]

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures::StreamExt;
use http::{HeaderMap, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use parking_lot::Mutex;
use rubbo_common::stream::{MessageStream, StreamKind, StreamSlot, channel};
use rubbo_common::{
    Arguments, BoxInvoker, Encoded, Invocation, InvokeFuture, Invoker, Payload, Protocol, RpcError,
    RpcResult, Url, Value,
};
use rubbo_protocol_triple::TripleProtocol;
use rubbo_protocol_triple::compress::{COMPRESSOR_KEY, Encoding};
use rubbo_serialization::PROTOBUF;

const SERVICE: &str = "test.Squeeze";
const STEP: Duration = Duration::from_secs(10);

async fn bounded<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(STEP, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {STEP:?}"))
}

/// Echoes; records how each call's requests came (the `dubbo.rpc.tri.compressor`
/// attachment the server sets for compressed requests).
#[derive(Debug)]
struct Provider {
    url: Url,
    seen: Arc<Mutex<Vec<Option<String>>>>,
}

fn protobuf(bytes: Bytes) -> Payload {
    Payload::Encoded(Encoded::new(&PROTOBUF, bytes))
}

impl Invoker for Provider {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let came = inv.attachments().get(COMPRESSOR_KEY).map(|v| match v {
            Value::String(s) => s.clone(),
            other => format!("{other:?}"),
        });
        self.seen.lock().push(came);
        Box::pin(async move {
            let message = || match inv.arguments() {
                Arguments::Encoded { encoded, .. } => encoded.bytes.clone(),
                other => panic!("not a message: {other:?}"),
            };
            match inv.method() {
                "Echo" => Ok(RpcResult::value(protobuf(message()))),
                // Asks for gzip replies whatever the provider's configuration, as
                // Java's `setCompression`.
                "Gzipped" => {
                    let mut r = RpcResult::value(protobuf(message()));
                    r.header_attachments_mut()
                        .insert(COMPRESSOR_KEY.to_owned(), Value::from("gzip"));
                    Ok(r)
                }
                "Chat" => {
                    let requests = inv.arguments().as_stream().unwrap().take()?;
                    Ok(RpcResult::value(Payload::Stream(StreamSlot::new(
                        StreamKind::Bidi,
                        MessageStream::new(requests),
                    ))))
                }
                other => Err(RpcError::method_not_found(other.to_owned())),
            }
        })
    }

    fn url(&self) -> &Url {
        &self.url
    }
}

struct Server {
    protocol: TripleProtocol,
    port: u16,
    seen: Arc<Mutex<Vec<Option<String>>>>,
}

async fn serve(params: &str) -> Server {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let url = Url::parse(&format!(
        "tri://127.0.0.1:0/{SERVICE}?interface={SERVICE}&methods=Echo,Gzipped,Chat\
         &idl-methods=Echo,Gzipped,Chat&stream-methods=Chat:bidi&{params}"
    ))
    .unwrap();
    let protocol = TripleProtocol::new();
    let provider: BoxInvoker = Arc::new(Provider {
        url,
        seen: seen.clone(),
    });
    std::mem::forget(protocol.export(provider).await.unwrap());
    let port = protocol.server_addrs()[0].port();
    Server {
        protocol,
        port,
        seen,
    }
}

async fn consumer(server: &Server, params: &str) -> BoxInvoker {
    server
        .protocol
        .refer(
            Url::parse(&format!(
                "tri://127.0.0.1:{}/{SERVICE}?interface={SERVICE}&timeout=10000&{params}",
                server.port
            ))
            .unwrap(),
        )
        .await
        .unwrap()
}

fn compressible(n: usize) -> Bytes {
    Bytes::from(b"triple compresses this well. ".repeat(n))
}

fn unary(method: &str, message: Bytes) -> Invocation {
    Invocation::new(SERVICE, method).with_arguments(Arguments::Encoded {
        count: 1,
        encoded: Encoded::new(&PROTOBUF, message),
    })
}

fn reply_bytes(r: RpcResult) -> Bytes {
    match r.into_payload().unwrap() {
        Payload::Encoded(e) => e.bytes,
        other => panic!("not a message: {other:?}"),
    }
}

#[tokio::test]
async fn a_compressed_unary_call_round_trips_with_every_encoding() {
    let server = serve("dubbo.rpc.tri.compressor=gzip").await;
    for name in ["gzip", "snappy", "bzip2"] {
        let c = consumer(&server, &format!("dubbo.rpc.tri.compressor={name}")).await;
        let message = compressible(4000);
        let reply = bounded(name, c.invoke(unary("Echo", message.clone())))
            .await
            .unwrap();
        assert_eq!(reply_bytes(reply), message, "{name}");
        assert_eq!(
            server.seen.lock().pop().unwrap().as_deref(),
            Some(name),
            "the request came compressed with {name}"
        );
    }
    // An identity consumer: nothing compressed, and the gzip provider's replies are
    // read back all the same (it takes every encoding).
    let c = consumer(&server, "").await;
    let reply = bounded("identity", c.invoke(unary("Echo", compressible(10))))
        .await
        .unwrap();
    assert_eq!(reply_bytes(reply), compressible(10));
    assert_eq!(server.seen.lock().pop().unwrap(), None);
}

#[tokio::test]
async fn compressed_streams_round_trip_both_ways() {
    let server = serve("dubbo.rpc.tri.compressor=snappy").await;
    let c = consumer(&server, "dubbo.rpc.tri.compressor=bzip2").await;
    let (tx, requests) = channel(4);
    let call = Invocation::new(SERVICE, "Chat").with_arguments(Arguments::Stream(StreamSlot::new(
        StreamKind::Bidi,
        requests,
    )));
    let result = bounded("open", c.invoke(call)).await.unwrap();
    let mut replies = match result.into_payload().unwrap() {
        Payload::Stream(s) => s.take().unwrap(),
        other => panic!("not a stream: {other:?}"),
    };
    for i in 0..10 {
        let m = compressible(100 + i);
        bounded("send", tx.send(m.clone())).await.unwrap();
        let got = bounded("reply", replies.next()).await.unwrap().unwrap();
        assert_eq!(got, m, "message {i}");
    }
    drop(tx);
    assert!(bounded("end", replies.next()).await.is_none());
    assert_eq!(server.seen.lock().pop().unwrap().as_deref(), Some("bzip2"));
}

/// What a plain HTTP/2 client got back.
struct Raw {
    headers: HeaderMap,
    body: Bytes,
    trailers: Option<HeaderMap>,
}

impl Raw {
    /// `grpc-status`, from the trailers or a trailers-only response.
    fn status(&self) -> &str {
        self.trailers
            .as_ref()
            .and_then(|t| t.get("grpc-status"))
            .or_else(|| self.headers.get("grpc-status"))
            .map(|v| v.to_str().unwrap())
            .unwrap_or("none")
    }
}

async fn raw(port: u16, method: &str, headers: &[(&str, &str)], body: Bytes) -> Raw {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let (mut sender, conn) = hyper::client::conn::http2::handshake::<_, _, Full<Bytes>>(
        TokioExecutor::new(),
        TokioIo::new(tcp),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    let mut req = Request::post(format!("http://127.0.0.1:{port}/{SERVICE}/{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = bounded(
        method,
        sender.send_request(req.body(Full::new(body)).unwrap()),
    )
    .await
    .unwrap();
    let (parts, body) = resp.into_parts();
    let collected = bounded("body", body.collect()).await.unwrap();
    Raw {
        headers: parts.headers,
        trailers: collected.trailers().cloned(),
        body: collected.to_bytes(),
    }
}

/// One gRPC message: `flag`, length, `payload`.
fn framed(flag: u8, payload: &[u8]) -> Bytes {
    let mut b = BytesMut::new();
    b.put_u8(flag);
    b.put_u32(payload.len() as u32);
    b.put_slice(payload);
    b.freeze()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    w.write_all(data).unwrap();
    w.finish().unwrap()
}

fn gunzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(data)
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[tokio::test]
async fn replies_are_compressed_only_when_the_client_takes_the_encoding() {
    let server = serve("dubbo.rpc.tri.compressor=gzip").await;
    let message = compressible(1000);
    let r = raw(
        server.port,
        "Echo",
        &[("grpc-accept-encoding", "identity, gzip")],
        framed(0, &message),
    )
    .await;
    assert_eq!(r.status(), "0");
    assert_eq!(r.headers["grpc-encoding"], "gzip");
    assert_eq!(r.headers["grpc-accept-encoding"], "bzip2,gzip,snappy");
    assert_eq!(r.body[0], 1, "compressed flag");
    assert!(r.body.len() < message.len() / 4);
    assert_eq!(gunzip(&r.body[5..]), message);

    // A client that takes only snappy, or says nothing: identity replies.
    for accept in [&[("grpc-accept-encoding", "snappy")][..], &[]] {
        let r = raw(server.port, "Echo", accept, framed(0, &message)).await;
        assert_eq!(r.status(), "0");
        assert!(r.headers.get("grpc-encoding").is_none());
        assert_eq!(r.body, framed(0, &message));
    }

    // A gzip request to a provider configured with nothing; the method asks for
    // gzip replies itself.
    let plain = serve("").await;
    let r = raw(
        plain.port,
        "Echo",
        &[("grpc-encoding", "gzip"), ("grpc-accept-encoding", "gzip")],
        framed(1, &gzip(&message)),
    )
    .await;
    assert_eq!(r.status(), "0");
    assert_eq!(r.body, framed(0, &message), "identity replies by default");
    assert_eq!(plain.seen.lock().pop().unwrap().as_deref(), Some("gzip"));
    let r = raw(
        plain.port,
        "Gzipped",
        &[("grpc-accept-encoding", "gzip")],
        framed(0, &message),
    )
    .await;
    assert_eq!(r.headers["grpc-encoding"], "gzip");
    assert_eq!(gunzip(&r.body[5..]), message);
    // An uncompressed message in a gzip call is taken as it is (the flag decides).
    let r = raw(
        plain.port,
        "Echo",
        &[("grpc-encoding", "gzip")],
        framed(0, b"plain"),
    )
    .await;
    assert_eq!((r.status(), &r.body[..]), ("0", &framed(0, b"plain")[..]));
    assert_eq!(plain.seen.lock().pop().unwrap(), None, "not compressed");
}

#[tokio::test]
async fn a_zip_bomb_is_resource_exhausted_and_the_server_keeps_serving() {
    let server = serve("payload=1048576").await;
    // 64 MiB of zeros in about 64 KiB.
    let bomb = gzip(&vec![0u8; 64 << 20]);
    assert!(bomb.len() < 1 << 20);
    let r = raw(
        server.port,
        "Echo",
        &[("grpc-encoding", "gzip")],
        framed(1, &bomb),
    )
    .await;
    assert_eq!(r.status(), "8", "RESOURCE_EXHAUSTED");
    assert!(server.seen.lock().is_empty(), "the service never ran");
    // Streams are bounded the same way.
    let r = raw(
        server.port,
        "Chat",
        &[("grpc-encoding", "gzip")],
        framed(1, &bomb),
    )
    .await;
    assert_eq!(r.status(), "8", "a stream's message: RESOURCE_EXHAUSTED");
    let r = raw(server.port, "Echo", &[], framed(0, b"next")).await;
    assert_eq!((r.status(), &r.body[..]), ("0", &framed(0, b"next")[..]));
}

#[tokio::test]
async fn an_unknown_encoding_is_unimplemented_and_lists_what_is_taken() {
    let server = serve("").await;
    let r = raw(
        server.port,
        "Echo",
        &[("grpc-encoding", "zstd")],
        framed(1, b"whatever"),
    )
    .await;
    assert_eq!(r.status(), "12", "UNIMPLEMENTED");
    assert_eq!(r.headers["grpc-accept-encoding"], "bzip2,gzip,snappy");
    // The compressed flag with no encoding: refused as before.
    let r = raw(server.port, "Echo", &[], framed(1, &gzip(b"x"))).await;
    assert_eq!(r.status(), "12");
    // Garbage under a known encoding: INTERNAL.
    let r = raw(
        server.port,
        "Echo",
        &[("grpc-encoding", "gzip")],
        framed(1, b"not gzip"),
    )
    .await;
    assert_eq!(r.status(), "13");
    assert!(server.seen.lock().is_empty());
    // A compressor no side knows is a configuration error, as Java's lookup fails.
    let refer = server.protocol.refer(
        Url::parse(&format!(
            "tri://127.0.0.1:{}/{SERVICE}?dubbo.rpc.tri.compressor=zstd",
            server.port
        ))
        .unwrap(),
    );
    let err = bounded("refer", refer).await.unwrap_err();
    assert!(err.message().contains("zstd"), "{err}");
    let url = Url::parse(&format!(
        "tri://127.0.0.1:0/{SERVICE}?interface={SERVICE}&dubbo.rpc.tri.compressor=lz4"
    ))
    .unwrap();
    let provider: BoxInvoker = Arc::new(Provider {
        url,
        seen: Default::default(),
    });
    let err = TripleProtocol::new().export(provider).await.err().unwrap();
    assert!(err.message().contains("lz4"), "{err}");
    assert_eq!(
        Encoding::configured(Some("zstd")).unwrap_err().to_string(),
        "dubbo.rpc.tri.compressor=\"zstd\" is not a known compressor (identity, bzip2,gzip,snappy)"
    );
}
