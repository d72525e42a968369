//! Streaming `#[rubbo::service]` methods in Triple's wrapper mode (Java's
//! `StreamObserver`), Rust client and Rust server on 127.0.0.1: the consumer's stream
//! checks, the StreamService's and the IDL Greeter's (every shape, 1,000 messages in
//! order, errors mid-stream, the half-close alone), the provider URL's
//! `stream-methods`, cancellation (the client drops its replies), backpressure (a
//! provider writing to a slow reader waits, bounded), and the dubbo protocol's
//! refusal.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use interop::checks::Report;
use interop::{StreamService, StreamServiceClient, serve_on};
use rubbo::stream::{Outbound, Sender, Streaming, channel};
use rubbo::{Arguments, ErrorKind, Invocation, RpcError, Rubbo, Url};
use tokio::sync::oneshot;

/// Every wait of these tests ends well within this.
const BOUND: Duration = Duration::from_secs(20);

/// A service to watch the provider's side of its streams.
#[rubbo::service(interface = "org.rubbo.test.Probe")]
trait Probe {
    /// `n` blobs of 256 KiB (blob `i` filled with `i as u8`), written through a channel.
    async fn blobs(&self, n: i32) -> Result<Outbound<Vec<u8>>, RpcError>;
    /// Answers `"ready"`, then nothing until the call is gone; reports that it saw
    /// the cancellation.
    async fn hold(&self, words: Streaming<String>) -> Result<Outbound<String>, RpcError>;
}

#[derive(Default)]
struct ProbeImpl {
    /// How many blob sends completed.
    sent: Arc<AtomicUsize>,
    /// Whether a blob send found the stream full (`is_ready` false).
    saw_full: Arc<AtomicUsize>,
    /// Fires when `hold`'s sender sees the call gone.
    cancelled: Mutex<Option<oneshot::Sender<()>>>,
    /// Fires when `hold`'s request stream ends with an error (the client went away).
    requests_failed: Mutex<Option<oneshot::Sender<()>>>,
}

impl Probe for ProbeImpl {
    async fn blobs(&self, n: i32) -> Result<Outbound<Vec<u8>>, RpcError> {
        let (tx, out): (Sender<Vec<u8>>, _) = channel(2);
        let sent = self.sent.clone();
        let saw_full = self.saw_full.clone();
        tokio::spawn(async move {
            for i in 0..n {
                if !tx.is_ready() {
                    saw_full.fetch_add(1, Ordering::SeqCst);
                }
                if tx.send(vec![i as u8; 256 * 1024]).await.is_err() {
                    return;
                }
                sent.fetch_add(1, Ordering::SeqCst);
            }
        });
        Ok(out)
    }

    async fn hold(&self, mut words: Streaming<String>) -> Result<Outbound<String>, RpcError> {
        let (tx, out) = channel(1);
        let cancelled = self.cancelled.lock().unwrap().take();
        let requests_failed = self.requests_failed.lock().unwrap().take();
        tokio::spawn(async move {
            let watch = async {
                let _ = tx.send("ready".to_owned()).await;
                tx.closed().await;
                if let Some(c) = cancelled {
                    let _ = c.send(());
                }
            };
            let read = async {
                while let Some(w) = words.next().await {
                    if w.is_err() {
                        if let Some(f) = requests_failed {
                            let _ = f.send(());
                        }
                        return;
                    }
                }
            };
            tokio::join!(watch, read);
        });
        Ok(out)
    }
}

async fn probe_server(probe: Arc<ProbeImpl>) -> (Rubbo, Url) {
    let rubbo = Rubbo::builder()
        .application("probe-provider")
        .host("127.0.0.1")
        .protocol("tri", 0)
        .build()
        .unwrap();
    let url = rubbo.export(ProbeServer::new(probe)).await.unwrap();
    (rubbo, url)
}

async fn client<C>(
    service: &'static rubbo::codegen::ServiceDescriptor,
    url: &str,
    make: impl FnOnce(rubbo::BoxInvoker) -> C,
) -> (Rubbo, C) {
    // The timeout covers a whole stream: long enough for a reader that waits.
    let c = Rubbo::builder()
        .application("streams-test")
        .param("timeout", "60000")
        .build()
        .unwrap();
    let invoker = c.refer_url(service, url).await.unwrap();
    (c, make(invoker))
}

#[tokio::test]
async fn the_consumer_stream_checks_pass_against_the_rust_provider() {
    let p = serve_on("tri", "interop-provider", "127.0.0.1", 0, &[])
        .await
        .unwrap();
    let (_c, streams) = client(
        &StreamServiceClient::SERVICE,
        &format!("tri://127.0.0.1:{}", p.addr.port()),
        StreamServiceClient::new,
    )
    .await;
    let mut r = Report::default();
    tokio::time::timeout(
        Duration::from_secs(120),
        interop::checks::stream_service(&streams, &mut r),
    )
    .await
    .unwrap();
    assert_eq!(
        r,
        Report {
            passed: 8,
            failed: 0
        }
    );
}

#[tokio::test]
async fn the_consumer_greeter_stream_checks_pass_against_the_rust_provider() {
    let p = serve_on("tri", "interop-provider", "127.0.0.1", 0, &[])
        .await
        .unwrap();
    let (_c, greeter) = client(
        &interop::greeter::proto::GreeterClient::SERVICE,
        &format!("tri://127.0.0.1:{}", p.addr.port()),
        interop::greeter::proto::GreeterClient::new,
    )
    .await;
    let mut r = Report::default();
    tokio::time::timeout(
        Duration::from_secs(120),
        interop::checks::greeter_streams(&greeter, &mut r),
    )
    .await
    .unwrap();
    assert_eq!(
        r,
        Report {
            passed: 9,
            failed: 0
        }
    );
}

#[test]
fn stream_methods_have_java_descriptors_and_are_advertised() {
    let m = StreamServiceClient::METHODS;
    assert_eq!(m[0].name, "users");
    assert_eq!(
        m[0].parameter_types,
        "ILorg/apache/dubbo/common/stream/StreamObserver;"
    );
    assert_eq!(m[0].stream, Some(rubbo::stream::StreamKind::Server));
    assert_eq!(
        m[1].parameter_types,
        "Lorg/apache/dubbo/common/stream/StreamObserver;"
    );
    assert_eq!(m[1].stream, Some(rubbo::stream::StreamKind::Client));
    assert_eq!(m[2].stream, Some(rubbo::stream::StreamKind::Bidi));
    assert_eq!(
        StreamServiceClient::SERVICE.stream_methods(),
        "users:server,join:client,echo:bidi"
    );
    assert_eq!(StreamServiceClient::SERVICE.idl_methods(), "");
}

#[tokio::test]
async fn the_provider_url_advertises_the_stream_methods() {
    let probe = Arc::new(ProbeImpl::default());
    let (_s, url) = probe_server(probe).await;
    assert_eq!(
        url.get_param("stream-methods"),
        Some("blobs:server,hold:bidi")
    );
}

#[tokio::test]
async fn a_provider_writing_to_a_slow_reader_waits_and_every_message_arrives_in_order() {
    let probe = Arc::new(ProbeImpl::default());
    let (_s, url) = probe_server(probe.clone()).await;
    let (_c, c) = client(
        &ProbeClient::SERVICE,
        &format!("tri://127.0.0.1:{}", url.port()),
        ProbeClient::new,
    )
    .await;
    let n = 200; // 50 MiB, far more than the HTTP/2 windows (8 MiB) and the channel
    let mut blobs = tokio::time::timeout(BOUND, c.blobs(n))
        .await
        .unwrap()
        .unwrap();
    // Read nothing: the provider's sends stop once the windows and the channel are full.
    let deadline = tokio::time::Instant::now() + BOUND;
    let mut last = usize::MAX;
    let mut stable = 0;
    while stable < 50 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the sends never settled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
        let now = probe.sent.load(Ordering::SeqCst);
        stable = if now == last { stable + 1 } else { 0 };
        last = now;
    }
    let stalled = probe.sent.load(Ordering::SeqCst);
    assert!(
        stalled < 80,
        "{stalled} of {n} blobs were sent to a reader that read none: no backpressure"
    );
    assert!(
        probe.saw_full.load(Ordering::SeqCst) > 0,
        "the sender was never full"
    );
    // Now read: everything arrives, once, in order.
    let mut i = 0;
    while let Some(b) = tokio::time::timeout(BOUND, blobs.next()).await.unwrap() {
        let b = b.unwrap();
        assert_eq!(b.len(), 256 * 1024);
        assert!(b.iter().all(|x| *x == i as u8), "blob {i} is blob {i}");
        i += 1;
    }
    assert_eq!(i, n);
    assert_eq!(probe.sent.load(Ordering::SeqCst), n as usize);
}

#[tokio::test]
async fn dropping_the_reply_stream_cancels_the_call_on_the_provider() {
    let probe = Arc::new(ProbeImpl::default());
    let (cancelled, seen) = oneshot::channel();
    let (failed, seen_failed) = oneshot::channel();
    *probe.cancelled.lock().unwrap() = Some(cancelled);
    *probe.requests_failed.lock().unwrap() = Some(failed);
    let (_s, url) = probe_server(probe).await;
    let (_c, c) = client(
        &ProbeClient::SERVICE,
        &format!("tri://127.0.0.1:{}", url.port()),
        ProbeClient::new,
    )
    .await;
    let (tx, requests) = channel::<String>(1);
    let replies = tokio::time::timeout(BOUND, c.hold(requests.into()))
        .await
        .unwrap()
        .unwrap();
    let mut replies = replies;
    tx.send("x".into()).await.unwrap();
    let first = tokio::time::timeout(BOUND, replies.next()).await.unwrap();
    assert_eq!(first.unwrap().unwrap(), "ready");
    drop(replies);
    // The provider's reply sender sees the call gone, and its request stream fails
    // (the stream was reset) instead of waiting for more.
    tokio::time::timeout(BOUND, seen).await.unwrap().unwrap();
    tokio::time::timeout(BOUND, seen_failed)
        .await
        .unwrap()
        .unwrap();
    // And the client's request sender sees it too.
    tokio::time::timeout(BOUND, tx.closed()).await.unwrap();
}

#[tokio::test]
async fn a_provider_failing_mid_stream_reaches_the_client_after_the_earlier_messages() {
    let p = serve_on("tri", "interop-provider", "127.0.0.1", 0, &[])
        .await
        .unwrap();
    let (_c, streams) = client(
        &StreamServiceClient::SERVICE,
        &format!("tri://127.0.0.1:{}", p.addr.port()),
        StreamServiceClient::new,
    )
    .await;
    let mut users = tokio::time::timeout(BOUND, streams.users(-3))
        .await
        .unwrap()
        .unwrap();
    for id in 0..3 {
        assert_eq!(users.next().await.unwrap().unwrap().id, id);
    }
    let status = users.next().await.unwrap().unwrap_err();
    assert_eq!(status.code(), rubbo::Code::InvalidArgument);
    assert_eq!(status.message(), "bad name");
    assert!(users.next().await.is_none(), "nothing after the error");
}

#[tokio::test]
async fn a_stream_method_over_dubbo_is_refused_both_ways() {
    // Consumer side: a stream cannot be sent over dubbo.
    let p = serve_on("dubbo", "interop-provider", "127.0.0.1", 0, &[])
        .await
        .unwrap();
    let (_c, streams) = client(
        &StreamServiceClient::SERVICE,
        &format!("dubbo://127.0.0.1:{}", p.addr.port()),
        StreamServiceClient::new,
    )
    .await;
    let err = tokio::time::timeout(
        BOUND,
        streams.echo(Outbound::from_messages([Some("a".to_owned())]).into()),
    )
    .await
    .unwrap()
    .unwrap_err();
    assert!(
        err.to_string().contains("no streaming calls (use tri)"),
        "{err}"
    );
    // Provider side: a dubbo request (plain arguments) for a stream method.
    let server = ProbeServer::new(Arc::new(ProbeImpl::default())).into_invoker(Url::new(
        "dubbo",
        "127.0.0.1",
        0,
    ));
    let inv = Invocation::new("org.rubbo.test.Probe", "blobs")
        .with_parameter_types("ILorg/apache/dubbo/common/stream/StreamObserver;")
        .with_arguments(Arguments::Values(vec![
            rubbo::Value::Int(1),
            rubbo::Value::Null,
        ]));
    let err = server.invoke(inv).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    assert!(err.message().contains("Triple (tri://) only"), "{err}");
}
