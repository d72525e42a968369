//! Directories: the provider list of one reference (Java's `Directory`).
//!
//! [`StaticDirectory`] holds a fixed list (`url=dubbo://a:20880;dubbo://b:20880`);
//! [`DynamicDirectory`] is fed address notifications by a registry and refers, reuses
//! and destroys provider invokers as the list changes. Both route through a
//! [`RouterChain`] and skip unavailable invokers.

mod dynamic;

use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;
use rubbo_common::{BoxFuture, BoxInvoker, Invocation, RpcError, Url, UrlError};

use crate::RouterChain;
pub use dynamic::DynamicDirectory;

/// Makes a provider invoker from a provider URL (normally `protocol.refer`).
pub type InvokerFactory =
    Arc<dyn Fn(Url) -> BoxFuture<'static, Result<BoxInvoker, RpcError>> + Send + Sync>;

/// The provider list of one reference.
///
/// ```
/// use rubbo_cluster::Directory;
/// fn _object_safe(_: std::sync::Arc<dyn Directory>) {}
/// ```
pub trait Directory: Send + Sync + fmt::Debug + 'static {
    /// The consumer URL of the reference.
    fn url(&self) -> &Url;

    /// The available providers for `invocation`, after routing. Cheap: reads a
    /// snapshot, takes no lock held across calls; when no router filters anything the
    /// snapshot itself is returned.
    fn list(&self, invocation: &Invocation) -> Arc<Vec<BoxInvoker>>;

    /// Every provider, routed or not, available or not.
    fn all_invokers(&self) -> Arc<Vec<BoxInvoker>>;

    /// Whether some provider is available.
    fn is_available(&self) -> bool {
        self.all_invokers().iter().any(|i| i.is_available())
    }

    /// Destroys every provider invoker.
    fn destroy(&self);
}

/// Parses a `;`- or space-separated list of URLs (a reference's `url=` attribute).
///
/// ```
/// let urls = rubbo_cluster::directory::parse_url_list("dubbo://a:20880;dubbo://b:20880").unwrap();
/// assert_eq!(urls.len(), 2);
/// assert_eq!(urls[1].address(), "b:20880");
/// ```
pub fn parse_url_list(s: &str) -> Result<Vec<Url>, UrlError> {
    s.split(|c: char| c == ';' || c.is_whitespace())
        .filter(|p| !p.is_empty())
        .map(Url::parse)
        .collect()
}

/// A fixed provider list.
pub struct StaticDirectory {
    consumer: Url,
    invokers: ArcSwap<Vec<BoxInvoker>>,
    chain: Arc<RouterChain>,
}

impl fmt::Debug for StaticDirectory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticDirectory")
            .field("consumer", &self.consumer)
            .field("invokers", &self.invokers.load().len())
            .finish()
    }
}

impl StaticDirectory {
    /// A directory over `invokers` (used as given: wrap them in
    /// [`StatusInvoker`](crate::StatusInvoker) for the statistics-based balancers, or
    /// use [`ClusterContext::static_directory`](crate::ClusterContext::static_directory)).
    pub fn new(consumer: Url, invokers: Vec<BoxInvoker>, chain: Arc<RouterChain>) -> Self {
        StaticDirectory {
            consumer,
            invokers: ArcSwap::from_pointee(invokers),
            chain,
        }
    }

    /// The router chain.
    pub fn router_chain(&self) -> &Arc<RouterChain> {
        &self.chain
    }
}

impl Directory for StaticDirectory {
    fn url(&self) -> &Url {
        &self.consumer
    }

    fn list(&self, invocation: &Invocation) -> Arc<Vec<BoxInvoker>> {
        let snapshot = self.invokers.load();
        self.chain.route_list(&snapshot, &self.consumer, invocation)
    }

    fn all_invokers(&self) -> Arc<Vec<BoxInvoker>> {
        self.invokers.load_full()
    }

    fn destroy(&self) {
        let old = self.invokers.swap(Arc::new(Vec::new()));
        for i in old.iter() {
            i.destroy();
        }
    }
}
