//! The QoS server over real sockets on 127.0.0.1: HTTP GET and POST, a telnet
//! session, 404, 403 for a foreign peer, an oversize line, the idle close.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use rubbo_qos::{
    ConfigSection, ConsumerService, LOGO, PROMPT, ProviderService, Qos, QosConfig, QosError,
    QosHost, QosServer, Registration, RegistryScope, ServerInfo,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const WAIT: Duration = Duration::from_secs(10);

/// One provider in one registry; remembers what was asked.
#[derive(Debug, Default)]
struct Host {
    offline: Mutex<bool>,
    asked: Mutex<Vec<(Vec<String>, bool)>>,
}

impl QosHost for Host {
    fn application(&self) -> String {
        "app".into()
    }
    fn providers(&self) -> Vec<ProviderService> {
        vec![ProviderService::new(
            "org.example.Greeter",
            None,
            Some("1.0.0"),
            vec![Registration {
                registry: "memory".into(),
                application_level: false,
                registered: !*self.offline.lock(),
            }],
        )]
    }
    fn consumers(&self) -> Vec<ConsumerService> {
        Vec::new()
    }
    fn set_registered<'a>(
        &'a self,
        keys: &'a [String],
        _: RegistryScope,
        registered: bool,
    ) -> BoxFuture<'a, Result<(), QosError>> {
        Box::pin(async move {
            self.asked.lock().push((keys.to_vec(), registered));
            *self.offline.lock() = !registered;
            Ok(())
        })
    }
    fn servers(&self) -> Vec<ServerInfo> {
        Vec::new()
    }
    fn started(&self) -> bool {
        true
    }
    fn deployed(&self) -> bool {
        true
    }
    fn config(&self) -> Vec<ConfigSection> {
        Vec::new()
    }
    fn version(&self) -> String {
        "9.9.9".into()
    }
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

async fn server(host: Arc<Host>, config: QosConfig) -> QosServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    QosServer::from_listener(listener, Qos::new(host, config)).unwrap()
}

/// Sends `request` raw and reads until the server closes: (status, body).
async fn http(addr: SocketAddr, request: &str) -> (u16, String) {
    tokio::time::timeout(WAIT, async {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        let status = out[9..12].parse().unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: text/plain"),
            "{head}"
        );
        (status, body.to_owned())
    })
    .await
    .unwrap()
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
}

/// Reads until `buf` ends with `end`.
async fn read_until(s: &mut TcpStream, end: &str) -> String {
    tokio::time::timeout(WAIT, async {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while !buf.ends_with(end.as_bytes()) {
            let n = s.read(&mut chunk).await.unwrap();
            assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&buf));
            buf.extend_from_slice(&chunk[..n]);
        }
        String::from_utf8(buf).unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn http_get_post_404_and_probe_status() {
    let host = Arc::new(Host::default());
    let s = server(host.clone(), QosConfig::default()).await;
    let addr = s.local_addr();

    assert_eq!(
        http(addr, &get("/version")).await,
        (200, "dubbo version \"9.9.9\"".into())
    );
    assert_eq!(http(addr, &get("/ready")).await, (200, "true".into()));
    // GET query values are the arguments.
    assert_eq!(
        http(addr, &get("/offline?service=org.example.Greeter%3A1.0.0")).await,
        (200, "OK".into())
    );
    assert_eq!(
        host.asked.lock()[0],
        (vec!["org.example.Greeter:1.0.0".into()], false)
    );
    assert_eq!(http(addr, &get("/ready")).await, (503, "false".into()));
    assert_eq!(
        http(addr, &get("/offline?s=nothing")).await,
        (200, "service not found".into())
    );
    // POST form values are the arguments.
    let form = "service=org.example.*";
    let post = format!(
        "POST /online HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
        form.len()
    );
    assert_eq!(http(addr, &post).await, (200, "OK".into()));
    assert!(host.asked.lock()[1].1);
    assert_eq!(http(addr, &get("/ready")).await, (200, "true".into()));

    assert_eq!(http(addr, &get("/nope")).await.0, 404);
    assert_eq!(http(addr, &get("/")).await.0, 404);
    let ls = http(addr, &get("/ls")).await;
    assert_eq!(ls.0, 200);
    assert!(
        ls.1.contains("|org.example.Greeter:1.0.0|memory-I(Y)|"),
        "{}",
        ls.1
    );
    s.shutdown().await;
}

#[tokio::test]
async fn telnet_session_with_logo_prompt_two_commands_and_quit() {
    let s = server(Arc::new(Host::default()), QosConfig::default()).await;
    let mut c = TcpStream::connect(s.local_addr()).await.unwrap();
    // Nothing typed: the logo and prompt come after the welcome delay.
    let hello = read_until(&mut c, PROMPT).await;
    assert_eq!(hello, format!("{LOGO}{PROMPT}"));

    c.write_all(b"version\r\n").await.unwrap();
    assert_eq!(
        read_until(&mut c, PROMPT).await,
        "dubbo version \"9.9.9\"\r\ndubbo>"
    );
    c.write_all(b"ls\r\n").await.unwrap();
    let ls = read_until(&mut c, PROMPT).await;
    assert!(ls.starts_with("As Provider side:\n"), "{ls}");
    assert!(ls.ends_with("\r\ndubbo>"), "{ls}");
    c.write_all(b"nope x\r\n").await.unwrap();
    assert_eq!(
        read_until(&mut c, PROMPT).await,
        "nope x :no such command\r\ndubbo>"
    );
    c.write_all(b"\r\n").await.unwrap();
    assert_eq!(read_until(&mut c, PROMPT).await, "dubbo>");

    // A line over 2048 bytes is refused; the session goes on.
    let long = format!("{}\r\n", "x".repeat(3000));
    c.write_all(long.as_bytes()).await.unwrap();
    assert_eq!(
        read_until(&mut c, PROMPT).await,
        "line too long (more than 2048 bytes)\r\ndubbo>"
    );
    // Exactly 2048 is fine.
    let max = format!("{}\r\n", "y".repeat(2048));
    c.write_all(max.as_bytes()).await.unwrap();
    assert!(
        read_until(&mut c, PROMPT)
            .await
            .ends_with(" :no such command\r\ndubbo>")
    );

    c.write_all(b"quit\r\n").await.unwrap();
    let mut rest = String::new();
    tokio::time::timeout(WAIT, c.read_to_string(&mut rest))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rest, "BYE!\n");
}

#[tokio::test]
async fn typing_at_once_still_gets_the_logo_first() {
    let s = server(Arc::new(Host::default()), QosConfig::default()).await;
    let mut c = TcpStream::connect(s.local_addr()).await.unwrap();
    c.write_all(b"live\n").await.unwrap();
    let out = read_until(&mut c, "true\r\ndubbo>").await;
    assert_eq!(out, format!("{LOGO}{PROMPT}true\r\n{PROMPT}"));
}

/// A real socket, served with a peer address that is not loopback.
async fn foreign_connection(qos: Qos, peer: IpAddr) -> TcpStream {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (io, _) = listener.accept().await.unwrap();
        let _ = qos.serve_connection(io, peer).await;
    });
    TcpStream::connect(addr).await.unwrap()
}

#[tokio::test]
async fn foreign_peer_gets_403_for_protected_commands_and_200_for_probes() {
    let host = Arc::new(Host::default());
    let qos = Qos::new(host.clone(), QosConfig::default());
    let peer: IpAddr = "203.0.113.7".parse().unwrap();
    for (path, status) in [
        ("/offline", 403),
        ("/getConfig", 403),
        ("/ready", 200),
        ("/live", 200),
    ] {
        let mut c = foreign_connection(qos.clone(), peer).await;
        c.write_all(get(path).as_bytes()).await.unwrap();
        let mut out = String::new();
        tokio::time::timeout(WAIT, c.read_to_string(&mut out))
            .await
            .unwrap()
            .unwrap();
        assert!(
            out.starts_with(&format!("HTTP/1.1 {status}")),
            "{path}: {out}"
        );
    }
    assert!(host.asked.lock().is_empty(), "a refused offline ran");

    // Telnet: Java's refusal text.
    let mut c = foreign_connection(qos.clone(), peer).await;
    read_until(&mut c, PROMPT).await;
    c.write_all(b"offline\r\n").await.unwrap();
    assert_eq!(
        read_until(&mut c, PROMPT).await,
        "offline :permission deny\r\ndubbo>"
    );
}

#[tokio::test]
async fn anonymous_none_refuses_foreign_connections() {
    let url = rubbo_common::Url::new("qos", "", 0).with_param(
        rubbo_common::keys::ANONYMOUS_ACCESS_PERMISSION_LEVEL_KEY,
        "NONE",
    );
    let qos = Qos::new(Arc::new(Host::default()), QosConfig::from_url(&url));
    let mut c = foreign_connection(qos, "203.0.113.7".parse().unwrap()).await;
    let mut out = String::new();
    tokio::time::timeout(WAIT, c.read_to_string(&mut out))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out, rubbo_qos::FOREIGN_REFUSED);
}

#[tokio::test]
async fn silent_telnet_session_is_closed() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let qos = Qos::new(Arc::new(Host::default()), QosConfig::default())
        .with_idle_timeout(Duration::from_millis(300));
    let s = QosServer::from_listener(listener, qos).unwrap();
    let mut c = TcpStream::connect(s.local_addr()).await.unwrap();
    read_until(&mut c, PROMPT).await;
    let mut rest = Vec::new();
    // The server closes: read_to_end returns within the bound.
    tokio::time::timeout(WAIT, c.read_to_end(&mut rest))
        .await
        .unwrap()
        .unwrap();
    assert!(rest.is_empty());
}
