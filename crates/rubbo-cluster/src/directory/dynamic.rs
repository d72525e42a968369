//! The directory fed by registry notifications (Java's `RegistryDirectory` /
//! `ServiceDiscoveryRegistryDirectory`, refresh part).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;
use rubbo_common::keys::{
    CATEGORY_KEY, CONFIGURATORS_CATEGORY, CONSUMERS_CATEGORY, PROTOCOL_KEY, ROUTERS_CATEGORY,
    protocols,
};
use rubbo_common::resolve::merge_provider_url;
use rubbo_common::{BoxInvoker, Invocation, Url};
use tracing::{debug, error, info, warn};

use super::{Directory, InvokerFactory};
use crate::{RouterChain, RpcStatus, StatusInvoker};

/// A provider list kept up to date by [`notify`](Self::notify).
///
/// Each notification is the complete current list. Invokers of unchanged URLs are
/// reused; new URLs are referred through the factory (with the URL merged with the
/// consumer's by [`merge_provider_url`]); removed ones are destroyed once their calls
/// in flight finish. An empty notification, or one holding an `empty://` URL, empties
/// the list. Calls read an atomic snapshot.
pub struct DynamicDirectory {
    consumer: Url,
    factory: InvokerFactory,
    chain: Arc<RouterChain>,
    status: Arc<RpcStatus>,
    snapshot: ArcSwap<Vec<BoxInvoker>>,
    by_url: tokio::sync::Mutex<HashMap<Url, BoxInvoker>>,
}

impl fmt::Debug for DynamicDirectory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamicDirectory")
            .field("consumer", &self.consumer)
            .field("invokers", &self.snapshot.load().len())
            .finish()
    }
}

fn is_provider_url(url: &Url) -> bool {
    !matches!(
        url.protocol(),
        Some(
            protocols::OVERRIDE
                | protocols::ROUTE
                | protocols::CONDITION
                | protocols::TAG
                | protocols::SCRIPT
                | protocols::ABSENT
                | protocols::EMPTY
        )
    ) && !matches!(
        url.get_param(CATEGORY_KEY),
        Some(ROUTERS_CATEGORY | CONFIGURATORS_CATEGORY | CONSUMERS_CATEGORY)
    )
}

impl DynamicDirectory {
    /// An empty directory for `consumer`, referring providers with `factory` and
    /// counting their calls in `status`.
    pub fn new(
        consumer: Url,
        factory: InvokerFactory,
        chain: Arc<RouterChain>,
        status: Arc<RpcStatus>,
    ) -> Self {
        DynamicDirectory {
            consumer,
            factory,
            chain,
            status,
            snapshot: ArcSwap::from_pointee(Vec::new()),
            by_url: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// The router chain.
    pub fn router_chain(&self) -> &Arc<RouterChain> {
        &self.chain
    }

    /// Replaces the provider list with `urls` (the complete current list), with Java
    /// 3.3's `RegistryDirectory.refreshInvoker` rules for lists left empty:
    ///
    /// - an `empty://` URL (the registry's "no provider left") destroys every invoker:
    ///   the directory is empty until the next list;
    /// - an empty list without `empty://` keeps the invokers as they are (Java's
    ///   "empty protection");
    /// - a list none of whose URLs gives an invoker (every one of another protocol than
    ///   the consumer accepts, not a provider URL, or failing to refer) keeps the
    ///   invokers as they are too, with an error log.
    ///
    /// Routing is not the directory's business: a route leaving no provider for a call
    /// fails that call (`force`) or falls back, and the invokers stay.
    pub async fn notify(&self, urls: Vec<Url>) {
        let mut by_url = self.by_url.lock().await;
        if urls.is_empty() {
            if !by_url.is_empty() {
                warn!(consumer = %self.consumer.service_key(), kept = by_url.len(), "empty provider list without empty://: the providers are kept (empty protection)");
            }
            return;
        }
        if urls.iter().any(|u| u.protocol() == Some(protocols::EMPTY)) {
            info!(consumer = %self.consumer.service_key(), "provider list emptied");
            self.snapshot.store(Arc::new(Vec::new()));
            for (_, inv) in by_url.drain() {
                inv.destroy();
            }
            return;
        }
        let accepted: Option<Vec<&str>> = self
            .consumer
            .get_param(PROTOCOL_KEY)
            .filter(|p| !p.is_empty())
            .map(|p| p.split(',').map(str::trim).collect());
        let mut wanted: Vec<Url> = Vec::new();
        let mut seen = HashSet::new();
        for url in urls {
            if !is_provider_url(&url) {
                continue;
            }
            if let Some(list) = &accepted {
                if !list.iter().any(|p| Some(*p) == url.protocol()) {
                    debug!(provider = %url, "protocol not accepted by the consumer, skipped");
                    continue;
                }
            }
            if seen.insert(url.clone()) {
                wanted.push(url);
            }
        }
        // Refer the new ones concurrently.
        let new_urls: Vec<Url> = wanted
            .iter()
            .filter(|u| !by_url.contains_key(*u))
            .cloned()
            .collect();
        let referred = futures::future::join_all(new_urls.iter().map(|u| {
            let merged = merge_provider_url(u, &self.consumer);
            (self.factory)(merged)
        }))
        .await;
        for (url, result) in new_urls.into_iter().zip(referred) {
            match result {
                Ok(inv) => {
                    debug!(provider = %url.address(), "provider referred");
                    by_url.insert(url, StatusInvoker::wrap(inv, self.status.clone()));
                }
                Err(e) => warn!(provider = %url.address(), error = %e, "failed to refer provider"),
            }
        }
        let keep: HashSet<&Url> = wanted.iter().collect();
        let removed: Vec<Url> = by_url
            .keys()
            .filter(|u| !keep.contains(u))
            .cloned()
            .collect();
        let list: Vec<BoxInvoker> = wanted
            .iter()
            .filter_map(|u| by_url.get(u).cloned())
            .collect();
        if list.is_empty() && !by_url.is_empty() {
            error!(consumer = %self.consumer.service_key(), listed = wanted.len(), kept = by_url.len(), "no invoker from the provider list: the providers are kept");
            return;
        }
        self.snapshot.store(Arc::new(list));
        for url in removed {
            if let Some(inv) = by_url.remove(&url) {
                debug!(provider = %url.address(), "provider removed");
                inv.destroy();
            }
        }
    }
}

impl Directory for DynamicDirectory {
    fn url(&self) -> &Url {
        &self.consumer
    }

    fn list(&self, invocation: &Invocation) -> Arc<Vec<BoxInvoker>> {
        let snapshot = self.snapshot.load();
        self.chain.route_list(&snapshot, &self.consumer, invocation)
    }

    fn all_invokers(&self) -> Arc<Vec<BoxInvoker>> {
        self.snapshot.load_full()
    }

    fn destroy(&self) {
        let old = self.snapshot.swap(Arc::new(Vec::new()));
        for inv in old.iter() {
            inv.destroy();
        }
        if let Ok(mut map) = self.by_url.try_lock() {
            map.clear();
        }
    }
}
