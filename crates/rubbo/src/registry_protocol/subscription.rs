//! The subscription of one reference (the listening half of Java's
//! `RegistryDirectory`): registers the consumer, subscribes to its categories, and
//! feeds what the registry announces to the reference's parts: the provider list to
//! the [`DynamicDirectory`], override rules to its [`Configurators`], routing rules to
//! its [`DynamicRouters`].
//!
//! One task applies the notifications in order, so a later list never loses to an
//! earlier one. The task is owned by the [`Subscription`]: cancelling it (the
//! reference is destroyed or dropped, or the registry protocol is destroyed) makes the
//! task unsubscribe, unregister the consumer, empty the directory and end.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rubbo_cluster::router::DynamicRouters;
use rubbo_cluster::{Directory, DynamicDirectory};
use rubbo_common::keys;
use rubbo_common::{RpcError, Url};
use rubbo_registry::{
    CONFIGURATORS_CATEGORY, NotifyListener, PROVIDERS_CATEGORY, ROUTERS_CATEGORY, SharedListener,
    SharedRegistry, UrlDelta, consumer_register_url, list_category, should_register, subscribe_url,
};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use rubbo_metrics::{Metrics, RegistryOp};

use super::governance::{Governance, RuleSets};
use super::{registry_cluster, registry_err};

/// What a subscription keeps up to date.
#[derive(Debug, Clone)]
pub(super) struct Feeds {
    pub(super) directory: Arc<DynamicDirectory>,
    /// Override rules: the registry's, and the config center's by scope.
    pub(super) rules: RuleSets,
    pub(super) routers: Arc<DynamicRouters>,
    /// The config center's rules for this reference, when there is a config center.
    pub(super) governance: Option<Arc<Governance>>,
    /// The consumer's application, which override rules may name.
    pub(super) application: Option<String>,
    /// The consumer's own address, which consumer-side override rules may name.
    pub(super) host: String,
    /// Where the subscription and its notifications are counted, when metrics are on.
    pub(super) metrics: Option<Metrics>,
}

/// A running subscription and the handle on its task. Dropping it cancels the task
/// (which then unsubscribes and ends); [`shutdown`](Self::shutdown) also waits for it.
#[derive(Debug)]
pub(super) struct Subscription {
    token: CancellationToken,
    task: JoinHandle<()>,
}

/// What the task applies, in order.
pub(super) enum Update {
    Providers(Vec<Url>),
    /// A change of the provider list (application-level discovery).
    ProviderDelta(UrlDelta),
    Configurators(Vec<Url>),
    /// The config center's override rules changed: list the providers again.
    Reconfigure,
}

/// The channel of a subscription's task.
pub(super) type Updates = (
    mpsc::UnboundedSender<Update>,
    mpsc::UnboundedReceiver<Update>,
);

impl Subscription {
    /// Registers `consumer` (when it should be), subscribes to its categories in
    /// `registry`, and spawns the task feeding `feeds` on `tasks`, ended by `token`.
    /// The receiver fires once the first provider list has been applied.
    pub(super) async fn start(
        registry: SharedRegistry,
        consumer: &Url,
        feeds: Feeds,
        token: CancellationToken,
        tasks: &TaskTracker,
        (tx, rx): Updates,
    ) -> Result<(Self, oneshot::Receiver<()>), RpcError> {
        let (first_tx, first_rx) = oneshot::channel::<()>();
        let listener = listener(tx, feeds.routers.clone());
        let registered = if should_register(consumer) {
            let url = consumer_register_url(consumer);
            if let Err(e) = registry.register(url.clone()).await {
                warn!(error = %e, "consumer registration failed");
            }
            Some(url)
        } else {
            None
        };
        let sub_url = subscribe_url(consumer);
        let metrics = feeds.metrics.clone();
        let task = tasks.spawn(
            Task {
                rx,
                token: token.clone(),
                first: Some(first_tx),
                feeds,
                registry: registry.clone(),
                sub_url: sub_url.clone(),
                listener: listener.clone(),
                registered,
                service: consumer.service_key(),
            }
            .run(),
        );
        let mut subscription = Subscription { token, task };
        let started = std::time::Instant::now();
        let subscribed = registry.subscribe(sub_url, listener).await;
        if let Some(m) = &metrics {
            m.registry_op(
                RegistryOp::Subscribe,
                &registry_cluster(registry.url()),
                &consumer.service_key(),
                subscribed.is_ok(),
                started.elapsed(),
            );
        }
        if let Err(e) = subscribed {
            subscription.shutdown().await;
            return Err(registry_err(e));
        }
        Ok((subscription, first_rx))
    }

    /// Ends the subscription without waiting: its task unsubscribes and ends soon.
    pub(super) fn close(&self) {
        self.token.cancel();
    }

    /// Whether the subscription was ended.
    pub(super) fn is_closed(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Ends the subscription and waits until its task has unsubscribed and ended.
    pub(super) async fn shutdown(&mut self) {
        self.token.cancel();
        if let Err(e) = (&mut self.task).await {
            warn!(error = %e, "subscription task failed");
        }
    }

    /// Whether the task has ended.
    #[cfg(test)]
    pub(super) fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.token.cancel();
    }
}

/// The registry listener: sorts each notification by category. Provider lists,
/// provider deltas and override rules go to the task, in the order they came; routing
/// rules replace the router set at once.
struct Feed {
    tx: mpsc::UnboundedSender<Update>,
    routers: Arc<DynamicRouters>,
}

impl NotifyListener for Feed {
    fn notify(&self, urls: Vec<Url>) {
        let category = urls
            .first()
            .map(list_category)
            .unwrap_or(PROVIDERS_CATEGORY);
        match category {
            PROVIDERS_CATEGORY => {
                let _ = self.tx.send(Update::Providers(urls));
            }
            CONFIGURATORS_CATEGORY => {
                let _ = self.tx.send(Update::Configurators(urls));
            }
            ROUTERS_CATEGORY => {
                self.routers.replace_urls(&urls);
            }
            other => debug!(
                category = other,
                count = urls.len(),
                "category not applied, skipped"
            ),
        }
    }

    fn notify_delta(&self, delta: UrlDelta, _full: &dyn Fn() -> Vec<Url>) {
        let _ = self.tx.send(Update::ProviderDelta(delta));
    }
}

fn listener(tx: mpsc::UnboundedSender<Update>, routers: Arc<DynamicRouters>) -> SharedListener {
    Arc::new(Feed { tx, routers })
}

/// Whether a listed provider may be called: `disabled`, when present, decides;
/// otherwise `enabled` (default true), as in Java's `RegistryDirectory.toInvokers`.
fn is_enabled(provider: &Url) -> bool {
    match provider.get_param(keys::DISABLED_KEY) {
        Some(_) => !provider.get_bool(keys::DISABLED_KEY, false),
        None => provider.get_bool(keys::ENABLED_KEY, true),
    }
}

/// The subscription task's state.
struct Task {
    rx: mpsc::UnboundedReceiver<Update>,
    token: CancellationToken,
    first: Option<oneshot::Sender<()>>,
    feeds: Feeds,
    registry: SharedRegistry,
    sub_url: Url,
    /// Kept to unsubscribe with; it holds the sender, so `rx` stays open until then.
    listener: SharedListener,
    registered: Option<Url>,
    service: String,
}

/// The providers as the registry listed them, each with what the override rules
/// made of it (`None`: disabled, left out of the directory).
#[derive(Default)]
struct Providers {
    configured: HashMap<Url, Option<Url>>,
    /// How many providers each provider application has (the tag route follows one).
    apps: BTreeMap<String, usize>,
}

fn application_of(provider: &Url) -> Option<&str> {
    provider
        .get_param(keys::APPLICATION_KEY)
        .filter(|a| !a.is_empty())
}

impl Providers {
    fn insert(&mut self, raw: Url, configured: Option<Url>) {
        match self.configured.entry(raw) {
            Entry::Occupied(mut e) => {
                e.insert(configured);
            }
            Entry::Vacant(e) => {
                if let Some(app) = application_of(e.key()) {
                    match self.apps.get_mut(app) {
                        Some(n) => *n += 1,
                        None => {
                            self.apps.insert(app.to_owned(), 1);
                        }
                    }
                }
                e.insert(configured);
            }
        }
    }

    fn remove(&mut self, raw: &Url) -> Option<Option<Url>> {
        let configured = self.configured.remove(raw)?;
        if let Some(app) = application_of(raw) {
            if let Some(n) = self.apps.get_mut(app) {
                *n -= 1;
                if *n == 0 {
                    self.apps.remove(app);
                }
            }
        }
        Some(configured)
    }
}

impl Task {
    /// `provider` as the override rules make it, or `None` when they disable it.
    fn configure(&self, provider: &Url) -> Option<Url> {
        let application = self.feeds.application.as_deref();
        // A provider disabled by a rule (its own registration or the consumer's
        // reading) is left out, as Java's `RegistryDirectory.toInvokers` does.
        let url = self
            .feeds
            .rules
            .configure(provider, &self.feeds.host, application);
        if is_enabled(&url) {
            Some(url)
        } else {
            debug!(service = %self.service, provider = %url.address(), "disabled provider left out");
            None
        }
    }

    /// Applies a whole provider list (it may be `empty://`).
    async fn apply_list(&self, urls: Vec<Url>, providers: &mut Providers) {
        *providers = Providers::default();
        let mut listed = Vec::with_capacity(urls.len());
        for u in urls {
            if u.protocol() == Some(keys::protocols::EMPTY) {
                listed.extend(self.configure(&u));
                continue;
            }
            let configured = self.configure(&u);
            listed.extend(configured.clone());
            providers.insert(u, configured);
        }
        self.feeds.directory.notify(listed).await;
    }

    /// Applies a change of the provider list.
    async fn apply_delta(&self, delta: UrlDelta, providers: &mut Providers) {
        let mut removed = Vec::with_capacity(delta.removed.len());
        for u in &delta.removed {
            if let Some(Some(configured)) = providers.remove(u) {
                removed.push(configured);
            }
        }
        let mut added = Vec::with_capacity(delta.added.len());
        for u in delta.added {
            let configured = self.configure(&u);
            added.extend(configured.clone());
            if let Some(Some(old)) = providers.remove(&u) {
                removed.push(old);
            }
            providers.insert(u, configured);
        }
        self.feeds.directory.notify_delta(added, removed).await;
    }

    /// The override rules changed: every provider is configured again.
    async fn reconfigure(&self, providers: &mut Providers) {
        if providers.configured.is_empty() {
            // The directory holds nothing to configure.
            return;
        }
        let raw: Vec<Url> = providers.configured.keys().cloned().collect();
        let mut listed = Vec::with_capacity(raw.len());
        for u in raw {
            let configured = self.configure(&u);
            listed.extend(configured.clone());
            providers.configured.insert(u, configured);
        }
        self.feeds.directory.notify(listed).await;
    }

    async fn run(mut self) {
        let mut providers: Option<Providers> = None;
        // The provider application whose tag route is followed.
        let mut followed: Option<String> = None;
        loop {
            let update = tokio::select! {
                biased;
                () = self.token.cancelled() => break,
                update = self.rx.recv() => match update {
                    Some(u) => u,
                    None => break,
                },
            };
            let started = std::time::Instant::now();
            let mut notified = None;
            // The application of the list's first provider, for a whole list.
            let mut first_app = None;
            match update {
                Update::Providers(urls) => {
                    notified = Some(
                        urls.iter()
                            .filter(|u| u.protocol() != Some(keys::protocols::EMPTY))
                            .count(),
                    );
                    first_app = urls
                        .iter()
                        .find_map(|p| application_of(p).map(str::to_owned));
                    let p = providers.get_or_insert_with(Providers::default);
                    self.apply_list(urls, p).await;
                }
                Update::ProviderDelta(delta) => {
                    let p = providers.get_or_insert_with(Providers::default);
                    self.apply_delta(delta, p).await;
                    notified = Some(p.configured.len());
                }
                Update::Configurators(urls) => {
                    let rules = self.feeds.rules.registry.replace_urls(&urls);
                    info!(service = %self.service, rules, "override rules replaced");
                    if let Some(p) = providers.as_mut() {
                        self.reconfigure(p).await;
                    }
                }
                Update::Reconfigure => {
                    if let Some(p) = providers.as_mut() {
                        self.reconfigure(p).await;
                    }
                }
            }
            let Some(list) = &providers else { continue };
            if let Some(g) = &self.feeds.governance {
                // The tag route is the provider application's (Java's TagStateRouter):
                // a whole list's first provider's, else the one followed while it has
                // providers, else the first application listed.
                let app = first_app.or_else(|| {
                    followed
                        .clone()
                        .filter(|a| list.apps.contains_key(a))
                        .or_else(|| list.apps.keys().next().cloned())
                });
                if let Some(app) = app {
                    g.follow_provider_app(&app).await;
                    followed = Some(app);
                }
            }
            if let Some(m) = &self.feeds.metrics {
                if let Some(n) = notified {
                    m.registry_notify(&self.service, n, started.elapsed());
                }
                let all = self.feeds.directory.all_invokers();
                let valid = all.iter().filter(|i| i.is_available()).count();
                let mode = if self.registry.url().protocol()
                    == Some(keys::protocols::SERVICE_DISCOVERY_REGISTRY)
                {
                    "instance"
                } else {
                    "interface"
                };
                m.registry_directory(
                    &self.service,
                    mode,
                    &registry_cluster(self.registry.url()),
                    all.len(),
                    valid,
                );
            }
            if let Some(f) = self.first.take() {
                let _ = f.send(());
            }
        }
        self.close().await;
    }

    /// Leaves the registry and empties the directory (a list applied while the
    /// reference was being destroyed is dropped too).
    async fn close(self) {
        if let Err(e) = self.registry.unsubscribe(self.sub_url, self.listener).await {
            warn!(service = %self.service, error = %e, "unsubscribe failed");
        }
        if let Some(url) = self.registered {
            if let Err(e) = self.registry.unregister(url).await {
                warn!(service = %self.service, error = %e, "consumer unregister failed");
            }
        }
        if let Some(g) = &self.feeds.governance {
            g.close();
        }
        self.feeds.directory.destroy();
        debug!(service = %self.service, "subscription closed");
    }
}
