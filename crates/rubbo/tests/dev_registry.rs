//! The development registry across "processes": a server on 127.0.0.1, providers and
//! consumers that reach it as `dubbo://127.0.0.1:<port>`, leases for dead providers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rubbo::dev_registry::{DevRegistryServer, DevRegistryService, DevRegistryServiceClient};
use rubbo::{DubboProtocol, Protocol, RpcError, Rubbo, Url};

/// A provider that says who it is.
#[rubbo::service(interface = "org.rubbo.test.Hello", version = "1.0.0")]
pub trait Hello {
    /// `String who()`.
    async fn who(&self) -> Result<String, RpcError>;
}

struct Named(String);

impl Hello for Named {
    async fn who(&self) -> Result<String, RpcError> {
        Ok(self.0.clone())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn providers_and_consumers_meet_through_the_dev_registry_and_dead_leases_expire() {
    let registry = DevRegistryServer::serve("127.0.0.1", 0).await.unwrap();
    let address = format!("{}?lease=600", registry.address());

    let provider = Rubbo::builder()
        .application("hello-provider")
        .registry(address.as_str())
        .port(0)
        .build()
        .unwrap();
    let url = provider
        .export(HelloServer::new(Arc::new(Named("alive".into()))))
        .await
        .unwrap();

    // A provider process that registered and then died: its lease is never renewed.
    let raw = DevRegistryServiceClient::new(
        DubboProtocol::new()
            .refer(
                Url::parse(&format!(
                    "{}/org.rubbo.registry.DevRegistryService?version=1.0.0",
                    registry.address()
                ))
                .unwrap(),
            )
            .await
            .unwrap(),
    );
    let ghost = url.with_port(1).with_param("application", "ghost");
    raw.register(ghost.to_full_string(), 600).await.unwrap();

    let consumer = Rubbo::builder()
        .application("hello-consumer")
        .registry(address.as_str())
        .param("loadbalance", "roundrobin")
        .build()
        .unwrap();
    let invoker = consumer.refer(&HelloClient::SERVICE).await.unwrap();
    let hello = HelloClient::new(invoker);
    assert_eq!(hello.who().await.unwrap(), "alive");

    // The ghost's lease runs out and the registry forgets it; the live provider renews.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let lookup = raw
            .watch(
                Url::parse("consumer://127.0.0.1/org.rubbo.test.Hello?interface=org.rubbo.test.Hello&version=1.0.0&category=providers")
                    .unwrap()
                    .to_full_string(),
                -1,
                0,
            )
            .await
            .unwrap();
        let apps: Vec<bool> = lookup
            .urls
            .iter()
            .map(|u| u.contains("application=ghost"))
            .collect();
        if apps == vec![false] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "ghost never expired: {:?}",
            lookup.urls
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The live provider is still registered long after its first lease.
    for _ in 0..5 {
        assert_eq!(hello.who().await.unwrap(), "alive");
    }

    // A clean shutdown unregisters at once.
    provider.shutdown().await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match hello.who().await {
            Err(e) if e.kind() == rubbo::ErrorKind::NoProvider => break,
            other => assert!(
                Instant::now() < deadline,
                "still reachable after shutdown: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    consumer.shutdown().await;
    registry.shutdown().await;
}
