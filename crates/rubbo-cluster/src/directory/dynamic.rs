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

/// A provider list kept up to date by [`notify`](Self::notify) (a whole list) and
/// [`notify_delta`](Self::notify_delta) (the providers added and removed).
///
/// Invokers of unchanged URLs are reused; new URLs are referred through the factory
/// (with the URL merged with the consumer's by [`merge_provider_url`]); removed ones
/// are destroyed once their calls in flight finish. An empty notification, or one
/// holding an `empty://` URL, empties the list. Calls read an atomic snapshot.
pub struct DynamicDirectory {
    consumer: Url,
    factory: InvokerFactory,
    chain: Arc<RouterChain>,
    status: Arc<RpcStatus>,
    snapshot: ArcSwap<Vec<BoxInvoker>>,
    state: tokio::sync::Mutex<State>,
}

/// What the notifications built, under the directory's lock.
#[derive(Default)]
struct State {
    /// The invoker of each listed URL.
    by_url: HashMap<Url, BoxInvoker>,
    /// Listed URLs not referred yet (their refer failed): tried again at every delta
    /// (a whole list tries every URL it lacks anyway).
    unreferred: HashSet<Url>,
    /// URLs a delta removed whose invokers were kept because nothing else was left
    /// (see [`DynamicDirectory::notify_delta`]): dropped once other invokers are there.
    kept: Vec<Url>,
    /// Where each invoker of the current snapshot is in it (by the invoker's
    /// address), so that a delta removes one without scanning the list.
    at: HashMap<usize, usize>,
    /// The snapshot replaced by the last delta, and that delta's steps: the next delta
    /// brings it up to date in place (no copy of every invoker handle) when no call
    /// holds it.
    spare: Option<Spare>,
}

/// A snapshot one delta behind the current one.
struct Spare {
    list: Arc<Vec<BoxInvoker>>,
    /// What the delta did to a list equal to `list` to make the current snapshot.
    steps: Vec<Step>,
}

/// One change a delta made to a snapshot, replayed on the spare one.
enum Step {
    /// `swap_remove` at this index.
    Remove(usize),
    /// An invoker pushed at the end.
    Push(BoxInvoker),
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

/// An invoker's identity: the address of what it points to.
fn identity(invoker: &BoxInvoker) -> usize {
    Arc::as_ptr(invoker).cast::<()>() as usize
}

/// Where each invoker of `list` is.
fn positions(list: &[BoxInvoker]) -> HashMap<usize, usize> {
    list.iter()
        .enumerate()
        .map(|(i, inv)| (identity(inv), i))
        .collect()
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
            state: tokio::sync::Mutex::new(State::default()),
        }
    }

    /// The router chain.
    pub fn router_chain(&self) -> &Arc<RouterChain> {
        &self.chain
    }

    /// Whether `url` is a provider URL of a protocol the consumer accepts.
    fn wanted(&self, url: &Url, accepted: Option<&[&str]>) -> bool {
        if !is_provider_url(url) {
            return false;
        }
        if let Some(list) = accepted {
            if !list.iter().any(|p| Some(*p) == url.protocol()) {
                debug!(provider = %url, "protocol not accepted by the consumer, skipped");
                return false;
            }
        }
        true
    }

    /// The protocols the consumer accepts (`protocol=`), when it names any.
    fn accepted(&self) -> Option<Vec<&str>> {
        self.consumer
            .get_param(PROTOCOL_KEY)
            .filter(|p| !p.is_empty())
            .map(|p| p.split(',').map(str::trim).collect())
    }

    /// Refers `urls` concurrently; the ones that fail are logged and left out.
    async fn refer(&self, urls: Vec<Url>) -> Vec<(Url, Option<BoxInvoker>)> {
        let referred = futures::future::join_all(urls.iter().map(|u| {
            let merged = merge_provider_url(u, &self.consumer);
            (self.factory)(merged)
        }))
        .await;
        urls.into_iter()
            .zip(referred)
            .map(|(url, result)| match result {
                Ok(inv) => {
                    debug!(provider = %url.address(), "provider referred");
                    (url, Some(StatusInvoker::wrap(inv, self.status.clone())))
                }
                Err(e) => {
                    warn!(provider = %url.address(), error = %e, "failed to refer provider");
                    (url, None)
                }
            })
            .collect()
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
        let mut st = self.state.lock().await;
        if urls.is_empty() {
            if !st.by_url.is_empty() {
                warn!(consumer = %self.consumer.service_key(), kept = st.by_url.len(), "empty provider list without empty://: the providers are kept (empty protection)");
            }
            return;
        }
        if urls.iter().any(|u| u.protocol() == Some(protocols::EMPTY)) {
            info!(consumer = %self.consumer.service_key(), "provider list emptied");
            self.snapshot.store(Arc::new(Vec::new()));
            st.unreferred.clear();
            st.kept.clear();
            st.at.clear();
            st.spare = None;
            for (_, inv) in st.by_url.drain() {
                inv.destroy();
            }
            return;
        }
        let accepted = self.accepted();
        let mut wanted: Vec<Url> = Vec::new();
        let mut seen = HashSet::new();
        for url in urls {
            if self.wanted(&url, accepted.as_deref()) && seen.insert(url.clone()) {
                wanted.push(url);
            }
        }
        // Refer the new ones concurrently.
        let new_urls: Vec<Url> = wanted
            .iter()
            .filter(|u| !st.by_url.contains_key(*u))
            .cloned()
            .collect();
        let mut unreferred = HashSet::new();
        for (url, inv) in self.refer(new_urls).await {
            match inv {
                Some(inv) => {
                    st.by_url.insert(url, inv);
                }
                None => {
                    unreferred.insert(url);
                }
            }
        }
        let keep: HashSet<&Url> = wanted.iter().collect();
        let removed: Vec<Url> = st
            .by_url
            .keys()
            .filter(|u| !keep.contains(u))
            .cloned()
            .collect();
        let list: Vec<BoxInvoker> = wanted
            .iter()
            .filter_map(|u| st.by_url.get(u).cloned())
            .collect();
        st.unreferred = unreferred;
        if list.is_empty() && !st.by_url.is_empty() {
            error!(consumer = %self.consumer.service_key(), listed = wanted.len(), kept = st.by_url.len(), "no invoker from the provider list: the providers are kept");
            return;
        }
        st.kept.clear();
        st.spare = None;
        st.at = positions(&list);
        self.snapshot.store(Arc::new(list));
        for url in removed {
            if let Some(inv) = st.by_url.remove(&url) {
                debug!(provider = %url.address(), "provider removed");
                inv.destroy();
            }
        }
    }

    /// Applies a change of the provider list: refers the `added` URLs (and the listed
    /// ones whose refer failed before), destroys the invokers of the `removed` ones,
    /// and publishes the new snapshot: the previous one less the removed invokers (the
    /// last one moved into each gap), plus the new ones at the end. Only the changed
    /// URLs are hashed. Routers read whole snapshots, so the new one is a whole list:
    /// the snapshot the previous delta replaced, updated in place when no call holds it
    /// any more (no invoker handle copied, and the work is the delta's size, not the
    /// list's: each invoker's place is kept), else one copy of the current one.
    ///
    /// Applied in order with [`notify`](Self::notify) (one lock). A delta holding
    /// `empty://` is not one: use `notify` for it. When the change would leave no
    /// invoker although the directory had some (everything removed, nothing referred),
    /// the removed invokers are kept, as a whole list giving no invoker keeps them, until
    /// a later change brings others.
    pub async fn notify_delta(&self, added: Vec<Url>, removed: Vec<Url>) {
        let mut st = self.state.lock().await;
        let accepted = self.accepted();
        let mut gone: Vec<(Url, BoxInvoker)> = Vec::new();
        for url in removed {
            st.unreferred.remove(&url);
            st.kept.retain(|k| *k != url);
            if let Some(inv) = st.by_url.remove(&url) {
                gone.push((url, inv));
            }
        }
        for url in added {
            if self.wanted(&url, accepted.as_deref()) {
                if let Some(i) = gone.iter().position(|(u, _)| *u == url) {
                    // Removed and added again: unchanged.
                    let (url, inv) = gone.swap_remove(i);
                    st.by_url.insert(url, inv);
                } else if st.by_url.contains_key(&url) {
                    // Listed again: no longer only kept.
                    st.kept.retain(|k| *k != url);
                } else {
                    st.unreferred.insert(url);
                }
            }
        }
        let to_refer: Vec<Url> = st.unreferred.drain().collect();
        let mut fresh: Vec<BoxInvoker> = Vec::new();
        for (url, inv) in self.refer(to_refer).await {
            match inv {
                Some(inv) => {
                    fresh.push(inv.clone());
                    st.by_url.insert(url, inv);
                }
                None => {
                    st.unreferred.insert(url);
                }
            }
        }
        // Kept invokers go once others are there.
        if !st.kept.is_empty() && st.by_url.len() > st.kept.len() {
            for url in std::mem::take(&mut st.kept) {
                if let Some(inv) = st.by_url.remove(&url) {
                    gone.push((url, inv));
                }
            }
        }
        if gone.is_empty() && fresh.is_empty() {
            return;
        }
        let old = self.snapshot.load_full();
        if st.by_url.is_empty() && !old.is_empty() {
            error!(consumer = %self.consumer.service_key(), removed = gone.len(), "a delta would leave no invoker: the removed providers are kept");
            for (url, inv) in gone {
                st.kept.push(url.clone());
                st.by_url.insert(url, inv);
            }
            return;
        }
        // The snapshot before the current one, brought up to date in place when no
        // call holds it any more (a router's weak handle on it does not count); else a
        // copy of the current one. Then this delta's removals (each the last invoker
        // moved into the removed one's place: a snapshot's order means nothing) and
        // additions, recorded for the next delta.
        let mut v: Vec<BoxInvoker> = match st.spare.take() {
            Some(Spare { list, steps }) => match Arc::try_unwrap(list) {
                Ok(mut v) => {
                    replay(&mut v, steps);
                    v
                }
                Err(_) => old.as_ref().clone(),
            },
            None => old.as_ref().clone(),
        };
        let mut steps = Vec::with_capacity(gone.len() + fresh.len());
        for (_, inv) in &gone {
            if let Some(i) = st.at.remove(&identity(inv)) {
                v.swap_remove(i);
                if let Some(moved) = v.get(i) {
                    st.at.insert(identity(moved), i);
                }
                steps.push(Step::Remove(i));
            }
        }
        for inv in fresh {
            st.at.insert(identity(&inv), v.len());
            v.push(inv.clone());
            steps.push(Step::Push(inv));
        }
        self.snapshot.store(Arc::new(v));
        st.spare = Some(Spare { list: old, steps });
        for (url, inv) in gone {
            debug!(provider = %url.address(), "provider removed");
            inv.destroy();
        }
    }
}

/// Makes `list` what the delta that recorded `steps` made of a list equal to it.
fn replay(list: &mut Vec<BoxInvoker>, steps: Vec<Step>) {
    for step in steps {
        match step {
            Step::Remove(i) => {
                list.swap_remove(i);
            }
            Step::Push(inv) => list.push(inv),
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
        if let Ok(mut st) = self.state.try_lock() {
            st.by_url.clear();
            st.unreferred.clear();
            st.kept.clear();
            st.at.clear();
            st.spare = None;
        }
    }
}
