//! The bootstrap end to end on real sockets: providers register in a `memory://`
//! registry, a consumer discovers them through the registry protocol, calls spread
//! over them, and a stopped provider disappears from the consumer's list.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rubbo::{ErrorKind, RpcError, Rubbo};

/// A provider that says who it is.
#[rubbo::service(interface = "org.rubbo.test.Who", version = "1.0.0")]
pub trait Who {
    /// `String who()`.
    async fn who(&self) -> Result<String, RpcError>;
}

struct Named(String);

impl Who for Named {
    async fn who(&self) -> Result<String, RpcError> {
        Ok(self.0.clone())
    }
}

fn app(
    name: &str,
    factories: &Arc<rubbo_common::ExtensionTable<dyn rubbo_registry::RegistryFactory>>,
) -> rubbo::RubboBuilder {
    Rubbo::builder()
        .application(name)
        .registry("memory://local")
        .port(0)
        .registry_factories(factories.clone())
}

#[tokio::test]
async fn providers_register_consumer_discovers_and_follows_a_stopped_provider() {
    let factories = Arc::new(rubbo::registry_factories());
    let mut providers = Vec::new();
    for i in 0..3 {
        let p = app(&format!("who-{i}"), &factories).build().unwrap();
        let url = p
            .export(WhoServer::new(Arc::new(Named(format!("p{i}")))))
            .await
            .unwrap();
        assert_ne!(url.port(), 0, "the registered URL carries the bound port");
        providers.push(p);
    }
    let consumer = app("who-consumer", &factories)
        .param("loadbalance", "roundrobin")
        .build()
        .unwrap();
    let client = WhoClient::new(consumer.refer(&WhoClient::SERVICE).await.unwrap());

    let mut seen = HashSet::new();
    for _ in 0..30 {
        seen.insert(client.who().await.unwrap());
    }
    assert_eq!(
        seen.len(),
        3,
        "round robin reaches every provider: {seen:?}"
    );

    // Stop p0: it unregisters first, so the consumer drops it without failed calls.
    providers.remove(0).shutdown().await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut now = HashSet::new();
        for _ in 0..10 {
            now.insert(
                client
                    .who()
                    .await
                    .expect("no call fails while a provider leaves"),
            );
        }
        if !now.contains("p0") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "p0 still called after it unregistered"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for p in providers {
        p.shutdown().await;
    }
    consumer.shutdown().await;
}

#[tokio::test]
async fn a_reference_with_no_provider_fails_clearly_unless_check_is_false() {
    let factories = Arc::new(rubbo::registry_factories());
    let consumer = app("lonely", &factories)
        .param("check.timeout", "200")
        .build()
        .unwrap();
    let err = consumer.refer(&WhoClient::SERVICE).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoProvider, "{err}");

    let lenient = app("lenient", &factories)
        .param("check", "false")
        .param("check.timeout", "100")
        .build()
        .unwrap();
    let client = WhoClient::new(lenient.refer(&WhoClient::SERVICE).await.unwrap());
    let err = client.who().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoProvider, "{err}");
    // A provider appears later: the same client reaches it.
    let p = app("late", &factories).build().unwrap();
    p.export(WhoServer::new(Arc::new(Named("late".into()))))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match client.who().await {
            Ok(w) => {
                assert_eq!(w, "late");
                break;
            }
            Err(e) if Instant::now() < deadline => {
                assert_eq!(e.kind(), ErrorKind::NoProvider, "{e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("late provider never reached: {e}"),
        }
    }
    p.shutdown().await;
}

#[tokio::test]
async fn direct_urls_bypass_registries() {
    let p = Rubbo::builder()
        .application("direct")
        .port(0)
        .build()
        .unwrap();
    let url = p
        .export(WhoServer::new(Arc::new(Named("d".into()))))
        .await
        .unwrap();
    let c = Rubbo::builder()
        .application("direct-consumer")
        .build()
        .unwrap();
    let client = WhoClient::new(
        c.refer_url(&WhoClient::SERVICE, &format!("dubbo://{}", url.address()))
            .await
            .unwrap(),
    );
    assert_eq!(client.who().await.unwrap(), "d");
    assert_eq!(
        c.refer(&WhoClient::SERVICE).await.unwrap_err().kind(),
        ErrorKind::Unknown
    );
    p.shutdown().await;
}

#[tokio::test]
async fn routing_rules_published_in_the_registry_apply_and_can_be_withdrawn() {
    let factories = Arc::new(rubbo::registry_factories());
    let mut ports = Vec::new();
    let mut providers = Vec::new();
    for i in 0..2 {
        let p = app(&format!("routed-{i}"), &factories).build().unwrap();
        let url = p
            .export(WhoServer::new(Arc::new(Named(format!("p{i}")))))
            .await
            .unwrap();
        ports.push(url.port());
        providers.push(p);
    }
    let consumer = app("routed-consumer", &factories)
        .param("loadbalance", "roundrobin")
        .build()
        .unwrap();
    let client = WhoClient::new(consumer.refer(&WhoClient::SERVICE).await.unwrap());

    // A Dubbo 2 style rule, as an operator would publish it: never call p0's port.
    let registry = rubbo_registry::get_registry(
        &factories,
        &rubbo_common::Url::parse("memory://local").unwrap(),
    )
    .await
    .unwrap();
    let rule = rubbo_common::Url::parse(
        "route://0.0.0.0/org.rubbo.test.Who?category=routers&dynamic=false&version=1.0.0",
    )
    .unwrap()
    .with_param_encoded("rule", &format!("=> port != {}", ports[0]));
    registry.register(rule.clone()).await.unwrap();
    let avoided = async {
        loop {
            let mut seen = HashSet::new();
            for _ in 0..6 {
                seen.insert(client.who().await.unwrap());
            }
            if seen == HashSet::from(["p1".to_owned()]) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), avoided)
        .await
        .expect("the rule takes effect");

    registry.unregister(rule).await.unwrap();
    let restored = async {
        loop {
            let mut seen = HashSet::new();
            for _ in 0..6 {
                seen.insert(client.who().await.unwrap());
            }
            if seen.len() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), restored)
        .await
        .expect("withdrawing the rule restores p0");
    for p in providers {
        p.shutdown().await;
    }
}

/// A provider whose answer takes a while.
#[rubbo::service(interface = "org.rubbo.test.Sleepy", version = "1.0.0")]
pub trait Sleepy {
    /// `String nap(int millis)`.
    async fn nap(&self, millis: i32) -> Result<String, RpcError>;
}

struct Napper;

impl Sleepy for Napper {
    async fn nap(&self, millis: i32) -> Result<String, RpcError> {
        tokio::time::sleep(Duration::from_millis(millis as u64)).await;
        Ok("rested".into())
    }
}

#[tokio::test]
async fn override_rules_from_the_registry_beat_both_sides_and_can_be_withdrawn() {
    let factories = Arc::new(rubbo::registry_factories());
    let p = app("sleepy", &factories).build().unwrap();
    p.export(SleepyServer::new(Arc::new(Napper))).await.unwrap();
    let consumer = app("sleepy-consumer", &factories)
        .param("timeout", "150")
        .param("retries", "0")
        .build()
        .unwrap();
    let client = SleepyClient::new(consumer.refer(&SleepyClient::SERVICE).await.unwrap());
    assert_eq!(
        client.nap(400).await.unwrap_err().kind(),
        ErrorKind::Timeout,
        "consumer timeout 150 ms"
    );

    // An operator raises the timeout for everyone calling the service.
    let registry = rubbo_registry::get_registry(
        &factories,
        &rubbo_common::Url::parse("memory://local").unwrap(),
    )
    .await
    .unwrap();
    let rule = rubbo_common::Url::parse(
        "override://0.0.0.0/org.rubbo.test.Sleepy?category=configurators&dynamic=false&enabled=true&timeout=3000&version=1.0.0",
    )
    .unwrap();
    registry.register(rule.clone()).await.unwrap();
    let raised = async {
        loop {
            if let Ok(r) = client.nap(400).await {
                assert_eq!(r, "rested");
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), raised)
        .await
        .expect("the override takes effect");

    registry.unregister(rule).await.unwrap();
    let restored = async {
        loop {
            if let Err(e) = client.nap(400).await {
                assert_eq!(e.kind(), ErrorKind::Timeout);
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), restored)
        .await
        .expect("withdrawing the override restores 150 ms");
    p.shutdown().await;
    consumer.shutdown().await;
}
