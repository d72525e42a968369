use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rubbo_cluster::{ClusterContext, Directory};
use rubbo_common::keys;
use rubbo_common::{BoxFuture, ExtensionTable, Invoker, Protocol, Url};
use rubbo_registry::{
    MemoryRegistry, Registry, RegistryFactory, RegistryResult, SharedListener, SharedRegistry,
    UrlDelta,
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

/// A registry that keeps the listener it is given and announces nothing itself.
#[derive(Debug)]
struct Capture {
    url: Url,
    listener: parking_lot::Mutex<Option<SharedListener>>,
}

impl Registry for Capture {
    fn url(&self) -> &Url {
        &self.url
    }
    fn is_available(&self) -> bool {
        true
    }
    fn register(&self, _url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async { Ok(()) })
    }
    fn unregister(&self, _url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async { Ok(()) })
    }
    fn subscribe(&self, _url: Url, listener: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        *self.listener.lock() = Some(listener);
        Box::pin(async { Ok(()) })
    }
    fn unsubscribe(&self, _url: Url, _l: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async { Ok(()) })
    }
    fn lookup(&self, _url: Url) -> BoxFuture<'_, RegistryResult<Vec<Url>>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn destroy(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// An invoker without a connection.
#[derive(Debug)]
struct Unconnected(Url);

impl Invoker for Unconnected {
    fn invoke(&self, _invocation: rubbo_common::Invocation) -> rubbo_common::InvokeFuture {
        Box::pin(async { Err(rubbo_common::RpcError::network("not connected")) })
    }
    fn url(&self) -> &Url {
        &self.0
    }
}

/// Refers invokers without connections.
#[derive(Debug)]
struct Unconnecting;

impl Protocol for Unconnecting {
    fn default_port(&self) -> u16 {
        20880
    }
    fn export(
        &self,
        _invoker: rubbo_common::BoxInvoker,
    ) -> BoxFuture<'static, Result<Box<dyn rubbo_common::Exporter>, rubbo_common::RpcError>> {
        Box::pin(async { Err(rubbo_common::RpcError::network("not here")) })
    }
    fn refer(
        &self,
        url: Url,
    ) -> BoxFuture<'static, Result<rubbo_common::BoxInvoker, rubbo_common::RpcError>> {
        Box::pin(async move { Ok(Arc::new(Unconnected(url)) as rubbo_common::BoxInvoker) })
    }
    fn destroy(&self) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

/// Whole lists, deltas and override rules reach the directory in the order the
/// registry sent them; a rule changed later applies to providers a delta added.
#[tokio::test]
async fn deltas_lists_and_override_rules_apply_in_order() {
    let mut protocols: ExtensionTable<dyn Protocol> =
        ExtensionTable::new("protocol", keys::defaults::PROTOCOL);
    protocols.register("dubbo", Arc::new(Unconnecting));
    let registries: ExtensionTable<dyn RegistryFactory> = ExtensionTable::new("registry", "memory");
    let p = RegistryProtocol::new(
        Arc::new(protocols),
        Arc::new(registries),
        ClusterContext::default(),
    );
    let registry = Arc::new(Capture {
        url: Url::parse("capture://127.0.0.1/r").unwrap(),
        listener: parking_lot::Mutex::new(None),
    });
    let inv = p
        .refer_on(refer_url("org.demo.Greeter"), Some(registry.clone()))
        .await
        .unwrap();
    let listener = registry.listener.lock().clone().unwrap();
    let provider =
        |n: u8| Url::parse(&format!("dubbo://10.0.0.{n}:20880/org.demo.Greeter")).unwrap();
    let addresses = || {
        let mut a: Vec<String> = inv
            .directory
            .all_invokers()
            .iter()
            .map(|i| i.url().address())
            .collect();
        a.sort();
        a
    };
    let delta = |added: &[u8], removed: &[u8]| UrlDelta {
        added: added.iter().map(|n| provider(*n)).collect(),
        removed: removed.iter().map(|n| provider(*n)).collect(),
    };
    // Sent in a row, applied in order: the last state wins.
    listener.notify(vec![provider(1), provider(2)]);
    listener.notify_delta(delta(&[3], &[1]), &Vec::new);
    listener.notify(vec![provider(4), provider(5)]);
    listener.notify_delta(delta(&[6], &[4]), &Vec::new);
    until("5 and 6", || {
        addresses() == ["10.0.0.5:20880", "10.0.0.6:20880"]
    })
    .await;
    // A rule disabling 6 (added by a delta) applies to it.
    listener.notify(vec![
        Url::parse(
            "override://10.0.0.6:20880/org.demo.Greeter?category=configurators&disabled=true",
        )
        .unwrap(),
    ]);
    until("6 disabled", || addresses() == ["10.0.0.5:20880"]).await;
    // A delta adding 7 while the rule stands; the rule leaves: 6 is back.
    listener.notify_delta(delta(&[7], &[]), &Vec::new);
    until("7 added", || {
        addresses() == ["10.0.0.5:20880", "10.0.0.7:20880"]
    })
    .await;
    listener.notify(vec![
        Url::parse("empty://127.0.0.1/org.demo.Greeter?category=configurators").unwrap(),
    ]);
    until("6 back", || {
        addresses() == ["10.0.0.5:20880", "10.0.0.6:20880", "10.0.0.7:20880"]
    })
    .await;
    // Two leave by a delta; the last one leaving is `empty://`.
    listener.notify_delta(delta(&[], &[5, 6]), &Vec::new);
    until("7 left", || addresses() == ["10.0.0.7:20880"]).await;
    listener.notify(vec![
        Url::parse("empty://127.0.0.1/org.demo.Greeter?category=providers").unwrap(),
    ]);
    until("emptied", || addresses().is_empty()).await;
    inv.destroy();
}
