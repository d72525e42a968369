//! `ZookeeperServiceDiscovery`: application-level discovery on ZooKeeper, on Java's
//! layout (`ZookeeperServiceDiscovery`, Curator's `ServiceDiscoveryImpl`,
//! `ZookeeperMetadataReport`).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rand::Rng;
use rubbo_common::keys::{CasRetryTimes, CasRetryWaitTime, Check, RegistryTimeout};
use rubbo_common::{BoxFuture, Url};
use rubbo_metadata::{
    InstanceList, InstancesWatch, MappingWatch, MetadataError, MetadataInfo, MetadataResult,
    ServiceDiscovery, ServiceInstance, ServiceNameMapping, parse_mapping,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};
use zookeeper_client::{Client, Error as ZkError, EventType, OneshotWatcher};

use crate::nodes::{KnownParents, NodeModes, create_with_parents};
use crate::paths;
use crate::session::{Conn, SessionShared};
use crate::sessions::{SessionOwner, SessionParams, ZookeeperSessions};
use crate::watch_mode::WatchSupport;

mod child_table;
mod instance_watch;

/// Application-level discovery and the service-name mapping on ZooKeeper
/// (`zookeeper://127.0.0.1:2181`):
///
/// - An instance is the ephemeral node `/services/{app}/{host}:{port}` holding the
///   Curator `ServiceInstance` JSON; it is written again on every new session (and
///   by the first session, when [`register`](ServiceDiscovery::register) found none).
/// - The mapping of an interface is the persistent node
///   `/dubbo/mapping/{interface}` (root from the URL's `group`), comma-joined
///   application names, updated by compare-and-set on the node version, retried
///   `dubbo.metadata-report.cas-retry-times` times (10) after a random wait below
///   `dubbo.metadata-report.cas-retry-wait-time` (100 ms), as Java does.
/// - [`publish_metadata`](Self::publish_metadata) writes
///   `/dubbo/metadata/{app}/{revision}` if absent (storage type `remote`).
/// - The instances of an application are followed by one watcher per application,
///   shared by every [`watch`](ServiceDiscovery::watch): on ZooKeeper 3.6+ a persistent
///   recursive watch on `/services/{app}`, else (or with `zk.watch=oneshot`) a child
///   watch and a data watch per instance node; `zk.watch` as for the registry.
/// - With the same [`ZookeeperSessions`] as the registry, it shares the registry's
///   session.
pub struct ZookeeperServiceDiscovery {
    inner: Arc<Inner>,
    owner: Mutex<Option<Arc<SessionOwner>>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

struct Inner {
    address: String,
    /// `/services`.
    services_root: String,
    /// `/dubbo`: the root of `mapping` and `metadata`.
    root: String,
    timeout: Duration,
    cas_retries: u32,
    cas_wait: Duration,
    modes: NodeModes,
    /// The parents of the nodes written (see [`KnownParents`]).
    parents: KnownParents,
    session: Arc<SessionShared>,
    /// What this discovery registered, by node path, to write again on a new session.
    registered: Mutex<HashMap<String, ServiceInstance>>,
    /// Instance nodes read so far (see [`ZookeeperServiceDiscovery::instance_reads`]).
    instance_reads: AtomicU64,
    /// The instance watch of each application, shared by every caller of `watch`
    /// (one follower per application, as Java's per-application listener).
    app_watches: Mutex<HashMap<String, AppWatch>>,
    /// `zk.watch`: whether instances are followed with a persistent watch per
    /// application (ZooKeeper 3.6+) or a data watch per instance node.
    watch: WatchSupport,
}

/// The shared instance watch of one application.
struct AppWatch {
    tx: watch::Sender<InstanceList>,
    /// Turns true once the follower has listed the application.
    listed: watch::Receiver<bool>,
}

impl fmt::Debug for ZookeeperServiceDiscovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZookeeperServiceDiscovery")
            .field("address", &self.inner.address)
            .field("registered", &self.inner.registered.lock().len())
            .finish()
    }
}

fn backend(what: impl fmt::Display, e: ZkError) -> MetadataError {
    MetadataError::Backend(format!("{what}: {e}"))
}

impl ZookeeperServiceDiscovery {
    /// Connects with a session of its own. See [`connect_shared`](Self::connect_shared).
    pub async fn connect(url: Url) -> MetadataResult<Self> {
        Self::connect_shared(url, &ZookeeperSessions::new()).await
    }

    /// Starts discovery on the session `sessions` holds for `url`'s address, waiting
    /// up to `timeout` (default 5000 ms) for it; with `check=false` it keeps
    /// connecting in the background instead of failing.
    pub async fn connect_shared(url: Url, sessions: &ZookeeperSessions) -> MetadataResult<Self> {
        let params = SessionParams::of(&url).map_err(|e| MetadataError::Backend(e.to_string()))?;
        let owner = sessions.get(&params);
        let session = owner.shared.clone();
        let timeout = url.param::<RegistryTimeout>();
        let watch = WatchSupport::of(&url).map_err(MetadataError::Backend)?;
        let inner = Arc::new(Inner {
            address: params.connect_string.clone(),
            services_root: "/services".to_owned(),
            root: paths::root_path(&url),
            timeout,
            cas_retries: url.param::<CasRetryTimes>().max(1),
            cas_wait: url.param::<CasRetryWaitTime>(),
            modes: NodeModes::new(params.auth.is_some()),
            parents: KnownParents::default(),
            session: session.clone(),
            registered: Mutex::new(HashMap::new()),
            instance_reads: AtomicU64::new(0),
            app_watches: Mutex::new(HashMap::new()),
            watch,
        });
        let recover = tokio::spawn(recover_loop(inner.clone()));
        let discovery = ZookeeperServiceDiscovery {
            inner,
            owner: Mutex::new(Some(owner)),
            tasks: Mutex::new(vec![recover]),
        };
        let mut rx = session.conn.subscribe();
        let connected = tokio::time::timeout(timeout, rx.wait_for(Option::is_some)).await;
        if !matches!(connected, Ok(Ok(_))) {
            if url.param::<Check>() {
                discovery.stop();
                return Err(MetadataError::Backend(format!(
                    "zookeeper {}: no session within {timeout:?}",
                    params.connect_string
                )));
            }
            warn!(zookeeper = %params.connect_string, "zookeeper not connected yet (check=false); connecting in the background");
        }
        Ok(discovery)
    }

    /// The node path of `instance`: `/services/{app}/{host}:{port}`.
    pub fn instance_path(&self, instance: &ServiceInstance) -> String {
        self.inner.instance_path(instance)
    }

    /// Writes `info` at `/dubbo/metadata/{app}/{revision}` unless a node is there (the
    /// metadata report of storage type `remote`).
    pub async fn publish_metadata(&self, info: &MetadataInfo) -> MetadataResult<()> {
        let client = self.inner.client().await?;
        let app = info.app.as_deref().unwrap_or_default();
        let path = format!("{}/metadata/{app}/{}", self.inner.root, info.revision());
        if client
            .check_stat(&path)
            .await
            .map_err(|e| backend(&path, e))?
            .is_some()
        {
            return Ok(());
        }
        self.inner
            .create_with_data(&client, &path, info.to_json().as_bytes(), false)
            .await
    }

    /// The MetadataInfo at `/dubbo/metadata/{app}/{revision}` (what a provider of
    /// storage type `remote` publishes, Java's `MetadataReport.getAppMetadata`), or
    /// `None` when there is no such node. Garbage in the node is an error.
    pub async fn metadata(
        &self,
        app: &str,
        revision: &str,
    ) -> MetadataResult<Option<MetadataInfo>> {
        let client = self.inner.client().await?;
        let path = format!("{}/metadata/{app}/{revision}", self.inner.root);
        match client.get_data(&path).await {
            Ok((data, _)) => MetadataInfo::from_json(&String::from_utf8_lossy(&data)).map(Some),
            Err(ZkError::NoNode) => Ok(None),
            Err(e) => Err(backend(&path, e)),
        }
    }

    /// How many instance nodes (`/services/{app}/{id}`) this discovery has read, by
    /// [`instances`](ServiceDiscovery::instances) and by its watches: a diagnostic
    /// for the cost of a change (a watch reads only the nodes added or changed).
    pub fn instance_reads(&self) -> u64 {
        self.inner.instance_reads.load(Ordering::Relaxed)
    }

    fn stop(&self) {
        for t in self.tasks.lock().drain(..) {
            t.abort();
        }
        self.owner.lock().take();
    }
}

impl Drop for ZookeeperServiceDiscovery {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Inner {
    fn instance_path(&self, instance: &ServiceInstance) -> String {
        format!(
            "{}/{}/{}",
            self.services_root,
            instance.service_name,
            instance.id()
        )
    }

    /// The current client, waiting (up to `timeout`) for a session.
    async fn client(&self) -> MetadataResult<Client> {
        let mut rx = self.session.conn.subscribe();
        match tokio::time::timeout(self.timeout, rx.wait_for(Option::is_some)).await {
            Ok(Ok(conn)) => conn
                .clone()
                .map(|c| c.client)
                .ok_or_else(|| MetadataError::Backend("no zookeeper session".into())),
            _ => Err(MetadataError::Backend(format!(
                "zookeeper {}: no session within {:?}",
                self.address, self.timeout
            ))),
        }
    }

    /// Creates `path` with `data` (parents persistent); an ephemeral node of another
    /// session is replaced, one of ours gets the new data.
    async fn create_with_data(
        &self,
        client: &Client,
        path: &str,
        data: &[u8],
        ephemeral: bool,
    ) -> MetadataResult<()> {
        let mode = if ephemeral {
            &self.modes.ephemeral
        } else {
            &self.modes.persistent
        };
        match create_with_parents(client, path, data, mode, &self.modes, &self.parents).await {
            Ok(_) => Ok(()),
            Err(ZkError::NodeExists) if !ephemeral => Ok(()),
            Err(ZkError::NodeExists) => {
                let ours = client
                    .check_stat(path)
                    .await
                    .map_err(|e| backend(path, e))?
                    .is_some_and(|s| s.ephemeral_owner == client.session_id().0);
                if ours {
                    client
                        .set_data(path, data, None)
                        .await
                        .map(|_| ())
                        .map_err(|e| backend(path, e))
                } else {
                    match client.delete(path, None).await {
                        Ok(()) | Err(ZkError::NoNode) => {}
                        Err(e) => return Err(backend(path, e)),
                    }
                    client
                        .create(path, data, mode)
                        .await
                        .map(|_| ())
                        .map_err(|e| backend(path, e))
                }
            }
            Err(e) => Err(backend(path, e)),
        }
    }

    async fn write_instance(
        &self,
        client: &Client,
        instance: &ServiceInstance,
    ) -> MetadataResult<()> {
        let path = self.instance_path(instance);
        let json = instance.to_curator_json();
        self.create_with_data(client, &path, json.as_bytes(), true)
            .await
    }

    /// The instances under `/services/{app}`, sharing their metadata texts (an
    /// interner for this list only); a node that does not parse is skipped.
    async fn read_instances(
        &self,
        client: &Client,
        children: &[String],
        app: &str,
    ) -> Vec<ServiceInstance> {
        let mut out = Vec::with_capacity(children.len());
        let mut interner = rubbo_metadata::MetadataInterner::default();
        for c in children {
            let path = format!("{}/{app}/{c}", self.services_root);
            self.instance_reads.fetch_add(1, Ordering::Relaxed);
            match client.get_data(&path).await {
                Ok((data, _)) => {
                    match ServiceInstance::from_curator_json_shared(&data, &mut interner) {
                        Ok(i) => out.push(i),
                        Err(e) => warn!(node = %path, error = %e, "skipping an instance node"),
                    }
                }
                Err(ZkError::NoNode) => {}
                Err(e) => debug!(node = %path, error = %e, "instance node not read"),
            }
        }
        out.sort_by_key(ServiceInstance::id);
        out
    }

    async fn map_once(&self, client: &Client, path: &str, app: &str) -> Result<bool, ZkError> {
        match client.get_data(path).await {
            Ok((data, stat)) => {
                let old = String::from_utf8_lossy(&data).into_owned();
                if parse_mapping(&old).iter().any(|a| a == app) {
                    return Ok(true);
                }
                let new = if old.trim().is_empty() {
                    app.to_owned()
                } else {
                    format!("{old},{app}")
                };
                match client
                    .set_data(path, new.as_bytes(), Some(stat.version))
                    .await
                {
                    Ok(_) => Ok(true),
                    Err(ZkError::BadVersion) => Ok(false),
                    Err(e) => Err(e),
                }
            }
            // The parent (`/dubbo/mapping`) is made once per discovery, not once per
            // interface mapped.
            Err(ZkError::NoNode) => match create_with_parents(
                client,
                path,
                app.as_bytes(),
                &self.modes.persistent,
                &self.modes,
                &self.parents,
            )
            .await
            {
                Ok(()) => Ok(true),
                Err(ZkError::NodeExists) => Ok(false),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        }
    }
}

/// Writes every registered instance again on each new session (ephemeral nodes die
/// with the old one).
async fn recover_loop(inner: Arc<Inner>) {
    let mut rx = inner.session.conn.subscribe();
    let mut last = rx.borrow().as_ref().map_or(0, |c| c.generation);
    while let Some(conn) = SessionShared::next_session(&mut rx, &mut last).await {
        let instances: Vec<ServiceInstance> = inner.registered.lock().values().cloned().collect();
        if !instances.is_empty() {
            info!(zookeeper = %inner.address, instances = instances.len(), "new zookeeper session: registering the instance again");
        }
        for i in instances {
            if let Err(e) = inner.write_instance(&conn.client, &i).await {
                warn!(instance = %i.id(), error = %e, "instance not registered again");
            }
        }
    }
}

/// What fires when a followed node may have changed: `true` for a session event (wait
/// for the next session before reading again).
type Wake = BoxFuture<'static, bool>;

/// A node [`follow`] keeps a watch channel equal to.
trait Followed: Send + Sync + 'static {
    type Value: PartialEq + Send + Sync + 'static;
    /// The node, for log lines.
    fn path(&self) -> &str;
    /// Reads the value and leaves the watches that say when to read again.
    fn read<'a>(
        &'a self,
        inner: &'a Inner,
        client: &'a Client,
    ) -> BoxFuture<'a, Result<(Self::Value, Wake), ZkError>>;
}

fn wake_on(watcher: OneshotWatcher) -> Wake {
    Box::pin(async move { watcher.changed().await.event_type == EventType::Session })
}

/// The applications of one interface: the mapping node's comma-joined data (or its
/// creation while absent).
struct Mapping {
    path: String,
}

impl Followed for Mapping {
    type Value = Vec<String>;

    fn path(&self) -> &str {
        &self.path
    }

    fn read<'a>(
        &'a self,
        _inner: &'a Inner,
        client: &'a Client,
    ) -> BoxFuture<'a, Result<(Self::Value, Wake), ZkError>> {
        Box::pin(async move {
            loop {
                match client.get_and_watch_data(&self.path).await {
                    Ok((data, _, watcher)) => {
                        let apps = parse_mapping(&String::from_utf8_lossy(&data));
                        return Ok((apps, wake_on(watcher)));
                    }
                    Err(ZkError::NoNode) => match client.check_and_watch_stat(&self.path).await? {
                        (None, watcher) => return Ok((Vec::new(), wake_on(watcher))),
                        (Some(_), _) => continue,
                    },
                    Err(e) => return Err(e),
                }
            }
        })
    }
}

/// The current session's connection, waiting while there is none; `None` once the
/// session owner or every receiver of `tx` is gone.
async fn connected<T>(
    rx: &mut watch::Receiver<Option<Conn>>,
    tx: &watch::Sender<T>,
) -> Option<Conn> {
    loop {
        if let Some(conn) = rx.borrow_and_update().clone() {
            return Some(conn);
        }
        tokio::select! {
            changed = rx.changed() => changed.ok()?,
            () = tx.closed() => return None,
        }
    }
}

/// Waits out the backoff after `failures` failed reads in a row (100 ms doubling, at
/// most 1.6 s); false once every receiver of `tx` is gone.
async fn back_off<T>(failures: u32, tx: &watch::Sender<T>) -> bool {
    let wait = Duration::from_millis(100u64 << failures.min(4));
    tokio::select! {
        () = tokio::time::sleep(wait) => true,
        () = tx.closed() => false,
    }
}

/// Keeps `tx` equal to what `node` reads, reading again when its watches fire or a new
/// session starts, with a backoff after failures, until every receiver is gone.
async fn follow<F: Followed>(inner: Arc<Inner>, node: F, tx: watch::Sender<Arc<F::Value>>) {
    let mut rx = inner.session.conn.subscribe();
    let mut failures = 0u32;
    loop {
        let Some(conn) = connected(&mut rx, &tx).await else {
            return;
        };
        match node.read(&inner, &conn.client).await {
            Ok((value, wake)) => {
                failures = 0;
                tx.send_if_modified(|old| {
                    let changed = **old != value;
                    if changed {
                        *old = Arc::new(value);
                    }
                    changed
                });
                tokio::select! {
                    session = wake => {
                        if session && rx.changed().await.is_err() {
                            return;
                        }
                    }
                    changed = rx.changed() => if changed.is_err() { return },
                    () = tx.closed() => return,
                }
            }
            Err(e) => {
                failures += 1;
                if failures == 1 {
                    warn!(node = %node.path(), error = %e, "cannot read a watched node; retrying");
                }
                if !back_off(failures, &tx).await {
                    return;
                }
            }
        }
    }
}

impl ServiceDiscovery for ZookeeperServiceDiscovery {
    fn register(&self, instance: ServiceInstance) -> BoxFuture<'_, MetadataResult<()>> {
        Box::pin(async move {
            // Kept first: when ZooKeeper is not reachable now, the next session writes it.
            let path = self.inner.instance_path(&instance);
            self.inner.registered.lock().insert(path, instance.clone());
            let client = self.inner.client().await?;
            self.inner.write_instance(&client, &instance).await?;
            info!(instance = %instance.id(), app = %instance.service_name,
                revision = instance.revision().unwrap_or_default(), "instance registered");
            Ok(())
        })
    }

    fn unregister(&self, instance: &ServiceInstance) -> BoxFuture<'_, MetadataResult<()>> {
        let path = self.inner.instance_path(instance);
        Box::pin(async move {
            self.inner.registered.lock().remove(&path);
            let client = self.inner.client().await?;
            match client.delete(&path, None).await {
                Ok(()) | Err(ZkError::NoNode) => {
                    info!(node = %path, "instance unregistered");
                    Ok(())
                }
                Err(e) => Err(backend(&path, e)),
            }
        })
    }

    fn instances(&self, app: &str) -> BoxFuture<'_, MetadataResult<Vec<ServiceInstance>>> {
        let app = app.to_owned();
        Box::pin(async move {
            let client = self.inner.client().await?;
            let path = format!("{}/{app}", self.inner.services_root);
            let children = match client.list_children(&path).await {
                Ok(c) => c,
                Err(ZkError::NoNode) => return Ok(Vec::new()),
                Err(e) => return Err(backend(&path, e)),
            };
            Ok(self.inner.read_instances(&client, &children, &app).await)
        })
    }

    /// One follower per application: a second watch of the same application shares
    /// the first one's list (and its ZooKeeper watches and reads).
    /// With a session, the watch holds the first list when it is returned (waiting up
    /// to the registry timeout for it), so that a caller needs no read of its own.
    fn watch(&self, app: &str) -> BoxFuture<'_, MetadataResult<InstancesWatch>> {
        let mut watches = self.inner.app_watches.lock();
        let (tx, mut listed) = match watches.get(app) {
            Some(w) => (w.tx.clone(), w.listed.clone()),
            None => {
                let (tx, _) = watch::channel(Arc::new(Vec::new()));
                let (listed_tx, listed) = watch::channel(false);
                watches.insert(
                    app.to_owned(),
                    AppWatch {
                        tx: tx.clone(),
                        listed: listed.clone(),
                    },
                );
                let task = tokio::spawn(instance_watch::follow_shared(
                    self.inner.clone(),
                    app.to_owned(),
                    tx.clone(),
                    listed_tx,
                ));
                let mut tasks = self.tasks.lock();
                tasks.retain(|t| !t.is_finished());
                tasks.push(task);
                (tx, listed)
            }
        };
        drop(watches);
        let rx = tx.subscribe();
        let timeout = self.inner.timeout;
        let connected = self.inner.session.current().is_some();
        Box::pin(async move {
            if connected {
                // Else the list fills in when ZooKeeper answers.
                let _ = tokio::time::timeout(timeout, listed.wait_for(|l| *l)).await;
            }
            Ok(rx)
        })
    }

    fn destroy(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let mine: Vec<ServiceInstance> =
                self.inner.registered.lock().values().cloned().collect();
            for i in mine {
                if let Err(e) = self.unregister(&i).await {
                    warn!(instance = %i.id(), error = %e, "instance not unregistered");
                }
            }
            self.stop();
        })
    }
}

impl ServiceNameMapping for ZookeeperServiceDiscovery {
    fn map(&self, interface: &str, app: &str) -> BoxFuture<'_, MetadataResult<()>> {
        let path = format!("{}/mapping/{interface}", self.inner.root);
        let app = app.to_owned();
        Box::pin(async move {
            let client = self.inner.client().await?;
            for attempt in 1..=self.inner.cas_retries {
                if self
                    .inner
                    .map_once(&client, &path, &app)
                    .await
                    .map_err(|e| backend(&path, e))?
                {
                    debug!(node = %path, app = %app, attempt, "mapping published");
                    return Ok(());
                }
                let bound = u64::try_from(self.inner.cas_wait.as_millis())
                    .unwrap_or(u64::MAX)
                    .max(1);
                let wait = rand::rng().random_range(0..bound);
                tokio::time::sleep(Duration::from_millis(wait)).await;
            }
            Err(MetadataError::Conflict {
                what: path,
                attempts: self.inner.cas_retries,
            })
        })
    }

    fn get(&self, interface: &str) -> BoxFuture<'_, MetadataResult<Vec<String>>> {
        let path = format!("{}/mapping/{interface}", self.inner.root);
        Box::pin(async move {
            let client = self.inner.client().await?;
            match client.get_data(&path).await {
                Ok((data, _)) => Ok(parse_mapping(&String::from_utf8_lossy(&data))),
                Err(ZkError::NoNode) => Ok(Vec::new()),
                Err(e) => Err(backend(&path, e)),
            }
        })
    }

    /// Watches `/dubbo/mapping/{interface}`: the first value is read before this
    /// returns (empty when ZooKeeper is not reachable yet), later ones follow.
    fn watch_mapping(&self, interface: &str) -> BoxFuture<'_, MetadataResult<MappingWatch>> {
        let path = format!("{}/mapping/{interface}", self.inner.root);
        let interface = interface.to_owned();
        Box::pin(async move {
            let first = self.get(&interface).await.unwrap_or_default();
            let (tx, rx) = watch::channel(Arc::new(first));
            let task = tokio::spawn(follow(self.inner.clone(), Mapping { path }, tx));
            let mut tasks = self.tasks.lock();
            tasks.retain(|t| !t.is_finished());
            tasks.push(task);
            Ok(rx)
        })
    }
}
