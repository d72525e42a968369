//! The client both Triple cells' servers are measured with: plain gRPC over hyper's
//! HTTP/2 client on one connection, as little client work as a gRPC call can take.
//! Each call sends the same prebuilt request (path, headers, framed message: the
//! protobuf `EchoRequest`) and checks the reply's bytes, `grpc-status: 0` in the
//! trailers. `EchoReply` and `EchoRequest` are the same message (`string message =
//! 1`), so the reply's framed bytes equal the request's.

use std::net::SocketAddr;

use anyhow::{Context, ensure};
use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderValue, Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpStream;

/// The echo's `:path`, the same for tonic's server and Rubbo's.
const PATH: &str = "/rubbo.bench.echo.Echo/Echo";

/// One connection and the call it repeats; cheap to clone.
#[derive(Clone)]
pub(crate) struct Client {
    sender: SendRequest<Full<Bytes>>,
    uri: Uri,
    /// The framed request message, which is also the framed reply expected.
    framed: Bytes,
}

/// `message` as a protobuf `EchoRequest` (field 1, length-delimited) in a gRPC frame.
pub(crate) fn framed(message: &str) -> anyhow::Result<Bytes> {
    let mut pb = BytesMut::new();
    pb.put_u8(0x0a);
    let mut len = message.len() as u64;
    while len >= 0x80 {
        pb.put_u8((len as u8 & 0x7f) | 0x80);
        len >>= 7;
    }
    pb.put_u8(len as u8);
    pb.put_slice(message.as_bytes());
    let mut out = BytesMut::with_capacity(5 + pb.len());
    out.put_u8(0);
    out.put_u32(u32::try_from(pb.len())?);
    out.put_slice(&pb);
    Ok(out.freeze())
}

impl Client {
    /// Connects (call it on the client's runtime: the connection task is spawned on
    /// the runtime it runs on).
    pub(crate) async fn connect(addr: SocketAddr, message: &str) -> anyhow::Result<Self> {
        let tcp = TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .handshake(TokioIo::new(tcp))
            .await
            .context("HTTP/2 handshake")?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Client {
            sender,
            uri: Uri::try_from(format!("http://{addr}{PATH}"))?,
            framed: framed(message)?,
        })
    }
}

impl crate::load::EchoClient for Client {
    async fn echo(&self) -> anyhow::Result<()> {
        let mut req = Request::new(Full::new(self.framed.clone()));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = self.uri.clone();
        let h = req.headers_mut();
        h.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/grpc"),
        );
        h.insert(http::header::TE, HeaderValue::from_static("trailers"));
        let mut sender = self.sender.clone();
        sender.ready().await?;
        let resp = sender.send_request(req).await?;
        ensure!(resp.status().is_success(), "HTTP {}", resp.status());
        let body = resp.into_body().collect().await?;
        let status = body
            .trailers()
            .and_then(|t| t.get("grpc-status"))
            .map(|s| s.as_bytes().to_vec());
        ensure!(
            status.as_deref() == Some(b"0"),
            "grpc-status {status:?} (want 0)"
        );
        ensure!(
            body.to_bytes() == self.framed,
            "the echo returned another message"
        );
        Ok(())
    }
}
