//! A provider's bound on calls running at once (`threads`, `queues`), over real
//! sockets on 127.0.0.1: a call over it is answered at once with status 100 and
//! Java's text, the calls inside it finish, the provider keeps serving, and a
//! consumer's failover takes the refused call to another provider. Also the
//! consumer's bound on pending calls per connection (`max.pending`).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rubbo_cluster::{ClusterContext, Rand};
use rubbo_common::{
    Arguments, ErrorKind, Exporter, Invocation, InvokeFuture, Invoker, Payload, Protocol, RpcError,
    RpcResult, Url,
};
use rubbo_protocol_dubbo::DubboProtocol;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

const IFACE: &str = "org.rubbo.test.Gate";
const LONG: Duration = Duration::from_secs(10);

/// `hold()` waits until the gate opens; `name()` answers at once.
#[derive(Debug)]
struct Gate {
    url: Url,
    name: &'static str,
    open: watch::Receiver<bool>,
    /// Calls that reached the service.
    calls: Arc<AtomicUsize>,
}

impl Invoker for Gate {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut open = self.open.clone();
        let name = self.name;
        Box::pin(async move {
            if inv.method() == "hold" {
                let _ = open.wait_for(|o| *o).await;
            }
            Ok(RpcResult::value(Payload::typed(name.to_owned())))
        })
    }

    fn url(&self) -> &Url {
        &self.url
    }
}

struct Provider {
    _exporter: Box<dyn Exporter>,
    port: u16,
    calls: Arc<AtomicUsize>,
    open: watch::Sender<bool>,
}

async fn provider(name: &'static str, extra: &str) -> Provider {
    let protocol = DubboProtocol::new();
    let url = Url::parse(&format!("dubbo://127.0.0.1:0/{IFACE}?side=provider{extra}")).unwrap();
    let (open, rx) = watch::channel(false);
    let calls = Arc::new(AtomicUsize::new(0));
    let exporter = protocol
        .export(Arc::new(Gate {
            url,
            name,
            open: rx,
            calls: calls.clone(),
        }))
        .await
        .unwrap();
    let port = protocol.server_addr("127.0.0.1:0").unwrap().port();
    Provider {
        _exporter: exporter,
        port,
        calls,
        open,
    }
}

/// Counts the calls sent through `inner`.
#[derive(Debug)]
struct Counted {
    inner: rubbo_common::BoxInvoker,
    calls: Arc<AtomicUsize>,
}

impl Invoker for Counted {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.invoke(inv)
    }

    fn url(&self) -> &Url {
        self.inner.url()
    }
}

fn consumer_url(port: u16, extra: &str) -> Url {
    Url::parse(&format!(
        "dubbo://127.0.0.1:{port}/{IFACE}?application=c&timeout=10000{extra}"
    ))
    .unwrap()
}

fn call(method: &str) -> Invocation {
    Invocation::new(IFACE, method).with_arguments(Arguments::typed(0, ()))
}

/// Waits (bounded) until `calls` reads `n`.
async fn wait_calls(calls: &AtomicUsize, n: usize) {
    let deadline = Instant::now() + LONG;
    while calls.load(Ordering::SeqCst) < n {
        assert!(Instant::now() < deadline, "calls never reached the service");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_over_threads_get_status_100_at_once_and_the_rest_finish() {
    const N: usize = 4;
    const K: usize = 3;
    let p = provider("p", &format!("&threads={N}")).await;
    let client = DubboProtocol::new()
        .refer(consumer_url(p.port, ""))
        .await
        .unwrap();
    let held: Vec<_> = (0..N)
        .map(|_| tokio::spawn(client.invoke(call("hold"))))
        .collect();
    wait_calls(&p.calls, N).await;
    // The pool is full: K more are refused without reaching the service, and at
    // once (well before the 10 s timeout, while the N are still held).
    let started = Instant::now();
    let refused = futures::future::join_all((0..K).map(|_| client.invoke(call("name")))).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    for r in refused {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::LimitExceeded, "{e}");
        assert!(e.is_retryable());
        let text = e.message();
        assert!(
            text.starts_with("status 100 SERVER_THREADPOOL_EXHAUSTED_ERROR: "),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "Server side(127.0.0.1,{}) thread pool is exhausted, detail msg:Thread pool is EXHAUSTED! Thread Name: DubboServerHandler-127.0.0.1:{}, Pool Size: {N} (active: {N}, core: {N}, max: {N},",
                p.port, p.port
            )),
            "{text}"
        );
        assert!(
            text.ends_with(&format!("in dubbo://127.0.0.1:{}!", p.port)),
            "{text}"
        );
    }
    assert_eq!(p.calls.load(Ordering::SeqCst), N, "refused calls never ran");
    p.open.send_replace(true);
    for h in held {
        let r = tokio::time::timeout(LONG, h)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(r.payload().unwrap().decode::<String>().unwrap(), "p");
    }
    // Free again: the provider serves as before.
    for _ in 0..N + K {
        assert!(client.invoke(call("name")).await.is_ok());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_calls_wait_for_a_slot_instead_of_being_refused() {
    let p = provider("p", "&threads=1&queues=1").await;
    let client = DubboProtocol::new()
        .refer(consumer_url(p.port, ""))
        .await
        .unwrap();
    let held = tokio::spawn(client.invoke(call("hold")));
    wait_calls(&p.calls, 1).await;
    // The first poll puts the queued call's frame on the connection, ahead of the
    // third call's: the provider reads them in that order.
    let mut queued = Box::pin(client.invoke(call("name")));
    assert!(futures::poll!(queued.as_mut()).is_pending());
    let refused = client.invoke(call("name")).await.unwrap_err();
    let queued = tokio::spawn(queued);
    tokio::task::yield_now().await;
    assert_eq!(refused.kind(), ErrorKind::LimitExceeded, "{refused}");
    assert!(
        !queued.is_finished(),
        "the queued call waits for the held one"
    );
    p.open.send_replace(true);
    let r = tokio::time::timeout(LONG, queued).await.unwrap().unwrap();
    assert!(r.is_ok(), "{r:?}");
    assert!(
        tokio::time::timeout(LONG, held)
            .await
            .unwrap()
            .unwrap()
            .is_ok()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_pool_has_no_bound_by_default() {
    let p = provider("p", "&threadpool=cached").await;
    let client = DubboProtocol::new()
        .refer(consumer_url(p.port, ""))
        .await
        .unwrap();
    // More than Java's 200 held at once: none refused.
    let held: Vec<_> = (0..250)
        .map(|_| tokio::spawn(client.invoke(call("hold"))))
        .collect();
    wait_calls(&p.calls, 250).await;
    p.open.send_replace(true);
    for h in held {
        assert!(
            tokio::time::timeout(LONG, h)
                .await
                .unwrap()
                .unwrap()
                .is_ok()
        );
    }
}

#[tokio::test]
async fn an_unknown_threadpool_fails_the_export() {
    let protocol = DubboProtocol::new();
    let (_open, rx) = watch::channel(false);
    let url = Url::parse(&format!(
        "dubbo://127.0.0.1:0/{IFACE}?side=provider&threadpool=elastic"
    ))
    .unwrap();
    let err = protocol
        .export(Arc::new(Gate {
            url,
            name: "p",
            open: rx,
            calls: Arc::default(),
        }))
        .await
        .err()
        .unwrap();
    assert!(
        err.message().contains("unknown threadpool \"elastic\""),
        "{err}"
    );
}

/// The response frame a Java consumer reads: status byte 100, the request's id and a
/// Hessian 2 string body (what `DefaultFuture` turns into a `RemotingException` with
/// that text).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_100_frame_is_javas() {
    let p = provider("p", "&threads=1").await;
    let client = DubboProtocol::new()
        .refer(consumer_url(p.port, ""))
        .await
        .unwrap();
    let held = tokio::spawn(client.invoke(call("hold")));
    wait_calls(&p.calls, 1).await;
    let mut s = TcpStream::connect(("127.0.0.1", p.port)).await.unwrap();
    // A two-way hessian2 request, id 7; the body is not read before the refusal.
    let body = b"N";
    let mut frame = vec![0xda, 0xbb, 0xc2, 0x00];
    frame.extend_from_slice(&7i64.to_be_bytes());
    frame.extend_from_slice(&(body.len() as i32).to_be_bytes());
    frame.extend_from_slice(body);
    s.write_all(&frame).await.unwrap();
    let mut header = [0u8; 16];
    tokio::time::timeout(LONG, s.read_exact(&mut header))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        &header[..4],
        &[0xda, 0xbb, 0x02, 100],
        "response, hessian2, status 100"
    );
    assert_eq!(i64::from_be_bytes(header[4..12].try_into().unwrap()), 7);
    let len = i32::from_be_bytes(header[12..16].try_into().unwrap()) as usize;
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await.unwrap();
    let text: String = rubbo_hessian2::from_slice(&body).unwrap();
    assert!(
        text.starts_with(&format!(
            "Server side(127.0.0.1,{}) thread pool is exhausted, detail msg:Thread pool is EXHAUSTED!",
            p.port
        )),
        "{text}"
    );
    p.open.send_replace(true);
    assert!(
        tokio::time::timeout(LONG, held)
            .await
            .unwrap()
            .unwrap()
            .is_ok()
    );
}

/// Java's `FailoverClusterInvoker` retries any non-business `RpcException`, and
/// status 100 is one: a call refused by a full provider is answered by another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_takes_a_refused_call_to_another_provider() {
    let full = provider("full", "&threads=1").await;
    let free = provider("free", "").await;
    let protocol = DubboProtocol::new();
    let to_full = protocol.refer(consumer_url(full.port, "")).await.unwrap();
    let tried_full = Arc::new(AtomicUsize::new(0));
    let invokers: Vec<rubbo_common::BoxInvoker> = vec![
        Arc::new(Counted {
            inner: to_full.clone(),
            calls: tried_full.clone(),
        }),
        protocol.refer(consumer_url(free.port, "")).await.unwrap(),
    ];
    let consumer = consumer_url(full.port, "&cluster=failover&retries=2");
    let ctx = ClusterContext::with_rand(Rand::seeded(7));
    let cluster = ctx.join(ctx.static_directory(consumer, invokers)).unwrap();
    let held = tokio::spawn(to_full.invoke(call("hold")));
    wait_calls(&full.calls, 1).await;
    for _ in 0..20 {
        let r = cluster.invoke(call("name")).await.unwrap();
        assert_eq!(r.payload().unwrap().decode::<String>().unwrap(), "free");
    }
    assert_eq!(free.calls.load(Ordering::SeqCst), 20);
    assert!(
        tried_full.load(Ordering::SeqCst) > 0,
        "some calls were sent to the full provider first, and refused"
    );
    assert_eq!(
        full.calls.load(Ordering::SeqCst),
        1,
        "the full provider ran none"
    );
    full.open.send_replace(true);
    assert!(
        tokio::time::timeout(LONG, held)
            .await
            .unwrap()
            .unwrap()
            .is_ok()
    );
}

/// The consumer's own bound (`max.pending` on the reference URL): a call over it is
/// refused at once without reaching the provider, as a retryable limit, so failover
/// takes it to another provider.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_over_max_pending_fails_at_once_and_failover_takes_it_elsewhere() {
    const MAX: usize = 2;
    let busy = provider("busy", "").await;
    let free = provider("free", "").await;
    let protocol = DubboProtocol::new();
    let to_busy = protocol
        .refer(consumer_url(busy.port, &format!("&max.pending={MAX}")))
        .await
        .unwrap();
    let held: Vec<_> = (0..MAX)
        .map(|_| tokio::spawn(to_busy.invoke(call("hold"))))
        .collect();
    wait_calls(&busy.calls, MAX).await;

    // Refused at once: well inside the 10 s call timeout.
    let started = Instant::now();
    let e = to_busy.invoke(call("name")).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(e.kind(), ErrorKind::LimitExceeded, "{e}");
    assert!(e.is_retryable());
    assert!(e.message().contains("max.pending is 2"), "{e}");

    let tried_busy = Arc::new(AtomicUsize::new(0));
    let invokers: Vec<rubbo_common::BoxInvoker> = vec![
        Arc::new(Counted {
            inner: to_busy.clone(),
            calls: tried_busy.clone(),
        }),
        protocol.refer(consumer_url(free.port, "")).await.unwrap(),
    ];
    let consumer = consumer_url(busy.port, "&cluster=failover&retries=2");
    let ctx = ClusterContext::with_rand(Rand::seeded(7));
    let cluster = ctx.join(ctx.static_directory(consumer, invokers)).unwrap();
    for _ in 0..20 {
        let r = cluster.invoke(call("name")).await.unwrap();
        assert_eq!(r.payload().unwrap().decode::<String>().unwrap(), "free");
    }
    assert!(
        tried_busy.load(Ordering::SeqCst) > 0,
        "some calls went to the busy provider's connection first, and were refused"
    );
    assert_eq!(
        busy.calls.load(Ordering::SeqCst),
        MAX,
        "no refused call reached the busy provider"
    );
    busy.open.send_replace(true);
    for h in held {
        assert!(
            tokio::time::timeout(LONG, h)
                .await
                .unwrap()
                .unwrap()
                .is_ok()
        );
    }
    // Drained: the connection takes calls again.
    for _ in 0..MAX + 1 {
        assert!(to_busy.invoke(call("name")).await.is_ok());
    }
}

/// The refused calls are counted, and the error reads as a limit to code that
/// only looks at the kind.
#[test]
fn status_100_is_a_limit_a_cluster_may_retry() {
    let e: RpcError = rubbo_protocol_dubbo::status::error_for_status(
        rubbo_remoting::Status::SERVER_THREADPOOL_EXHAUSTED_ERROR,
        "Server side(1.2.3.4,20880) thread pool is exhausted".to_owned(),
    );
    assert_eq!(e.kind(), ErrorKind::LimitExceeded);
    assert!(e.is_retryable());
}

/// The bound counts calls running, not calls that arrive together: a burst of quick
/// calls far over 200 on one connection is answered in full, as a Java provider's
/// 200 threads answer it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_quick_calls_over_the_default_bound_is_answered_in_full() {
    let p = provider("p", "").await;
    let client = DubboProtocol::new()
        .refer(consumer_url(p.port, ""))
        .await
        .unwrap();
    let calls = (0..2000).map(|_| client.invoke(call("name")));
    let results = tokio::time::timeout(Duration::from_secs(60), futures::future::join_all(calls))
        .await
        .unwrap();
    let refused = results.iter().filter(|r| r.is_err()).count();
    assert_eq!(refused, 0, "{:?}", results.iter().find(|r| r.is_err()));
}

/// Resident memory of this process, from `/proc/self/status` (Linux), in KiB.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Ten times the bound at once, in waves: every call is answered (held calls with
/// their value, the rest with status 100), memory stays flat, and the provider serves
/// normally afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_times_the_bound_is_answered_in_full_with_flat_memory() {
    const N: usize = 50;
    let p = provider("p", &format!("&threads={N}")).await;
    let client = DubboProtocol::new()
        .refer(consumer_url(p.port, ""))
        .await
        .unwrap();
    let held: Vec<_> = (0..N)
        .map(|_| tokio::spawn(client.invoke(call("hold"))))
        .collect();
    wait_calls(&p.calls, N).await;
    let before = rss_kib();
    for _ in 0..10 {
        let wave = (0..9 * N).map(|_| client.invoke(call("name")));
        let answers = tokio::time::timeout(LONG, futures::future::join_all(wave))
            .await
            .unwrap();
        for a in answers {
            assert_eq!(a.unwrap_err().kind(), ErrorKind::LimitExceeded);
        }
    }
    if let (Some(before), Some(after)) = (before, rss_kib()) {
        // 4,500 refusals under 64 MiB (other tests of this binary share the process):
        // a leak of 15 KiB or more each would show.
        assert!(
            after.saturating_sub(before) < 64 * 1024,
            "RSS grew from {before} KiB to {after} KiB"
        );
    }
    assert_eq!(p.calls.load(Ordering::SeqCst), N, "no refused call ran");
    p.open.send_replace(true);
    for h in held {
        assert!(
            tokio::time::timeout(LONG, h)
                .await
                .unwrap()
                .unwrap()
                .is_ok()
        );
    }
    for _ in 0..N {
        assert!(client.invoke(call("name")).await.is_ok());
    }
}
