//! Shared helpers for the black-box tests: a scriptable handler, bounded waits,
//! raw-socket frame helpers.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};

use rubbo_remoting::*;

pub const LONG: Duration = Duration::from_secs(10);

/// Concurrency gauge for handlers.
#[derive(Debug, Default)]
pub struct Gauge {
    pub now: AtomicUsize,
    pub max: AtomicUsize,
    pub total: AtomicUsize,
}

impl Gauge {
    pub fn enter(self: &Arc<Self>) -> GaugeGuard {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(n, Ordering::SeqCst);
        self.total.fetch_add(1, Ordering::SeqCst);
        GaugeGuard(self.clone())
    }
}

pub struct GaugeGuard(Arc<Gauge>);

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Echo handler driven by the body:
/// `sleep:<ms>` sleeps then echoes, `block:<ms>` holds its thread that long (a handler
/// that computes) then echoes, `panic` panics in the future, `big:<n>` answers
/// n bytes, anything else is echoed. A broken request gets status 40 with the reason.
pub fn scripted(gauge: Arc<Gauge>) -> impl Handler {
    handler_fn(move |req: Request, _conn: ConnectionInfo| {
        let gauge = gauge.clone();
        async move {
            let _g = gauge.enter();
            if let Some(broken) = &req.broken {
                let body = hessian2_error_body(req.serialization, &broken.to_string());
                return Some(Response::new(
                    req.id,
                    req.serialization,
                    Status::BAD_REQUEST,
                    body,
                ));
            }
            let text = std::str::from_utf8(&req.body).unwrap_or("").to_owned();
            let body = if let Some(ms) = text.strip_prefix("sleep:") {
                tokio::time::sleep(Duration::from_millis(ms.parse().unwrap())).await;
                req.body.clone()
            } else if let Some(ms) = text.strip_prefix("block:") {
                std::thread::sleep(Duration::from_millis(ms.parse().unwrap()));
                req.body.clone()
            } else if text == "panic" {
                panic!("boom in handler");
            } else if let Some(n) = text.strip_prefix("big:") {
                Bytes::from(vec![b'x'; n.parse().unwrap()])
            } else {
                req.body.clone()
            };
            req.two_way
                .then(|| Response::ok(req.id, req.serialization, body))
        }
    })
}

pub async fn start(config: ServerConfig) -> (Server, Arc<Gauge>) {
    let gauge = Arc::new(Gauge::default());
    let server = Server::bind("127.0.0.1:0", config, scripted(gauge.clone()))
        .await
        .unwrap();
    (server, gauge)
}

pub fn client_config() -> ClientConfig {
    ClientConfig::default()
        .with_connect_timeout(Duration::from_secs(2))
        .with_reconnect_backoff(Duration::from_millis(20), Duration::from_millis(200))
}

pub async fn connect(server: &Server) -> ExchangeClient {
    ExchangeClient::connect(&server.local_addr().to_string(), client_config())
        .await
        .unwrap()
}

pub async fn call(client: &ExchangeClient, body: &str) -> Result<Response, RemotingError> {
    client
        .request(Bytes::copy_from_slice(body.as_bytes()), HESSIAN2, LONG)
        .await
}

/// Polls `cond` every 5 ms until it holds; panics after `limit`.
pub async fn wait_until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Awaits `fut` at most `limit`, panicking with `what` otherwise.
pub async fn bounded<T>(what: &str, limit: Duration, fut: impl Future<Output = T>) -> T {
    timeout(limit, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

/// Reads the next decoded unit from a raw socket; `None` on EOF.
pub async fn read_decoded(
    stream: &mut TcpStream,
    decoder: &mut Decoder,
    buf: &mut BytesMut,
) -> Option<Decoded> {
    loop {
        if let Some(d) = decoder.decode(buf).unwrap() {
            return Some(d);
        }
        let n = bounded("raw read", LONG, stream.read_buf(buf))
            .await
            .unwrap_or(0);
        if n == 0 {
            return None;
        }
    }
}

pub fn frame_bytes(frame: Frame) -> BytesMut {
    let mut buf = BytesMut::new();
    encode_frame(&frame, &mut buf);
    buf
}
