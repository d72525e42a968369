//! The contract's Greeter over Triple in IDL (protobuf) mode, on 127.0.0.1: a Rust
//! client and a Rust server (ok, a 1 MiB payload, the error status, an unknown
//! method), gRPC compatibility both ways against tonic (tonic client → Rubbo server,
//! Rubbo client → tonic server), the consumer's Greeter checks, and a wrapper-mode
//! method called with a plain message.
#![allow(clippy::unwrap_used)]

use std::pin::Pin;
use std::time::Duration;

use interop::greeter::proto::{GreetReply, GreetRequest, Greeter, GreeterClient};
use interop::{ProviderHandle, serve_on};
use rubbo::codegen::{Client, MethodDescriptor, ServiceDescriptor};
use rubbo::{Code, Rubbo};
use tonic::transport::server::TcpIncoming;

/// tonic's client and server of the same proto.
#[allow(missing_docs, clippy::all)]
mod tonic_greeter {
    include!(concat!(env!("OUT_DIR"), "/tonic/org.rubbo.interop.rs"));
}

/// Every call of these tests ends well within this.
const BOUND: Duration = Duration::from_secs(20);

async fn provider() -> ProviderHandle {
    serve_on("tri", "interop-provider", "127.0.0.1", 0, &[])
        .await
        .unwrap()
}

async fn rubbo_client(port: u16) -> (Rubbo, GreeterClient) {
    let c = Rubbo::builder()
        .application("greeter-test")
        .build()
        .unwrap();
    let invoker = c
        .refer_url(&GreeterClient::SERVICE, &format!("tri://127.0.0.1:{port}"))
        .await
        .unwrap();
    (c, GreeterClient::new(invoker))
}

fn request(name: &str, payload: Vec<u8>) -> GreetRequest {
    GreetRequest {
        name: name.to_owned(),
        repeat: 0,
        payload,
    }
}

#[tokio::test]
async fn rust_client_and_server_greet_echo_payloads_and_fail_with_the_status() {
    let p = provider().await;
    let (c, greeter) = rubbo_client(p.addr.port()).await;
    assert_eq!(GreeterClient::INTERFACE, "org.rubbo.interop.Greeter");
    assert_eq!(p.url.protocol(), Some("tri"));

    let reply = tokio::time::timeout(BOUND, greeter.greet(request("world", Vec::new())))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        reply,
        GreetReply {
            message: "Hello, world".into(),
            index: 0,
            payload: Vec::new()
        }
    );

    let mib: Vec<u8> = (0..1024 * 1024).map(|i| (i % 253) as u8).collect();
    let reply = tokio::time::timeout(BOUND, greeter.greet(request("big", mib.clone())))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply.message, "Hello, big");
    assert!(reply.payload == mib, "the 1 MiB payload comes back as sent");

    let err = greeter
        .greet(request("error", Vec::new()))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (Code::InvalidArgument, "bad name")
    );

    // A method the service does not have.
    const UNKNOWN: ServiceDescriptor = ServiceDescriptor {
        interface: "org.rubbo.interop.Greeter",
        version: "",
        group: "",
        methods: &[MethodDescriptor {
            name: "Shout",
            parameter_types: "",
            rust_name: "shout",
            parameter_count: 1,
            idl: true,
            stream: None,
        }],
        file_descriptor_set: &[],
    };
    let err = Client::new(&UNKNOWN, greeter.invoker().clone())
        .unary::<GreetRequest, GreetReply>(0, &request("x", Vec::new()))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented, "{err}");
    assert!(err.message().contains("Shout"), "{err}");

    // And the connection still serves.
    assert_eq!(
        greeter
            .greet(request("again", Vec::new()))
            .await
            .unwrap()
            .message,
        "Hello, again"
    );
    c.shutdown().await;
    p.shutdown().await;
}

#[tokio::test]
async fn the_consumer_greeter_checks_pass_against_the_rust_provider() {
    let p = provider().await;
    let (c, greeter) = rubbo_client(p.addr.port()).await;
    let mut report = interop::checks::Report::default();
    tokio::time::timeout(BOUND, interop::checks::greeter(&greeter, &mut report))
        .await
        .unwrap();
    assert_eq!(
        report,
        interop::checks::Report {
            passed: 4,
            failed: 0
        }
    );
    c.shutdown().await;
    p.shutdown().await;
}

#[tokio::test]
async fn a_tonic_client_calls_the_rubbo_idl_server() {
    let p = provider().await;
    let mut client = tokio::time::timeout(
        BOUND,
        tonic_greeter::greeter_client::GreeterClient::connect(format!("http://{}", p.addr)),
    )
    .await
    .unwrap()
    .unwrap();
    let reply = client
        .greet(tonic_greeter::GreetRequest {
            name: "tonic".into(),
            repeat: 0,
            payload: b"\x00\x01\xff".to_vec(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.message, "Hello, tonic");
    assert_eq!(reply.payload, b"\x00\x01\xff");

    let status = client
        .greet(tonic_greeter::GreetRequest {
            name: "error".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert_eq!(status.message(), "bad name");

    // The streaming rpcs, as tonic calls them.
    let mut replies = client
        .greet_server_stream(tonic_greeter::GreetRequest {
            name: "s".into(),
            repeat: 3,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut indexes = Vec::new();
    while let Some(r) = replies.message().await.unwrap() {
        assert_eq!(r.message, "Hello, s");
        indexes.push(r.index);
    }
    assert_eq!(indexes, [0, 1, 2]);
    let names = ["a", "b", "c"].map(|n| tonic_greeter::GreetRequest {
        name: n.into(),
        ..Default::default()
    });
    let joined = client
        .greet_client_stream(futures::stream::iter(names.clone()))
        .await
        .unwrap();
    assert_eq!(joined.into_inner().message, "a,b,c");
    let with_error = names.into_iter().chain([tonic_greeter::GreetRequest {
        name: "error".into(),
        ..Default::default()
    }]);
    let mut replies = client
        .greet_bidi(futures::stream::iter(with_error))
        .await
        .unwrap()
        .into_inner();
    for (i, n) in ["a", "b", "c"].iter().enumerate() {
        let r = replies.message().await.unwrap().unwrap();
        assert_eq!((r.message, r.index), (format!("Hello, {n}"), i as i32));
    }
    let status = replies.message().await.unwrap_err();
    assert_eq!(
        (status.code(), status.message()),
        (tonic::Code::InvalidArgument, "bad name"),
        "the error comes mid-stream, after the replies before it"
    );
    p.shutdown().await;
}

#[tokio::test]
async fn a_plain_message_to_a_wrapper_mode_method_gets_the_mode_error() {
    let p = provider().await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", p.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let status = grpc
        .unary::<_, tonic_greeter::GreetReply, _>(
            tonic::Request::new(tonic_greeter::GreetRequest {
                name: "x".into(),
                repeat: 2,
                payload: Vec::new(),
            }),
            tonic::codegen::http::uri::PathAndQuery::from_static(
                "/org.rubbo.interop.InteropService/echo",
            ),
            tonic_prost::ProstCodec::default(),
        )
        .await
        .unwrap_err();
    assert!(
        status.message().contains("wrapper mode"),
        "{}",
        status.message()
    );
    assert_ne!(status.code(), tonic::Code::Ok);
    p.shutdown().await;
}

/// The tonic Greeter: the contract's `Greet`; streaming rpcs are not needed here.
#[derive(Debug)]
struct TonicGreeter;

type ReplyStream =
    Pin<Box<dyn futures::Stream<Item = Result<tonic_greeter::GreetReply, tonic::Status>> + Send>>;

#[tonic::async_trait]
impl tonic_greeter::greeter_server::Greeter for TonicGreeter {
    async fn greet(
        &self,
        request: tonic::Request<tonic_greeter::GreetRequest>,
    ) -> Result<tonic::Response<tonic_greeter::GreetReply>, tonic::Status> {
        let r = request.into_inner();
        if r.name == "error" {
            return Err(tonic::Status::invalid_argument("bad name"));
        }
        Ok(tonic::Response::new(tonic_greeter::GreetReply {
            message: format!("Hello, {} (tonic)", r.name),
            index: 0,
            payload: r.payload,
        }))
    }

    type GreetServerStreamStream = ReplyStream;

    async fn greet_server_stream(
        &self,
        _: tonic::Request<tonic_greeter::GreetRequest>,
    ) -> Result<tonic::Response<ReplyStream>, tonic::Status> {
        Err(tonic::Status::unimplemented("not in this test"))
    }

    async fn greet_client_stream(
        &self,
        _: tonic::Request<tonic::Streaming<tonic_greeter::GreetRequest>>,
    ) -> Result<tonic::Response<tonic_greeter::GreetReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("not in this test"))
    }

    type GreetBidiStream = ReplyStream;

    async fn greet_bidi(
        &self,
        _: tonic::Request<tonic::Streaming<tonic_greeter::GreetRequest>>,
    ) -> Result<tonic::Response<ReplyStream>, tonic::Status> {
        Err(tonic::Status::unimplemented("not in this test"))
    }
}

#[tokio::test]
async fn the_rubbo_client_calls_a_tonic_server() {
    let incoming = TcpIncoming::bind(([127, 0, 0, 1], 0).into()).unwrap();
    let port = incoming.local_addr().unwrap().port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(tonic_greeter::greeter_server::GreeterServer::new(
                TonicGreeter,
            ))
            .serve_with_incoming_shutdown(incoming, async {
                let _ = stopped.await;
            }),
    );
    let (c, greeter) = rubbo_client(port).await;
    let reply = tokio::time::timeout(BOUND, greeter.greet(request("rubbo", b"pl".to_vec())))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply.message, "Hello, rubbo (tonic)");
    assert_eq!(reply.payload, b"pl");
    let err = greeter
        .greet(request("error", Vec::new()))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (Code::InvalidArgument, "bad name")
    );
    c.shutdown().await;
    let _ = stop.send(());
    tokio::time::timeout(BOUND, server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

/// One HTTP/1.0 request (so the body is not chunked) on its own connection: the
/// status line and the body.
async fn http1_json(port: u16, path: &str, body: &str) -> (String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let req = format!(
        "POST {path} HTTP/1.0\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    tokio::time::timeout(BOUND, s.read_to_string(&mut out))
        .await
        .unwrap()
        .unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

#[tokio::test]
async fn the_generated_schema_reaches_the_server_json_calls_the_idl_method() {
    // rubbo-build embedded the protos' descriptor set in the service descriptor...
    let set = GreeterClient::SERVICE.file_descriptor_set;
    assert!(!set.is_empty());
    assert!(
        set.windows(b"org.rubbo.interop".len())
            .any(|w| w == b"org.rubbo.interop"),
        "the set names the proto package"
    );
    // ...and exporting the Greeter handed it to Triple: JSON in, JSON out.
    let p = provider().await;
    let path = "/org.rubbo.interop.Greeter/Greet";
    let (status, body) =
        http1_json(p.addr.port(), path, r#"{"name":"json","payload":"AAE="}"#).await;
    assert!(status.contains(" 200 "), "{status} {body}");
    assert_eq!(body, r#"{"message":"Hello, json","payload":"AAE="}"#);
    // The method's status as HTTP (INVALID_ARGUMENT: 400), bad JSON 400 too.
    let (status, body) = http1_json(p.addr.port(), path, r#"{"name":"error"}"#).await;
    assert!(status.contains(" 400 "), "{status}");
    assert_eq!(body, r#"{"message":"bad name","status":"400"}"#);
    let (status, _) = http1_json(p.addr.port(), path, r#"{"repeat":"x"}"#).await;
    assert!(status.contains(" 400 "), "{status}");
}
