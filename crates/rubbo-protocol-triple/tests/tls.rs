//! Triple over TLS and mutual TLS (ALPN `h2`), configured with Java's `dubbo.ssl.*`
//! keys on the URLs, over real sockets on 127.0.0.1.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rubbo_common::{
    Arguments, BoxInvoker, Exporter, Invocation, InvokeFuture, Invoker, Payload, Protocol,
    RpcResult, Url,
};
use rubbo_protocol_triple::TripleProtocol;
use rubbo_remoting::TlsConnector;
use rubbo_remoting::test_certs::{TestCerts, generate};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

const IFACE: &str = "org.rubbo.test.Name";
const LONG: Duration = Duration::from_secs(10);

#[derive(Debug)]
struct Name {
    url: Url,
    calls: Arc<AtomicUsize>,
}

impl Invoker for Name {
    fn invoke(&self, _inv: Invocation) -> InvokeFuture {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(RpcResult::value(Payload::typed("done".to_owned()))) })
    }

    fn url(&self) -> &Url {
        &self.url
    }
}

fn call() -> Invocation {
    Invocation::new(IFACE, "name").with_arguments(Arguments::typed(0, ()))
}

fn p(path: &std::path::Path) -> String {
    path.display().to_string()
}

/// A mutual-TLS Triple provider; returns it, its port and its call counter.
async fn provider(c: &TestCerts) -> (Box<dyn Exporter>, u16, Arc<AtomicUsize>) {
    let protocol = TripleProtocol::new();
    let url = Url::parse(&format!(
        "tri://127.0.0.1:0/{IFACE}?side=provider&server-key-cert-chain-path={}&server-private-key-path={}&server-trust-cert-collection-path={}",
        p(&c.server_chain),
        p(&c.server_key),
        p(&c.ca)
    ))
    .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let exporter = protocol
        .export(Arc::new(Name {
            url,
            calls: calls.clone(),
        }))
        .await
        .unwrap();
    let port = protocol.server_addrs()[0].port();
    // The reported (registered) URL names no key file.
    assert!(
        exporter
            .url()
            .get_param("server-private-key-path")
            .is_none()
    );
    (exporter, port, calls)
}

async fn refer(
    port: u16,
    chain: &std::path::Path,
    key: &std::path::Path,
    ca: &std::path::Path,
) -> Result<BoxInvoker, rubbo_common::RpcError> {
    TripleProtocol::new()
        .refer(
            Url::parse(&format!(
                "tri://127.0.0.1:{port}/{IFACE}?timeout=5000&client-key-cert-chain-path={}&client-private-key-path={}&client-trust-cert-collection-path={}",
                p(chain),
                p(key),
                p(ca)
            ))
            .unwrap(),
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_calls_succeed_and_untrusted_or_plaintext_clients_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let c = generate(dir.path()).unwrap();
    let (_exporter, port, calls) = provider(&c).await;

    let client = refer(port, &c.client_chain, &c.client_key, &c.ca)
        .await
        .unwrap();
    assert!(client.invoke(call()).await.is_ok());
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // A certificate another CA signs: no call reaches the service.
    let rogue = match refer(port, &c.rogue_chain, &c.rogue_key, &c.ca).await {
        Err(e) => e,
        Ok(i) => tokio::time::timeout(LONG, i.invoke(call()))
            .await
            .unwrap()
            .unwrap_err(),
    };
    assert!(rogue.is_retryable(), "a network error: {rogue}");

    // A plaintext client gets an error, not a hang.
    let plain = TripleProtocol::new()
        .refer(Url::parse(&format!("tri://127.0.0.1:{port}/{IFACE}?timeout=5000")).unwrap());
    let plain_err = match tokio::time::timeout(LONG, plain).await.unwrap() {
        Err(e) => e,
        Ok(i) => tokio::time::timeout(LONG, i.invoke(call()))
            .await
            .unwrap()
            .unwrap_err(),
    };
    assert!(plain_err.is_retryable(), "{plain_err}");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "no refused call ran");

    // The server still serves, old and new connections.
    assert!(client.invoke(call()).await.is_ok());
    let again = refer(port, &c.client_chain, &c.client_key, &c.ca)
        .await
        .unwrap();
    assert!(again.invoke(call()).await.is_ok());
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn the_server_selects_h2_by_alpn() {
    let dir = tempfile::tempdir().unwrap();
    let c = generate(dir.path()).unwrap();
    let (_exporter, port, _) = provider(&c).await;
    let addr = format!("127.0.0.1:{port}");
    let tls = TlsConnector::from_pem_files(
        Some((&c.client_chain, &c.client_key)),
        None,
        Some(&c.ca),
        &[b"h2", b"http/1.1"],
    )
    .unwrap();
    let stream = tls
        .connect(&addr, TcpStream::connect(&addr).await.unwrap())
        .await
        .unwrap();
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));

    // A TCP client that never speaks TLS is closed at the handshake timeout, not kept.
    let mut silent = TcpStream::connect(&addr).await.unwrap();
    let mut buf = [0u8; 8];
    let n = tokio::time::timeout(Duration::from_secs(30), silent.read(&mut buf))
        .await
        .expect("the server closes a silent connection within its handshake timeout");
    assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");
}
