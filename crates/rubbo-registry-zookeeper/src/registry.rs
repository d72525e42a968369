//! `ZookeeperRegistry`: the interface-level registry Java Dubbo writes in ZooKeeper.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rubbo_common::keys::{Check, Dynamic, EnableEmptyProtection, NotifyDelay, RegistryTimeout};
use rubbo_common::{BoxFuture, Url};
use rubbo_registry::{
    Registry, RegistryError, RegistryResult, SharedListener, is_any_interface, is_empty_url,
    is_match, same_listener,
};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};
use zookeeper_client::{Client, Error as ZkError};

use crate::children::ChildCache;
use crate::nodes::{KnownParents, NOT_SERVICES, NodeModes, create_node};
use crate::paths;
use crate::session::SessionShared;
use crate::sessions::{SessionOwner, SessionParams, ZookeeperSessions};
use crate::subscription::{watch_category, watch_services};
use crate::watch_mode::WatchSupport;

pub(crate) use crate::watch_mode::WatchMode;

/// The ZooKeeper registry (`zookeeper://127.0.0.1:2181?backup=h2:2181&group=dubbo`).
///
/// - Registered URLs are nodes `/{group}/{encode(interface)}/{category}/{encode(url)}`,
///   ephemeral unless the URL says `dynamic=false`; parents are persistent.
/// - A subscription watches each category's children and delivers the category's
///   whole list after every change (`empty://` when none), batching bursts within
///   `notify.delay` ms (default 10). On ZooKeeper 3.6+ the watch is persistent and
///   its events name the children that changed; registry URL parameter
///   `zk.watch` ([`ZkWatch`]) chooses (`auto`, `persistent`, `oneshot`).
/// - With `enable-empty-protection=true` ([`EnableEmptyProtection`]) an empty
///   `providers` list is not delivered, so a registry glitch never clears a consumer's
///   addresses.
/// - A subscription with `interface=*` follows every service under the root, including
///   those that appear later; the listener receives each service's lists.
/// - When the session expires (a long outage, a ZooKeeper restart without its data),
///   a new session is started; registered nodes are created again and subscriptions
///   re-read their lists, without any call from the user.
///
/// Operations fail at once with [`RegistryError::Unavailable`] while no session is
/// established; wrap the registry in a [`rubbo_registry::FailbackRegistry`] (the
/// factory does) to have them retried.
pub struct ZookeeperRegistry {
    inner: Arc<Inner>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// This registry's hold on the (maybe shared) session.
    session: Mutex<Option<Arc<SessionOwner>>>,
}

pub(crate) struct Inner {
    pub(crate) url: Url,
    pub(crate) address: String,
    pub(crate) root: String,
    pub(crate) notify_delay: Duration,
    pub(crate) empty_protection: bool,
    pub(crate) modes: NodeModes,
    /// The parents of the nodes written (see [`KnownParents`]).
    parents: KnownParents,
    pub(crate) session: Arc<SessionShared>,
    /// `zk.watch` and whether the server has persistent watches.
    pub(crate) watch: WatchSupport,
    destroyed: AtomicBool,
    /// What this registry registered, to create again on a new session: a set, so that
    /// registering costs the same with 100,000 URLs registered as with one.
    registered: Mutex<HashSet<Url>>,
    subscriptions: Mutex<Vec<Subscription>>,
}

struct Subscription {
    url: Url,
    listener: SharedListener,
    tasks: Vec<JoinHandle<()>>,
}

impl fmt::Debug for ZookeeperRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZookeeperRegistry")
            .field("address", &self.inner.address)
            .field("root", &self.inner.root)
            .field("available", &self.is_available())
            .field("registered", &self.inner.registered.lock().len())
            .field("subscriptions", &self.inner.subscriptions.lock().len())
            .finish()
    }
}

impl ZookeeperRegistry {
    /// Starts the registry for `url` and waits up to `timeout` ms (default 5000) for the
    /// first session. When it does not come, this fails if `check` is true (default)
    /// and otherwise returns a registry that keeps connecting in the background.
    ///
    /// Must be called inside a tokio runtime.
    pub async fn connect(url: Url) -> RegistryResult<ZookeeperRegistry> {
        Self::connect_shared(url, &ZookeeperSessions::new()).await
    }

    /// As [`connect`](Self::connect), with the session of `sessions` for this address
    /// (shared with the config center on the same ZooKeeper), started when none is live.
    pub async fn connect_shared(
        url: Url,
        sessions: &ZookeeperSessions,
    ) -> RegistryResult<ZookeeperRegistry> {
        let params = SessionParams::of(&url)?;
        let auth = params.auth.clone();
        let connect_string = params.connect_string.clone();
        let connect_timeout = url.param::<RegistryTimeout>();
        let notify_delay = url.param::<NotifyDelay>();
        let watch = WatchSupport::of(&url).map_err(RegistryError::Config)?;
        let modes = NodeModes::new(auth.is_some());
        let owner = sessions.get(&params);
        let session = owner.shared.clone();
        let inner = Arc::new(Inner {
            root: paths::root_path(&url),
            address: connect_string,
            notify_delay,
            empty_protection: url.param::<EnableEmptyProtection>(),
            modes,
            parents: KnownParents::default(),
            session: session.clone(),
            watch,
            url: url.clone(),
            destroyed: AtomicBool::new(false),
            registered: Mutex::new(HashSet::new()),
            subscriptions: Mutex::new(Vec::new()),
        });
        let recover_task = tokio::spawn(recover_loop(inner.clone()));
        let registry = ZookeeperRegistry {
            inner,
            tasks: Mutex::new(vec![recover_task]),
            session: Mutex::new(Some(owner)),
        };
        let mut rx = session.conn.subscribe();
        let connected = tokio::time::timeout(connect_timeout, rx.wait_for(Option::is_some)).await;
        if !matches!(connected, Ok(Ok(_))) {
            if url.param::<Check>() {
                registry.shutdown();
                return Err(RegistryError::Unavailable {
                    address: registry.inner.address.clone(),
                    reason: format!("no zookeeper session within {connect_timeout:?}"),
                });
            }
            warn!(zookeeper = %registry.inner.address, "zookeeper not connected yet (check=false); connecting in the background");
        }
        Ok(registry)
    }

    /// The root path (`/dubbo`).
    pub fn root(&self) -> &str {
        &self.inner.root
    }

    /// The interfaces registered under the root (`/dubbo/*`), sorted, for tools such as
    /// a CLI `list` command. Use [`Registry::lookup`] with interface `*` for all URLs.
    pub async fn services(&self) -> RegistryResult<Vec<String>> {
        let client = self.inner.check()?;
        self.inner.list_services(&client).await
    }

    /// The client of the current session, for tests and tools.
    pub fn client(&self) -> Option<Client> {
        self.inner.session.current().map(|c| c.client)
    }

    fn shutdown(&self) {
        for t in self.tasks.lock().drain(..) {
            t.abort();
        }
        for s in self.inner.subscriptions.lock().drain(..) {
            s.abort();
        }
        // The session ends when its last holder lets go.
        drop(self.session.lock().take());
    }
}

impl Drop for ZookeeperRegistry {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Subscription {
    fn abort(&self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Inner {
    /// Whether categories are watched with persistent watches (else one-shot ones).
    pub(crate) fn use_persistent_watch(&self) -> bool {
        self.watch.use_persistent()
    }

    /// Whether it is not known yet if the server has persistent watches.
    pub(crate) fn persistent_watch_unknown(&self) -> bool {
        self.watch.unknown()
    }

    /// Records whether the server has persistent watches.
    pub(crate) fn set_persistent_watch(&self, supported: bool) {
        self.watch.set_supported(supported);
    }

    pub(crate) fn zk_error(&self, what: String, e: ZkError) -> RegistryError {
        match e {
            ZkError::ConnectionLoss | ZkError::SessionExpired | ZkError::ClientClosed => {
                RegistryError::unavailable(self.address.clone(), format!("{what}: {e}"))
            }
            e => RegistryError::backend(self.address.clone(), what, e),
        }
    }

    fn check(&self) -> RegistryResult<Client> {
        if self.destroyed.load(Ordering::SeqCst) {
            return Err(RegistryError::Destroyed(self.address.clone()));
        }
        self.session
            .current()
            .map(|c| c.client)
            .ok_or_else(|| RegistryError::unavailable(self.address.clone(), "no zookeeper session"))
    }

    async fn do_register(&self, url: Url) -> RegistryResult<()> {
        let client = self.check()?;
        if is_any_interface(&url) {
            return Err(RegistryError::Config(format!(
                "cannot register a url for interface *: {url}"
            )));
        }
        let path = paths::url_path(&self.root, &url);
        let ephemeral = url.param::<Dynamic>();
        // Recorded first, so that a session that ends while the node is being created
        // recovers it too.
        self.registered.lock().insert(url.clone());
        if let Err(e) = create_node(&client, &path, ephemeral, &self.modes, &self.parents).await {
            self.registered.lock().remove(&url);
            return Err(self.zk_error(format!("create {path}"), e));
        }
        debug!(path, ephemeral, "registered");
        Ok(())
    }

    async fn do_unregister(&self, url: Url) -> RegistryResult<()> {
        self.registered.lock().remove(&url);
        let client = self.check()?;
        let path = paths::url_path(&self.root, &url);
        match client.delete(&path, None).await {
            Ok(()) | Err(ZkError::NoNode) => {
                debug!(path, "unregistered");
                Ok(())
            }
            Err(e) => Err(self.zk_error(format!("delete {path}"), e)),
        }
    }

    async fn do_subscribe(
        self: &Arc<Self>,
        url: Url,
        listener: SharedListener,
    ) -> RegistryResult<()> {
        self.check()?;
        // A new subscription of the same listener to the same URL replaces the old one.
        self.remove_subscription(&url, &listener);
        let mut tasks = Vec::new();
        let mut firsts = Vec::new();
        if is_any_interface(&url) {
            let (tx, rx) = oneshot::channel();
            tasks.push(tokio::spawn(watch_services(
                self.clone(),
                url.clone(),
                listener.clone(),
                Some(tx),
            )));
            firsts.push(rx);
        }
        let categories = if is_any_interface(&url) {
            Vec::new()
        } else {
            paths::categories_paths(&self.root, &url)
        };
        for (category, path) in categories {
            let (tx, rx) = oneshot::channel();
            let cache = ChildCache::new(url.clone(), &category)
                .with_empty_protection(self.empty_protection);
            tasks.push(tokio::spawn(watch_category(
                self.clone(),
                path,
                cache,
                listener.clone(),
                Some(tx),
            )));
            firsts.push(rx);
        }
        self.subscriptions.lock().push(Subscription {
            url: url.clone(),
            listener: listener.clone(),
            tasks,
        });
        for rx in firsts {
            let result = rx.await.unwrap_or_else(|_| {
                Err(RegistryError::unavailable(
                    self.address.clone(),
                    "subscription ended",
                ))
            });
            if let Err(e) = result {
                self.remove_subscription(&url, &listener);
                return Err(e);
            }
        }
        info!(zookeeper = %self.address, url = %url, "subscribed");
        Ok(())
    }

    fn remove_subscription(&self, url: &Url, listener: &SharedListener) {
        self.subscriptions.lock().retain(|s| {
            let same = s.url == *url && same_listener(&s.listener, listener);
            if same {
                s.abort();
            }
            !same
        });
    }

    async fn do_lookup(&self, url: Url) -> RegistryResult<Vec<Url>> {
        let client = self.check()?;
        let targets = if is_any_interface(&url) {
            self.list_services(&client)
                .await?
                .into_iter()
                .map(|s| {
                    url.with_path(&s)
                        .with_param(rubbo_common::keys::INTERFACE_KEY, &s)
                })
                .collect()
        } else {
            vec![url.clone()]
        };
        let mut out = Vec::new();
        for target in targets {
            for (_, path) in paths::categories_paths(&self.root, &target) {
                let children = match client.list_children(&path).await {
                    Ok(c) => c,
                    Err(ZkError::NoNode) => continue,
                    Err(e) => return Err(self.zk_error(format!("list {path}"), e)),
                };
                out.extend(
                    children
                        .iter()
                        .filter_map(|name| Url::parse_encoded(name).ok())
                        .filter(|u| !is_empty_url(u) && is_match(&url, u)),
                );
            }
        }
        Ok(out)
    }

    /// The interfaces under the root (decoded), without Dubbo 3's `config`, `mapping`
    /// and `metadata` nodes.
    async fn list_services(&self, client: &Client) -> RegistryResult<Vec<String>> {
        let children = match client.list_children(&self.root).await {
            Ok(c) => c,
            Err(ZkError::NoNode) => return Ok(Vec::new()),
            Err(e) => return Err(self.zk_error(format!("list {}", self.root), e)),
        };
        let mut services: Vec<String> = children
            .iter()
            .filter(|c| !NOT_SERVICES.contains(&c.as_str()))
            .filter_map(|c| rubbo_common::url::decode(c).ok())
            .collect();
        services.sort();
        Ok(services)
    }

    /// Creates the registered nodes again in a new session.
    async fn recover(&self, client: &Client, generation: u64) {
        loop {
            let urls: Vec<Url> = self.registered.lock().iter().cloned().collect();
            if urls.is_empty() {
                return;
            }
            info!(zookeeper = %self.address, urls = urls.len(), generation, "new zookeeper session: registering again");
            let mut failed = 0;
            for url in &urls {
                let still = || self.registered.lock().contains(url);
                if !still() {
                    continue;
                }
                let path = paths::url_path(&self.root, url);
                let ephemeral = url.param::<Dynamic>();
                if let Err(e) =
                    create_node(client, &path, ephemeral, &self.modes, &self.parents).await
                {
                    failed += 1;
                    warn!(path, error = %e, "re-registration failed");
                } else if !still() {
                    // Unregistered meanwhile: do not leave it behind.
                    let _ = client.delete(&path, None).await;
                }
            }
            if failed == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            if self.session.current().map(|c| c.generation) != Some(generation) {
                return;
            }
        }
    }
}

/// Waits for each new session after the first and registers everything again.
async fn recover_loop(inner: Arc<Inner>) {
    let mut rx = inner.session.conn.subscribe();
    let mut last = 1;
    while let Some(conn) = SessionShared::next_session(&mut rx, &mut last).await {
        inner.recover(&conn.client, conn.generation).await;
    }
}

impl Registry for ZookeeperRegistry {
    fn url(&self) -> &Url {
        &self.inner.url
    }

    fn is_available(&self) -> bool {
        !self.inner.destroyed.load(Ordering::SeqCst)
            && self.inner.session.connected.load(Ordering::SeqCst)
    }

    fn register(&self, url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(self.inner.do_register(url))
    }

    fn unregister(&self, url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(self.inner.do_unregister(url))
    }

    fn subscribe(&self, url: Url, listener: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move { self.inner.do_subscribe(url, listener).await })
    }

    fn unsubscribe(&self, url: Url, listener: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move {
            self.inner.remove_subscription(&url, &listener);
            Ok(())
        })
    }

    fn lookup(&self, url: Url) -> BoxFuture<'_, RegistryResult<Vec<Url>>> {
        Box::pin(self.inner.do_lookup(url))
    }

    fn destroy(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if self.inner.destroyed.swap(true, Ordering::SeqCst) {
                return;
            }
            for s in self.inner.subscriptions.lock().drain(..) {
                s.abort();
            }
            // Delete our nodes now rather than when the server notices the session closed.
            let urls: Vec<Url> = self.inner.registered.lock().drain().collect();
            if let Some(conn) = self.inner.session.current() {
                for url in urls.iter().filter(|u| u.param::<Dynamic>()) {
                    let path = paths::url_path(&self.inner.root, url);
                    let del = conn.client.delete(&path, None);
                    match tokio::time::timeout(Duration::from_secs(2), del).await {
                        Ok(Ok(()) | Err(ZkError::NoNode)) => {}
                        Ok(Err(e)) => warn!(path, error = %e, "cannot delete node at destroy"),
                        Err(_) => warn!(path, "delete timed out at destroy"),
                    }
                }
            }
            self.shutdown();
            info!(zookeeper = %self.inner.address, "zookeeper registry destroyed");
        })
    }
}
