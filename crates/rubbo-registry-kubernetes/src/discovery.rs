//! `KubernetesServiceDiscovery`: application-level discovery on the Kubernetes API
//! (Java's `KubernetesServiceDiscovery`, on EndpointSlices).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::watcher as watch_stream;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource, ResourceExt};
use parking_lot::Mutex;
use rubbo_common::{BoxFuture, Url};
use rubbo_metadata::{
    InstanceList, InstancesWatch, MappingWatch, MetadataInterner, MetadataResult, ServiceDiscovery,
    ServiceInstance, ServiceNameMapping, shared_instances,
};
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

use crate::config::{Settings, client_config};
use crate::error::KubernetesError;
use crate::parse::{
    METADATA_ANNOTATION, ReadyAddress, SERVICE_NAME_LABEL, Skipped, endpoints_addresses,
    instances_shared, metadata_json, slice_addresses,
};

/// Application-level discovery on Kubernetes (`kubernetes://`): an application is a
/// Service of the namespace, its instances the ready endpoints of the Service.
///
/// - Consumer ([`watch`](ServiceDiscovery::watch)): watches the Service's
///   EndpointSlices (label `kubernetes.io/service-name`; the Endpoints object on a
///   server without EndpointSlices), the Service (its selector) and the Pods it
///   selects. An instance is a ready, serving, non-terminating endpoint address and
///   port whose Pod carries the `io.dubbo/metadata` annotation; its metadata is the
///   annotation's JSON. Watches request bookmarks and resume from the last resource
///   version; a 410 Gone lists again; a lost connection watches again after a backoff
///   (200 ms doubling to `watch.max-backoff`, 5 s). The last instance list stays
///   while the API server is away. Slices without ports, endpoints without a Pod and
///   Pods with a missing or garbage annotation are logged and skipped.
/// - Provider ([`register`](ServiceDiscovery::register)): writes the instance
///   metadata as the annotation of its own Pod (`POD_NAME`, else `HOSTNAME`), retried
///   in the background until the API server takes it;
///   [`unregister`](ServiceDiscovery::unregister) removes the annotation. The Pod's
///   readiness is what puts the address in the EndpointSlice.
/// - Mapping: none, as Java's extension has none: [`ServiceNameMapping::map`] does
///   nothing and [`get`](ServiceNameMapping::get) finds no application, so references
///   name their applications with `provided-by`.
pub struct KubernetesServiceDiscovery {
    inner: Arc<Inner>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

struct Inner {
    client: Client,
    namespace: String,
    settings: Settings,
    /// The instance watches, one per application, shared by every caller.
    watches: Mutex<HashMap<String, InstancesWatch>>,
    /// What the Pod annotation should be: generation, and `Some(value)` / `None`
    /// (removed); generation 0 = nothing asked yet.
    desired: watch::Sender<(u64, Option<String>)>,
    /// The last generation written on the Pod.
    acked: watch::Sender<u64>,
}

impl fmt::Debug for KubernetesServiceDiscovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubernetesServiceDiscovery")
            .field("namespace", &self.inner.namespace)
            .field("pod", &self.inner.settings.pod_name)
            .field("watches", &self.inner.watches.lock().len())
            .finish()
    }
}

/// Reconnection waits: 200 ms doubling up to a maximum, reset on success (the watch
/// is retried for as long as it lives).
#[derive(Debug, Clone)]
struct Reconnect {
    next: Duration,
    max: Duration,
}

impl Reconnect {
    const FIRST: Duration = Duration::from_millis(200);

    fn new(max: Duration) -> Self {
        Reconnect {
            next: Self::FIRST,
            max,
        }
    }

    /// The next wait.
    fn wait(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.max);
        d
    }

    fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

impl KubernetesServiceDiscovery {
    /// A discovery on the API server of `url` (see [`client_config`] for what the URL
    /// may say). Nothing is asked of the server until the first
    /// [`watch`](ServiceDiscovery::watch) or [`register`](ServiceDiscovery::register).
    pub async fn connect(url: &Url) -> Result<Self, KubernetesError> {
        let config = client_config(url).await?;
        let namespace = config.default_namespace.clone();
        let client = Client::try_from(config).map_err(|e| KubernetesError::Api {
            what: "client".into(),
            source: e,
        })?;
        Ok(Self::with_client(client, namespace, Settings::of(url)))
    }

    /// A discovery with a client made elsewhere.
    pub fn with_client(client: Client, namespace: String, settings: Settings) -> Self {
        let (desired, desired_rx) = watch::channel((0, None));
        let inner = Arc::new(Inner {
            client,
            namespace: settings.namespace.clone().unwrap_or(namespace),
            settings,
            watches: Mutex::new(HashMap::new()),
            desired,
            acked: watch::channel(0).0,
        });
        let publisher = tokio::spawn(publish_loop(inner.clone(), desired_rx));
        KubernetesServiceDiscovery {
            inner,
            tasks: Mutex::new(vec![publisher]),
        }
    }

    /// The namespace of the Services and Pods.
    pub fn namespace(&self) -> &str {
        &self.inner.namespace
    }

    /// Asks for the annotation to become `value` (`None`: removed) and waits up to
    /// the timeout for the API server to take it.
    async fn publish(&self, value: Option<String>) -> Result<(), KubernetesError> {
        let pod = self
            .inner
            .settings
            .pod_name
            .clone()
            .ok_or(KubernetesError::NoPodName)?;
        let mut generation = 0;
        self.inner.desired.send_modify(|(g, v)| {
            *g += 1;
            generation = *g;
            *v = value;
        });
        let mut acked = self.inner.acked.subscribe();
        let timeout = self.inner.settings.timeout;
        match tokio::time::timeout(timeout, acked.wait_for(|a| *a >= generation)).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(KubernetesError::NotPublished {
                pod,
                millis: timeout.as_millis(),
            }),
        }
    }

    fn stop(&self) {
        for t in self.tasks.lock().drain(..) {
            t.abort();
        }
        self.inner.watches.lock().clear();
    }
}

impl Drop for KubernetesServiceDiscovery {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Inner {
    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Merge-patches this Pod's annotation to `value` (`None` removes it; an absent
    /// Pod has nothing to remove).
    async fn patch_annotation(
        &self,
        pod: &str,
        value: Option<&str>,
    ) -> Result<(), KubernetesError> {
        let patch = json!({ "metadata": { "annotations": { METADATA_ANNOTATION: value } } });
        match self
            .pods()
            .patch(pod, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if value.is_none() && s.is_not_found() => Ok(()),
            Err(e) => Err(KubernetesError::Api {
                what: format!("patch Pod {}/{pod}", self.namespace),
                source: e,
            }),
        }
    }

    /// Whether the server serves EndpointSlices (`discovery.k8s.io/v1`); a 404 means
    /// no, any other failure is taken as yes (every supported server has them).
    async fn serves_slices(&self) -> bool {
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), &self.namespace);
        match api.list(&ListParams::default().limit(1)).await {
            Err(kube::Error::Api(s)) if s.code == 404 => {
                info!(namespace = %self.namespace, "no EndpointSlices on this API server: watching Endpoints");
                false
            }
            _ => true,
        }
    }
}

/// Writes the desired annotation on the Pod, retrying with backoff until it is taken
/// or a newer one is asked for.
async fn publish_loop(inner: Arc<Inner>, mut rx: watch::Receiver<(u64, Option<String>)>) {
    loop {
        let (generation, value) = rx.borrow_and_update().clone();
        if generation > 0 {
            if let Some(pod) = inner.settings.pod_name.clone() {
                let mut backoff = Reconnect::new(inner.settings.max_backoff);
                let mut newer = false;
                loop {
                    match inner.patch_annotation(&pod, value.as_deref()).await {
                        Ok(()) => {
                            if value.is_some() {
                                info!(pod = %pod, namespace = %inner.namespace, "instance metadata written on the Pod");
                            } else {
                                info!(pod = %pod, namespace = %inner.namespace, "instance metadata removed from the Pod");
                            }
                            inner.acked.send_replace(generation);
                            break;
                        }
                        Err(e) => {
                            warn!(pod = %pod, error = %e, "Pod not annotated yet; retrying");
                            let wait = backoff.wait();
                            tokio::select! {
                                () = tokio::time::sleep(wait) => {}
                                changed = rx.changed() => {
                                    if changed.is_err() {
                                        return;
                                    }
                                    newer = true;
                                    break;
                                }
                            }
                        }
                    }
                }
                if newer {
                    continue;
                }
            }
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
}

/// The objects of one watch, by name, swapped whole at the end of each (re)list.
struct Store<K> {
    items: HashMap<String, K>,
    relist: Option<HashMap<String, K>>,
    /// A first list is complete.
    ready: bool,
}

impl<K: Resource> Store<K> {
    fn new() -> Self {
        Store {
            items: HashMap::new(),
            relist: None,
            ready: false,
        }
    }

    /// Applies one event; whether the items changed.
    fn apply(&mut self, event: Event<K>) -> bool {
        match event {
            Event::Init => {
                self.relist = Some(HashMap::new());
                false
            }
            Event::InitApply(o) => {
                let buffer = self.relist.get_or_insert_with(HashMap::new);
                buffer.insert(o.name_any(), o);
                false
            }
            Event::InitDone => {
                self.items = self.relist.take().unwrap_or_default();
                self.ready = true;
                true
            }
            Event::Apply(o) => {
                self.items.insert(o.name_any(), o);
                true
            }
            Event::Delete(o) => {
                self.items.remove(&o.name_any());
                true
            }
        }
    }
}

type Events<K> = BoxStream<'static, Result<Event<K>, watcher::Error>>;

/// Only a Pod's metadata is read (its name and the `io.dubbo/metadata` annotation:
/// readiness and addresses come from the EndpointSlices), so its spec and status are
/// not kept: they are most of a Pod's size.
fn slim_pod(pod: &mut Pod) {
    pod.spec = None;
    pod.status = None;
}

/// The watch of `api`, waiting [`Reconnect`] before polling again after an error. The
/// waits reset on an object or the end of a list, not on `Init` (which the watcher
/// yields before each list attempt: a reset there would never let the wait grow).
fn watch_of<K>(api: Api<K>, config: watcher::Config, max: Duration) -> Events<K>
where
    K: Resource + Clone + serde::de::DeserializeOwned + fmt::Debug + Send + 'static,
{
    // What is kept of each object is what the discovery reads: `managedFields` (the
    // server-side apply bookkeeping, often the largest part of an object) is dropped.
    let events = watch_stream(api, config)
        .map(|r| r.map(|e| e.modify(|o| o.meta_mut().managed_fields = None)))
        .boxed();
    futures::stream::unfold(
        (events, Reconnect::new(max), false),
        |(mut events, mut backoff, failed)| async move {
            if failed {
                tokio::time::sleep(backoff.wait()).await;
            }
            let item = events.next().await?;
            let failed = match &item {
                Err(_) => true,
                Ok(Event::Init) => false,
                Ok(_) => {
                    backoff.reset();
                    false
                }
            };
            Some((item, (events, backoff, failed)))
        },
    )
    .boxed()
}

/// The address source of one Service.
enum Addresses {
    Slices(Store<EndpointSlice>),
    Endpoints(Store<Endpoints>),
}

impl Addresses {
    fn ready(&self) -> bool {
        match self {
            Addresses::Slices(s) => s.ready,
            Addresses::Endpoints(s) => s.ready,
        }
    }

    fn collect(&self, skipped: &mut Vec<Skipped>) -> Vec<ReadyAddress> {
        let mut out = Vec::new();
        match self {
            Addresses::Slices(s) => {
                for slice in s.items.values() {
                    match slice_addresses(slice) {
                        Ok(a) => out.extend(a),
                        Err(e) => skipped.push(e),
                    }
                }
            }
            Addresses::Endpoints(s) => {
                for e in s.items.values() {
                    let (a, sk) = endpoints_addresses(e);
                    out.extend(a);
                    skipped.extend(sk);
                }
            }
        }
        out
    }
}

/// The label selector of a Service's `spec.selector` (`None`: no selector).
fn selector_of(service: Option<&Service>) -> Option<String> {
    let sel = service?.spec.as_ref()?.selector.as_ref()?;
    if sel.is_empty() {
        return None;
    }
    let sorted: BTreeMap<&String, &String> = sel.iter().collect();
    Some(
        sorted
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(","),
    )
}

/// Logs a watch failure once per outage, and the recovery.
struct Health {
    what: &'static str,
    down: bool,
}

impl Health {
    fn ok(&mut self, app: &str) {
        if self.down {
            info!(app = %app, watch = self.what, "watch resumed");
            self.down = false;
        }
    }

    fn failed(&mut self, app: &str, e: &watcher::Error) {
        if self.down {
            debug!(app = %app, watch = self.what, error = %e, "watch still failing");
        } else {
            warn!(app = %app, watch = self.what, error = %e, "watch failed; keeping the last instances and watching again");
            self.down = true;
        }
    }
}

/// Follows one application until `tx` has no receiver left.
async fn follow(
    inner: Arc<Inner>,
    app: String,
    tx: watch::Sender<InstanceList>,
    ready: watch::Sender<bool>,
) {
    let max = inner.settings.max_backoff;
    let ns = inner.namespace.clone();
    let client = inner.client.clone();
    let by_name = format!("metadata.name={app}");
    let (mut addresses, mut address_events): (
        Addresses,
        BoxStream<'static, Result<AddressEvent, watcher::Error>>,
    ) = if inner.serves_slices().await {
        let cfg = watcher::Config::default().labels(&format!("{SERVICE_NAME_LABEL}={app}"));
        (
            Addresses::Slices(Store::new()),
            watch_of(
                Api::<EndpointSlice>::namespaced(client.clone(), &ns),
                cfg,
                max,
            )
            .map(|r| r.map(AddressEvent::Slice))
            .boxed(),
        )
    } else {
        let cfg = watcher::Config::default().fields(&by_name);
        (
            Addresses::Endpoints(Store::new()),
            watch_of(Api::<Endpoints>::namespaced(client.clone(), &ns), cfg, max)
                .map(|r| r.map(AddressEvent::Endpoints))
                .boxed(),
        )
    };
    let mut services: Store<Service> = Store::new();
    let mut service_events = watch_of(
        Api::<Service>::namespaced(client.clone(), &ns),
        watcher::Config::default().fields(&by_name),
        max,
    );
    let mut pods: Store<Pod> = Store::new();
    let mut pod_events: Option<Events<Pod>> = None;
    // The selector the Pod watch was started with (`Some(None)`: all Pods).
    let mut pod_selector: Option<Option<String>> = None;
    let mut health = [
        Health {
            what: "endpoints",
            down: false,
        },
        Health {
            what: "service",
            down: false,
        },
        Health {
            what: "pods",
            down: false,
        },
    ];
    let mut last_skipped: HashSet<Skipped> = HashSet::new();
    // The metadata texts the application's instances share, across its lists.
    let mut interner = MetadataInterner::default();
    loop {
        let changed = tokio::select! {
            () = tx.closed() => return,
            e = address_events.next() => match e {
                Some(Ok(e)) => {
                    if !matches!(e, AddressEvent::Slice(Event::Init) | AddressEvent::Endpoints(Event::Init)) {
                        health[0].ok(&app);
                    }
                    match (&mut addresses, e) {
                        (Addresses::Slices(s), AddressEvent::Slice(e)) => s.apply(e),
                        (Addresses::Endpoints(s), AddressEvent::Endpoints(e)) => s.apply(e),
                        _ => false,
                    }
                }
                Some(Err(e)) => { health[0].failed(&app, &e); false }
                None => return,
            },
            e = service_events.next() => match e {
                Some(Ok(e)) => {
                    if !matches!(e, Event::Init) {
                        health[1].ok(&app);
                    }
                    let changed = services.apply(e);
                    if services.ready {
                        let selector = selector_of(services.items.get(&app));
                        let exists = services.items.contains_key(&app);
                        let want = exists.then_some(selector);
                        if want != pod_selector {
                            match &want {
                                Some(sel) => {
                                    if pod_selector.is_some() {
                                        info!(app = %app, selector = sel.as_deref().unwrap_or("<all Pods>"), "Service selector changed: watching its Pods again");
                                    }
                                    let mut cfg = watcher::Config::default();
                                    if let Some(sel) = sel {
                                        cfg = cfg.labels(sel);
                                    }
                                    pod_events = Some(watch_of(Api::<Pod>::namespaced(client.clone(), &ns), cfg, max));
                                }
                                None => pod_events = None,
                            }
                            pod_selector = want;
                        }
                    }
                    changed
                }
                Some(Err(e)) => { health[1].failed(&app, &e); false }
                None => return,
            },
            e = next_or_pending(&mut pod_events) => match e {
                Some(Ok(e)) => {
                    if !matches!(e, Event::Init) {
                        health[2].ok(&app);
                    }
                    pods.apply(e.modify(slim_pod))
                }
                Some(Err(e)) => { health[2].failed(&app, &e); false }
                None => { pod_events = None; false }
            },
        };
        // Pods are complete once listed, or at once when the Service is absent.
        let pods_ready = pods.ready || (services.ready && pod_selector.is_none());
        if !changed || !addresses.ready() || !services.ready || !pods_ready {
            continue;
        }
        let mut skipped = Vec::new();
        let addrs = addresses.collect(&mut skipped);
        let (list, sk) = instances_shared(&app, &addrs, &pods.items, &mut interner);
        skipped.extend(sk);
        let now: HashSet<Skipped> = skipped.into_iter().collect();
        for s in now.difference(&last_skipped) {
            warn!(app = %app, reason = %s, "skipped an endpoint of the Service");
        }
        last_skipped = now;
        let count = list.len();
        let sent = tx.send_if_modified(|cur| {
            // Unchanged instances keep their `Arc` (see `InstanceList`).
            let list = shared_instances(cur, list);
            if **cur == list {
                false
            } else {
                *cur = Arc::new(list);
                true
            }
        });
        if sent {
            info!(app = %app, namespace = %ns, instances = count, "instances changed");
        }
        ready.send_replace(true);
    }
}

enum AddressEvent {
    Slice(Event<EndpointSlice>),
    Endpoints(Event<Endpoints>),
}

async fn next_or_pending<K>(s: &mut Option<Events<K>>) -> Option<Result<Event<K>, watcher::Error>> {
    match s {
        Some(s) => s.next().await,
        None => std::future::pending().await,
    }
}

impl ServiceDiscovery for KubernetesServiceDiscovery {
    fn register(&self, instance: ServiceInstance) -> BoxFuture<'_, MetadataResult<()>> {
        Box::pin(async move {
            if !self.inner.settings.enable_register {
                debug!(instance = %instance.id(), "enableRegister=false: the Pod is not annotated");
                return Ok(());
            }
            Ok(self
                .publish(Some(metadata_json(&instance.metadata)))
                .await?)
        })
    }

    fn unregister(&self, instance: &ServiceInstance) -> BoxFuture<'_, MetadataResult<()>> {
        let id = instance.id();
        Box::pin(async move {
            if !self.inner.settings.enable_register || self.inner.desired.borrow().0 == 0 {
                debug!(instance = %id, "nothing registered on the Pod");
                return Ok(());
            }
            Ok(self.publish(None).await?)
        })
    }

    fn instances(&self, app: &str) -> BoxFuture<'_, MetadataResult<Vec<ServiceInstance>>> {
        let app = app.to_owned();
        Box::pin(async move {
            let rx = self.watch(&app).await?;
            let list = rx
                .borrow()
                .iter()
                .map(|i| ServiceInstance::clone(i))
                .collect();
            Ok(list)
        })
    }

    fn watch(&self, app: &str) -> BoxFuture<'_, MetadataResult<InstancesWatch>> {
        let app = app.to_owned();
        Box::pin(async move {
            let existing = self
                .inner
                .watches
                .lock()
                .get(&app)
                .filter(|rx| rx.has_changed().is_ok())
                .cloned();
            if let Some(rx) = existing {
                return Ok(rx);
            }
            let (tx, rx) = watch::channel(Arc::new(Vec::new()));
            let (ready_tx, mut ready) = watch::channel(false);
            let task = tokio::spawn(follow(self.inner.clone(), app.clone(), tx, ready_tx));
            self.tasks.lock().push(task);
            self.inner.watches.lock().insert(app.clone(), rx.clone());
            let timeout = self.inner.settings.timeout;
            if tokio::time::timeout(timeout, ready.wait_for(|r| *r))
                .await
                .is_err()
            {
                warn!(app = %app, namespace = %self.inner.namespace, ?timeout, "no complete instance list yet; it follows when the API server answers");
            }
            Ok(rx)
        })
    }

    fn destroy(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let registered = self.inner.desired.borrow().1.is_some();
            if registered && self.inner.settings.enable_register {
                if let Err(e) = self.publish(None).await {
                    warn!(error = %e, "instance metadata not removed from the Pod");
                }
            }
            self.stop();
        })
    }
}

impl ServiceNameMapping for KubernetesServiceDiscovery {
    /// Nothing: Kubernetes keeps no interface → application mapping (as Java's
    /// extension, which has none); references say `provided-by`.
    fn map(&self, interface: &str, app: &str) -> BoxFuture<'_, MetadataResult<()>> {
        debug!(interface = %interface, app = %app, "kubernetes discovery keeps no service-name mapping");
        Box::pin(async { Ok(()) })
    }

    /// No application: name them with `provided-by`.
    fn get(&self, _interface: &str) -> BoxFuture<'_, MetadataResult<Vec<String>>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn watch_mapping(&self, _interface: &str) -> BoxFuture<'_, MetadataResult<MappingWatch>> {
        Box::pin(async { Ok(watch::channel(Arc::new(Vec::new())).1) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnect_waits_double_up_to_the_maximum_and_reset() {
        let mut b = Reconnect::new(Duration::from_secs(1));
        let waits: Vec<u128> = (0..5).map(|_| b.wait().as_millis()).collect();
        assert_eq!(waits, [200, 400, 800, 1000, 1000]);
        b.reset();
        assert_eq!(b.wait(), Duration::from_millis(200));
    }

    #[test]
    fn a_relist_swaps_the_items_only_when_complete() {
        let pod = |n: &str| {
            let mut p = Pod::default();
            p.metadata.name = Some(n.into());
            p
        };
        let mut s: Store<Pod> = Store::new();
        assert!(!s.apply(Event::Init));
        assert!(!s.apply(Event::InitApply(pod("a"))));
        assert!(!s.ready && s.items.is_empty());
        assert!(s.apply(Event::InitDone));
        assert!(s.ready && s.items.contains_key("a"));
        // A re-list (after a 410) keeps the old items until it is done.
        s.apply(Event::Init);
        s.apply(Event::InitApply(pod("b")));
        assert!(s.items.contains_key("a") && !s.items.contains_key("b"));
        s.apply(Event::InitDone);
        assert!(!s.items.contains_key("a") && s.items.contains_key("b"));
        assert!(s.apply(Event::Delete(pod("b"))));
        assert!(s.items.is_empty());
    }

    #[test]
    fn the_pod_selector_is_the_services_sorted() {
        let mut svc = Service::default();
        assert_eq!(selector_of(Some(&svc)), None);
        svc.spec = Some(k8s_openapi::api::core::v1::ServiceSpec {
            selector: Some(
                [
                    ("b".to_owned(), "2".to_owned()),
                    ("a".to_owned(), "1".to_owned()),
                ]
                .into(),
            ),
            ..Default::default()
        });
        assert_eq!(selector_of(Some(&svc)).as_deref(), Some("a=1,b=2"));
        assert_eq!(selector_of(None), None);
    }
}
