//! Triple (`tri://`) end to end through the bootstrap, on 127.0.0.1: a Rust consumer
//! calling a Rust provider in wrapper mode (values, null, void, attachments,
//! exceptions, unknown services and methods, deadlines, many calls on one
//! connection), a service on dubbo and tri at once, and bad input on the port.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rubbo::{ErrorKind, Protocol, RpcError, Rubbo, TripleProtocol, context};
use support::{User, user};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A small service with every shape of result.
#[rubbo::service(interface = "org.rubbo.test.TriEcho", version = "1.0.0")]
pub trait TriEcho {
    /// `String echo(String s)`.
    async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError>;
    /// `int add(int a, int b)`: two arguments, each its own stream.
    async fn add(&self, a: i32, b: i32) -> Result<i32, RpcError>;
    /// `User echoUser(User u)`.
    async fn echo_user(&self, u: Option<User>) -> Result<Option<User>, RpcError>;
    /// `List<User> listUsers(int n)`.
    async fn list_users(&self, n: i32) -> Result<Vec<User>, RpcError>;
    /// `void ping()`, answering a response attachment.
    async fn ping(&self) -> Result<(), RpcError>;
    /// `String fail(String message) throws InteropException`.
    async fn fail(&self, message: Option<String>) -> Result<Option<String>, RpcError>;
    /// `String attachment(String key)`.
    async fn attachment(&self, key: Option<String>) -> Result<Option<String>, RpcError>;
    /// `String slow(int millis)`.
    async fn slow(&self, millis: i32) -> Result<Option<String>, RpcError>;
    /// `String peer()`: the consumer address the call came from.
    async fn peer(&self) -> Result<String, RpcError>;
}

/// The same interface as a consumer that knows one method more than the provider.
#[rubbo::service(interface = "org.rubbo.test.TriEcho", version = "1.0.0")]
pub trait TriEchoNewer {
    /// `String echo(String s)`.
    async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError>;
    /// Not on the provider.
    async fn added_later(&self, s: Option<String>) -> Result<Option<String>, RpcError>;
}

/// A service nobody exports.
#[rubbo::service(interface = "org.rubbo.test.Nobody", version = "1.0.0")]
pub trait Nobody {
    /// `String hello()`.
    async fn hello(&self) -> Result<String, RpcError>;
}

struct Provider;

impl TriEcho for Provider {
    async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError> {
        Ok(s)
    }
    async fn add(&self, a: i32, b: i32) -> Result<i32, RpcError> {
        Ok(a + b)
    }
    async fn echo_user(&self, u: Option<User>) -> Result<Option<User>, RpcError> {
        Ok(u)
    }
    async fn list_users(&self, n: i32) -> Result<Vec<User>, RpcError> {
        Ok((0..n).map(user).collect())
    }
    async fn ping(&self) -> Result<(), RpcError> {
        context::set_response_attachment("pong", "yes");
        context::set_response_header("pong-early", "in-headers");
        context::set_response_header("pong-bytes", rubbo::Value::Binary(vec![0xab, 0]));
        Ok(())
    }
    async fn fail(&self, message: Option<String>) -> Result<Option<String>, RpcError> {
        Err(RpcError::biz("org.rubbo.interop.InteropException", message))
    }
    async fn attachment(&self, key: Option<String>) -> Result<Option<String>, RpcError> {
        Ok(context::attachment_str(&key.unwrap_or_default()))
    }
    async fn slow(&self, millis: i32) -> Result<Option<String>, RpcError> {
        tokio::time::sleep(Duration::from_millis(u64::try_from(millis).unwrap_or(0))).await;
        Ok(Some("done".to_owned()))
    }
    async fn peer(&self) -> Result<String, RpcError> {
        let peer = context::with(|c| c.invocation().peer()).flatten();
        Ok(peer.map(|p| p.remote.to_string()).unwrap_or_default())
    }
}

/// A provider exporting `TriEcho` on `tri://127.0.0.1:0`, and the bound port.
async fn provider() -> (Rubbo, u16) {
    let p = Rubbo::builder()
        .application("tri-provider")
        .protocol("tri", 0)
        .build()
        .unwrap();
    let url = p
        .export(TriEchoServer::new(Arc::new(Provider)))
        .await
        .unwrap();
    assert_eq!(url.protocol(), Some("tri"));
    (p, url.port())
}

fn consumer(params: &[(&str, &str)]) -> Rubbo {
    let mut b = Rubbo::builder().application("tri-consumer");
    for (k, v) in params {
        b = b.param(*k, *v);
    }
    b.build().unwrap()
}

async fn client(c: &Rubbo, port: u16) -> TriEchoClient {
    TriEchoClient::new(
        c.refer_url(&TriEchoClient::SERVICE, &format!("tri://127.0.0.1:{port}"))
            .await
            .unwrap(),
    )
}

#[tokio::test]
async fn values_nulls_void_users_and_attachments_round_trip() {
    let (p, port) = provider().await;
    let c = consumer(&[]);
    let echo = client(&c, port).await;

    assert_eq!(
        echo.echo(Some("hi".into())).await.unwrap().as_deref(),
        Some("hi")
    );
    assert_eq!(echo.echo(None).await.unwrap(), None, "null stays null");
    assert_eq!(
        echo.echo(Some(String::new())).await.unwrap().as_deref(),
        Some("")
    );
    assert_eq!(echo.add(40, 2).await.unwrap(), 42);
    let u = user(7);
    assert_eq!(echo.echo_user(Some(u.clone())).await.unwrap(), Some(u));
    let users = echo.list_users(3).await.unwrap();
    assert_eq!(users, (0..3).map(user).collect::<Vec<_>>());

    let ((), response) = context::capture_response(async { echo.ping().await.unwrap() }).await;
    assert_eq!(
        response.get("pong").and_then(|v| v.as_str()),
        Some("yes"),
        "void returns, and response attachments come back in the trailers"
    );
    assert!(!response.contains_key("pong-early"), "{response:?}");
    let ((), md) = context::capture_metadata(async { echo.ping().await.unwrap() }).await;
    assert_eq!(
        md.headers.get("pong-early").and_then(|v| v.as_str()),
        Some("in-headers"),
        "response header attachments come back apart: {md:?}"
    );
    assert_eq!(
        md.headers.get("pong-bytes"),
        Some(&rubbo::Value::Binary(vec![0xab, 0]))
    );
    assert_eq!(md.headers.len(), 2, "no content-type: {md:?}");
    assert!(md.attachments.contains_key("pong") && !md.attachments.contains_key("pong-early"));

    let tenant = echo.clone().with_attachment("tenant", "acme");
    assert_eq!(
        tenant
            .attachment(Some("tenant".into()))
            .await
            .unwrap()
            .as_deref(),
        Some("acme"),
        "request attachments travel as headers"
    );
    assert_eq!(echo.attachment(Some("tenant".into())).await.unwrap(), None);
    assert_eq!(
        echo.attachment(Some("remote.application".into()))
            .await
            .unwrap()
            .as_deref(),
        Some("tri-consumer"),
        "tri-consumer-appname becomes the remote application"
    );
    p.shutdown().await;
}

#[tokio::test]
async fn business_exceptions_arrive_with_class_and_message() {
    let (p, port) = provider().await;
    let c = consumer(&[]);
    let echo = client(&c, port).await;
    let err = echo
        .fail(Some("boom: 100% ünïcode".into()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Biz, "{err}");
    let biz = err.biz_exception().unwrap();
    assert_eq!(biz.class, "org.rubbo.interop.InteropException");
    assert_eq!(biz.message.as_deref(), Some("boom: 100% ünïcode"));
    assert!(!err.is_retryable());
    // The connection is fine afterwards.
    assert_eq!(echo.add(1, 1).await.unwrap(), 2);
    p.shutdown().await;
}

#[tokio::test]
async fn unknown_services_and_methods_are_unimplemented() {
    let (p, port) = provider().await;
    let c = consumer(&[]);
    let nobody = NobodyClient::new(
        c.refer_url(&NobodyClient::SERVICE, &format!("tri://127.0.0.1:{port}"))
            .await
            .unwrap(),
    );
    let err = nobody.hello().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MethodNotFound, "{err}");
    assert!(
        err.message().contains("grpc-status Unimplemented(12)"),
        "{err}"
    );
    assert!(err.message().contains("org.rubbo.test.Nobody"), "{err}");

    let newer = TriEchoNewerClient::new(
        c.refer_url(
            &TriEchoNewerClient::SERVICE,
            &format!("tri://127.0.0.1:{port}"),
        )
        .await
        .unwrap(),
    );
    assert_eq!(
        newer.echo(Some("x".into())).await.unwrap().as_deref(),
        Some("x")
    );
    let err = newer.added_later(Some("x".into())).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MethodNotFound, "{err}");
    assert!(err.message().contains("addedLater"), "{err}");
    p.shutdown().await;
}

#[tokio::test]
async fn the_consumer_fails_near_its_deadline_and_the_provider_keeps_serving() {
    let (p, port) = provider().await;
    let c = consumer(&[("timeout", "300")]);
    let echo = client(&c, port).await;
    let t0 = Instant::now();
    let err = echo.slow(3000).await.unwrap_err();
    let took = t0.elapsed();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_millis(1500),
        "failed after {took:?}, the deadline was 300 ms"
    );
    // The provider is still there, on the same connection and on new ones.
    assert_eq!(echo.add(2, 3).await.unwrap(), 5);
    let other = client(&consumer(&[]), port).await;
    assert_eq!(
        other.echo(Some("still".into())).await.unwrap().as_deref(),
        Some("still")
    );
    p.shutdown().await;
}

#[tokio::test]
async fn the_provider_cancels_work_past_grpc_timeout() {
    let (p, port) = provider().await;
    // Speak to the provider directly, with a deadline the consumer does not enforce.
    let (mut send, _conn) = h2_connect(port).await;
    let req = grpc_request(
        "/org.rubbo.test.TriEcho/slow",
        "Ljava/lang/String;",
        &[("grpc-timeout", "200m"), ("tri-service-version", "1.0.0")],
        slow_args(5000),
    );
    let t0 = Instant::now();
    let resp = tokio::time::timeout(Duration::from_secs(3), send.send_request(req))
        .await
        .expect("the provider answers at its deadline")
        .unwrap();
    let (status, message) = grpc_status(resp).await;
    assert_eq!(status, Some(4), "DEADLINE_EXCEEDED: {message:?}");
    assert!(t0.elapsed() < Duration::from_millis(2000));
    p.shutdown().await;
}

#[tokio::test]
async fn response_header_attachments_go_in_the_headers_and_the_others_in_the_trailers() {
    use prost::Message;
    let (p, port) = provider().await;
    let (mut send, _conn) = h2_connect(port).await;
    let ping = rubbo_protocol_triple::wrapper::TripleRequestWrapper {
        serialize_type: "hessian4".into(),
        args: vec![],
        arg_types: vec![],
    };
    let req = grpc_request(
        "/org.rubbo.test.TriEcho/ping",
        "",
        &[("tri-service-version", "1.0.0")],
        rubbo_protocol_triple::frame::encode(&ping.encode_to_vec()).unwrap(),
    );
    let resp = tokio::time::timeout(Duration::from_secs(5), send.send_request(req))
        .await
        .unwrap()
        .unwrap();
    let (parts, body) = resp.into_parts();
    let trailers = tokio::time::timeout(Duration::from_secs(5), body.collect())
        .await
        .unwrap()
        .unwrap()
        .trailers()
        .cloned()
        .unwrap_or_default();
    assert_eq!(parts.headers.get("pong-early").unwrap(), "in-headers");
    assert_eq!(
        parts.headers.get("pong-bytes-bin").unwrap(),
        "qwA",
        "binary as -bin, unpadded base64"
    );
    assert!(parts.headers.get("pong").is_none());
    assert_eq!(trailers.get("pong").unwrap(), "yes");
    assert_eq!(trailers.get("grpc-status").unwrap(), "0");
    assert!(trailers.get("pong-early").is_none());
    p.shutdown().await;
}

#[tokio::test]
async fn a_thousand_concurrent_calls_share_one_connection() {
    let (p, port) = provider().await;
    let c = consumer(&[("timeout", "20000")]);
    let echo = client(&c, port).await;
    let calls = (0..1000).map(|i| {
        let echo = echo.clone();
        async move {
            let s = format!("call-{i}");
            let back = echo.echo(Some(s.clone())).await?;
            assert_eq!(back.as_deref(), Some(s.as_str()));
            echo.peer().await
        }
    });
    let peers: HashSet<String> = futures::future::try_join_all(calls)
        .await
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(
        peers.len(),
        1,
        "every call came on one connection: {peers:?}"
    );
    p.shutdown().await;
}

#[tokio::test]
async fn one_service_answers_on_dubbo_and_tri_at_once() {
    let tri = TripleProtocol::new();
    let p = Rubbo::builder()
        .application("both-provider")
        .protocol("dubbo", 0)
        .protocol("tri", 0)
        .protocol_extension("tri", Arc::new(tri.clone()))
        .build()
        .unwrap();
    let dubbo_url = p
        .export(TriEchoServer::new(Arc::new(Provider)))
        .await
        .unwrap();
    assert_eq!(dubbo_url.protocol(), Some("dubbo"));
    let tri_port = tri.server_addrs()[0].port();
    assert_ne!(tri_port, dubbo_url.port());

    let c = consumer(&[]);
    let over_dubbo = TriEchoClient::new(
        c.refer_url(
            &TriEchoClient::SERVICE,
            &format!("dubbo://127.0.0.1:{}", dubbo_url.port()),
        )
        .await
        .unwrap(),
    );
    let over_tri = client(&c, tri_port).await;
    assert_eq!(over_dubbo.add(1, 2).await.unwrap(), 3);
    assert_eq!(over_tri.add(3, 4).await.unwrap(), 7);
    assert_eq!(
        over_tri
            .fail(Some("x".into()))
            .await
            .unwrap_err()
            .biz_exception()
            .unwrap()
            .class,
        over_dubbo
            .fail(Some("x".into()))
            .await
            .unwrap_err()
            .biz_exception()
            .unwrap()
            .class,
    );
    p.shutdown().await;
    assert!(
        tri.server_addrs().is_empty(),
        "shutdown closes the tri server too"
    );
}

#[tokio::test]
async fn bad_input_gets_an_error_and_the_server_keeps_serving() {
    let (p, port) = provider().await;
    let c = consumer(&[]);
    let echo = client(&c, port).await;
    assert_eq!(echo.add(1, 1).await.unwrap(), 2);

    // Garbage bytes: an HTTP error or a closed connection, never a hang.
    let mut raw = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    raw.write_all(b"\x16\x03\x01\x02\x00garbage garbage garbage garbage\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), raw.read_to_end(&mut answer))
        .await
        .expect("the server closes a garbage connection")
        .ok();
    let text = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || text.starts_with("HTTP/1.1 400"),
        "garbage gets 400 or a close: {text}"
    );

    // HTTP/1.1 with a body that is not JSON: 400 with Java's JSON error body.
    let (status, body) = http1(port, "POST", "/org.rubbo.test.TriEcho/echo", "{nope").await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("\"status\":\"400\"") && body.contains("not JSON"),
        "{body}"
    );

    // HTTP/2 HEADERS for an unknown path, a bad path, a non-gRPC content type, and a
    // plain protobuf message sent to a wrapper-mode method.
    let (mut send, _conn) = h2_connect(port).await;
    let unknown = grpc_request("/no.such.Service/m", "", &[], Bytes::new());
    let resp = send.send_request(unknown).await.unwrap();
    assert_eq!(resp.status(), 404);
    let (status, message) = grpc_status(resp).await;
    assert_eq!(status, Some(12), "{message:?}");
    assert!(message.unwrap_or_default().contains("not found"));

    let bad_path = grpc_request("/nomethod", "", &[], Bytes::new());
    let (status, _) = grpc_status(send.send_request(bad_path).await.unwrap()).await;
    assert_eq!(status, Some(12));

    // Not gRPC over HTTP/2: Triple's JSON form.
    let mut json = grpc_request(
        "/org.rubbo.test.TriEcho/echo",
        "",
        &[],
        Bytes::from_static(b"[\"h2 json\"]"),
    );
    json.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    let resp = send.send_request(json).await.unwrap();
    assert_eq!(resp.status(), 200);
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"\"h2 json\"");

    let mut plain = http::Request::new(Full::new(Bytes::from_static(
        b"\x00\x00\x00\x00\x05\x0a\x01x\x10\x02",
    )));
    *plain.method_mut() = http::Method::POST;
    *plain.uri_mut() = format!("http://127.0.0.1:{port}/org.rubbo.test.TriEcho/echo")
        .parse()
        .unwrap();
    plain
        .headers_mut()
        .insert("content-type", "application/grpc".parse().unwrap());
    plain
        .headers_mut()
        .insert("tri-service-version", "1.0.0".parse().unwrap());
    let (status, message) = grpc_status(send.send_request(plain).await.unwrap()).await;
    assert_eq!(status, Some(13));
    assert!(
        message
            .as_deref()
            .unwrap_or_default()
            .contains("wrapper mode"),
        "{message:?}"
    );

    // A compressed flag with no encoding the server knows.
    let mut compressed = grpc_request(
        "/org.rubbo.test.TriEcho/echo",
        "",
        &[("tri-service-version", "1.0.0")],
        Bytes::new(),
    );
    *compressed.body_mut() = Full::new(Bytes::from_static(b"\x01\x00\x00\x00\x01x"));
    let (status, _) = grpc_status(send.send_request(compressed).await.unwrap()).await;
    assert_eq!(status, Some(12));

    // Everyone else is still served, on the old and on new connections.
    assert_eq!(echo.add(2, 2).await.unwrap(), 4);
    let fresh = client(&consumer(&[]), port).await;
    assert_eq!(
        fresh.echo(Some("ok".into())).await.unwrap().as_deref(),
        Some("ok")
    );
    p.shutdown().await;
}

#[tokio::test]
async fn a_missing_provider_fails_the_reference_with_a_network_error() {
    let free = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let err = TripleProtocol::new()
        .refer(
            rubbo::Url::parse(&format!("tri://127.0.0.1:{port}/org.rubbo.test.TriEcho")).unwrap(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network, "{err}");
}

#[tokio::test]
async fn a_lost_connection_is_reopened_when_the_provider_is_back() {
    let export = |protocol: TripleProtocol, port: u16| async move {
        let url = rubbo::Url::parse(&format!(
            "tri://127.0.0.1:{port}/org.rubbo.test.TriEcho?version=1.0.0&shutdown.timeout=500"
        ))
        .unwrap();
        protocol
            .export(TriEchoServer::new(Arc::new(Provider)).into_invoker(url))
            .await
            .unwrap()
    };
    let server = TripleProtocol::new();
    let exporter = export(server.clone(), 0).await;
    let port = exporter.url().port();
    let c = consumer(&[("timeout", "2000"), ("retries", "0")]);
    let echo = client(&c, port).await;
    assert_eq!(echo.add(1, 2).await.unwrap(), 3);

    // The provider goes away (its connections close) and comes back on the same port.
    exporter.unexport().await;
    let err = echo.add(1, 2).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Network | ErrorKind::NoProvider),
        "{err}"
    );
    let _back = export(server, port).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match echo.add(2, 3).await {
            Ok(v) => {
                assert_eq!(v, 5);
                break;
            }
            Err(e) if Instant::now() < deadline => {
                assert!(
                    matches!(e.kind(), ErrorKind::Network | ErrorKind::NoProvider),
                    "{e}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("the consumer never reconnected: {e}"),
        }
    }
    c.shutdown().await;
}

// ---- a bare HTTP/2 client, for what a Rubbo consumer never sends ----------------

type Sender = hyper::client::conn::http2::SendRequest<Full<Bytes>>;

async fn h2_connect(port: u16) -> (Sender, tokio::task::JoinHandle<()>) {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let (send, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    let task = tokio::spawn(async move {
        let _ = conn.await;
    });
    (send, task)
}

/// The wrapper of one `int` argument for `slow`.
fn slow_args(millis: i32) -> Bytes {
    use prost::Message;
    let w = rubbo_protocol_triple::wrapper::TripleRequestWrapper {
        serialize_type: "hessian4".into(),
        args: vec![rubbo_hessian2::to_vec(&millis).unwrap().into()],
        arg_types: vec!["int".into()],
    };
    rubbo_protocol_triple::frame::encode(&w.encode_to_vec()).unwrap()
}

fn grpc_request(
    path: &str,
    _desc: &str,
    extra: &[(&str, &str)],
    body: Bytes,
) -> http::Request<Full<Bytes>> {
    let mut req = http::Request::new(Full::new(body));
    *req.method_mut() = http::Method::POST;
    *req.uri_mut() = format!("http://127.0.0.1{path}").parse().unwrap();
    let h = req.headers_mut();
    h.insert("content-type", "application/grpc+proto".parse().unwrap());
    h.insert("te", "trailers".parse().unwrap());
    for (k, v) in extra {
        h.insert(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    req
}

/// `grpc-status` and `grpc-message`, from the trailers or a trailers-only response.
async fn grpc_status(resp: http::Response<hyper::body::Incoming>) -> (Option<i32>, Option<String>) {
    let (parts, body) = resp.into_parts();
    let collected = tokio::time::timeout(Duration::from_secs(5), body.collect())
        .await
        .unwrap()
        .unwrap();
    let trailers = collected.trailers().cloned().unwrap_or_default();
    let from = if trailers.contains_key("grpc-status") {
        &trailers
    } else {
        &parts.headers
    };
    let status = from
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let message = from
        .get("grpc-message")
        .map(|v| rubbo_protocol_triple::status::decode_message(v.as_bytes()));
    (status, message)
}

/// One HTTP/1.1 request (`Connection: close`), its status and body.
async fn http1(port: u16, method: &str, path: &str, body: &str) -> (u16, String) {
    http1_with(port, method, path, "", body).await
}

async fn http1_with(
    port: u16,
    method: &str,
    path: &str,
    headers: &str,
    body: &str,
) -> (u16, String) {
    let mut c = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    c.write_all(req.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut answer))
        .await
        .expect("an answer within 10 s")
        .unwrap();
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not HTTP: {text}"));
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    // A chunked body: the chunks' data, without their sizes.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = String::new();
        let mut r = rest;
        while let Some((size, tail)) = r.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 {
                break;
            }
            out.push_str(&tail[..n]);
            r = tail[n..].trim_start_matches("\r\n");
        }
        out
    } else {
        rest.to_owned()
    };
    (status, body)
}

/// Triple's plain-HTTP form, as Java 3.3 answers it: `curl -d '["hi"]'
/// http://host:port/{interface}/{method}` gets the JSON of the result.
#[tokio::test]
async fn http1_json_calls_a_method_and_errors_are_json() {
    let (p, port) = provider().await;
    let (status, body) = http1(port, "POST", "/org.rubbo.test.TriEcho/echo", r#"["hi"]"#).await;
    assert_eq!((status, body.as_str()), (200, r#""hi""#));
    // One parameter: the bare value works too.
    let (status, body) = http1(port, "POST", "/org.rubbo.test.TriEcho/echo", r#""bare""#).await;
    assert_eq!((status, body.as_str()), (200, r#""bare""#));
    let (status, body) = http1(port, "POST", "/org.rubbo.test.TriEcho/add", "[40, 2]").await;
    assert_eq!((status, body.as_str()), (200, "42"));
    // A Java object in and out, as plain JSON of its fields.
    let (status, body) = http1(
        port,
        "POST",
        "/org.rubbo.test.TriEcho/echoUser",
        r#"[{"id": 7, "name": "seven", "age": 30, "gender": "FEMALE", "tags": ["a"]}]"#,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let user: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (user["id"].as_i64(), user["name"].as_str()),
        (Some(7), Some("seven"))
    );
    assert!(user.get("class").is_none(), "{body}");
    // No body: no arguments.
    let (status, body) = http1(port, "POST", "/org.rubbo.test.TriEcho/ping", "").await;
    assert_eq!((status, body.as_str()), (200, "null"));
    // The group/version headers choose the service.
    let (status, _) = http1_with(
        port,
        "POST",
        "/org.rubbo.test.TriEcho/echo",
        "tri-service-version: 9.9.9\r\n",
        r#"["x"]"#,
    )
    .await;
    assert_eq!(status, 404);

    // Errors: unknown service or method 404, a business exception 500 with its class.
    let (status, body) = http1(port, "POST", "/no.such.Service/echo", "[]").await;
    assert_eq!(status, 404, "{body}");
    let err: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(err["status"], "404");
    assert!(
        err["message"].as_str().unwrap().contains("no.such.Service"),
        "{body}"
    );
    let (status, body) = http1(port, "POST", "/org.rubbo.test.TriEcho/noSuchMethod", "[]").await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("noSuchMethod"), "{body}");
    let (status, body) = http1(port, "POST", "/org.rubbo.test.TriEcho/fail", r#"["boom"]"#).await;
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("boom"), "{body}");

    // `Upgrade: h2c` without `Connection: Upgrade, HTTP2-Settings` (here `close`) is
    // no h2c upgrade (RFC 7540 §3.2): answered over HTTP/1.1. The upgrade itself is
    // tested in rubbo-protocol-triple's tests/upgrade.rs.
    let (status, body) = http1_with(
        port,
        "POST",
        "/org.rubbo.test.TriEcho/echo",
        "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n",
        r#"["up"]"#,
    )
    .await;
    assert_eq!((status, body.as_str()), (200, r#""up""#));

    // gRPC on the same port still works.
    let c = consumer(&[]);
    assert_eq!(client(&c, port).await.add(2, 3).await.unwrap(), 5);
    p.shutdown().await;
}

/// gRPC health checking on every Triple server (`grpc.health.v1.Health/Check`).
#[tokio::test]
async fn health_check_answers_for_the_server_and_each_exported_service() {
    use prost::Message;
    #[derive(Clone, PartialEq, prost::Message)]
    struct HealthCheckRequest {
        #[prost(string, tag = "1")]
        service: String,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    struct HealthCheckResponse {
        #[prost(int32, tag = "1")]
        status: i32,
    }
    let (p, port) = provider().await;
    let (mut send, _conn) = h2_connect(port).await;
    let mut check = async |service: &str, method: &str| {
        let msg = HealthCheckRequest {
            service: service.into(),
        };
        let body = rubbo_protocol_triple::frame::encode(&msg.encode_to_vec()).unwrap();
        let req = grpc_request(&format!("/grpc.health.v1.Health/{method}"), "", &[], body);
        let resp = send.send_request(req).await.unwrap();
        let (parts, body) = resp.into_parts();
        let collected = tokio::time::timeout(Duration::from_secs(5), body.collect())
            .await
            .unwrap()
            .unwrap();
        let trailers = collected.trailers().cloned().unwrap_or_default();
        let from = if trailers.contains_key("grpc-status") {
            trailers
        } else {
            parts.headers
        };
        let status: i32 = from["grpc-status"].to_str().unwrap().parse().unwrap();
        let data = collected.to_bytes();
        let reply =
            (data.len() >= 5).then(|| HealthCheckResponse::decode(&data[5..]).unwrap().status);
        (status, reply)
    };
    // The server, and an exported service by interface name: SERVING (1).
    assert_eq!(check("", "Check").await, (0, Some(1)));
    assert_eq!(check("org.rubbo.test.TriEcho", "Check").await, (0, Some(1)));
    // A service it does not serve: gRPC NOT_FOUND (5), as the health protocol says.
    assert_eq!(check("no.such.Service", "Check").await, (5, None));
    // A method the health service does not have (its newer `List`): UNIMPLEMENTED.
    // (`Watch` streams: crates/rubbo-protocol-triple/tests/builtin.rs.)
    assert_eq!(check("", "List").await.0, 12);
    p.shutdown().await;
}
