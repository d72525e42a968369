//! Application-level discovery, consumer side (Java's `ServiceDiscoveryRegistry` and
//! `ServiceInstancesChangedListener`): a [`Registry`] whose subscription finds the
//! applications of the interface (the mapping, watched, or `provided-by`), watches
//! their instances, fetches each distinct revision's MetadataInfo once (cached and
//! shared by every reference of the application), and announces the provider URLs
//! built from each instance's address and the service's parameters. The reference
//! then runs through the same directory, routers and load balancing as at interface
//! level.
//!
//! A failed fetch (an error, an unknown revision, a timeout) is logged once and
//! retried with backoff; the instance is kept pending and keeps the addresses of its
//! previous revision, so a bad instance never clears valid addresses.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::Shared;
use parking_lot::Mutex;
use rubbo_common::{BoxFuture, Protocol, RpcError, Url, keys};
use rubbo_metadata::{
    InstanceList, InstancesWatch, MappingWatch, MetadataInfo, ServiceInstance, parse_mapping,
    parse_url_params,
};
use rubbo_registry::{
    PROVIDERS_CATEGORY, Registry, RegistryResult, SharedListener, UrlDelta, empty_url,
    notify_delta_safely, notify_safely, same_listener,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::Backend;
use super::metadata_service::{MetadataService as _, MetadataServiceClient};
use super::metadata_service_v2::{
    MetadataRequest, MetadataServiceV2 as _, MetadataServiceV2Client, from_v2,
};
use super::small_map::SmallMap;
use super::templates::{RevisionServices, UrlTemplates, provider_urls};
use super::tracked::{self, AppInstances, ById, usable_revision};

/// The reference parameter naming the provider applications (skips the mapping).
pub(crate) const PROVIDED_BY_KEY: &str = "provided-by";

/// Fetches the MetadataInfo of one revision from an instance.
pub(crate) trait MetadataFetcher: Send + Sync + std::fmt::Debug + 'static {
    /// The MetadataInfo of `revision` as `instance` serves it.
    fn fetch(
        &self,
        instance: &ServiceInstance,
        revision: &str,
    ) -> BoxFuture<'static, Result<MetadataInfo, RpcError>>;
}

/// Calls `getMetadataInfo(revision)` of the instance's MetadataService V1 (group =
/// its application) with the protocol and port of `dubbo.metadata-service.url-params`
/// (else dubbo on the instance port), as Java's `MetadataUtils.getRemoteMetadata`; or
/// `GetMetadataInfo` of MetadataService V2 (version 2.0.0) when the instance
/// advertises `meta-v=2.0.0` and Triple in its url-params.
///
/// An instance of storage type `remote` is not asked: its MetadataInfo is read from
/// the metadata report (`/dubbo/metadata/{app}/{revision}` on ZooKeeper), as Java's
/// `MetadataUtils.getMetadata`.
#[derive(Debug)]
pub(crate) struct ServiceFetcher {
    pub(crate) protocols: Arc<rubbo_common::ExtensionTable<dyn Protocol>>,
    pub(crate) timeout: Duration,
    /// This application's `metadata-service-port` (Java's
    /// `StandardMetadataServiceURLBuilder`): where the MetadataService of an instance
    /// that advertises no url-params is called; unset, the instance port.
    pub(crate) metadata_service_port: Option<u16>,
    /// The metadata reports of storage type `remote` (the ZooKeeper registries).
    #[cfg(feature = "zookeeper")]
    pub(crate) reports: Vec<Arc<rubbo_registry_zookeeper::ZookeeperServiceDiscovery>>,
}

/// Whether `instance` keeps its MetadataInfo in the metadata report
/// (`dubbo.metadata.storage-type=remote`) instead of serving it.
fn is_remote(instance: &ServiceInstance) -> bool {
    instance
        .metadata
        .get(keys::METADATA_STORAGE_TYPE_PROPERTY_NAME)
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("remote"))
}

impl ServiceFetcher {
    /// Reads `revision` of `app` from the first metadata report that has it.
    fn read_report(
        &self,
        app: &str,
        revision: &str,
    ) -> BoxFuture<'static, Result<MetadataInfo, RpcError>> {
        let missing = format!("no metadata report holds /dubbo/metadata/{app}/{revision}");
        #[cfg(feature = "zookeeper")]
        {
            let reports = self.reports.clone();
            let (app, revision) = (app.to_owned(), revision.to_owned());
            Box::pin(async move {
                let mut error = None;
                for r in &reports {
                    match r.metadata(&app, &revision).await {
                        Ok(Some(info)) => return Ok(info),
                        Ok(None) => {}
                        Err(e) => error = Some(e.to_string()),
                    }
                }
                Err(RpcError::new(
                    rubbo_common::ErrorKind::Biz,
                    error.unwrap_or(missing),
                ))
            })
        }
        #[cfg(not(feature = "zookeeper"))]
        {
            Box::pin(async move { Err(RpcError::new(rubbo_common::ErrorKind::Biz, missing)) })
        }
    }
}

/// Which MetadataService a consumer calls on an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetadataVersion {
    /// `org.apache.dubbo.metadata.MetadataService` 1.0.0 (Hessian POJOs).
    V1,
    /// `org.apache.dubbo.metadata.MetadataServiceV2` 2.0.0 on Triple (protobuf).
    V2,
}

/// The MetadataService version to call on `instance`: V2 when its `meta-v` is 2.0.0
/// and its url-params name Triple (Java's `MetadataUtils.referMetadataService` goes by
/// `meta-v` alone; V2 is served on Triple only), else V1. An unknown `meta-v` is
/// logged and read as V1.
pub(crate) fn metadata_version(instance: &ServiceInstance) -> MetadataVersion {
    let meta_v = instance
        .metadata
        .get(keys::METADATA_SERVICE_VERSION_NAME)
        .map(|v| v.trim());
    match meta_v {
        Some(keys::METADATA_SERVICE_V2_VERSION) => {
            let params = parse_url_params(instance);
            if params.get(keys::PROTOCOL_KEY).map(String::as_str) == Some("tri") {
                MetadataVersion::V2
            } else {
                warn!(instance = %instance.id(), protocol = ?params.get(keys::PROTOCOL_KEY), "meta-v=2.0.0 without Triple in the MetadataService url-params: calling V1");
                MetadataVersion::V1
            }
        }
        None | Some("") | Some(keys::METADATA_SERVICE_VERSION) => MetadataVersion::V1,
        Some(other) => {
            warn!(instance = %instance.id(), meta_v = other, "unknown MetadataService version: calling V1");
            MetadataVersion::V1
        }
    }
}

/// The MetadataService URL of `instance`: from its url-params, else (as Java's
/// `StandardMetadataServiceURLBuilder` for an instance without them) dubbo on
/// `default_port` (the consumer's `metadata-service-port`) or the instance port.
pub(crate) fn metadata_service_url(
    instance: &ServiceInstance,
    timeout: Duration,
    default_port: Option<u16>,
) -> Result<Url, RpcError> {
    let mut params = parse_url_params(instance);
    let protocol = params
        .remove(keys::PROTOCOL_KEY)
        .unwrap_or_else(|| keys::defaults::PROTOCOL.to_owned());
    let port = params
        .remove(keys::PORT_KEY)
        .and_then(|p| p.trim().parse::<u16>().ok())
        .or(default_port.filter(|p| *p > 0))
        .unwrap_or(instance.port);
    params.remove(keys::SIDE_KEY);
    let url = Url::parse(&format!(
        "{protocol}://{}:{port}/{}",
        instance.host,
        keys::METADATA_SERVICE_INTERFACE
    ))
    .map_err(|e| {
        super::config_err(format!(
            "bad MetadataService address of {}: {e}",
            instance.id()
        ))
    })?;
    Ok(url
        .with_params(params.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .with_params([
            (keys::INTERFACE_KEY, keys::METADATA_SERVICE_INTERFACE),
            (keys::VERSION_KEY, keys::METADATA_SERVICE_VERSION),
            (keys::GROUP_KEY, instance.service_name.as_str()),
            (keys::SIDE_KEY, keys::CONSUMER_SIDE),
            (keys::CONNECTIONS_KEY, "1"),
            (keys::RETRIES_KEY, "0"),
            (keys::CHECK_KEY, "false"),
        ])
        .with_param(keys::TIMEOUT_KEY, timeout.as_millis().to_string()))
}

impl MetadataFetcher for ServiceFetcher {
    fn fetch(
        &self,
        instance: &ServiceInstance,
        revision: &str,
    ) -> BoxFuture<'static, Result<MetadataInfo, RpcError>> {
        if is_remote(instance) {
            return self.read_report(&instance.service_name, revision);
        }
        let version = metadata_version(instance);
        let url =
            metadata_service_url(instance, self.timeout, self.metadata_service_port).map(|url| {
                match version {
                    MetadataVersion::V1 => url,
                    MetadataVersion::V2 => url
                        .with_path(keys::METADATA_SERVICE_V2_INTERFACE)
                        .with_params([
                            (keys::INTERFACE_KEY, keys::METADATA_SERVICE_V2_INTERFACE),
                            (keys::VERSION_KEY, keys::METADATA_SERVICE_V2_VERSION),
                        ]),
                }
            });
        let protocols = self.protocols.clone();
        let revision = revision.to_owned();
        Box::pin(async move {
            let url = url?;
            let name = url
                .protocol()
                .unwrap_or(keys::defaults::PROTOCOL)
                .to_owned();
            let protocol = protocols
                .get(&name)
                .map_err(|e| super::config_err(e.to_string()))?;
            let invoker = protocol.refer(url).await?;
            let answer = match version {
                MetadataVersion::V1 => {
                    let client = MetadataServiceClient::new(invoker.clone());
                    client.get_metadata_info(Some(revision.clone())).await
                }
                MetadataVersion::V2 => {
                    let client = MetadataServiceV2Client::new(invoker.clone());
                    let request = MetadataRequest {
                        revision: revision.clone(),
                    };
                    client
                        .get_metadata_info(request)
                        .await
                        // An empty answer (no `version`) is no answer.
                        .map(|v2| Some(from_v2(v2)).filter(|i| i.revision.is_some()))
                        .map_err(RpcError::from)
                }
            };
            invoker.destroy();
            // An answer that names another revision is not this revision's.
            answer?
                .filter(|info| info.revision.as_deref().is_none_or(|r| r == revision))
                .ok_or_else(|| {
                    RpcError::new(
                        rubbo_common::ErrorKind::Biz,
                        format!("MetadataService does not know revision {revision}"),
                    )
                })
        })
    }
}

/// The retry schedule of failed fetches: `base`, doubled per failure up to `max`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Backoff {
    pub(crate) base: Duration,
    pub(crate) max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(30),
        }
    }
}

impl Backoff {
    fn after(&self, failures: u32) -> Duration {
        self.base
            .saturating_mul(1u32 << failures.saturating_sub(1).min(16))
            .min(self.max)
    }
}

/// What is kept of each fetched MetadataInfo (its services as URL templates) by
/// (application, revision), shared by every subscription. Never emptied: an
/// instance's URLs are made again from it when the instance changes.
pub(crate) type MetadataCache = Arc<Mutex<HashMap<(String, String), Arc<RevisionServices>>>>;

/// A fetch of one revision's MetadataInfo, awaited by every subscription that wants it.
type SharedFetch = Shared<BoxFuture<'static, Result<Arc<RevisionServices>, RpcError>>>;

/// The fetches under way by (application, revision), shared by every subscription:
/// the references of one application's interfaces, subscribing together, fetch each
/// revision once (Java's per-revision `MetadataInfo` cache).
type InFlight = Arc<Mutex<HashMap<(String, String), SharedFetch>>>;

/// The application-level registry of one application (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct ServiceDiscoveryRegistry {
    url: Url,
    backends: Vec<Backend>,
    fetcher: Arc<dyn MetadataFetcher>,
    cache: MetadataCache,
    in_flight: InFlight,
    backoff: Backoff,
    fetch_timeout: Duration,
    subscriptions: Mutex<Vec<(SharedListener, CancellationToken)>>,
    closing: CancellationToken,
    /// Where a service subscription is counted (`dubbo_registry_subscribe_service_num_*`).
    metrics: Option<rubbo_metrics::Metrics>,
}

impl ServiceDiscoveryRegistry {
    /// Over `backends`, fetching with `fetcher`.
    pub(crate) fn new(
        url: Url,
        backends: Vec<Backend>,
        fetcher: Arc<dyn MetadataFetcher>,
        backoff: Backoff,
        fetch_timeout: Duration,
    ) -> Self {
        ServiceDiscoveryRegistry {
            url,
            backends,
            fetcher,
            cache: MetadataCache::default(),
            in_flight: InFlight::default(),
            backoff,
            fetch_timeout,
            subscriptions: Mutex::new(Vec::new()),
            closing: CancellationToken::new(),
            metrics: None,
        }
    }

    /// Counts each service subscription, and its time, in `metrics` (Java's
    /// `dubbo_registry_subscribe_service_num_*` and
    /// `dubbo_subscribe_service_rt_milliseconds_*`, by registry cluster).
    pub(crate) fn with_metrics(mut self, metrics: Option<rubbo_metrics::Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// How many revisions are cached.
    #[cfg(test)]
    pub(crate) fn cached(&self) -> usize {
        self.cache.lock().len()
    }
}

impl Registry for ServiceDiscoveryRegistry {
    fn url(&self) -> &Url {
        &self.url
    }

    fn is_available(&self) -> bool {
        !self.closing.is_cancelled()
    }

    /// Consumers are not registered at application level (as in Java).
    fn register(&self, _url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async { Ok(()) })
    }

    fn unregister(&self, _url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async { Ok(()) })
    }

    /// Resolves the applications, fetches the metadata of every instance (bounded by
    /// the fetch timeout), announces the first list, then follows every change.
    fn subscribe(&self, url: Url, listener: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move {
            let token = self.closing.child_token();
            let started = std::time::Instant::now();
            let service = self.metrics.as_ref().map(|_| url.service_key());
            let mut sub = Watcher::start(self, url).await;
            sub.refresh(&listener).await;
            if let (Some(m), Some(service)) = (&self.metrics, service) {
                // The first list is announced (possibly empty, filled in later):
                // the subscription itself cannot fail here, as in Java.
                for b in &self.backends {
                    m.registry_op(
                        rubbo_metrics::RegistryOp::SubscribeService,
                        &b.cluster,
                        &service,
                        true,
                        started.elapsed(),
                    );
                }
            }
            self.subscriptions
                .lock()
                .push((listener.clone(), token.clone()));
            tokio::spawn(sub.run(listener, token));
            Ok(())
        })
    }

    fn unsubscribe(
        &self,
        _url: Url,
        listener: SharedListener,
    ) -> BoxFuture<'_, RegistryResult<()>> {
        self.subscriptions.lock().retain(|(l, token)| {
            let same = same_listener(l, &listener);
            if same {
                token.cancel();
            }
            !same
        });
        Box::pin(async { Ok(()) })
    }

    fn lookup(&self, _url: Url) -> BoxFuture<'_, RegistryResult<Vec<Url>>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn destroy(&self) -> BoxFuture<'_, ()> {
        self.closing.cancel();
        self.subscriptions.lock().clear();
        Box::pin(async {})
    }
}

/// A failed revision: when to try again, and how often it failed.
#[derive(Debug, Clone, Copy)]
struct Pending {
    failures: u32,
    next: Instant,
}

/// The instances of one application: the watch, the list read when it was made (used
/// until the watch reports: a ZooKeeper watch starts empty and fills in), and the list
/// the subscription last applied.
struct AppWatch {
    rx: InstancesWatch,
    seed: Option<InstanceList>,
    applied: InstanceList,
    /// The watch's sender is gone: its instances leave at the next refresh.
    closed: bool,
}

impl AppWatch {
    fn new(rx: InstancesWatch, seed: Option<Vec<ServiceInstance>>) -> Self {
        AppWatch {
            rx,
            seed: seed.map(|s| {
                let mut list: Vec<Arc<ServiceInstance>> = s.into_iter().map(Arc::new).collect();
                list.sort_by(|a, b| a.cmp_id(b));
                Arc::new(list)
            }),
            applied: InstanceList::default(),
            closed: false,
        }
    }

    fn current(&mut self) -> InstanceList {
        if self.closed {
            return InstanceList::default();
        }
        if self.rx.has_changed().unwrap_or(true) {
            self.seed = None;
        }
        let now = self.rx.borrow_and_update().clone();
        match &self.seed {
            Some(seed) if now.is_empty() => seed.clone(),
            _ => now,
        }
    }
}

/// Per backend, in backend order, the list of `app` a subscription applied last.
fn lists<'a>(
    apps: &'a [SmallMap<String, AppWatch>],
    app: &'a str,
) -> impl Iterator<Item = Option<&'a InstanceList>> + 'a {
    apps.iter().map(move |m| m.get(app).map(|w| &w.applied))
}

/// One subscription's state.
struct Watcher {
    consumer: Url,
    interface: String,
    backends: Vec<Backend>,
    fetcher: Arc<dyn MetadataFetcher>,
    cache: MetadataCache,
    in_flight: InFlight,
    backoff: Backoff,
    fetch_timeout: Duration,
    /// `None` with `provided-by`.
    mappings: Vec<Option<MappingWatch>>,
    /// Per backend: the application watches.
    apps: Vec<SmallMap<String, AppWatch>>,
    pending: HashMap<(String, String), Pending>,
    /// The instances followed, by application and id, with the addresses each gave
    /// (at its last known revision while its new one is pending).
    instances: SmallMap<String, AppInstances>,
    /// How many provider URLs the instances give (an address given by two
    /// instances counts twice).
    urls: usize,
    skipped: BTreeSet<String>,
    /// Whether the first list was announced.
    announced: bool,
    /// The provider URL templates by revision (see [`provider_urls`]).
    templates: UrlTemplates,
}

impl Watcher {
    async fn start(registry: &ServiceDiscoveryRegistry, consumer: Url) -> Self {
        let interface = consumer.service_interface().unwrap_or_default().to_owned();
        let provided_by = consumer
            .get_param(PROVIDED_BY_KEY)
            .map(parse_mapping)
            .filter(|a| !a.is_empty());
        let mut w = Watcher {
            consumer,
            interface,
            backends: registry.backends.clone(),
            fetcher: registry.fetcher.clone(),
            cache: registry.cache.clone(),
            in_flight: registry.in_flight.clone(),
            backoff: registry.backoff,
            fetch_timeout: registry.fetch_timeout,
            mappings: Vec::new(),
            apps: registry.backends.iter().map(|_| SmallMap::new()).collect(),
            pending: HashMap::new(),
            instances: SmallMap::new(),
            urls: 0,
            skipped: BTreeSet::new(),
            announced: false,
            templates: UrlTemplates::default(),
        };
        for (i, b) in w.backends.clone().iter().enumerate() {
            let apps = match &provided_by {
                Some(apps) => {
                    w.mappings.push(None);
                    apps.clone()
                }
                None => match b.mapping.watch_mapping(&w.interface).await {
                    Ok(mut m) => {
                        let apps = m.borrow_and_update().to_vec();
                        w.mappings.push(Some(m));
                        apps
                    }
                    Err(e) => {
                        warn!(interface = %w.interface, error = %e, "service-name mapping not readable");
                        w.mappings.push(None);
                        Vec::new()
                    }
                },
            };
            w.follow_apps(i, &apps).await;
        }
        info!(interface = %w.interface, apps = ?w.app_names(), "application-level subscription");
        w
    }

    fn app_names(&self) -> BTreeSet<String> {
        self.apps.iter().flat_map(|m| m.keys().cloned()).collect()
    }

    /// Watches the instances of `apps` on backend `i` (the ones not watched yet).
    async fn follow_apps(&mut self, i: usize, apps: &[String]) {
        for app in apps {
            if self.apps[i].contains_key(app) {
                continue;
            }
            let discovery = &self.backends[i].discovery;
            match discovery.watch(app).await {
                Ok(rx) => {
                    // A watch shared with another subscription already holds the list.
                    let filled = !rx.borrow().is_empty();
                    let seed = if filled {
                        None
                    } else {
                        match discovery.instances(app).await {
                            Ok(list) => Some(list),
                            Err(e) => {
                                debug!(app = %app, error = %e, "instances not read yet");
                                None
                            }
                        }
                    };
                    self.apps[i].insert(app.clone(), AppWatch::new(rx, seed));
                }
                Err(e) => warn!(app = %app, error = %e, "instances not watched"),
            }
        }
    }

    async fn run(mut self, listener: SharedListener, token: CancellationToken) {
        loop {
            let retry_at = self.pending.values().map(|p| p.next).min();
            let mut changes: Vec<BoxFuture<'_, Option<usize>>> = Vec::new();
            for (i, m) in self.mappings.iter_mut().enumerate() {
                if let Some(m) = m {
                    changes.push(Box::pin(m.changed().map(move |r| r.ok().map(|()| i))));
                }
            }
            for apps in &mut self.apps {
                for w in apps.values_mut() {
                    changes.push(Box::pin(
                        w.rx.changed().map(|r| r.ok().map(|()| usize::MAX)),
                    ));
                }
            }
            let any_change = async move {
                if changes.is_empty() {
                    std::future::pending::<()>().await;
                }
                let (r, _, _) = futures::future::select_all(changes).await;
                r
            };
            let retry = async {
                match retry_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let changed = tokio::select! {
                () = token.cancelled() => break,
                r = any_change => r,
                () = retry => None,
            };
            if let Some(i) = changed.filter(|i| *i != usize::MAX) {
                let apps = self.mappings[i]
                    .as_mut()
                    .map(|m| m.borrow_and_update().to_vec())
                    .unwrap_or_default();
                info!(interface = %self.interface, apps = ?apps, "service-name mapping changed");
                self.follow_apps(i, &apps).await;
            }
            // Closed watches are dropped (their instances leave), so a gone backend
            // cannot spin the loop.
            for m in &mut self.mappings {
                if m.as_ref().is_some_and(|m| m.has_changed().is_err()) {
                    *m = None;
                }
            }
            for apps in &mut self.apps {
                for w in apps.values_mut() {
                    w.closed |= w.rx.has_changed().is_err();
                }
            }
            self.refresh(&listener).await;
        }
        debug!(interface = %self.interface, "application-level subscription closed");
    }

    /// Applies what changed since the last refresh: the instances the watches added,
    /// changed or removed, and the revisions due for a retry. Fetches the revisions
    /// not cached (and not waiting for a retry), recomputes the addresses of the
    /// instances concerned only, and announces the change: the whole list the first
    /// time (and `empty://` whenever no address is left), else a delta.
    async fn refresh(&mut self, listener: &SharedListener) {
        // The instances to look at again (their application and id), sorted and
        // deduplicated below.
        let mut dirty: Vec<Arc<ServiceInstance>> = Vec::new();
        for apps in &mut self.apps {
            for (app, w) in apps.iter_mut() {
                let now = w.current();
                if Arc::ptr_eq(&now, &w.applied) {
                    continue;
                }
                // The list applied is where the version that counts is read
                // (`tracked::effective`): only the instances that changed are noted.
                let changed = tracked::changes(&w.applied, &now);
                dirty.extend(changed.removed);
                for i in changed.upserted {
                    // Read under the application it names, an instance listed under
                    // another one (a node whose JSON `name` is not its parent's, which
                    // Java never writes) is never found: said once, then skipped.
                    if i.service_name != *app {
                        if self.skipped.insert(format!("{app}/{}", i.id())) {
                            warn!(
                                app = %app,
                                instance = %i.id(),
                                name = %i.service_name,
                                "instance named for another application skipped"
                            );
                        }
                        continue;
                    }
                    dirty.push(i);
                }
                w.applied = now;
            }
            apps.retain(|_, w| !w.closed);
        }
        let now = Instant::now();
        // One instance per revision to fetch: a new one, or one due for a retry.
        let mut wanted: Vec<(String, String, Arc<ServiceInstance>)> = Vec::new();
        let mut want = |app: &str,
                        rev: &str,
                        i: &Arc<ServiceInstance>,
                        pending: &HashMap<(String, String), Pending>,
                        cache: &MetadataCache| {
            let key = (app.to_owned(), rev.to_owned());
            if cache.lock().contains_key(&key)
                || pending.get(&key).is_some_and(|p| p.next > now)
                || wanted.iter().any(|(a, r, _)| *a == key.0 && *r == key.1)
            {
                return;
            }
            wanted.push((key.0, key.1, i.clone()));
        };
        let same = |a: &Arc<ServiceInstance>, b: &Arc<ServiceInstance>| {
            a.service_name
                .cmp(&b.service_name)
                .then_with(|| a.cmp_id(b))
        };
        dirty.sort_by(same);
        dirty.dedup_by(|a, b| same(a, b).is_eq());
        for d in &dirty {
            let Some(i) = tracked::effective(lists(&self.apps, &d.service_name), d) else {
                continue;
            };
            match usable_revision(i) {
                Some(rev) => want(&d.service_name, rev, i, &self.pending, &self.cache),
                None => {
                    if self.skipped.insert(i.id()) {
                        warn!(app = %i.service_name, instance = %i.id(), "instance without a revision skipped");
                    }
                }
            }
        }
        for (app, rev) in self
            .pending
            .iter()
            .filter(|(_, p)| p.next <= now)
            .map(|(k, _)| k)
        {
            // An instance that carried it when last recomputed and still does (one
            // that changed since is among `dirty`, looked at above).
            let carrier = self.instances.get(app).and_then(|a| {
                a.by_id
                    .keys()
                    .filter(|id| usable_revision(&id.0) == Some(rev.as_str()))
                    .filter_map(|id| tracked::effective(lists(&self.apps, app), &id.0))
                    .find(|i| usable_revision(i) == Some(rev.as_str()))
            });
            if let Some(i) = carrier {
                want(app, rev, i, &self.pending, &self.cache);
            }
        }
        // Cached meanwhile by another subscription: no fetch, but the instances of
        // the revision are looked at again.
        let mut fetched: Vec<(String, String)> = self
            .pending
            .keys()
            .filter(|k| self.cache.lock().contains_key(*k))
            .cloned()
            .collect();
        let fetches = wanted.into_iter().map(|(app, rev, i)| {
            let key = (app.clone(), rev.clone());
            let fetch = self
                .in_flight
                .lock()
                .entry(key.clone())
                .or_insert_with(|| {
                    let fut = self.fetcher.fetch(&i, &rev);
                    let timeout = self.fetch_timeout;
                    let (in_flight, cache) = (self.in_flight.clone(), self.cache.clone());
                    let fetch: BoxFuture<'static, Result<Arc<RevisionServices>, RpcError>> =
                        Box::pin(async move {
                            let r = match tokio::time::timeout(timeout, fut).await {
                                // Only the services' URL templates are kept.
                                Ok(r) => r.map(|info| Arc::new(RevisionServices::new(&info))),
                                Err(_) => Err(RpcError::timeout(format!(
                                    "getMetadataInfo took over {timeout:?}"
                                ))),
                            };
                            // Cached before it leaves the fetches under way: no gap
                            // in which another subscription would fetch it again.
                            if let Ok(info) = &r {
                                cache.lock().insert(key.clone(), info.clone());
                            }
                            in_flight.lock().remove(&key);
                            r
                        });
                    fetch.shared()
                })
                .clone();
            async move { (app, rev, i, fetch.await) }
        });
        for (app, rev, i, r) in futures::future::join_all(fetches).await {
            let key = (app, rev);
            match r {
                Ok(info) => {
                    info!(app = %key.0, revision = %key.1, instance = %i.id(), services = info.len(), "metadata fetched");
                    self.cache.lock().insert(key.clone(), info);
                    fetched.push(key);
                }
                Err(e) => {
                    let failures = self.pending.get(&key).map_or(0, |p| p.failures) + 1;
                    let wait = self.backoff.after(failures);
                    if failures == 1 {
                        warn!(app = %key.0, revision = %key.1, instance = %i.id(), error = %e, retry_in = ?wait, "metadata not fetched; the instance is pending and retried");
                    } else {
                        debug!(app = %key.0, revision = %key.1, failures, error = %e, "metadata retry failed");
                    }
                    self.pending.insert(
                        key,
                        Pending {
                            failures,
                            next: Instant::now() + wait,
                        },
                    );
                }
            }
        }
        // A revision now known: every instance carrying it gets its addresses.
        let mut more = false;
        for key in fetched {
            self.pending.remove(&key);
            if let Some(a) = self.instances.get(&key.0) {
                for id in a.carrying(&key.1) {
                    dirty.push(id.0);
                    more = true;
                }
            }
        }
        if more {
            dirty.sort_by(same);
            dirty.dedup_by(|a, b| same(a, b).is_eq());
        }
        let (mut added, mut removed) = (Vec::new(), Vec::new());
        for d in dirty {
            self.recompute(d, &mut added, &mut removed);
        }
        // Revisions no instance carries any more are not retried.
        let instances = &self.instances;
        self.pending.retain(|(app, rev), _| {
            instances
                .get(app)
                .is_some_and(|a| a.revisions.contains_key(rev))
        });
        self.instances.retain(|_, a| !a.by_id.is_empty());
        for a in self.instances.values_mut() {
            a.by_id.trim();
        }
        self.announce(listener, added, removed);
    }

    /// Recomputes the addresses of the instance of `at`'s application and id from the
    /// version that counts (a pending revision keeps the previous addresses), noting
    /// what changed as (instance of that application and id, URL).
    fn recompute(
        &mut self,
        at: Arc<ServiceInstance>,
        added: &mut Vec<(ById, Url)>,
        removed: &mut Vec<(ById, Url)>,
    ) {
        let effective = tracked::effective(lists(&self.apps, &at.service_name), &at).cloned();
        let a = match self.instances.get_mut(&at.service_name) {
            Some(a) => a,
            None if effective.is_some() => self
                .instances
                .get_or_insert_with(at.service_name.clone(), AppInstances::default),
            None => return,
        };
        let id = ById(at);
        // Set again below under the version that counts, so that the table holds that
        // version, not an older one.
        let (old, mut urls) = match a.by_id.held(&id) {
            Some((k, urls)) => (Some(k), urls),
            None if effective.is_some() => (None, Vec::new()),
            None => return,
        };
        let (mut gone, mut new) = (Vec::new(), Vec::new());
        match &effective {
            None => gone = std::mem::take(&mut urls),
            Some(i) => {
                let info = usable_revision(i).and_then(|r| {
                    self.cache
                        .lock()
                        .get(&(i.service_name.clone(), r.to_owned()))
                        .cloned()
                        .map(|info| (r, info))
                });
                // Pending: the addresses of its previous revision, if any.
                if let Some((revision, info)) = info {
                    let list = provider_urls(
                        i,
                        revision,
                        &info,
                        &self.consumer,
                        &self.interface,
                        &mut self.templates,
                    );
                    tracked::url_changes(&urls, &list, &mut gone, &mut new);
                    urls = list;
                }
            }
        }
        a.recount(old.as_deref(), effective.as_deref());
        a.by_id.set(&id.0, effective.map(|e| (ById(e), urls)));
        self.urls = self.urls + new.len() - gone.len();
        added.extend(new.into_iter().map(|u| (id.clone(), u)));
        removed.extend(gone.into_iter().map(|u| (id.clone(), u)));
    }

    /// Whether an instance of another application with the same id as `id` gives
    /// `url` (one address announced by two applications).
    fn given_elsewhere(&self, id: &ById, url: &Url) -> bool {
        self.instances
            .iter()
            .filter(|(a, _)| **a != id.0.service_name)
            .any(|(_, a)| a.by_id.get(id).is_some_and(|urls| urls.contains(url)))
    }

    /// The whole list: every address once, in the order of their full strings.
    fn full_list(&self) -> Vec<Url> {
        let mut keyed: Vec<(String, &Url)> = self
            .instances
            .values()
            .flat_map(|a| a.by_id.urls())
            .map(|u| (u.to_full_string(), u))
            .collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        keyed.dedup_by(|a, b| a.0 == b.0);
        if keyed.is_empty() {
            return vec![empty_url(&self.consumer, PROVIDERS_CATEGORY)];
        }
        // A new vector of the right size: collecting from `keyed.into_iter()` would
        // reuse its allocation (four times the size), which the listener then keeps.
        let mut list = Vec::with_capacity(keyed.len());
        list.extend(keyed.iter().map(|(_, u)| (*u).clone()));
        list
    }

    /// Announces the first list whole, `empty://` when no address is left, else the
    /// change.
    fn announce(
        &mut self,
        listener: &SharedListener,
        added: Vec<(ById, Url)>,
        removed: Vec<(ById, Url)>,
    ) {
        if !self.announced {
            self.announced = true;
            let list = self.full_list();
            debug!(interface = %self.interface, providers = self.urls, "application-level providers");
            notify_safely(listener.as_ref(), list);
            return;
        }
        if added.is_empty() && removed.is_empty() {
            return;
        }
        if self.urls == 0 {
            debug!(interface = %self.interface, "no application-level provider left");
            notify_safely(
                listener.as_ref(),
                vec![empty_url(&self.consumer, PROVIDERS_CATEGORY)],
            );
            return;
        }
        // New vectors of the right size (see `full_list`).
        let mut delta = UrlDelta {
            removed: Vec::with_capacity(removed.len()),
            added: Vec::with_capacity(added.len()),
        };
        delta.removed.extend(
            removed
                .into_iter()
                .filter(|(id, u)| !self.given_elsewhere(id, u))
                .map(|(_, u)| u),
        );
        delta.added.extend(added.into_iter().map(|(_, u)| u));
        if delta.is_empty() {
            return;
        }
        debug!(interface = %self.interface, providers = self.urls, added = delta.added.len(), removed = delta.removed.len(), "application-level providers changed");
        notify_delta_safely(listener.as_ref(), delta, &|| self.full_list());
    }
}
