//! A Triple provider's bound on calls running at once (`threads`, `queues`), over
//! real sockets on 127.0.0.1: a call over it gets `RESOURCE_EXHAUSTED` at once (a
//! limit a consumer's failover retries), the calls inside it finish, and the provider
//! keeps serving.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rubbo_common::{
    Arguments, BoxInvoker, ErrorKind, Exporter, Invocation, InvokeFuture, Invoker, Payload,
    Protocol, RpcError, RpcResult, Url,
};
use rubbo_protocol_triple::TripleProtocol;
use tokio::sync::watch;

const IFACE: &str = "org.rubbo.test.Gate";
const LONG: Duration = Duration::from_secs(10);

/// `hold()` waits until the gate opens; `name()` answers at once.
#[derive(Debug)]
struct Gate {
    url: Url,
    open: watch::Receiver<bool>,
    calls: Arc<AtomicUsize>,
}

impl Invoker for Gate {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut open = self.open.clone();
        Box::pin(async move {
            if inv.method() == "hold" {
                let _ = open.wait_for(|o| *o).await;
            }
            Ok(RpcResult::value(Payload::typed("done".to_owned())))
        })
    }

    fn url(&self) -> &Url {
        &self.url
    }
}

fn call(method: &str) -> Invocation {
    Invocation::new(IFACE, method).with_arguments(Arguments::typed(0, ()))
}

/// A provider of [`Gate`] exported with `provider_query`, a consumer referring it
/// with `consumer_query`, and `n` `hold()` calls in flight that reached the provider.
struct Held {
    port: u16,
    client: BoxInvoker,
    open: watch::Sender<bool>,
    calls: Arc<AtomicUsize>,
    held: Vec<Call>,
    _exporter: Box<dyn Exporter>,
    _protocol: TripleProtocol,
}

/// A call under way.
type Call = tokio::task::JoinHandle<Result<RpcResult, RpcError>>;

async fn hold(provider_query: &str, consumer_query: &str, n: usize) -> Held {
    let protocol = TripleProtocol::new();
    let url = Url::parse(&format!("tri://127.0.0.1:0/{IFACE}?{provider_query}")).unwrap();
    let (open, rx) = watch::channel(false);
    let calls = Arc::new(AtomicUsize::new(0));
    let exporter = protocol
        .export(Arc::new(Gate {
            url,
            open: rx,
            calls: calls.clone(),
        }))
        .await
        .unwrap();
    let port = protocol.server_addrs()[0].port();
    let client = TripleProtocol::new()
        .refer(Url::parse(&format!("tri://127.0.0.1:{port}/{IFACE}?{consumer_query}")).unwrap())
        .await
        .unwrap();
    let held = (0..n)
        .map(|_| tokio::spawn(client.invoke(call("hold"))))
        .collect();
    let deadline = Instant::now() + LONG;
    while calls.load(Ordering::SeqCst) < n {
        assert!(Instant::now() < deadline, "the held calls never arrived");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Held {
        port,
        client,
        open,
        calls,
        held,
        _exporter: exporter,
        _protocol: protocol,
    }
}

/// Every call of `calls` answers, within [`LONG`].
async fn all_answer(calls: Vec<Call>) {
    for h in calls {
        assert!(
            tokio::time::timeout(LONG, h)
                .await
                .unwrap()
                .unwrap()
                .is_ok()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_over_threads_gets_resource_exhausted_and_the_held_ones_finish() {
    let h = hold("side=provider&threads=2", "timeout=10000", 2).await;
    let e = h.client.invoke(call("name")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LimitExceeded, "{e}");
    assert!(e.is_retryable());
    assert!(
        e.message().contains(&format!(
            "Server side(127.0.0.1,{}) thread pool is exhausted",
            h.port
        )),
        "{e}"
    );
    assert_eq!(
        h.calls.load(Ordering::SeqCst),
        2,
        "the refused call never ran"
    );
    h.open.send_replace(true);
    all_answer(h.held).await;
    assert!(h.client.invoke(call("name")).await.is_ok(), "serves again");
}

/// The consumer's own bound (`max.pending` on the reference URL, as the dubbo
/// protocol has it): with that many calls in flight on the connection, the next one
/// is refused at once, without reaching the provider, as a retryable limit (a
/// cluster's failover takes it elsewhere); once the calls drain, the connection takes
/// calls again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_over_max_pending_is_refused_at_once_as_a_retryable_limit() {
    const MAX: usize = 2;
    let h = hold(
        "side=provider",
        &format!("timeout=10000&max.pending={MAX}"),
        MAX,
    )
    .await;
    // Refused at once: well inside the 10 s call timeout.
    let started = Instant::now();
    let e = h.client.invoke(call("name")).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(e.kind(), ErrorKind::LimitExceeded, "{e}");
    assert!(e.is_retryable());
    assert!(e.message().contains("max.pending is 2"), "{e}");
    assert_eq!(
        h.calls.load(Ordering::SeqCst),
        MAX,
        "the refused call never reached the provider"
    );
    h.open.send_replace(true);
    all_answer(h.held).await;
    // Drained: the connection takes calls again, up to the bound at once.
    all_answer(
        (0..MAX)
            .map(|_| tokio::spawn(h.client.invoke(call("name"))))
            .collect(),
    )
    .await;
}
