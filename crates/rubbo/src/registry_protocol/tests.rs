use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rubbo_cluster::ClusterContext;
use rubbo_common::keys;
use rubbo_common::{BoxFuture, ExtensionTable, Invoker, Protocol, Url};
use rubbo_registry::{
    MemoryRegistry, Registry, RegistryFactory, RegistryResult, SharedListener, SharedRegistry,
};

use super::RegistryProtocol;

/// A memory registry that counts live subscriptions.
#[derive(Debug)]
struct Counting {
    inner: MemoryRegistry,
    subscriptions: AtomicUsize,
}

impl Counting {
    fn subscriptions(&self) -> usize {
        self.subscriptions.load(Ordering::SeqCst)
    }

    fn consumers(&self) -> usize {
        self.inner
            .registered()
            .iter()
            .filter(|u| u.protocol() == Some(keys::CONSUMER_SIDE))
            .count()
    }
}

impl Registry for Counting {
    fn url(&self) -> &Url {
        self.inner.url()
    }
    fn is_available(&self) -> bool {
        self.inner.is_available()
    }
    fn register(&self, url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        self.inner.register(url)
    }
    fn unregister(&self, url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        self.inner.unregister(url)
    }
    fn subscribe(&self, url: Url, listener: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        self.subscriptions.fetch_add(1, Ordering::SeqCst);
        self.inner.subscribe(url, listener)
    }
    fn unsubscribe(&self, url: Url, listener: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        self.subscriptions.fetch_sub(1, Ordering::SeqCst);
        self.inner.unsubscribe(url, listener)
    }
    fn lookup(&self, url: Url) -> BoxFuture<'_, RegistryResult<Vec<Url>>> {
        self.inner.lookup(url)
    }
    fn destroy(&self) -> BoxFuture<'_, ()> {
        self.inner.destroy()
    }
}

#[derive(Debug)]
struct Factory(Arc<Counting>);

impl RegistryFactory for Factory {
    fn get_registry(&self, _: &Url) -> BoxFuture<'static, RegistryResult<SharedRegistry>> {
        let r: SharedRegistry = self.0.clone();
        Box::pin(async move { Ok(r) })
    }
}

fn protocol() -> (RegistryProtocol, Arc<Counting>) {
    let registry = Arc::new(Counting {
        inner: MemoryRegistry::new(Url::parse("memory://local").unwrap()),
        subscriptions: AtomicUsize::new(0),
    });
    let mut registries: ExtensionTable<dyn RegistryFactory> =
        ExtensionTable::new("registry", "memory");
    registries.register("memory", Arc::new(Factory(registry.clone())));
    let protocols = ExtensionTable::new("protocol", keys::defaults::PROTOCOL);
    let p = RegistryProtocol::new(
        Arc::new(protocols),
        Arc::new(registries),
        ClusterContext::default(),
    );
    (p, registry)
}

fn refer_url(interface: &str) -> Url {
    Url::parse("registry://127.0.0.1/org.apache.dubbo.registry.RegistryService?registry=memory")
        .unwrap()
        .with_param_encoded(
            keys::REFER_KEY,
            &format!("interface={interface}&application=demo&check=false&side=consumer"),
        )
}

/// Waits (at most 5 s) until `done` holds.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let polled = async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), polled)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting until {what}"));
}

#[tokio::test]
async fn destroying_a_reference_ends_its_subscription_task_and_leaves_the_registry() {
    let (p, registry) = protocol();
    let inv = p
        .refer_registry(refer_url("org.demo.Greeter"))
        .await
        .unwrap();
    assert_eq!(registry.subscriptions(), 1);
    assert_eq!(registry.consumers(), 1, "the consumer is registered");
    assert!(!inv.subscription.is_finished());

    inv.destroy();
    until("the subscription task ends", || {
        inv.subscription.is_finished()
    })
    .await;
    assert_eq!(registry.subscriptions(), 0, "unsubscribed");
    assert_eq!(registry.consumers(), 0, "consumer unregistered");
}

#[tokio::test]
async fn dropping_a_reference_without_destroying_it_also_leaves_the_registry() {
    let (p, registry) = protocol();
    let inv = p
        .refer_registry(refer_url("org.demo.Greeter"))
        .await
        .unwrap();
    assert_eq!(registry.subscriptions(), 1);
    drop(inv);
    until("unsubscribed", || registry.subscriptions() == 0).await;
    until("unregistered", || registry.consumers() == 0).await;
}

#[tokio::test]
async fn destroying_the_protocol_waits_until_every_subscription_has_left() {
    let (p, registry) = protocol();
    let a = p.refer_registry(refer_url("org.demo.A")).await.unwrap();
    let b = p.refer_registry(refer_url("org.demo.B")).await.unwrap();
    assert_eq!(registry.subscriptions(), 2);

    Protocol::destroy(&p).await;
    assert_eq!(registry.subscriptions(), 0, "left before destroy returned");
    assert_eq!(registry.consumers(), 0);
    until("both tasks end", || {
        a.subscription.is_finished() && b.subscription.is_finished()
    })
    .await;
    assert!(p.refer_registry(refer_url("org.demo.C")).await.is_err());
}

#[tokio::test]
async fn a_failed_check_leaves_the_registry_before_reporting() {
    let (p, registry) = protocol();
    let url = Url::parse(
        "registry://127.0.0.1/org.apache.dubbo.registry.RegistryService?registry=memory",
    )
    .unwrap()
    .with_param_encoded(
        keys::REFER_KEY,
        "interface=org.demo.Greeter&application=demo&check=true&check.timeout=10",
    );
    let err = p.refer_registry(url).await.unwrap_err();
    assert_eq!(err.kind(), rubbo_common::ErrorKind::NoProvider);
    assert_eq!(registry.subscriptions(), 0);
    assert_eq!(registry.consumers(), 0);
}
