//! Connection lifecycle over real sockets: heartbeats, idle close, connection loss,
//! reconnect, graceful shutdown with the readonly event.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::future::join_all;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use rubbo_remoting::*;
use support::*;

const HB: Duration = Duration::from_millis(100);

/// A raw peer accepts the client's connection; if `answer`, it replies to every
/// heartbeat. Returns (heartbeats seen, whether the client closed the socket, time
/// since `since`, the socket, still open when the client did not close it)
/// after `run_for` or the client's close, whichever is first. `since` is taken before
/// the client connects: the client's timers start at its connect, which a loaded
/// machine may run well before this task accepts, so time since the accept would
/// understate how long the client waited.
async fn raw_provider(
    listener: &TcpListener,
    answer: bool,
    run_for: Duration,
    since: Instant,
) -> (usize, bool, Duration, TcpStream) {
    let (mut s, _) = bounded("accept", LONG, listener.accept()).await.unwrap();
    let started = Instant::now();
    let mut decoder = Decoder::new(0);
    let mut buf = BytesMut::new();
    let mut heartbeats = 0;
    let deadline = started + run_for;
    loop {
        while let Some(d) = decoder.decode(&mut buf).unwrap() {
            let Decoded::Request(req) = d else {
                panic!("{d:?}")
            };
            assert!(req.is_heartbeat() && req.two_way, "{req:?}");
            assert_eq!(req.header().flag, 0xe2);
            heartbeats += 1;
            if answer {
                s.write_all(&frame_bytes(Frame::Response(Response::heartbeat(&req))))
                    .await
                    .unwrap();
            }
        }
        let read = tokio::time::timeout_at(deadline, s.read_buf(&mut buf)).await;
        match read {
            Err(_) => return (heartbeats, false, since.elapsed(), s),
            Ok(Ok(0)) | Ok(Err(_)) => return (heartbeats, true, since.elapsed(), s),
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_heartbeats_keep_an_answering_peer() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let since = Instant::now();
    let connecting = tokio::spawn(async move {
        ExchangeClient::connect(&addr, client_config().with_heartbeat(HB)).await
    });
    // 1 s is over 3 x the 300 ms heartbeat timeout: only the answers keep it open
    let (heartbeats, closed, _, _socket) =
        raw_provider(&listener, true, Duration::from_secs(1), since).await;
    let client = connecting.await.unwrap().unwrap();
    assert!(!closed, "client closed a peer that answers heartbeats");
    assert!(heartbeats >= 3, "only {heartbeats} heartbeats in 1 s");
    assert!(client.is_connected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_closes_peer_that_stops_answering() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let since = Instant::now();
    let connecting = tokio::spawn(async move {
        ExchangeClient::connect(&addr, client_config().with_heartbeat(HB)).await
    });
    let (heartbeats, closed, after, _) = raw_provider(&listener, false, LONG, since).await;
    let _client = connecting.await.unwrap().unwrap();
    assert!(closed, "client kept a silent peer");
    assert!(heartbeats >= 2, "{heartbeats} heartbeats before closing");
    assert!(
        after >= Duration::from_millis(250) && after < Duration::from_secs(2),
        "closed after {after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_heartbeats_against_real_server_keep_connection() {
    let (server, _) = start(ServerConfig::default().with_heartbeat(HB)).await;
    let client = ExchangeClient::connect(
        &server.local_addr().to_string(),
        client_config().with_heartbeat(HB),
    )
    .await
    .unwrap();
    let local = client.local_addr();
    // nothing but heartbeats for 8 x the interval: both idle closes are 300 ms
    tokio::time::sleep(HB * 8).await;
    assert!(client.is_available());
    assert_eq!(client.local_addr(), local, "no reconnect happened");
    assert_eq!(server.connection_count(), 1);
    assert_eq!(&call(&client, "alive").await.unwrap().body[..], b"alive");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_closes_idle_connection() {
    let (server, _) = start(ServerConfig::default().with_heartbeat(HB)).await;
    let mut raw = TcpStream::connect(server.local_addr()).await.unwrap();
    let started = Instant::now();
    let mut b = [0u8; 16];
    let n = bounded("idle close", LONG, raw.read(&mut b))
        .await
        .unwrap_or(0);
    let after = started.elapsed();
    assert_eq!(n, 0);
    assert!(
        after >= Duration::from_millis(250) && after < Duration::from_secs(2),
        "closed after {after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_killed_mid_call_fails_pending_calls_fast() {
    let (server, gauge) = start(ServerConfig::default()).await;
    let client = connect(&server).await;
    let calls: Vec<_> = (0..5)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move {
                client
                    .request(
                        Bytes::from_static(b"sleep:20000"),
                        HESSIAN2,
                        Duration::from_secs(30),
                    )
                    .await
            })
        })
        .collect();
    wait_until("5 calls in the handler", LONG, || {
        gauge.now.load(std::sync::atomic::Ordering::SeqCst) == 5
    })
    .await;
    let killed = Instant::now();
    server.abort();
    for r in bounded(
        "pending calls fail",
        Duration::from_secs(5),
        join_all(calls),
    )
    .await
    {
        let err = r.unwrap().unwrap_err();
        assert!(
            matches!(err, RemotingError::ChannelInactive { .. }),
            "{err:?}"
        );
        assert!(err.is_network());
    }
    assert!(
        killed.elapsed() < Duration::from_secs(2),
        "{:?}",
        killed.elapsed()
    );
    // while disconnected, calls fail fast instead of waiting for their timeout
    wait_until("client sees the loss", LONG, || !client.is_connected()).await;
    let t = Instant::now();
    let err = client
        .request(Bytes::from_static(b"x"), HESSIAN2, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(err.is_network(), "{err:?}");
    assert!(t.elapsed() < Duration::from_secs(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnects_after_server_restarts_on_same_port() {
    let (server, _) = start(ServerConfig::default()).await;
    let addr = server.local_addr();
    let client = connect(&server).await;
    assert_eq!(&call(&client, "one").await.unwrap().body[..], b"one");
    drop(server);
    wait_until("disconnected", LONG, || !client.is_connected()).await;
    assert!(!client.is_available());
    // let a few reconnect attempts fail first
    tokio::time::sleep(Duration::from_millis(100)).await;
    let gauge = Arc::new(Gauge::default());
    let server = Server::bind(addr, ServerConfig::default(), scripted(gauge))
        .await
        .unwrap();
    wait_until("reconnected", LONG, || client.is_available()).await;
    assert_eq!(&call(&client, "two").await.unwrap().body[..], b"two");
    assert_eq!(server.connection_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_sends_readonly_and_waits_for_in_flight() {
    let (server, gauge) =
        start(ServerConfig::default().with_shutdown_timeout(Duration::from_secs(5))).await;
    let server = Arc::new(server);
    let client = connect(&server).await;
    let slow = {
        let client = client.clone();
        tokio::spawn(async move { call(&client, "sleep:500").await })
    };
    wait_until("slow call in handler", LONG, || {
        gauge.now.load(std::sync::atomic::Ordering::SeqCst) == 1
    })
    .await;
    let stopping = {
        let server = server.clone();
        tokio::spawn(async move { server.shutdown().await })
    };
    // readonly arrives while the slow call is still running
    wait_until("readonly seen", LONG, || {
        client.is_connected() && !client.is_available()
    })
    .await;
    let err = call(&client, "new").await.unwrap_err();
    assert!(matches!(err, RemotingError::ReadOnly { .. }), "{err:?}");
    assert!(!slow.is_finished());
    // the in-flight call still completes, then the server closes
    assert_eq!(&slow.await.unwrap().unwrap().body[..], b"sleep:500");
    bounded("shutdown completes", LONG, stopping).await.unwrap();
    wait_until("client disconnected", LONG, || !client.is_connected()).await;
    assert!(
        TcpStream::connect(server.local_addr()).await.is_err(),
        "listener closed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_wait_is_bounded() {
    let (server, gauge) =
        start(ServerConfig::default().with_shutdown_timeout(Duration::from_millis(200))).await;
    let client = connect(&server).await;
    let stuck = {
        let client = client.clone();
        tokio::spawn(async move { call(&client, "sleep:20000").await })
    };
    wait_until("stuck call in handler", LONG, || {
        gauge.now.load(std::sync::atomic::Ordering::SeqCst) == 1
    })
    .await;
    let t = Instant::now();
    bounded("bounded shutdown", LONG, server.shutdown()).await;
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    let err = bounded("stuck call fails", LONG, stuck)
        .await
        .unwrap()
        .unwrap_err();
    assert!(err.is_network(), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lazy_client_connects_on_first_use_and_later_when_provider_appears() {
    let (server, _) = start(ServerConfig::default()).await;
    let client = ExchangeClient::connect_lazy(&server.local_addr().to_string(), client_config());
    // the first call waits for the background connect
    assert_eq!(&call(&client, "lazy").await.unwrap().body[..], b"lazy");
    assert_eq!(server.connection_count(), 1);

    // a provider that is not there yet: the first call fails fast, not after its timeout
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap()
    };
    let client = ExchangeClient::connect_lazy(&port.to_string(), client_config());
    let t = Instant::now();
    let err = client
        .request(Bytes::from_static(b"x"), HESSIAN2, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(err.is_network(), "{err:?}");
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    let gauge = Arc::new(Gauge::default());
    let _server = Server::bind(port, ServerConfig::default(), scripted(gauge))
        .await
        .unwrap();
    wait_until("lazy client connected", LONG, || client.is_available()).await;
    assert_eq!(&call(&client, "now").await.unwrap().body[..], b"now");
}
