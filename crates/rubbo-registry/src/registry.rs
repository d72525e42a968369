//! The `Registry` trait.

use std::fmt;

use rubbo_common::{BoxFuture, Url};

use crate::{RegistryError, SharedListener};

/// The result of a registry operation.
pub type RegistryResult<T> = Result<T, RegistryError>;

/// A service registry (Java's `org.apache.dubbo.registry.Registry`).
///
/// - [`register`](Self::register) publishes a URL (a provider's, or a consumer's with
///   `category=consumers`) until [`unregister`](Self::unregister) or the end of the
///   registry session;
/// - [`subscribe`](Self::subscribe) delivers, for each category named by the subscribe
///   URL's `category` parameter (`providers,configurators,routers`), the whole current
///   list, at once and after every change. An empty category is one `empty://` URL.
///
/// Operations are async and take `&self`; registries are shared as
/// `Arc<dyn Registry>`.
///
/// ```
/// use rubbo_registry::{MemoryRegistry, Registry};
/// use rubbo_common::Url;
/// use std::sync::Arc;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry: Arc<dyn Registry> = Arc::new(MemoryRegistry::new(Url::parse("memory://local").unwrap()));
/// let provider = Url::parse("dubbo://10.0.0.1:20880/org.demo.Greeter?interface=org.demo.Greeter").unwrap();
/// registry.register(provider.clone()).await.unwrap();
/// let consumer = Url::parse("consumer://10.0.0.9/org.demo.Greeter?interface=org.demo.Greeter").unwrap();
/// assert_eq!(registry.lookup(consumer).await.unwrap(), vec![provider]);
/// # });
/// ```
pub trait Registry: Send + Sync + fmt::Debug + 'static {
    /// The registry's own URL (`zookeeper://127.0.0.1:2181?...`).
    fn url(&self) -> &Url;

    /// Whether the registry is reachable now.
    fn is_available(&self) -> bool;

    /// Publishes `url`.
    fn register(&self, url: Url) -> BoxFuture<'_, RegistryResult<()>>;

    /// Withdraws `url`.
    fn unregister(&self, url: Url) -> BoxFuture<'_, RegistryResult<()>>;

    /// Subscribes `listener` to the categories of `url`. The current lists are delivered
    /// before this returns (or, when the registry is down, from the cache file by a
    /// [`FailbackRegistry`](crate::FailbackRegistry)).
    fn subscribe(&self, url: Url, listener: SharedListener) -> BoxFuture<'_, RegistryResult<()>>;

    /// Ends the subscription of this `listener` (same `Arc`) to `url`.
    fn unsubscribe(&self, url: Url, listener: SharedListener) -> BoxFuture<'_, RegistryResult<()>>;

    /// The URLs currently matching `url` (no `empty://` entries), read once.
    fn lookup(&self, url: Url) -> BoxFuture<'_, RegistryResult<Vec<Url>>>;

    /// Withdraws everything registered, ends every subscription and closes the
    /// connection. Later operations fail with [`RegistryError::Destroyed`].
    fn destroy(&self) -> BoxFuture<'_, ()>;
}

/// A shared registry.
pub type SharedRegistry = std::sync::Arc<dyn Registry>;
