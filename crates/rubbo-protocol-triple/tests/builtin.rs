//! The built-in services and the JSON forms over real sockets on 127.0.0.1: server
//! reflection (v1alpha and v1) on one bidirectional stream, health `Watch` seeing an
//! unexport and the shutdown, and JSON for an IDL method over HTTP/1.1 and as
//! `application/grpc+json`, with bad JSON refused.
//!
//! The IDL service is `tests/fixtures/test/echo.proto` (its descriptor set,
//! `echo.bin`, made by protoc as that file says).
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures::StreamExt;
use http::{HeaderMap, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::Message;
use rubbo_common::stream::{MessageStream, StreamKind, StreamSlot, channel};
use rubbo_common::{
    Arguments, BoxInvoker, Exporter, Invocation, InvokeFuture, Invoker, Payload, Protocol,
    RpcError, RpcResult, Url,
};
use rubbo_protocol_triple::TripleProtocol;

const ECHO: &str = "test.echo.Echo";
const SET: &[u8] = include_bytes!("fixtures/echo.bin");
/// The bound on one step (a call, a reply).
const STEP: Duration = Duration::from_secs(10);

async fn bounded<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(STEP, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {STEP:?}"))
}

// The messages of the reflection and health protocols, written again here so the
// test checks the server's bytes independently.
#[derive(Clone, PartialEq, Message)]
struct ReflectionRequest {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(string, optional, tag = "3")]
    file_by_filename: Option<String>,
    #[prost(string, optional, tag = "4")]
    file_containing_symbol: Option<String>,
    #[prost(string, optional, tag = "7")]
    list_services: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct ReflectionResponse {
    #[prost(string, tag = "1")]
    valid_host: String,
    #[prost(message, optional, tag = "4")]
    file_descriptor_response: Option<FileDescriptors>,
    #[prost(message, optional, tag = "6")]
    list_services_response: Option<Services>,
    #[prost(message, optional, tag = "7")]
    error_response: Option<ErrorResponse>,
}

#[derive(Clone, PartialEq, Message)]
struct FileDescriptors {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct Services {
    #[prost(message, repeated, tag = "1")]
    service: Vec<Named>,
}

#[derive(Clone, PartialEq, Message)]
struct Named {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, Message)]
struct ErrorResponse {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

/// `FileDescriptorProto`, only its name and imports.
#[derive(Clone, PartialEq, Message)]
struct FileName {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, repeated, tag = "3")]
    dependency: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct HealthRequest {
    #[prost(string, tag = "1")]
    service: String,
}

#[derive(Clone, PartialEq, Message)]
struct HealthResponse {
    #[prost(int32, tag = "1")]
    status: i32,
}

#[derive(Clone, PartialEq, Message)]
struct Note {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(int32, tag = "2")]
    count: i32,
}

/// The echo provider: `Say` answers its request, `Chat` each request.
#[derive(Debug)]
struct Echo(Url);

impl Invoker for Echo {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        Box::pin(async move {
            match inv.method() {
                "Say" => {
                    let Arguments::Encoded { encoded, .. } = inv.arguments() else {
                        return Err(RpcError::serialization("no message"));
                    };
                    Ok(RpcResult::value(Payload::Encoded(encoded.clone())))
                }
                "Chat" => {
                    let requests = inv.arguments().as_stream().unwrap().take()?;
                    Ok(RpcResult::value(Payload::Stream(StreamSlot::new(
                        StreamKind::Bidi,
                        requests,
                    ))))
                }
                m => Err(RpcError::method_not_found(format!("no {m}"))),
            }
        })
    }

    fn url(&self) -> &Url {
        &self.0
    }
}

struct Setup {
    protocol: TripleProtocol,
    port: u16,
    echo: Box<dyn Exporter>,
}

async fn setup() -> Setup {
    let protocol = TripleProtocol::new();
    protocol.describe(ECHO, SET);
    let url = Url::parse(&format!(
        "tri://127.0.0.1:0/{ECHO}?interface={ECHO}&methods=Chat,Say&idl-methods=Say,Chat\
         &stream-methods=Chat:bidi"
    ))
    .unwrap();
    let echo = protocol.export(Arc::new(Echo(url))).await.unwrap();
    let port = protocol.server_addrs()[0].port();
    // A Rust-trait (wrapper-mode) service on the same server: no schema.
    let plain =
        Url::parse("tri://127.0.0.1:0/org.rubbo.Plain?interface=org.rubbo.Plain&methods=hello")
            .unwrap();
    std::mem::forget(protocol.export(Arc::new(Echo(plain))).await.unwrap());
    Setup {
        protocol,
        port,
        echo,
    }
}

async fn client(s: &Setup, service: &str) -> BoxInvoker {
    s.protocol
        .refer(
            Url::parse(&format!(
                "tri://127.0.0.1:{}/{service}?interface={service}&timeout=10000",
                s.port
            ))
            .unwrap(),
        )
        .await
        .unwrap()
}

fn replies(result: RpcResult) -> MessageStream {
    match result.into_payload().unwrap() {
        Payload::Stream(s) => s.take().unwrap(),
        other => panic!("not a stream: {other:?}"),
    }
}

async fn next<M: Message + Default>(s: &mut MessageStream) -> Option<M> {
    let m = bounded("reply", s.next()).await?;
    Some(M::decode(m.unwrap()).unwrap())
}

fn list() -> Bytes {
    ReflectionRequest {
        host: "h".into(),
        list_services: Some(String::new()),
        ..Default::default()
    }
    .encode_to_vec()
    .into()
}

fn symbol(name: &str) -> Bytes {
    ReflectionRequest {
        host: "h".into(),
        file_containing_symbol: Some(name.into()),
        ..Default::default()
    }
    .encode_to_vec()
    .into()
}

/// A reflection stream: its invoker (the connection lives while it does), the
/// request sender and the replies.
async fn reflect(
    s: &Setup,
    service: &str,
) -> (
    BoxInvoker,
    rubbo_common::stream::StreamSender,
    MessageStream,
) {
    let invoker = client(s, service).await;
    let (tx, requests) = channel(4);
    let inv = Invocation::new(service, "ServerReflectionInfo").with_arguments(Arguments::Stream(
        StreamSlot::new(StreamKind::Bidi, requests),
    ));
    let result = bounded("reflection call", invoker.invoke(inv))
        .await
        .unwrap();
    (invoker, tx, replies(result))
}

fn names(r: &ReflectionResponse) -> Vec<&str> {
    let list = r.list_services_response.as_ref().expect("a service list");
    list.service.iter().map(|s| s.name.as_str()).collect()
}

#[tokio::test]
async fn reflection_v1alpha_lists_describes_and_refuses_on_one_stream() {
    let s = setup().await;
    let (_conn, tx, mut replies) = reflect(&s, "grpc.reflection.v1alpha.ServerReflection").await;

    tx.send(list()).await.unwrap();
    let r: ReflectionResponse = next(&mut replies).await.unwrap();
    assert_eq!(r.valid_host, "h");
    assert_eq!(
        names(&r),
        [
            "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
            ECHO,
        ],
        "the wrapper-mode service has no schema and is not listed, as in Java"
    );

    // The service's file, and the file it imports.
    tx.send(symbol(ECHO)).await.unwrap();
    let r: ReflectionResponse = next(&mut replies).await.unwrap();
    let files: Vec<FileName> = r
        .file_descriptor_response
        .expect("files")
        .file_descriptor_proto
        .iter()
        .map(|f| FileName::decode(f.as_slice()).unwrap())
        .collect();
    assert_eq!(files[0].name, "test/echo.proto");
    assert_eq!(files[0].dependency, ["test/common.proto"]);
    assert_eq!(files.len(), 2);
    assert_eq!(files[1].name, "test/common.proto");

    // A method and a message are symbols too.
    for sym in ["test.echo.Echo.Say", "test.common.Note"] {
        tx.send(symbol(sym)).await.unwrap();
        let r: ReflectionResponse = next(&mut replies).await.unwrap();
        assert!(r.file_descriptor_response.is_some(), "{sym}");
    }

    // Unknown names, a request that is not one: error responses, the stream goes on.
    tx.send(symbol("no.Such")).await.unwrap();
    let r: ReflectionResponse = next(&mut replies).await.unwrap();
    assert_eq!(r.error_response.unwrap().error_code, 5, "NOT_FOUND");
    tx.send(Bytes::from_static(b"\xff\xff\xff")).await.unwrap();
    let r: ReflectionResponse = next(&mut replies).await.unwrap();
    assert_eq!(r.error_response.unwrap().error_code, 3, "INVALID_ARGUMENT");
    tx.send(list()).await.unwrap();
    let r: ReflectionResponse = next(&mut replies).await.unwrap();
    assert_eq!(names(&r).len(), 4, "still serving after the bad request");

    // Closing the requests ends the replies, status OK.
    drop(tx);
    assert!(bounded("end", replies.next()).await.is_none());
}

#[tokio::test]
async fn reflection_v1_answers_the_same_and_file_by_filename_works() {
    let s = setup().await;
    let (_conn, tx, mut replies) = reflect(&s, "grpc.reflection.v1.ServerReflection").await;
    tx.send(list()).await.unwrap();
    let r: ReflectionResponse = next(&mut replies).await.unwrap();
    assert!(names(&r).contains(&ECHO));
    let by_name = ReflectionRequest {
        file_by_filename: Some("test/common.proto".into()),
        ..Default::default()
    };
    tx.send(by_name.encode_to_vec().into()).await.unwrap();
    let r: ReflectionResponse = next(&mut replies).await.unwrap();
    assert_eq!(
        r.file_descriptor_response
            .unwrap()
            .file_descriptor_proto
            .len(),
        1
    );
}

/// A `Watch` stream, and its invoker (the connection lives while it does).
async fn watch(s: &Setup, service: &str) -> (BoxInvoker, MessageStream) {
    let invoker = client(s, "grpc.health.v1.Health").await;
    let request = HealthRequest {
        service: service.into(),
    }
    .encode_to_vec();
    let inv = Invocation::new("grpc.health.v1.Health", "Watch").with_arguments(Arguments::Stream(
        StreamSlot::new(StreamKind::Server, MessageStream::once(request.into())),
    ));
    let replies = replies(bounded("watch call", invoker.invoke(inv)).await.unwrap());
    (invoker, replies)
}

#[tokio::test]
async fn health_watch_sees_an_unexport_and_the_shutdown() {
    let s = setup().await;
    let (_c1, mut echo) = watch(&s, ECHO).await;
    let (_c2, mut server) = watch(&s, "").await;
    let (_c3, mut unknown) = watch(&s, "no.Such").await;
    assert_eq!(next::<HealthResponse>(&mut echo).await.unwrap().status, 1);
    assert_eq!(next::<HealthResponse>(&mut server).await.unwrap().status, 1);
    assert_eq!(
        next::<HealthResponse>(&mut unknown).await.unwrap().status,
        3,
        "SERVICE_UNKNOWN, and the call stays open"
    );

    bounded("unexport", s.echo.unexport()).await;
    assert_eq!(
        next::<HealthResponse>(&mut echo).await.unwrap().status,
        2,
        "NOT_SERVING once unexported"
    );

    // The shutdown: NOT_SERVING, then the stream ends (and does not hold it up).
    let destroy = tokio::spawn({
        let p = s.protocol.clone();
        async move { p.destroy().await }
    });
    assert_eq!(next::<HealthResponse>(&mut server).await.unwrap().status, 2);
    assert!(bounded("end", server.next()).await.is_none());
    bounded("destroy", destroy).await.unwrap();
}

fn framed(message: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(5 + message.len());
    b.put_u8(0);
    b.put_u32(u32::try_from(message.len()).unwrap());
    b.put_slice(message);
    b.freeze()
}

/// One request over its own HTTP/2 (or HTTP/1.1) connection: the response head,
/// body and trailers.
async fn raw(
    port: u16,
    http2: bool,
    path: &str,
    content_type: &str,
    body: Bytes,
) -> (http::response::Parts, Bytes, HeaderMap) {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let req = Request::post(format!("http://127.0.0.1:{port}{path}"))
        .header("content-type", content_type)
        .header("te", "trailers")
        .body(Full::new(body))
        .unwrap();
    let response = if http2 {
        let (mut send, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
                .await
                .unwrap();
        tokio::spawn(conn);
        bounded("h2 request", send.send_request(req)).await.unwrap()
    } else {
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .unwrap();
        tokio::spawn(conn);
        bounded("h1 request", send.send_request(req)).await.unwrap()
    };
    let (parts, body) = response.into_parts();
    let collected = bounded("body", body.collect()).await.unwrap();
    let trailers = collected.trailers().cloned().unwrap_or_default();
    (parts, collected.to_bytes(), trailers)
}

#[tokio::test]
async fn json_for_an_idl_method_over_http1_and_grpc_json() {
    let s = setup().await;
    let path = format!("/{ECHO}/Say");

    // HTTP/1.1: the message's JSON in, the reply's out (unknown fields ignored,
    // defaults left out).
    let (head, body, _) = raw(
        s.port,
        false,
        &path,
        "application/json",
        Bytes::from_static(br#"{"name":"x","count":2,"extra":true,"tags":[]}"#),
    )
    .await;
    assert_eq!(head.status, 200, "{body:?}");
    assert_eq!(head.headers["content-type"], "application/json");
    let reply: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(reply, serde_json::json!({"name": "x", "count": 2}));

    // Bad JSON: 400 with Java's error body.
    let (head, body, _) = raw(
        s.port,
        false,
        &path,
        "application/json",
        Bytes::from_static(br#"{"count":"many"}"#),
    )
    .await;
    assert_eq!(head.status, 400);
    let e: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(e["status"], "400");
    assert!(
        e["message"].as_str().unwrap().contains("test.common.Note"),
        "{e}"
    );

    // gRPC with JSON messages.
    let (head, body, trailers) = raw(
        s.port,
        true,
        &path,
        "application/grpc+json",
        framed(br#"{"name":"y"}"#),
    )
    .await;
    assert_eq!(head.headers["content-type"], "application/grpc+json");
    assert_eq!(trailers["grpc-status"], "0");
    assert_eq!(&body[5..], br#"{"name":"y"}"#);
    assert_eq!(
        usize::try_from(u32::from_be_bytes(body[1..5].try_into().unwrap())).unwrap(),
        body.len() - 5
    );

    // Bad JSON: INVALID_ARGUMENT.
    let (head, _, trailers) = raw(
        s.port,
        true,
        &path,
        "application/grpc+json",
        framed(b"{nope"),
    )
    .await;
    let status = head
        .headers
        .get("grpc-status")
        .or_else(|| trailers.get("grpc-status"))
        .unwrap();
    assert_eq!(status, "3");

    // The protobuf form is unchanged.
    let note = Note {
        name: "z".into(),
        count: 1,
    }
    .encode_to_vec();
    let (_, body, trailers) = raw(s.port, true, &path, "application/grpc", framed(&note)).await;
    assert_eq!(trailers["grpc-status"], "0");
    assert_eq!(Note::decode(&body[5..]).unwrap().name, "z");
}

#[tokio::test]
async fn grpc_json_streams_each_message() {
    let s = setup().await;
    let mut body = BytesMut::new();
    body.put(framed(br#"{"name":"a"}"#));
    body.put(framed(br#"{"count":7}"#));
    let (head, body, trailers) = raw(
        s.port,
        true,
        &format!("/{ECHO}/Chat"),
        "application/grpc+json",
        body.freeze(),
    )
    .await;
    assert_eq!(head.headers["content-type"], "application/grpc+json");
    assert_eq!(trailers["grpc-status"], "0");
    let mut rest = &body[..];
    let mut got = Vec::new();
    while rest.len() >= 5 {
        let n = usize::try_from(u32::from_be_bytes(rest[1..5].try_into().unwrap())).unwrap();
        got.push(String::from_utf8(rest[5..5 + n].to_vec()).unwrap());
        rest = &rest[5 + n..];
    }
    assert_eq!(got, [r#"{"name":"a"}"#, r#"{"count":7}"#]);
}
