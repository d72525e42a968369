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

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::Shared;
use parking_lot::Mutex;
use rubbo_common::{BoxFuture, Protocol, RpcError, Url, keys};
use rubbo_metadata::{
    EMPTY_REVISION, Endpoint, InstancesWatch, MappingWatch, MetadataInfo, ServiceInfo,
    ServiceInstance, parse_mapping, parse_url_params,
};
use rubbo_registry::{
    PROVIDERS_CATEGORY, Registry, RegistryResult, SharedListener, empty_url, is_match,
    notify_safely, same_listener,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::Backend;
use super::metadata_service::{MetadataService as _, MetadataServiceClient};
use super::metadata_service_v2::{
    MetadataRequest, MetadataServiceV2 as _, MetadataServiceV2Client, from_v2,
};

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

/// The MetadataService URL of `instance`.
pub(crate) fn metadata_service_url(
    instance: &ServiceInstance,
    timeout: Duration,
) -> Result<Url, RpcError> {
    let mut params = parse_url_params(instance);
    let protocol = params
        .remove(keys::PROTOCOL_KEY)
        .unwrap_or_else(|| keys::defaults::PROTOCOL.to_owned());
    let port = params
        .remove(keys::PORT_KEY)
        .and_then(|p| p.trim().parse::<u16>().ok())
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
        let url = metadata_service_url(instance, self.timeout).map(|url| match version {
            MetadataVersion::V1 => url,
            MetadataVersion::V2 => url
                .with_path(keys::METADATA_SERVICE_V2_INTERFACE)
                .with_params([
                    (keys::INTERFACE_KEY, keys::METADATA_SERVICE_V2_INTERFACE),
                    (keys::VERSION_KEY, keys::METADATA_SERVICE_V2_VERSION),
                ]),
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

/// MetadataInfo by (application, revision), shared by every subscription.
pub(crate) type MetadataCache = Arc<Mutex<HashMap<(String, String), Arc<MetadataInfo>>>>;

/// A fetch of one revision's MetadataInfo, awaited by every subscription that wants it.
type SharedFetch = Shared<BoxFuture<'static, Result<Arc<MetadataInfo>, RpcError>>>;

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

/// The instances of one application: the watch, and the list read when it was
/// made, used until the watch reports (a ZooKeeper watch starts empty and fills in).
struct AppWatch {
    rx: InstancesWatch,
    seed: Option<Vec<Arc<ServiceInstance>>>,
}

impl AppWatch {
    fn current(&mut self) -> Vec<Arc<ServiceInstance>> {
        if self.rx.has_changed().unwrap_or(true) {
            self.seed = None;
        }
        let now = self.rx.borrow_and_update().to_vec();
        match &self.seed {
            Some(seed) if now.is_empty() => seed.clone(),
            _ => now,
        }
    }
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
    apps: Vec<HashMap<String, AppWatch>>,
    pending: HashMap<(String, String), Pending>,
    /// The addresses of each instance (app, id) at its last known revision.
    known: HashMap<(String, String), Vec<Url>>,
    skipped: BTreeSet<String>,
    last: Option<Vec<Url>>,
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
            apps: registry.backends.iter().map(|_| HashMap::new()).collect(),
            pending: HashMap::new(),
            known: HashMap::new(),
            skipped: BTreeSet::new(),
            last: None,
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
                            Ok(list) => Some(list.into_iter().map(Arc::new).collect()),
                            Err(e) => {
                                debug!(app = %app, error = %e, "instances not read yet");
                                None
                            }
                        }
                    };
                    self.apps[i].insert(app.clone(), AppWatch { rx, seed });
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
            // Closed watches are dropped, so a gone backend cannot spin the loop.
            for m in &mut self.mappings {
                if m.as_ref().is_some_and(|m| m.has_changed().is_err()) {
                    *m = None;
                }
            }
            for apps in &mut self.apps {
                apps.retain(|_, w| w.rx.has_changed().is_ok());
            }
            self.refresh(&listener).await;
        }
        debug!(interface = %self.interface, "application-level subscription closed");
    }

    /// Reads every instance, fetches the revisions not cached (and not waiting for a
    /// retry), and announces the addresses when they changed.
    async fn refresh(&mut self, listener: &SharedListener) {
        let mut instances: Vec<Arc<ServiceInstance>> = Vec::new();
        let mut seen: HashSet<(String, String)> = HashSet::new();
        for apps in &mut self.apps {
            for w in apps.values_mut() {
                for i in &w.current() {
                    if seen.insert((i.service_name.clone(), i.id())) {
                        instances.push(i.clone());
                    }
                }
            }
        }
        let now = Instant::now();
        let mut wanted: Vec<(String, String, Arc<ServiceInstance>)> = Vec::new();
        for i in &instances {
            let Some(rev) = i
                .revision()
                .filter(|r| !r.is_empty() && *r != EMPTY_REVISION)
            else {
                if self.skipped.insert(i.id()) {
                    warn!(app = %i.service_name, instance = %i.id(), "instance without a revision skipped");
                }
                continue;
            };
            let key = (i.service_name.clone(), rev.to_owned());
            if self.cache.lock().contains_key(&key)
                || self.pending.get(&key).is_some_and(|p| p.next > now)
                || wanted.iter().any(|(a, r, _)| *a == key.0 && *r == key.1)
            {
                continue;
            }
            wanted.push((key.0, key.1, i.clone()));
        }
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
                    let fetch: BoxFuture<'static, Result<Arc<MetadataInfo>, RpcError>> =
                        Box::pin(async move {
                            let r = match tokio::time::timeout(timeout, fut).await {
                                Ok(r) => r.map(Arc::new),
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
                    info!(app = %key.0, revision = %key.1, instance = %i.id(), services = info.services.len(), "metadata fetched");
                    self.pending.remove(&key);
                    self.cache.lock().insert(key, info);
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
        // Revisions no instance carries any more are not retried.
        self.pending.retain(|(app, rev), _| {
            instances
                .iter()
                .any(|i| i.service_name == *app && i.revision() == Some(rev.as_str()))
        });
        let mut known = HashMap::new();
        let mut urls: Vec<Url> = Vec::new();
        for i in &instances {
            let id = (i.service_name.clone(), i.id());
            let info = i.revision().and_then(|r| {
                self.cache
                    .lock()
                    .get(&(i.service_name.clone(), r.to_owned()))
                    .cloned()
            });
            let list = match info {
                Some(info) => provider_urls(
                    i,
                    &info,
                    &self.consumer,
                    &self.interface,
                    &mut self.templates,
                ),
                // Pending: the addresses of its previous revision, if any.
                None => match self.known.get(&id) {
                    Some(old) => old.clone(),
                    None => continue,
                },
            };
            urls.extend(list.iter().cloned());
            known.insert(id, list);
        }
        self.known = known;
        // Each URL written once, not at every comparison.
        let mut keyed: Vec<(String, Url)> =
            urls.into_iter().map(|u| (u.to_full_string(), u)).collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        keyed.dedup_by(|a, b| a.0 == b.0);
        let urls: Vec<Url> = keyed.into_iter().map(|(_, u)| u).collect();
        if self.last.as_ref() == Some(&urls) {
            return;
        }
        debug!(interface = %self.interface, providers = urls.len(), "application-level providers");
        self.last = Some(urls.clone());
        let list = if urls.is_empty() {
            vec![empty_url(&self.consumer, PROVIDERS_CATEGORY)]
        } else {
            urls
        };
        notify_safely(listener.as_ref(), list);
    }
}

/// How many revisions a subscription keeps URL templates for; past that the table is
/// emptied and refilled on demand (revisions come and go with rolling upgrades).
const MAX_TEMPLATE_REVISIONS: usize = 64;

/// The host the templates are built at; each instance's URL replaces it.
const TEMPLATE_HOST: &str = "0.0.0.0";

/// The provider URL templates of one subscription (its consumer and interface are
/// fixed), as Java's `InstanceAddressURL` shares the instance and the service info:
/// per (application, revision), the URL of each service of the interface that the
/// consumer takes, built once from the MetadataInfo; an instance's URL is then the
/// template at the instance's host and port ([`Url::with_address`]), sharing the
/// template's address base and parameter core: one small allocation per provider
/// URL, with no parse, parameter map or interning lookup per instance.
#[derive(Debug, Default)]
pub(crate) struct UrlTemplates {
    /// By application, then revision.
    by_revision: HashMap<String, HashMap<String, Vec<Template>>>,
    /// How many revisions `by_revision` holds.
    revisions: usize,
    /// The last `dubbo.endpoints` text parsed, and its endpoints: the instances of a
    /// fleet advertise the same text, so most instances cost a comparison.
    endpoints: Option<(String, Vec<Endpoint>)>,
}

/// One service's provider URL, at [`TEMPLATE_HOST`].
#[derive(Debug)]
struct Template {
    /// The service's key in [`MetadataInfo::services`].
    key: String,
    protocol: String,
    /// The service's own port (`ServiceInfo.port`), used when the instance has no
    /// endpoint for the protocol.
    service_port: Option<u16>,
    url: Url,
}

/// The templates of `info` for `consumer` and `interface` in `table` (holding
/// `count` revisions), built on first use; a known revision costs two lookups and
/// no allocation.
fn revision_templates<'a>(
    table: &'a mut HashMap<String, HashMap<String, Vec<Template>>>,
    count: &mut usize,
    instance: &ServiceInstance,
    info: &MetadataInfo,
    consumer: &Url,
    interface: &str,
) -> &'a [Template] {
    let app = instance.service_name.as_str();
    let revision = info
        .revision
        .as_deref()
        .or_else(|| instance.revision())
        .unwrap_or_default();
    let known = table.get(app).is_some_and(|r| r.contains_key(revision));
    if !known {
        if *count >= MAX_TEMPLATE_REVISIONS {
            table.clear();
            *count = 0;
        }
        let built = service_templates(info, consumer, interface);
        table
            .entry(app.to_owned())
            .or_default()
            .insert(revision.to_owned(), built);
        *count += 1;
    }
    table
        .get(app)
        .and_then(|r| r.get(revision))
        .map_or(&[], Vec::as_slice)
}

/// The template of each service of `info` that the consumer takes.
fn service_templates(info: &MetadataInfo, consumer: &Url, interface: &str) -> Vec<Template> {
    info.services
        .iter()
        .filter_map(|(key, s)| {
            let protocol = wanted_protocol(s, consumer, interface)?;
            let url = service_url(protocol, TEMPLATE_HOST, 0, s, interface)?;
            // The match does not depend on the address: decided once.
            is_match(consumer, &url).then(|| Template {
                key: key.clone(),
                protocol: protocol.to_owned(),
                service_port: u16::try_from(s.port).ok().filter(|p| *p > 0),
                url,
            })
        })
        .collect()
}

/// The endpoints `instance` advertises (`dubbo.endpoints`), parsed once per text.
fn instance_endpoints<'a>(
    last: &'a mut Option<(String, Vec<Endpoint>)>,
    instance: &ServiceInstance,
) -> &'a [Endpoint] {
    let text = instance
        .metadata
        .get(keys::ENDPOINTS)
        .map_or("", String::as_str);
    if last.as_ref().is_none_or(|(t, _)| t != text) {
        *last = Some((text.to_owned(), instance.endpoints()));
    }
    last.as_ref().map_or(&[], |(_, e)| e.as_slice())
}

/// The protocol of `s` when it is a service of `interface` the consumer takes (its
/// `protocol` parameter, when given, lists it).
fn wanted_protocol<'a>(s: &'a ServiceInfo, consumer: &Url, interface: &str) -> Option<&'a str> {
    if s.name.as_deref() != Some(interface) {
        return None;
    }
    let protocol = s.protocol.as_deref().unwrap_or(keys::defaults::PROTOCOL);
    let wanted = consumer
        .get_param(keys::PROTOCOL_KEY)
        .filter(|p| !p.trim().is_empty());
    match wanted {
        Some(list) if !list.split(',').map(str::trim).any(|p| p == protocol) => None,
        _ => Some(protocol),
    }
}

/// The provider URL of service `s` at `host:port`, parsed from its text.
fn service_url(
    protocol: &str,
    host: &str,
    port: u16,
    s: &ServiceInfo,
    interface: &str,
) -> Option<Url> {
    let path = s.path.as_deref().unwrap_or(interface);
    let Ok(url) = Url::parse(&format!("{protocol}://{host}:{port}/{path}")) else {
        debug!(host, port, "bad address skipped");
        return None;
    };
    let mut url = url
        .with_params(s.params.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .with_param(keys::INTERFACE_KEY, interface);
    if let Some(g) = s.group.as_deref().filter(|g| !g.is_empty()) {
        url = url.with_param(keys::GROUP_KEY, g);
    }
    if let Some(v) = s.version.as_deref().filter(|v| !v.is_empty()) {
        url = url.with_param(keys::VERSION_KEY, v);
    }
    Some(url.without_params(&[keys::CATEGORY_KEY]))
}

/// Whether `host` reads back as itself in `{protocol}://{host}:{port}/`, so that the
/// URL parsed from that text is the template at that address (an IPv6 or otherwise
/// unusual host takes the parse instead).
fn is_plain_host(host: &str) -> bool {
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// The provider URLs of `instance` for `consumer` from its application's metadata:
/// each service of `interface` matching the consumer's group, version and (when
/// given) protocol, at the instance host and the port of the service's protocol.
/// `templates` is the subscription's (one per consumer and interface): the URLs of a
/// revision are built once and each instance's derived from them by address.
pub(crate) fn provider_urls(
    instance: &ServiceInstance,
    info: &MetadataInfo,
    consumer: &Url,
    interface: &str,
    templates: &mut UrlTemplates,
) -> Vec<Url> {
    let UrlTemplates {
        by_revision,
        revisions,
        endpoints,
    } = templates;
    let list = revision_templates(by_revision, revisions, instance, info, consumer, interface);
    if list.is_empty() {
        return Vec::new();
    }
    let endpoints = instance_endpoints(endpoints, instance);
    let plain = is_plain_host(&instance.host);
    list.iter()
        .filter_map(|t| {
            let port = endpoints
                .iter()
                .find(|e| e.protocol == t.protocol)
                .map(|e| e.port)
                .or(t.service_port)
                .unwrap_or(instance.port);
            if plain {
                return Some(t.url.with_address(&instance.host, port));
            }
            let s = info.services.get(&t.key)?;
            service_url(&t.protocol, &instance.host, port, s, interface)
        })
        .collect()
}
