//! Fault-tolerance strategies over real sockets on 127.0.0.1: three providers
//! registered in a `memory://` registry, one of which is crashed (its sockets drop,
//! nothing is unregistered), answers slowly, or fails; each strategy must behave as
//! Java Dubbo's does.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rubbo::{ErrorKind, RpcError, Rubbo};
use rubbo_common::ExtensionTable;
use rubbo_registry::RegistryFactory;

/// A provider with a behaviour.
#[rubbo::service(interface = "org.rubbo.test.Node", version = "1.0.0")]
pub trait Node {
    /// `String id()`: answers the provider's name.
    async fn id(&self) -> Result<String, RpcError>;
}

#[derive(Clone)]
struct Behaviour {
    name: String,
    delay: Duration,
    fail: bool,
    calls: Arc<AtomicUsize>,
}

impl Node for Behaviour {
    async fn id(&self) -> Result<String, RpcError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(self.delay).await;
        if self.fail {
            return Err(RpcError::network(format!("{} is failing", self.name)));
        }
        Ok(self.name.clone())
    }
}

type Factories = Arc<ExtensionTable<dyn RegistryFactory>>;

struct Fleet {
    providers: Vec<Rubbo>,
    calls: Vec<Arc<AtomicUsize>>,
    factories: Factories,
}

/// Three providers `p0..p2`; `tweak` adjusts each one's behaviour.
async fn fleet(registry: &str, tweak: impl Fn(usize, &mut Behaviour)) -> Fleet {
    let factories: Factories = Arc::new(rubbo::registry_factories());
    let mut providers = Vec::new();
    let mut calls = Vec::new();
    for i in 0..3 {
        let mut b = Behaviour {
            name: format!("p{i}"),
            delay: Duration::ZERO,
            fail: false,
            calls: Arc::default(),
        };
        tweak(i, &mut b);
        calls.push(b.calls.clone());
        let p = Rubbo::builder()
            .application(format!("node-{i}"))
            .registry(registry)
            .port(0)
            .registry_factories(factories.clone())
            .build()
            .unwrap();
        p.export(NodeServer::new(Arc::new(b))).await.unwrap();
        providers.push(p);
    }
    Fleet {
        providers,
        calls,
        factories,
    }
}

async fn client(f: &Fleet, registry: &str, params: &[(&str, &str)]) -> (Rubbo, NodeClient) {
    let mut b = Rubbo::builder()
        .application("node-consumer")
        .registry(registry)
        .registry_factories(f.factories.clone())
        .param("timeout", "1000");
    for (k, v) in params {
        b = b.param(*k, *v);
    }
    let c = b.build().unwrap();
    let client = NodeClient::new(c.refer(&NodeClient::SERVICE).await.unwrap());
    (c, client)
}

#[tokio::test]
async fn failover_retries_on_another_provider_when_one_crashed() {
    let reg = "memory://127.0.0.1/failover";
    let f = fleet(reg, |_, _| {}).await;
    let (_c, node) = client(&f, reg, &[("loadbalance", "roundrobin")]).await;
    f.providers[0].abort();
    for _ in 0..60 {
        let id = node
            .id()
            .await
            .expect("failover hides the crashed provider");
        assert_ne!(id, "p0");
    }
}

#[tokio::test]
async fn failover_retries_timeouts_elsewhere_but_answers_provider_errors_once() {
    let reg = "memory://127.0.0.1/failover-timeouts";
    // p0 answers only after the test; the consumer waits 1 s, then tries another
    // provider (a timeout far from the others' answer times, even on a loaded machine).
    let f = fleet(reg, |i, b| {
        if i == 0 {
            b.delay = Duration::from_secs(60);
        }
    })
    .await;
    let (_c, node) = client(
        &f,
        reg,
        &[
            ("loadbalance", "roundrobin"),
            ("timeout", "1000"),
            ("retries", "2"),
        ],
    )
    .await;
    for _ in 0..6 {
        let id = node
            .id()
            .await
            .expect("a timeout is retried on another provider");
        assert_ne!(id, "p0");
    }
    assert!(
        f.calls[0].load(Ordering::SeqCst) >= 1,
        "the slow provider was tried"
    );

    // An error raised by the service itself comes back as that provider's answer: the
    // call is not repeated on the others.
    let reg = "memory://127.0.0.1/failover-errors";
    let f = fleet(reg, |_, b| b.fail = true).await;
    let (_c, node) = client(&f, reg, &[("retries", "2")]).await;
    let err = node.id().await.unwrap_err();
    assert!(err.message().contains("is failing"), "{err}");
    let total: usize = f.calls.iter().map(|c| c.load(Ordering::SeqCst)).sum();
    assert_eq!(total, 1, "answered once, not retried: {err}");
}

#[tokio::test]
async fn failfast_fails_at_once_on_a_crashed_provider() {
    let reg = "memory://127.0.0.1/failfast";
    // p1 keeps its calls until the test is over: the crash finds one inside.
    let f = fleet(reg, |i, b| {
        if i == 1 {
            b.delay = Duration::from_secs(60);
        }
    })
    .await;
    // A timeout far longer than the test: a failure that comes back is the crash's,
    // not the timeout's.
    let (_c, node) = client(
        &f,
        reg,
        &[
            ("cluster", "failfast"),
            ("loadbalance", "roundrobin"),
            ("timeout", "60000"),
        ],
    )
    .await;
    // Round robin: of three calls at once, one is held in p1.
    let calls = futures::future::join_all((0..3).map(|_| node.id()));
    tokio::pin!(calls);
    let until = Instant::now() + Duration::from_secs(20);
    while f.calls[1].load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < until, "no call reached p1");
        tokio::select! {
            _ = &mut calls => panic!("the call held in p1 answered"),
            () = tokio::time::sleep(Duration::from_millis(5)) => {}
        }
    }
    f.providers[1].abort();
    let results = tokio::time::timeout(Duration::from_secs(20), calls)
        .await
        .expect("the held call fails at once, without waiting for its timeout");
    let failed: Vec<&RpcError> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(
        failed.len(),
        1,
        "only the call inside p1 fails: {results:?}"
    );
    assert_eq!(failed[0].kind(), ErrorKind::Network, "{}", failed[0]);
    // Failfast does not retry it, and the dead provider is out of selection once its
    // connection is seen down: the calls after it all succeed elsewhere.
    let retried: usize = [0, 2]
        .iter()
        .map(|i| f.calls[*i].load(Ordering::SeqCst))
        .sum();
    assert_eq!(retried, 2, "the failed call was not retried");
    for _ in 0..30 {
        let id = node.id().await.expect("p0 and p2 answer");
        assert_ne!(id, "p1");
    }
}

#[tokio::test]
async fn failsafe_swallows_errors_and_returns_null() {
    let reg = "memory://127.0.0.1/failsafe";
    let f = fleet(reg, |_, b| b.fail = true).await;
    let c = Rubbo::builder()
        .application("failsafe-consumer")
        .registry(reg)
        .registry_factories(f.factories.clone())
        .param("cluster", "failsafe")
        .build()
        .unwrap();
    let invoker = c.refer(&NodeClient::SERVICE).await.unwrap();
    let inv = rubbo::Invocation::new("org.rubbo.test.Node", "id")
        .with_version("1.0.0")
        .with_parameter_types("");
    for p in &f.providers {
        p.abort();
    }
    let r = invoker.invoke(inv).await.expect("failsafe never errors");
    assert!(matches!(r.payload(), Some(rubbo::Payload::Null)));
}

#[tokio::test]
async fn forking_answers_with_the_fastest_provider() {
    let reg = "memory://127.0.0.1/forking";
    // p0 and p1 answer only after the test: the one answer that can come is p2's.
    let f = fleet(reg, |i, b| {
        if i != 2 {
            b.delay = Duration::from_secs(60);
        }
    })
    .await;
    let (_c, node) = client(
        &f,
        reg,
        &[
            ("cluster", "forking"),
            ("forks", "3"),
            ("timeout", "120000"),
        ],
    )
    .await;
    let id = tokio::time::timeout(Duration::from_secs(30), node.id())
        .await
        .expect("forking answers with the first reply, not the last");
    assert_eq!(id.unwrap(), "p2");
    // Every provider got the call (the slow ones may see it after p2 answered).
    let until = Instant::now() + Duration::from_secs(20);
    while f.calls.iter().any(|c| c.load(Ordering::SeqCst) == 0) {
        assert!(
            Instant::now() < until,
            "a provider never got the forked call"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for c in &f.calls {
        assert_eq!(c.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test]
async fn broadcast_calls_every_provider_and_fails_if_one_fails() {
    let reg = "memory://127.0.0.1/broadcast";
    let f = fleet(reg, |_, _| {}).await;
    let (_c, node) = client(&f, reg, &[("cluster", "broadcast")]).await;
    node.id().await.unwrap();
    for c in &f.calls {
        assert_eq!(c.load(Ordering::SeqCst), 1, "every provider is called once");
    }
    f.providers[0].abort();
    let err = node.id().await.unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Network | ErrorKind::Timeout | ErrorKind::NoProvider
        ),
        "{err}"
    );
}

#[tokio::test]
async fn available_uses_the_first_available_provider() {
    let reg = "memory://127.0.0.1/available";
    let f = fleet(reg, |_, _| {}).await;
    let (_c, node) = client(&f, reg, &[("cluster", "available")]).await;
    let mut seen = HashSet::new();
    for _ in 0..10 {
        seen.insert(node.id().await.unwrap());
    }
    assert_eq!(
        seen.len(),
        1,
        "always the same first available provider: {seen:?}"
    );
}
