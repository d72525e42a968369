//! Client/server exchange over real sockets on 127.0.0.1.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::future::{BoxFuture, FutureExt, join_all};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use rubbo_remoting::*;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_requests_in_flight_on_one_connection() {
    const N: usize = 10_000;
    let arrived = Arc::new(AtomicUsize::new(0));
    let (release_tx, release_rx) = watch::channel(false);
    let release_tx = Arc::new(release_tx);
    let handler = handler_fn(move |req: Request, _c: ConnectionInfo| {
        let arrived = arrived.clone();
        let release_tx = release_tx.clone();
        let mut release_rx = release_rx.clone();
        async move {
            // hold every request until all N are in flight at once
            if arrived.fetch_add(1, Ordering::SeqCst) + 1 == N {
                release_tx.send_replace(true);
            }
            let _ = release_rx.wait_for(|r| *r).await;
            Some(Response::ok(req.id, req.serialization, req.body))
        }
    });
    let server = Server::bind("127.0.0.1:0", ServerConfig::default(), handler)
        .await
        .unwrap();
    let client = connect(&server).await;
    let calls = (0..N).map(|i| {
        let client = client.clone();
        async move {
            let body = Bytes::from(format!("req-{i}"));
            let resp = client
                .request(body.clone(), HESSIAN2, Duration::from_secs(60))
                .await
                .unwrap();
            assert_eq!(resp.status, Status::OK);
            assert_eq!(resp.body, body, "response matched to the wrong request");
            resp.id
        }
    });
    let ids = bounded("10k calls", Duration::from_secs(60), join_all(calls)).await;
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), N, "ids unique");
    assert_eq!(server.connection_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_near_deadline_late_response_dropped_next_call_works() {
    let (server, gauge) = start(ServerConfig::default()).await;
    let client = connect(&server).await;
    let started = Instant::now();
    let err = client
        .request(
            // The reply comes after 5 s: a timeout that did not fire shows as seconds
            // of waiting, far from the 150 ms deadline even on a loaded machine.
            Bytes::from_static(b"sleep:5000"),
            HESSIAN2,
            Duration::from_millis(150),
        )
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(err, RemotingError::Timeout { sent: true, .. }),
        "{err:?}"
    );
    assert_eq!(err.status(), Status::SERVER_TIMEOUT);
    assert!(err.to_string().contains("sent, no reply"), "{err}");
    assert!(
        took >= Duration::from_millis(150) && took < Duration::from_millis(4000),
        "timeout fired after {took:?}"
    );
    // let the late response arrive, then call again on the same connection
    wait_until("late handler done", LONG, || {
        gauge.total.load(Ordering::SeqCst) == 1 && gauge.now.load(Ordering::SeqCst) == 0
    })
    .await;
    let local = client.local_addr();
    let resp = call(&client, "after").await.unwrap();
    assert_eq!(&resp.body[..], b"after");
    assert_eq!(client.local_addr(), local, "same connection");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_before_sending_is_client_timeout() {
    // a peer that never reads: socket buffers fill, the writer blocks, the queue fills
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let holder = tokio::spawn(async move {
        let (s, _) = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(20)).await;
        drop(s);
    });
    let config = client_config().with_payload(0).with_write_queue(1);
    let client = ExchangeClient::connect(&addr, config).await.unwrap();
    let body = Bytes::from(vec![0u8; 4 << 20]);
    let calls = (0..16).map(|_| client.request(body.clone(), HESSIAN2, Duration::from_millis(500)));
    let results = bounded("stuck calls", LONG, join_all(calls)).await;
    let mut not_sent = 0;
    for r in &results {
        match r {
            Err(RemotingError::Timeout { sent: false, .. }) => not_sent += 1,
            Err(RemotingError::Timeout { sent: true, .. }) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(not_sent > 0, "some calls never left the client");
    let e = results.into_iter().find_map(Result::err).unwrap();
    assert!(e.is_timeout());
    holder.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_way_reaches_handler_and_gets_no_response() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let handler = handler_fn(move |req: Request, _c: ConnectionInfo| {
        let tx = tx.clone();
        async move {
            let two_way = req.two_way;
            let resp = Response::ok(req.id, req.serialization, req.body.clone());
            tx.send(req).unwrap();
            two_way.then_some(resp)
        }
    });
    let server = Server::bind("127.0.0.1:0", ServerConfig::default(), handler)
        .await
        .unwrap();
    let client = connect(&server).await;
    client
        .send_oneway(Bytes::from_static(b"one-way"), HESSIAN2)
        .await
        .unwrap();
    let got = bounded("one-way delivered", LONG, rx.recv()).await.unwrap();
    assert!(!got.two_way && !got.event);
    assert_eq!(&got.body[..], b"one-way");
    // a later two-way call gets its own response (nothing stray was queued)
    let resp = call(&client, "two-way").await.unwrap();
    assert_eq!(&resp.body[..], b"two-way");
    assert!(
        bounded("two-way delivered", LONG, rx.recv())
            .await
            .unwrap()
            .two_way
    );
}

async fn max_concurrency(dispatch: Dispatch, body: &str) -> usize {
    let (server, gauge) = start(ServerConfig::default().with_dispatch(dispatch)).await;
    let client = connect(&server).await;
    let calls = (0..5).map(|_| call(&client, body));
    for r in bounded("calls", LONG, join_all(calls)).await {
        assert_eq!(r.unwrap().status, Status::OK);
    }
    gauge.max.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispatch_direct_runs_one_at_a_time_all_runs_concurrently() {
    assert_eq!(max_concurrency(Dispatch::Direct, "sleep:100").await, 1);
    assert!(max_concurrency(Dispatch::All, "sleep:100").await >= 2);
}

/// A handler that holds its thread (computes) is polled on the connection's reader
/// once; after that, the connection's calls get tasks of their own and run side by side
/// on the runtime's two threads instead of one after another on the reader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispatch_all_runs_calls_that_compute_side_by_side() {
    assert!(max_concurrency(Dispatch::All, "block:300").await >= 2);
}

struct SyncPanic;

impl Handler for SyncPanic {
    fn handle(&self, req: Request, _c: &ConnectionInfo) -> BoxFuture<'static, Option<Response>> {
        if &req.body[..] == b"panic-now" {
            panic!("sync boom");
        }
        async move { Some(Response::ok(req.id, req.serialization, req.body)) }.boxed()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panicking_handler_answers_server_error_and_connection_survives() {
    let (server, _) = start(ServerConfig::default()).await;
    let client = connect(&server).await;
    let local = client.local_addr();
    let resp = call(&client, "panic").await.unwrap();
    assert_eq!(resp.status, Status::SERVER_ERROR);
    let text = String::from_utf8_lossy(&resp.body[2..]).into_owned();
    assert!(text.contains("boom in handler"), "{text}");
    assert_eq!(
        &call(&client, "still here").await.unwrap().body[..],
        b"still here"
    );
    assert_eq!(client.local_addr(), local);

    for dispatch in [Dispatch::All, Dispatch::Direct] {
        let server = Server::bind(
            "127.0.0.1:0",
            ServerConfig::default().with_dispatch(dispatch),
            SyncPanic,
        )
        .await
        .unwrap();
        let client = connect(&server).await;
        let resp = call(&client, "panic-now").await.unwrap();
        assert_eq!(resp.status, Status::SERVER_ERROR, "{dispatch:?}");
        assert_eq!(&call(&client, "ok").await.unwrap().body[..], b"ok");
        assert_eq!(server.connection_count(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_request_reaches_handler_broken_and_connection_stays() {
    let (server, _) = start(ServerConfig::default().with_payload(1024)).await;
    let client = connect(&server).await;
    let local = client.local_addr();
    let resp = client
        .request(Bytes::from(vec![7u8; 4096]), HESSIAN2, LONG)
        .await
        .unwrap();
    assert_eq!(resp.status, Status::BAD_REQUEST);
    assert_eq!(
        resp.body,
        hessian2_error_body(2, "Data length too large: 4096, max payload: 1024")
    );
    assert_eq!(&call(&client, "fine").await.unwrap().body[..], b"fine");
    assert_eq!(client.local_addr(), local);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_response_completes_with_client_error_and_stream_resyncs() {
    let (server, _) = start(ServerConfig::default()).await;
    let client = ExchangeClient::connect(
        &server.local_addr().to_string(),
        client_config().with_payload(1024),
    )
    .await
    .unwrap();
    let resp = call(&client, "big:100000").await.unwrap();
    assert_eq!(resp.status, Status::CLIENT_ERROR);
    assert_eq!(
        resp.body,
        hessian2_error_body(2, "Data length too large: 100000, max payload: 1024")
    );
    assert_eq!(&call(&client, "small").await.unwrap().body[..], b"small");
    // a request over the limit fails locally, nothing sent
    let err = client
        .request(Bytes::from(vec![0u8; 2000]), HESSIAN2, LONG)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            RemotingError::PayloadTooLarge {
                len: 2000,
                max: 1024
            }
        ),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_magic_closes_only_that_connection() {
    let (server, _) = start(ServerConfig::default()).await;
    let client = connect(&server).await;
    let mut raw = TcpStream::connect(server.local_addr()).await.unwrap();
    raw.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 64];
    let n = bounded("server closes bad connection", LONG, raw.read(&mut buf))
        .await
        .unwrap_or(0);
    assert_eq!(n, 0, "connection closed without a reply");
    assert_eq!(
        &call(&client, "unaffected").await.unwrap().body[..],
        b"unaffected"
    );
    wait_until("bad connection gone", LONG, || {
        server.connection_count() == 1
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_answers_heartbeat_and_swallows_one_way_heartbeat() {
    let (server, _) = start(ServerConfig::default()).await;
    let mut raw = TcpStream::connect(server.local_addr()).await.unwrap();
    // two-way heartbeat, id 7: the reference frame
    raw.write_all(&[
        0xda, 0xbb, 0xe2, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 1, 0x4e,
    ])
    .await
    .unwrap();
    let mut got = [0u8; 17];
    bounded("heartbeat reply", LONG, raw.read_exact(&mut got))
        .await
        .unwrap();
    assert_eq!(
        got,
        [
            0xda, 0xbb, 0x22, 0x14, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 1, 0x4e
        ]
    );
    // one-way heartbeat then a request: the first reply is the request's
    let mut oneway_hb = Request::heartbeat(8);
    oneway_hb.two_way = false;
    let mut out = frame_bytes(Frame::Request(oneway_hb));
    out.extend_from_slice(&frame_bytes(Frame::Request(Request::new(
        9,
        2,
        Bytes::from_static(b"ping"),
    ))));
    raw.write_all(&out).await.unwrap();
    let mut decoder = Decoder::new(0);
    let mut buf = BytesMut::new();
    let next = read_decoded(&mut raw, &mut decoder, &mut buf)
        .await
        .unwrap();
    let Decoded::Response(resp) = next else {
        panic!("{next:?}")
    };
    assert_eq!(
        (resp.id, resp.event, &resp.body[..]),
        (9, false, &b"ping"[..])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_shares_one_connection_or_hands_out_n() {
    let (server, _) = start(ServerConfig::default()).await;
    let addr = server.local_addr().to_string();
    let pool = ConnectionPool::new(client_config());
    let a = pool.get(&addr, 0).await.unwrap();
    let b = pool.get(&addr, 0).await.unwrap();
    assert_eq!(a.pick().local_addr(), b.pick().local_addr());
    assert_eq!(pool.shared_count(), 1);
    let own = pool.get(&addr, 3).await.unwrap();
    let locals: HashSet<_> = (0..3).map(|_| own.pick().local_addr().unwrap()).collect();
    assert_eq!(locals.len(), 3, "round-robin over 3 connections");
    for i in 0..6 {
        let r = own
            .request(Bytes::from(format!("{i}")), HESSIAN2, LONG)
            .await
            .unwrap();
        assert_eq!(r.body, Bytes::from(format!("{i}")));
    }
    wait_until("4 server connections", LONG, || {
        server.connection_count() == 4
    })
    .await;
    // last user of the shared connection drops it: it closes
    drop(a);
    assert_eq!(server.connection_count(), 4, "b still holds it");
    drop(b);
    wait_until("shared connection closed", LONG, || {
        server.connection_count() == 3
    })
    .await;
    assert_eq!(pool.shared_count(), 0);
    let c = pool.get(&addr, 0).await.unwrap();
    assert_eq!(
        &c.request(Bytes::from_static(b"x"), 2, LONG)
            .await
            .unwrap()
            .body[..],
        b"x"
    );
    drop(own);
    wait_until("exclusive connections closed", LONG, || {
        server.connection_count() == 1
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_max_in_flight_answers_threadpool_exhausted() {
    let (server, gauge) = start(ServerConfig::default().with_max_in_flight(2)).await;
    let client = connect(&server).await;
    let slow: Vec<_> = (0..2)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { call(&client, "sleep:300").await })
        })
        .collect();
    wait_until("2 calls in the handler", LONG, || {
        gauge.now.load(Ordering::SeqCst) == 2
    })
    .await;
    let resp = call(&client, "third").await.unwrap();
    assert_eq!(resp.status, Status::SERVER_THREADPOOL_EXHAUSTED_ERROR);
    assert!(String::from_utf8_lossy(&resp.body).contains("exhausted"));
    for r in join_all(slow).await {
        assert_eq!(r.unwrap().unwrap().status, Status::OK);
    }
    wait_until("in-flight drained", LONG, || server.in_flight() == 0).await;
    assert_eq!(call(&client, "later").await.unwrap().status, Status::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_avoids_a_readonly_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (served_tx, mut served_rx) = mpsc::unbounded_channel();
    let provider = tokio::spawn(async move {
        for n in 0..2usize {
            let (mut s, peer) = listener.accept().await.unwrap();
            let served_tx = served_tx.clone();
            tokio::spawn(async move {
                if n == 0 {
                    // the first connection is told the provider is read-only
                    s.write_all(&frame_bytes(Frame::Request(Request::readonly(1))))
                        .await
                        .unwrap();
                }
                let mut decoder = Decoder::new(0);
                let mut buf = BytesMut::new();
                while let Some(Decoded::Request(req)) =
                    read_decoded(&mut s, &mut decoder, &mut buf).await
                {
                    served_tx.send(peer).unwrap();
                    let resp = Response::ok(req.id, req.serialization, req.body);
                    s.write_all(&frame_bytes(Frame::Response(resp)))
                        .await
                        .unwrap();
                }
            });
        }
    });
    let clients = Clients::connect(&addr, 2, client_config()).await.unwrap();
    bounded("provider accepted both", LONG, provider)
        .await
        .unwrap();
    wait_until("one connection readonly", LONG, || {
        clients
            .clients()
            .iter()
            .filter(|c| c.is_available())
            .count()
            == 1
    })
    .await;
    let available = clients.clients().iter().find(|c| c.is_available()).unwrap();
    let readonly = clients
        .clients()
        .iter()
        .find(|c| !c.is_available())
        .unwrap();
    assert!(readonly.is_connected());
    let err = readonly
        .request(Bytes::from_static(b"x"), HESSIAN2, LONG)
        .await
        .unwrap_err();
    assert!(matches!(err, RemotingError::ReadOnly { .. }), "{err:?}");
    for i in 0..6 {
        let body = Bytes::from(format!("{i}"));
        assert_eq!(
            clients
                .request(body.clone(), HESSIAN2, LONG)
                .await
                .unwrap()
                .body,
            body
        );
        let peer = served_rx.recv().await.unwrap();
        assert_eq!(
            Some(peer),
            available.local_addr(),
            "call {i} went to the writable connection"
        );
    }
}
