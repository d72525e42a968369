//! Triple streaming over real sockets on 127.0.0.1: backpressure both ways (a slow
//! reader slows the writer, memory stays bounded, every byte arrives once and in
//! order), cancellation both ways, errors mid-stream, and a deadline over a stream.
//!
//! The backpressure tests move 64 MiB by default; `RUBBO_STREAM_BYTES=1073741824`
//! moves 1 GiB (run it in release: `cargo test -p rubbo-protocol-triple --release
//! --test streaming -- --nocapture`). Each prints its peak RSS growth.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use futures::StreamExt;
use rubbo_common::stream::{MessageStream, StreamKind, StreamSlot, channel};
use rubbo_common::{
    Arguments, BoxInvoker, Encoded, ErrorKind, Invocation, InvokeFuture, Invoker, Payload,
    Protocol, RpcError, RpcResult, Url,
};
use rubbo_protocol_triple::{Code, Status, TripleProtocol, status};
use rubbo_serialization::PROTOBUF;

const SERVICE: &str = "test.Streams";
const MESSAGE: usize = 64 * 1024;
const LIMIT: Duration = Duration::from_secs(120);
/// The bound on one step of a short test (a call, a reply): a regression fails the
/// test instead of hanging it for the call's long timeout.
const STEP: Duration = Duration::from_secs(10);

/// `fut`, failing the test when it takes longer than `STEP`.
async fn bounded<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(STEP, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {STEP:?}"))
}

/// What the provider saw, for the tests to assert.
#[derive(Debug, Default)]
struct Seen {
    /// Sends of the provider's writer that found the stream full.
    waits: AtomicU64,
    /// The provider's writer saw the consumer go away.
    cancelled: AtomicBool,
    /// The provider's request stream ended with an error (the consumer reset it).
    request_failed: AtomicBool,
}

#[derive(Debug)]
struct Provider {
    url: Url,
    seen: Arc<Seen>,
}

/// A message: its sequence number, then bytes derived from it.
fn message(seq: u64) -> Bytes {
    let mut b = BytesMut::with_capacity(MESSAGE);
    b.put_u64(seq);
    while b.len() < MESSAGE {
        b.put_u8((seq as u8).wrapping_add(b.len() as u8));
    }
    b.freeze()
}

/// Checks that `m` is message number `seq`, whole.
fn check(m: &[u8], seq: u64) {
    assert_eq!(m.len(), MESSAGE, "message {seq}: length");
    assert_eq!(
        u64::from_be_bytes(m[..8].try_into().unwrap()),
        seq,
        "out of order"
    );
    let ok = m[8..]
        .iter()
        .enumerate()
        .all(|(i, &b)| b == (seq as u8).wrapping_add((i + 8) as u8));
    assert!(ok, "message {seq}: corrupted");
}

fn count_messages() -> u64 {
    let bytes: u64 = std::env::var("RUBBO_STREAM_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64 << 20);
    bytes / MESSAGE as u64
}

fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// Samples RSS until dropped; `peak()` is the largest growth over the start.
struct RssWatch {
    start: u64,
    peak: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl RssWatch {
    fn start() -> Self {
        let start = rss();
        let peak = Arc::new(AtomicU64::new(start));
        let p = peak.clone();
        let task = tokio::spawn(async move {
            loop {
                p.fetch_max(rss(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        RssWatch { start, peak, task }
    }

    fn growth(&self) -> u64 {
        self.peak
            .load(Ordering::Relaxed)
            .max(rss())
            .saturating_sub(self.start)
    }
}

impl Drop for RssWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn protobuf(bytes: Bytes) -> Payload {
    Payload::Encoded(Encoded::new(&PROTOBUF, bytes))
}

/// The one request message of a server-streaming call.
async fn first(inv: &Invocation) -> Result<Bytes, RpcError> {
    let mut s = inv.arguments().as_stream().unwrap().take()?;
    s.next()
        .await
        .unwrap_or_else(|| Err(RpcError::serialization("no request")))
}

impl Invoker for Provider {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let seen = self.seen.clone();
        Box::pin(async move {
            match inv.method() {
                // Client streaming: reads slowly, checks every message, answers the count.
                "Upload" => {
                    let mut s = inv.arguments().as_stream().unwrap().take()?;
                    let mut seq = 0u64;
                    while let Some(m) = s.next().await {
                        check(&m?, seq);
                        seq += 1;
                        if seq % 16 == 0 {
                            tokio::time::sleep(Duration::from_millis(1)).await;
                        }
                    }
                    Ok(RpcResult::value(protobuf(Bytes::copy_from_slice(
                        &seq.to_be_bytes(),
                    ))))
                }
                // Server streaming: writes as many messages as asked, counting the
                // sends that had to wait.
                "Download" => {
                    let req = first(&inv).await?;
                    let n = u64::from_be_bytes(req[..8].try_into().unwrap());
                    let (tx, rx) = channel(4);
                    tokio::spawn(async move {
                        for seq in 0..n {
                            if !tx.is_ready() {
                                seen.waits.fetch_add(1, Ordering::Relaxed);
                            }
                            if tx.send(message(seq)).await.is_err() {
                                return;
                            }
                        }
                    });
                    Ok(RpcResult::value(Payload::Stream(StreamSlot::new(
                        StreamKind::Server,
                        rx,
                    ))))
                }
                // Bidi: one reply, then waits to see the consumer go away.
                "Hold" => {
                    let mut requests = inv.arguments().as_stream().unwrap().take()?;
                    let (tx, rx) = channel(1);
                    let writer_seen = seen.clone();
                    tokio::spawn(async move {
                        let _ = tx.send(message(0)).await;
                        let closed = tokio::time::timeout(LIMIT, tx.closed()).await;
                        writer_seen
                            .cancelled
                            .store(closed.is_ok(), Ordering::SeqCst);
                    });
                    tokio::spawn(async move {
                        while let Some(r) = requests.next().await {
                            if r.is_err() {
                                seen.request_failed.store(true, Ordering::SeqCst);
                                return;
                            }
                        }
                    });
                    Ok(RpcResult::value(Payload::Stream(StreamSlot::new(
                        StreamKind::Bidi,
                        rx,
                    ))))
                }
                // Bidi: two replies, then the status the request asks for.
                "Fail" => {
                    let req = first(&inv).await?;
                    let code = Code::from_i32(i32::from(req[0]));
                    let (tx, rx) = channel(4);
                    tokio::spawn(async move {
                        for seq in 0..2 {
                            let _ = tx.send(message(seq)).await;
                        }
                        tx.fail(Status::new(code, "failed mid-stream: 100% ☺").into())
                            .await;
                    });
                    Ok(RpcResult::value(Payload::Stream(StreamSlot::new(
                        StreamKind::Server,
                        rx,
                    ))))
                }
                // Bidi: echoes each request.
                "Echo" => {
                    let requests = inv.arguments().as_stream().unwrap().take()?;
                    Ok(RpcResult::value(Payload::Stream(StreamSlot::new(
                        StreamKind::Bidi,
                        MessageStream::new(requests),
                    ))))
                }
                other => Err(RpcError::method_not_found(other.to_owned())),
            }
        })
    }

    fn url(&self) -> &Url {
        &self.url
    }
}

async fn setup(consumer_params: &str) -> (TripleProtocol, BoxInvoker, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let url = Url::parse(&format!(
        "tri://127.0.0.1:0/{SERVICE}?interface={SERVICE}&methods=Upload,Download,Hold,Fail,Echo\
         &idl-methods=Upload,Download,Hold,Fail,Echo\
         &stream-methods=Upload:client,Download:server,Hold:bidi,Fail:server,Echo:bidi"
    ))
    .unwrap();
    let protocol = TripleProtocol::new();
    let provider: BoxInvoker = Arc::new(Provider {
        url,
        seen: seen.clone(),
    });
    let exporter = protocol.export(provider).await.unwrap();
    std::mem::forget(exporter);
    let port = protocol.server_addrs()[0].port();
    let consumer = protocol
        .refer(
            Url::parse(&format!(
                "tri://127.0.0.1:{port}/{SERVICE}?interface={SERVICE}&{consumer_params}"
            ))
            .unwrap(),
        )
        .await
        .unwrap();
    (protocol, consumer, seen)
}

fn call(method: &str, kind: StreamKind, requests: MessageStream) -> Invocation {
    Invocation::new(SERVICE, method)
        .with_arguments(Arguments::Stream(StreamSlot::new(kind, requests)))
}

fn replies(result: RpcResult) -> MessageStream {
    match result.into_payload().unwrap() {
        Payload::Stream(s) => s.take().unwrap(),
        other => panic!("not a stream: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_provider_slows_the_client_stream_and_memory_stays_bounded() {
    let (_p, consumer, _) = setup("timeout=600000").await;
    let n = count_messages();
    let watch = RssWatch::start();
    let started = Instant::now();
    let (tx, requests) = channel(4);
    let waits = Arc::new(AtomicU64::new(0));
    let w = waits.clone();
    let writer = tokio::spawn(async move {
        for seq in 0..n {
            if !tx.is_ready() {
                w.fetch_add(1, Ordering::Relaxed);
            }
            tx.send(message(seq)).await.unwrap();
        }
    });
    let result = tokio::time::timeout(
        LIMIT,
        consumer.invoke(call("Upload", StreamKind::Client, requests)),
    )
    .await
    .expect("the upload finishes")
    .unwrap();
    writer.await.unwrap();
    let count = match result.payload() {
        Some(Payload::Encoded(e)) => u64::from_be_bytes(e.bytes[..8].try_into().unwrap()),
        other => panic!("reply {other:?}"),
    };
    let growth = watch.growth();
    println!(
        "client stream: {} MiB in {:?}, writer waited {} times, peak RSS growth {:.1} MiB",
        (n * MESSAGE as u64) >> 20,
        started.elapsed(),
        waits.load(Ordering::Relaxed),
        growth as f64 / (1 << 20) as f64
    );
    assert_eq!(count, n, "every message arrived once");
    assert!(
        waits.load(Ordering::Relaxed) > 0,
        "the writer never had to wait"
    );
    assert!(growth < 64 << 20, "RSS grew by {growth} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_consumer_slows_the_server_stream_and_memory_stays_bounded() {
    let (_p, consumer, seen) = setup("timeout=600000").await;
    let n = count_messages();
    let watch = RssWatch::start();
    let started = Instant::now();
    let request = MessageStream::once(Bytes::copy_from_slice(&n.to_be_bytes()));
    let result = consumer
        .invoke(call("Download", StreamKind::Server, request))
        .await
        .unwrap();
    let mut s = replies(result);
    let mut seq = 0u64;
    let read = async {
        while let Some(m) = s.next().await {
            check(&m.unwrap(), seq);
            seq += 1;
            if seq % 16 == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    };
    tokio::time::timeout(LIMIT, read)
        .await
        .expect("the download finishes");
    let growth = watch.growth();
    println!(
        "server stream: {} MiB in {:?}, provider's writer waited {} times, peak RSS growth {:.1} MiB",
        (n * MESSAGE as u64) >> 20,
        started.elapsed(),
        seen.waits.load(Ordering::Relaxed),
        growth as f64 / (1 << 20) as f64
    );
    assert_eq!(seq, n, "every message arrived once, in order");
    assert!(seen.waits.load(Ordering::Relaxed) > 0);
    assert!(growth < 64 << 20, "RSS grew by {growth} bytes");
}

/// Polls `cond` until it holds, at most `STEP`.
async fn eventually(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < STEP, "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn dropping_the_reply_stream_cancels_the_call_on_the_provider() {
    let (_p, consumer, seen) = setup("timeout=600000").await;
    // The requests never end: only the reset can end the call.
    let (tx, requests) = channel(1);
    let result = bounded(
        "the call",
        consumer.invoke(call("Hold", StreamKind::Bidi, requests)),
    )
    .await
    .unwrap();
    let mut s = replies(result);
    check(
        &bounded("the first reply", s.next()).await.unwrap().unwrap(),
        0,
    );
    drop(s);
    eventually("the provider's sender sees the cancellation", || {
        seen.cancelled.load(Ordering::SeqCst)
    })
    .await;
    eventually("the provider's request stream fails", || {
        seen.request_failed.load(Ordering::SeqCst)
    })
    .await;
    drop(tx);
}

#[tokio::test]
async fn an_error_mid_stream_arrives_after_the_messages_before_it() {
    let (_p, consumer, _) = setup("timeout=600000").await;
    let code = Code::ResourceExhausted.as_i32() as u8;
    let result = bounded(
        "the call",
        consumer.invoke(call(
            "Fail",
            StreamKind::Server,
            MessageStream::once(Bytes::copy_from_slice(&[code])),
        )),
    )
    .await
    .unwrap();
    let got: Vec<_> = bounded("the replies", replies(result).collect()).await;
    assert_eq!(got.len(), 3);
    check(got[0].as_ref().unwrap(), 0);
    check(got[1].as_ref().unwrap(), 1);
    let e = got[2].as_ref().unwrap_err();
    assert_eq!(status::code_for_error(e), Code::ResourceExhausted);
    assert_eq!(status::message_for_error(e), "failed mid-stream: 100% ☺");
}

#[tokio::test]
async fn a_bidi_stream_echoes_and_half_close_ends_it() {
    let (_p, consumer, _) = setup("timeout=600000").await;
    let (tx, requests) = channel(1);
    let result = bounded(
        "the call",
        consumer.invoke(call("Echo", StreamKind::Bidi, requests)),
    )
    .await
    .unwrap();
    let mut s = replies(result);
    for seq in 0..3 {
        bounded("a send", tx.send(message(seq))).await.unwrap();
        check(&bounded("a reply", s.next()).await.unwrap().unwrap(), seq);
    }
    drop(tx);
    assert!(
        bounded("the end", s.next()).await.is_none(),
        "the half-close ends the replies"
    );
}

#[tokio::test]
async fn the_deadline_covers_the_whole_stream() {
    let (_p, consumer, _) = setup("timeout=300").await;
    let (tx, requests) = channel(1);
    let started = Instant::now();
    let result = consumer
        .invoke(call("Echo", StreamKind::Bidi, requests))
        .await
        .unwrap();
    let mut s = replies(result);
    tx.send(message(0)).await.unwrap();
    check(&s.next().await.unwrap().unwrap(), 0);
    // Nothing more is sent: the stream outlives its deadline.
    let e = tokio::time::timeout(Duration::from_secs(10), s.next())
        .await
        .expect("the deadline ends the stream")
        .unwrap()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(started.elapsed() >= Duration::from_millis(290));
    bounded("the deadline resets the request stream", tx.closed()).await;
}
