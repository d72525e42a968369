//! Dubbo protocol behaviour seen through generated stubs on real sockets: one-way
//! calls, graceful unexport finishing calls in flight, and a readonly provider.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rubbo::{DubboProtocol, Protocol, RpcError, Url};

/// A service with a slow method and a fire-and-forget one.
#[rubbo::service(interface = "org.rubbo.test.Jobs", version = "1.0.0")]
pub trait Jobs {
    /// `String work(int millis)`.
    async fn work(&self, millis: i32) -> Result<String, RpcError>;
    /// `void notify(String event)`: called one-way.
    async fn notify(&self, event: String) -> Result<(), RpcError>;
}

#[derive(Default)]
struct Impl {
    notified: AtomicUsize,
    started: AtomicUsize,
}

impl Jobs for Arc<Impl> {
    async fn work(&self, millis: i32) -> Result<String, RpcError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(millis as u64)).await;
        Ok("worked".into())
    }
    async fn notify(&self, _event: String) -> Result<(), RpcError> {
        self.notified.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

async fn export(shutdown_ms: u64) -> (DubboProtocol, Box<dyn rubbo::Exporter>, Arc<Impl>, u16) {
    let protocol = DubboProtocol::new();
    let state = Arc::new(Impl::default());
    let url = Url::parse(&format!(
        "dubbo://127.0.0.1:0/org.rubbo.test.Jobs?version=1.0.0&shutdown.timeout={shutdown_ms}"
    ))
    .unwrap();
    let exporter = protocol
        .export(JobsServer::new(Arc::new(state.clone())).into_invoker(url))
        .await
        .unwrap();
    let port = exporter.url().port();
    (protocol, exporter, state, port)
}

async fn client(port: u16, extra: &str) -> JobsClient {
    let url = Url::parse(&format!(
        "dubbo://127.0.0.1:{port}/org.rubbo.test.Jobs?version=1.0.0&timeout=3000{extra}"
    ))
    .unwrap();
    JobsClient::new(DubboProtocol::new().refer(url).await.unwrap())
}

#[tokio::test]
async fn one_way_calls_return_at_once_and_reach_the_provider() {
    let (_p, _e, state, port) = export(1000).await;
    let jobs = client(port, "&notify.return=false").await;
    let t0 = Instant::now();
    for i in 0..50 {
        jobs.notify(format!("e{i}")).await.unwrap();
    }
    assert!(t0.elapsed() < Duration::from_secs(2));
    let deadline = Instant::now() + Duration::from_secs(5);
    while state.notified.load(Ordering::SeqCst) < 50 {
        assert!(
            Instant::now() < deadline,
            "one-way calls lost: {}",
            state.notified.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn graceful_unexport_finishes_calls_in_flight_then_refuses_new_ones() {
    let (_p, exporter, state, port) = export(3000).await;
    let jobs = client(port, "").await;
    let in_flight = tokio::spawn({
        let jobs = jobs.clone();
        async move { jobs.work(400).await }
    });
    // Unexport once the call has reached the provider.
    let deadline = Instant::now() + Duration::from_secs(5);
    while state.started.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "the call never reached the provider"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let t0 = Instant::now();
    exporter.unexport().await;
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "shutdown waits only for calls in flight"
    );
    assert_eq!(
        in_flight.await.unwrap().unwrap(),
        "worked",
        "the call in flight finishes"
    );
    let err = jobs.work(1).await.unwrap_err();
    assert!(matches!(err.kind(), rubbo::ErrorKind::Network), "{err}");
}
