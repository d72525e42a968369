//! `ZookeeperDynamicConfiguration`: the config center on ZooKeeper, on Java's layout
//! (`TreePathDynamicConfiguration`, `ZookeeperDynamicConfiguration`).

mod watch;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rubbo_common::keys::{Check, GROUP_KEY, RegistryTimeout};
use rubbo_common::{BoxFuture, ExtensionTable, Url};
use rubbo_registry::{
    ConfigItem, DEFAULT_GROUP, DynamicConfiguration, DynamicConfigurationFactory, RegistryError,
    RegistryResult, SharedConfigListener, SharedDynamicConfiguration, same_config_listener,
};
use tracing::{info, warn};
use zookeeper_client::{Client, Error as ZkError};

use crate::nodes::NodeModes;
use crate::session::SessionShared;
use crate::sessions::{SessionOwner, SessionParams, ZookeeperSessions};
use watch::KeyWatch;

/// URL parameter naming the part after the namespace (default `/config`).
pub use rubbo_common::keys::CONFIG_CENTER_BASE_PATH_KEY as BASE_PATH_KEY;
/// URL parameter naming the config root in full (Java's
/// `TreePathDynamicConfiguration.CONFIG_ROOT_PATH_PARAM_NAME`).
pub use rubbo_common::keys::CONFIG_CENTER_ROOT_PATH_KEY as ROOT_PATH_KEY;
/// URL parameter naming the namespace, the first path segment (default `dubbo`).
pub use rubbo_common::keys::NAMESPACE_KEY;

/// Collapses repeated `/`, starts with `/`, drops a trailing `/` (Java's
/// `PathUtils.normalize` as the tree-path configuration uses it).
fn normalize(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    format!("/{}", parts.join("/"))
}

/// The config root of a config center URL: `root-path` when given, else
/// `/{namespace}{base-path}`, i.e. `/dubbo/config` by default.
///
/// ```
/// use rubbo_common::Url;
/// use rubbo_registry_zookeeper::config_root;
/// let root = |q: &str| config_root(&Url::parse(&format!("zookeeper://h:2181?{q}")).unwrap());
/// assert_eq!(root(""), "/dubbo/config");
/// assert_eq!(root("namespace=prod"), "/prod/config");
/// assert_eq!(root("namespace=prod&dubbo.config-center.base-path=rules"), "/prod/rules");
/// assert_eq!(root("dubbo.config-center.root-path=/a/b/"), "/a/b");
/// ```
pub fn config_root(url: &Url) -> String {
    if let Some(root) = url.get_param(ROOT_PATH_KEY) {
        return normalize(root);
    }
    let namespace = url
        .get_param(NAMESPACE_KEY)
        .filter(|n| !n.is_empty())
        .unwrap_or(DEFAULT_GROUP);
    let base = url.get_param(BASE_PATH_KEY).unwrap_or("/config");
    normalize(&format!("/{namespace}/{base}"))
}

/// The ZooKeeper config center (`zookeeper://127.0.0.1:2181?namespace=dubbo`).
///
/// - A key is the node `{root}/{group}/{key}` (root [`config_root`], `/dubbo/config`
///   by default), its content the node's data in UTF-8; governance rules are at
///   `/dubbo/config/dubbo/{key}`.
/// - [`publish_config_cas`](DynamicConfiguration::publish_config_cas) compares the
///   node version.
/// - Each listened key has one data watch. After a disconnection or a new session the
///   key is read again and a change made meanwhile is reported once.
/// - With the same [`ZookeeperSessions`] as the registry factory, a registry on the
///   same address shares this session.
///
/// URL parameters: `namespace`, `dubbo.config-center.root-path`,
/// `dubbo.config-center.base-path`, `group` (default group, `dubbo`), `timeout` (wait
/// for the first session and bound of each operation, ms, default 5000), `check`
/// (fail when ZooKeeper is not reachable in time, default true), and the registry's
/// session parameters (`backup`, `session`, credentials).
pub struct ZookeeperDynamicConfiguration {
    inner: Arc<Inner>,
    owner: Mutex<Option<Arc<SessionOwner>>>,
}

pub(crate) struct Inner {
    url: Url,
    address: String,
    root: String,
    group: String,
    timeout: Duration,
    modes: NodeModes,
    pub(crate) session: Arc<SessionShared>,
    watches: Mutex<HashMap<String, KeyWatch>>,
}

impl fmt::Debug for ZookeeperDynamicConfiguration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZookeeperDynamicConfiguration")
            .field("address", &self.inner.address)
            .field("root", &self.inner.root)
            .field("watched", &self.inner.watches.lock().len())
            .finish()
    }
}

impl ZookeeperDynamicConfiguration {
    /// Connects with a session of its own. See [`connect_shared`](Self::connect_shared).
    pub async fn connect(url: Url) -> RegistryResult<Self> {
        Self::connect_shared(url, &ZookeeperSessions::new()).await
    }

    /// Starts the config center of `url` on the session `sessions` holds for its
    /// address (started when none is live), and waits up to `timeout` for a session:
    /// when none comes, fails with `check=true` (default), else returns a config
    /// center that keeps connecting (listeners added meanwhile get the content once
    /// it is reachable).
    pub async fn connect_shared(url: Url, sessions: &ZookeeperSessions) -> RegistryResult<Self> {
        let params = SessionParams::of(&url)?;
        let owner = sessions.get(&params);
        let timeout = url.param::<RegistryTimeout>();
        let inner = Arc::new(Inner {
            root: config_root(&url),
            group: url
                .get_param(GROUP_KEY)
                .filter(|g| !g.is_empty())
                .unwrap_or(DEFAULT_GROUP)
                .to_owned(),
            address: params.connect_string.clone(),
            timeout,
            modes: NodeModes::new(params.auth.is_some()),
            session: owner.shared.clone(),
            watches: Mutex::new(HashMap::new()),
            url: url.clone(),
        });
        let mut rx = owner.shared.conn.subscribe();
        let connected = tokio::time::timeout(timeout, rx.wait_for(Option::is_some)).await;
        if !matches!(connected, Ok(Ok(_))) {
            if url.param::<Check>() {
                return Err(RegistryError::unavailable(
                    params.connect_string,
                    format!("no zookeeper session for the config center within {timeout:?}"),
                ));
            }
            warn!(zookeeper = %params.connect_string, "config center not connected yet (check=false); connecting in the background");
        }
        info!(zookeeper = %inner.address, root = %inner.root, "config center started");
        Ok(ZookeeperDynamicConfiguration {
            inner,
            owner: Mutex::new(Some(owner)),
        })
    }

    /// The config root (`/dubbo/config`).
    pub fn root(&self) -> &str {
        &self.inner.root
    }

    /// The node path of `key` in `group` (`""`: the default group).
    pub fn path(&self, key: &str, group: &str) -> String {
        self.inner.path(key, group)
    }
}

impl Drop for ZookeeperDynamicConfiguration {
    fn drop(&mut self) {
        self.inner.watches.lock().clear();
        drop(self.owner.lock().take());
    }
}

impl Inner {
    fn path(&self, key: &str, group: &str) -> String {
        let group = if group.is_empty() { &self.group } else { group };
        normalize(&format!("{}/{group}/{key}", self.root))
    }

    fn client(&self) -> RegistryResult<Client> {
        self.session
            .current()
            .map(|c| c.client)
            .ok_or_else(|| RegistryError::unavailable(self.address.clone(), "no zookeeper session"))
    }

    fn zk_error(&self, what: String, e: ZkError) -> RegistryError {
        match e {
            ZkError::ConnectionLoss | ZkError::SessionExpired | ZkError::ClientClosed => {
                RegistryError::unavailable(self.address.clone(), format!("{what}: {e}"))
            }
            e => RegistryError::backend(self.address.clone(), what, e),
        }
    }

    /// Runs `op` bounded by the configured timeout.
    async fn bounded<T>(
        &self,
        operation: &'static str,
        op: impl Future<Output = RegistryResult<T>>,
    ) -> RegistryResult<T> {
        tokio::time::timeout(self.timeout, op)
            .await
            .unwrap_or_else(|_| {
                Err(RegistryError::Timeout {
                    address: self.address.clone(),
                    operation,
                    timeout: self.timeout,
                })
            })
    }

    async fn get_item(&self, path: &str) -> RegistryResult<Option<ConfigItem>> {
        let client = self.client()?;
        match client.get_data(path).await {
            Ok((data, stat)) => Ok(Some(ConfigItem {
                content: String::from_utf8_lossy(&data).into_owned(),
                version: i64::from(stat.version),
            })),
            Err(ZkError::NoNode) => Ok(None),
            Err(e) => Err(self.zk_error(format!("get {path}"), e)),
        }
    }

    /// Creates `path` with `content` (parents persistent). `Ok(false)`: it exists.
    async fn create(&self, client: &Client, path: &str, content: &str) -> RegistryResult<bool> {
        if let Some(i) = path.rfind('/').filter(|&i| i > 0) {
            client
                .mkdir(&path[..i], &self.modes.persistent)
                .await
                .map_err(|e| self.zk_error(format!("mkdir {}", &path[..i]), e))?;
        }
        match client
            .create(path, content.as_bytes(), &self.modes.persistent)
            .await
        {
            Ok(_) => Ok(true),
            Err(ZkError::NodeExists) => Ok(false),
            Err(e) => Err(self.zk_error(format!("create {path}"), e)),
        }
    }

    async fn publish(&self, path: &str, content: &str) -> RegistryResult<()> {
        let client = self.client()?;
        loop {
            if self.create(&client, path, content).await? {
                return Ok(());
            }
            match client.set_data(path, content.as_bytes(), None).await {
                Ok(_) => return Ok(()),
                // Deleted between the two: create again.
                Err(ZkError::NoNode) => continue,
                Err(e) => return Err(self.zk_error(format!("set {path}"), e)),
            }
        }
    }

    async fn publish_cas(
        &self,
        path: &str,
        content: &str,
        expected: Option<i64>,
    ) -> RegistryResult<bool> {
        let client = self.client()?;
        let Some(version) = expected else {
            return self.create(&client, path, content).await;
        };
        let Ok(version) = i32::try_from(version) else {
            return Ok(false);
        };
        match client
            .set_data(path, content.as_bytes(), Some(version))
            .await
        {
            Ok(_) => Ok(true),
            Err(ZkError::BadVersion | ZkError::NoNode) => Ok(false),
            Err(e) => Err(self.zk_error(format!("set {path}"), e)),
        }
    }

    async fn remove(&self, path: &str) -> RegistryResult<bool> {
        let client = self.client()?;
        match client.delete(path, None).await {
            Ok(()) => Ok(true),
            Err(ZkError::NoNode) => Ok(false),
            Err(e) => Err(self.zk_error(format!("delete {path}"), e)),
        }
    }
}

impl DynamicConfiguration for ZookeeperDynamicConfiguration {
    fn url(&self) -> &Url {
        &self.inner.url
    }

    fn default_group(&self) -> &str {
        &self.inner.group
    }

    fn is_available(&self) -> bool {
        self.inner
            .session
            .connected
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    fn get_config_item<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, RegistryResult<Option<ConfigItem>>> {
        Box::pin(async move {
            let path = self.inner.path(key, group);
            self.inner.bounded("get", self.inner.get_item(&path)).await
        })
    }

    fn publish_config<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
        content: &'a str,
    ) -> BoxFuture<'a, RegistryResult<()>> {
        Box::pin(async move {
            let path = self.inner.path(key, group);
            self.inner
                .bounded("publish", self.inner.publish(&path, content))
                .await
        })
    }

    fn publish_config_cas<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
        content: &'a str,
        expected: Option<i64>,
    ) -> BoxFuture<'a, RegistryResult<bool>> {
        Box::pin(async move {
            let path = self.inner.path(key, group);
            self.inner
                .bounded(
                    "publish_cas",
                    self.inner.publish_cas(&path, content, expected),
                )
                .await
        })
    }

    fn remove_config<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, RegistryResult<bool>> {
        Box::pin(async move {
            let path = self.inner.path(key, group);
            self.inner.bounded("remove", self.inner.remove(&path)).await
        })
    }

    fn add_listener<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
        listener: SharedConfigListener,
    ) -> BoxFuture<'a, RegistryResult<Option<String>>> {
        Box::pin(async move {
            let path = self.inner.path(key, group);
            let group = if group.is_empty() {
                self.inner.group.clone()
            } else {
                group.to_owned()
            };
            let first = {
                let mut watches = self.inner.watches.lock();
                if let Some(w) = watches.get_mut(&path) {
                    w.add(listener);
                    None
                } else {
                    let (w, first) =
                        KeyWatch::start(self.inner.clone(), path.clone(), key.to_owned(), group);
                    w.add(listener);
                    watches.insert(path.clone(), w);
                    Some(first)
                }
            };
            // While ZooKeeper is known to be unreachable (`check=false` started without
            // it), the first read is not waited for: each key would cost the whole
            // timeout, one after the other, before the application serves from its
            // caches. The content comes to the listener once a session is made.
            let wait = if self.inner.session.unreachable() {
                Duration::ZERO
            } else {
                self.inner.timeout
            };
            match first {
                Some(first) => match tokio::time::timeout(wait, first).await {
                    Ok(Ok(content)) => Ok(content),
                    _ => {
                        warn!(zookeeper = %self.inner.address, path, "config center not reachable: listening, the content comes when it is");
                        Ok(None)
                    }
                },
                None => Ok(self
                    .inner
                    .watches
                    .lock()
                    .get(&path)
                    .and_then(KeyWatch::last)),
            }
        })
    }

    fn remove_listener(&self, key: &str, group: &str, listener: &SharedConfigListener) {
        let path = self.inner.path(key, group);
        let mut watches = self.inner.watches.lock();
        if let Some(w) = watches.get_mut(&path) {
            w.remove(|l| same_config_listener(l, listener));
            if w.is_empty() {
                watches.remove(&path);
            }
        }
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.inner.watches.lock().clear();
            drop(self.owner.lock().take());
            info!(zookeeper = %self.inner.address, "config center closed");
        })
    }
}

/// Makes ZooKeeper config centers on the sessions of one [`ZookeeperSessions`].
#[derive(Debug, Default, Clone)]
pub struct ZookeeperDynamicConfigurationFactory {
    sessions: ZookeeperSessions,
}

impl ZookeeperDynamicConfigurationFactory {
    /// A factory using (and sharing) the sessions of `sessions`.
    pub fn with_sessions(sessions: ZookeeperSessions) -> Self {
        ZookeeperDynamicConfigurationFactory { sessions }
    }
}

impl DynamicConfigurationFactory for ZookeeperDynamicConfigurationFactory {
    fn get_dynamic_configuration(
        &self,
        url: &Url,
    ) -> BoxFuture<'static, RegistryResult<SharedDynamicConfiguration>> {
        let url = url.clone();
        let sessions = self.sessions.clone();
        Box::pin(async move {
            let cc = ZookeeperDynamicConfiguration::connect_shared(url, &sessions).await?;
            Ok(Arc::new(cc) as SharedDynamicConfiguration)
        })
    }
}

/// Adds the `zookeeper` config center factory, on `sessions`, to `table`.
pub fn register_config_center_factory(
    table: &mut ExtensionTable<dyn DynamicConfigurationFactory>,
    sessions: ZookeeperSessions,
) {
    table.register(
        "zookeeper",
        Arc::new(ZookeeperDynamicConfigurationFactory::with_sessions(
            sessions,
        )),
    );
}
