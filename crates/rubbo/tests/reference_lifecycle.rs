//! A reference's subscription lives as long as the reference: destroying the reference,
//! or shutting the application down, ends the subscription task, unsubscribes from the
//! registry and unregisters the consumer. Seen from the registry: the listener it was
//! given is released by everyone (the task held it until it ended).

#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use rubbo::{RpcError, Rubbo, Url};
use rubbo_common::{BoxFuture, ExtensionTable};
use rubbo_registry::{
    MemoryRegistry, NotifyListener, Registry, RegistryFactory, RegistryResult, SharedListener,
    SharedRegistry,
};

/// A service to refer.
#[rubbo::service(interface = "org.rubbo.test.Quiet", version = "1.0.0")]
pub trait Quiet {
    /// `String hush()`.
    async fn hush(&self) -> Result<String, RpcError>;
}

/// A memory registry that counts subscriptions and remembers every listener weakly.
#[derive(Debug)]
struct Watched {
    inner: MemoryRegistry,
    subscriptions: AtomicUsize,
    listeners: Mutex<Vec<Weak<dyn NotifyListener>>>,
}

impl Watched {
    fn subscriptions(&self) -> usize {
        self.subscriptions.load(Ordering::SeqCst)
    }
    fn live_listeners(&self) -> usize {
        self.listeners
            .lock()
            .iter()
            .filter(|l| l.strong_count() > 0)
            .count()
    }
    fn consumers(&self) -> usize {
        self.inner
            .registered()
            .iter()
            .filter(|u| u.protocol() == Some("consumer"))
            .count()
    }
}

impl Registry for Watched {
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
        self.listeners.lock().push(Arc::downgrade(&listener));
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
struct WatchedFactory(Arc<Watched>);

impl RegistryFactory for WatchedFactory {
    fn get_registry(&self, _: &Url) -> BoxFuture<'static, RegistryResult<SharedRegistry>> {
        let r: SharedRegistry = self.0.clone();
        Box::pin(async move { Ok(r) })
    }
}

fn consumer() -> (Rubbo, Arc<Watched>) {
    let registry = Arc::new(Watched {
        inner: MemoryRegistry::new(Url::parse("memory://local").unwrap()),
        subscriptions: AtomicUsize::new(0),
        listeners: Mutex::new(Vec::new()),
    });
    let mut factories: ExtensionTable<dyn RegistryFactory> =
        ExtensionTable::new("registry", "memory");
    factories.register("memory", Arc::new(WatchedFactory(registry.clone())));
    let app = Rubbo::builder()
        .application("quiet-consumer")
        .registry("memory://local")
        .param("check", "false")
        .registry_factories(Arc::new(factories))
        .build()
        .unwrap();
    (app, registry)
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
async fn destroying_a_reference_ends_its_subscription() {
    let (app, registry) = consumer();
    let reference = app.refer(&QuietClient::SERVICE).await.unwrap();
    assert_eq!(registry.subscriptions(), 1);
    assert_eq!(registry.live_listeners(), 1);
    assert_eq!(registry.consumers(), 1);

    // The handle stays alive (as the application's list of references keeps it):
    // destroying must be enough.
    reference.destroy();
    until("the registry is left", || {
        registry.subscriptions() == 0 && registry.consumers() == 0
    })
    .await;
    until(
        "the subscription task has ended and released the listener",
        || registry.live_listeners() == 0,
    )
    .await;
    assert!(!reference.is_available());
    app.shutdown().await;
}

#[tokio::test]
async fn shutting_the_application_down_ends_every_subscription() {
    let (app, registry) = consumer();
    let _a = app.refer(&QuietClient::SERVICE).await.unwrap();
    let _b = app.refer(&QuietClient::SERVICE).await.unwrap();
    assert_eq!(registry.subscriptions(), 2);
    assert_eq!(registry.live_listeners(), 2);

    app.shutdown().await;
    until("every subscription has ended", || {
        registry.subscriptions() == 0 && registry.live_listeners() == 0
    })
    .await;
    assert_eq!(registry.consumers(), 0);
}
