//! The dubbo transport over TLS and mutual TLS, real sockets on 127.0.0.1, with
//! certificates generated per test (`test_certs`).
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use rubbo_remoting::test_certs::{TestCerts, generate};
use rubbo_remoting::*;
use support::*;

fn certs() -> (tempfile::TempDir, TestCerts) {
    let dir = tempfile::tempdir().unwrap();
    let certs = generate(dir.path()).unwrap();
    (dir, certs)
}

/// A TLS server answering `pong:<body>`; with `mutual`, clients need a certificate.
async fn tls_server(certs: &TestCerts, mutual: bool) -> Server {
    let trust = mutual.then_some(certs.ca.as_path());
    let tls = TlsAcceptor::from_pem_files(&certs.server_chain, &certs.server_key, None, trust, &[])
        .unwrap()
        .with_handshake_timeout(Duration::from_secs(2));
    assert_eq!(tls.is_mutual(), mutual);
    let handler = handler_fn(|req: Request, _c: ConnectionInfo| async move {
        let mut body = b"pong:".to_vec();
        body.extend_from_slice(&req.body);
        req.two_way
            .then(|| Response::ok(req.id, req.serialization, body.into()))
    });
    Server::bind(
        "127.0.0.1:0",
        ServerConfig::default().with_tls(Some(tls)),
        handler,
    )
    .await
    .unwrap()
}

fn tls_client(
    own: Option<(&std::path::Path, &std::path::Path)>,
    trust: &std::path::Path,
) -> ClientConfig {
    let tls = TlsConnector::from_pem_files(own, None, Some(trust), &[]).unwrap();
    client_config().with_tls(Some(tls))
}

async fn ping(client: &ExchangeClient) -> Bytes {
    let r = client
        .request(Bytes::from_static(b"hi"), HESSIAN2, LONG)
        .await
        .unwrap();
    assert_eq!(r.status, Status::OK);
    r.body
}

#[tokio::test]
async fn calls_go_over_tls_and_the_server_presents_a_certificate_the_ca_signs() {
    let (_dir, c) = certs();
    let server = tls_server(&c, false).await;
    let addr = server.local_addr().to_string();
    let client = ExchangeClient::connect(&addr, tls_client(None, &c.ca))
        .await
        .unwrap();
    assert_eq!(ping(&client).await, Bytes::from_static(b"pong:hi"));
    // A client trusting another CA refuses the server.
    let err = ExchangeClient::connect(&addr, tls_client(None, &c.rogue_ca))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RemotingError::Tls(TlsError::Handshake { .. })),
        "{err:?}"
    );
    assert!(err.is_network(), "a handshake failure can fail over: {err}");
}

#[tokio::test]
async fn mutual_tls_serves_a_trusted_client_and_refuses_others() {
    let (_dir, c) = certs();
    let server = tls_server(&c, true).await;
    let addr = server.local_addr().to_string();

    let trusted = ExchangeClient::connect(
        &addr,
        tls_client(Some((&c.client_chain, &c.client_key)), &c.ca),
    )
    .await
    .unwrap();
    assert_eq!(ping(&trusted).await, Bytes::from_static(b"pong:hi"));

    // A certificate another CA signs: the server refuses it. With TLS 1.3 the client
    // may learn it only on its first read, so the call fails rather than the connect.
    for own in [Some((c.rogue_chain.as_path(), c.rogue_key.as_path())), None] {
        let refused = match ExchangeClient::connect(&addr, tls_client(own, &c.ca)).await {
            Err(e) => e,
            Ok(client) => client
                .request(Bytes::from_static(b"hi"), HESSIAN2, LONG)
                .await
                .unwrap_err(),
        };
        assert!(refused.is_network(), "{refused:?}");
    }
    wait_until("only the trusted connection left", LONG, || {
        server.connection_count() == 1
    })
    .await;

    // The server keeps serving after the failed handshakes.
    assert_eq!(ping(&trusted).await, Bytes::from_static(b"pong:hi"));
    let again = ExchangeClient::connect(
        &addr,
        tls_client(Some((&c.client_chain, &c.client_key)), &c.ca),
    )
    .await
    .unwrap();
    assert_eq!(ping(&again).await, Bytes::from_static(b"pong:hi"));
}

#[tokio::test]
async fn a_plaintext_client_gets_an_error_not_a_hang() {
    let (_dir, c) = certs();
    let server = tls_server(&c, true).await;
    let addr = server.local_addr().to_string();
    let plain = ExchangeClient::connect(&addr, client_config())
        .await
        .unwrap();
    let err = bounded(
        "plaintext call",
        LONG,
        plain.request(Bytes::from_static(b"hi"), HESSIAN2, Duration::from_secs(30)),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, RemotingError::ChannelInactive { .. }),
        "the server closes the connection: {err:?}"
    );

    // A client that says nothing is dropped at the handshake timeout (2 s here).
    let mut silent = TcpStream::connect(&addr).await.unwrap();
    let mut buf = [0u8; 16];
    let n = bounded("silent client closed", LONG, silent.read(&mut buf)).await;
    assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");

    // Garbage: closed as well, and the server still serves TLS clients.
    let mut junk = TcpStream::connect(&addr).await.unwrap();
    junk.write_all(b"\xda\xbb\xc2\x00not tls at all")
        .await
        .unwrap();
    let n = bounded("junk client closed", LONG, junk.read(&mut buf)).await;
    assert!(matches!(n, Ok(_) | Err(_)));
    let tls = ExchangeClient::connect(
        &addr,
        tls_client(Some((&c.client_chain, &c.client_key)), &c.ca),
    )
    .await
    .unwrap();
    assert_eq!(ping(&tls).await, Bytes::from_static(b"pong:hi"));
}

#[tokio::test]
async fn url_keys_configure_both_sides_and_bad_files_say_which() {
    let (dir, c) = certs();
    let p = |p: &std::path::Path| p.display().to_string();
    let server_url = rubbo_common::Url::parse(&format!(
        "dubbo://127.0.0.1:0/S?server-key-cert-chain-path={}&server-private-key-path={}&server-trust-cert-collection-path={}",
        p(&c.server_chain),
        p(&c.server_key),
        p(&c.ca)
    ))
    .unwrap();
    let acceptor = TlsAcceptor::from_url(&server_url, &[]).unwrap().unwrap();
    assert!(acceptor.is_mutual());
    let server = Server::bind(
        "127.0.0.1:0",
        ServerConfig::default().with_tls(Some(acceptor)),
        handler_fn(|req: Request, _c: ConnectionInfo| async move {
            req.two_way
                .then(|| Response::ok(req.id, req.serialization, req.body))
        }),
    )
    .await
    .unwrap();
    let client_url = rubbo_common::Url::parse(&format!(
        "dubbo://127.0.0.1:0/S?client-key-cert-chain-path={}&client-private-key-path={}&client-trust-cert-collection-path={}",
        p(&c.client_chain),
        p(&c.client_key),
        p(&c.ca)
    ))
    .unwrap();
    let connector = TlsConnector::from_url(&client_url, &[]).unwrap();
    let client = ExchangeClient::connect(
        &server.local_addr().to_string(),
        client_config().with_tls(connector),
    )
    .await
    .unwrap();
    assert_eq!(ping(&client).await, Bytes::from_static(b"hi"));

    // A file that is not PEM: the error names the key and the file.
    let bad = dir.path().join("bad.pem");
    std::fs::write(&bad, "hello").unwrap();
    let err = TlsAcceptor::from_pem_files(&bad, &c.server_key, None, None, &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("server-key-cert-chain-path") && err.contains("bad.pem"),
        "{err}"
    );
    let err = TlsConnector::from_pem_files(Some((&c.client_chain, &bad)), None, Some(&c.ca), &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("client-private-key-path") && err.contains("bad.pem"),
        "{err}"
    );
}
