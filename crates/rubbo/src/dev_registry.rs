//! The development registry: a standalone in-memory registry server that is itself a
//! Rubbo service on the dubbo protocol, so providers and consumers in several local
//! processes can find each other with nothing installed (`rubbo registry --port
//! 9090`, then registry address `dubbo://127.0.0.1:9090`).
//!
//! A development tool: ZooKeeper is the production answer. Registrations are leases
//! the client renews; a provider that dies (crash, kill -9) disappears when its lease
//! runs out (`lease`, default 3 s). Subscribers long-poll ([`DevRegistryService::watch`])
//! and receive each category's whole list, `empty://` for an empty one, as from any
//! registry.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rubbo_common::{BoxFuture, RpcError, Url, keys};
use rubbo_registry::{
    NotifyListener, Registry, RegistryError, RegistryFactory, RegistryResult, SharedListener,
    SharedRegistry, categories, empty_url, is_match, list_category, same_listener,
};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

use crate::{BoxInvoker, DubboProtocol, Protocol};

/// The interface name the dev registry is served under.
pub const DEV_REGISTRY_INTERFACE: &str = "org.rubbo.registry.DevRegistryService";

/// Longest a watch call waits for a change.
const WATCH_WAIT_MS: i32 = 10_000;
/// First and longest pause between watch attempts while the registry is unreachable.
const WATCH_RETRY_MIN: Duration = Duration::from_millis(500);
const WATCH_RETRY_MAX: Duration = Duration::from_secs(10);

/// The registry's view of one subscription at one version.
#[derive(Serialize, Deserialize, crate::JavaType, Debug, Clone, PartialEq, Default)]
#[serde(rename = "org.rubbo.registry.Snapshot", default)]
pub struct Snapshot {
    /// Increases with every change of the registry.
    pub version: i64,
    /// The matching registered URLs, as full strings.
    pub urls: Vec<String>,
}

/// The dev registry's service.
#[crate::service(interface = "org.rubbo.registry.DevRegistryService", version = "1.0.0")]
pub trait DevRegistryService {
    /// Registers (or renews) `url` for `lease_ms`.
    async fn register(&self, url: String, lease_ms: i64) -> Result<(), RpcError>;
    /// Unregisters `url` at once.
    async fn unregister(&self, url: String) -> Result<(), RpcError>;
    /// The URLs matching `subscription` once the registry's version passes `since`,
    /// waiting at most `wait_ms` for a change.
    async fn watch(
        &self,
        subscription: String,
        since: i64,
        wait_ms: i32,
    ) -> Result<Snapshot, RpcError>;
}

fn bad_url(e: impl std::fmt::Display) -> RpcError {
    RpcError::new(rubbo_common::ErrorKind::Validation, format!("bad URL: {e}"))
}

/// The server side: registrations with leases, and a version bumped on every change.
#[derive(Debug)]
pub struct DevRegistryServer {
    state: Mutex<HashMap<String, (Url, Instant)>>,
    version: watch::Sender<i64>,
}

impl Default for DevRegistryServer {
    fn default() -> Self {
        DevRegistryServer {
            state: Mutex::new(HashMap::new()),
            version: watch::channel(0).0,
        }
    }
}

impl DevRegistryServer {
    fn bump(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    /// Drops registrations whose lease ran out; returns how many.
    pub fn expire(&self, now: Instant) -> usize {
        let mut s = self.state.lock();
        let before = s.len();
        s.retain(|key, (_, until)| {
            let keep = *until > now;
            if !keep {
                info!(url = %key, "lease expired, unregistered");
            }
            keep
        });
        let gone = before - s.len();
        drop(s);
        if gone > 0 {
            self.bump();
        }
        gone
    }

    fn snapshot(&self, subscription: &Url) -> Snapshot {
        let version = *self.version.borrow();
        let urls = self
            .state
            .lock()
            .values()
            .filter(|(u, _)| is_match(subscription, u))
            .map(|(u, _)| u.to_full_string())
            .collect();
        Snapshot { version, urls }
    }

    /// Serves the registry on `host:port` until the returned handle is dropped or shut
    /// down; expired leases are reaped every quarter of a second.
    pub async fn serve(host: &str, port: u16) -> Result<DevRegistryHandle, RpcError> {
        let server = Arc::new(DevRegistryServer::default());
        let url = Url::parse(&format!(
            "dubbo://{host}:{port}/{DEV_REGISTRY_INTERFACE}?version=1.0.0&application=rubbo-registry&side=provider"
        ))
        .map_err(bad_url)?;
        let protocol = DubboProtocol::new();
        let exporter = protocol
            .export(DevRegistryServiceServer::new(Arc::new(server.clone())).into_invoker(url))
            .await?;
        let reaper = tokio::spawn({
            let server = Arc::downgrade(&server);
            async move {
                let mut tick = tokio::time::interval(Duration::from_millis(250));
                loop {
                    tick.tick().await;
                    match server.upgrade() {
                        Some(s) => {
                            s.expire(Instant::now());
                        }
                        None => return,
                    }
                }
            }
        });
        let addr = exporter.url();
        info!(addr = %addr.address(), "dev registry serving");
        Ok(DevRegistryHandle {
            server,
            exporter,
            protocol,
            reaper,
            url: addr,
        })
    }
}

impl DevRegistryService for Arc<DevRegistryServer> {
    async fn register(&self, url: String, lease_ms: i64) -> Result<(), RpcError> {
        let parsed = Url::parse(&url).map_err(bad_url)?;
        let lease = Duration::from_millis(lease_ms.clamp(100, 600_000) as u64);
        let fresh = self
            .state
            .lock()
            .insert(url.clone(), (parsed, Instant::now() + lease))
            .is_none();
        if fresh {
            info!(url, "registered");
            self.bump();
        }
        Ok(())
    }

    async fn unregister(&self, url: String) -> Result<(), RpcError> {
        if self.state.lock().remove(&url).is_some() {
            info!(url, "unregistered");
            self.bump();
        }
        Ok(())
    }

    async fn watch(
        &self,
        subscription: String,
        since: i64,
        wait_ms: i32,
    ) -> Result<Snapshot, RpcError> {
        let sub = Url::parse(&subscription).map_err(bad_url)?;
        let mut rx = self.version.subscribe();
        if *rx.borrow_and_update() <= since {
            let wait = Duration::from_millis(wait_ms.clamp(0, 60_000) as u64);
            let _ = tokio::time::timeout(wait, rx.changed()).await;
        }
        Ok(self.snapshot(&sub))
    }
}

/// A running dev registry.
#[derive(Debug)]
pub struct DevRegistryHandle {
    server: Arc<DevRegistryServer>,
    exporter: Box<dyn crate::Exporter>,
    protocol: DubboProtocol,
    reaper: JoinHandle<()>,
    url: Url,
}

impl DevRegistryHandle {
    /// The address clients use: `dubbo://host:port`.
    pub fn address(&self) -> String {
        format!("dubbo://{}", self.url.address())
    }

    /// The server state (for tests and tools).
    pub fn server(&self) -> &Arc<DevRegistryServer> {
        &self.server
    }

    /// Stops serving (pending watches are answered at once, so shutdown does not wait
    /// for their long polls).
    pub async fn shutdown(self) {
        self.server.bump();
        self.reaper.abort();
        self.exporter.unexport().await;
        self.protocol.destroy().await;
    }
}

/// The client side: a [`Registry`] talking to a dev registry server.
#[derive(Debug)]
pub struct DevRegistry {
    url: Url,
    client: DevRegistryServiceClient,
    lease: Duration,
    registered: Arc<Mutex<Vec<String>>>,
    renewer: JoinHandle<()>,
    subscriptions: Mutex<Vec<(Url, SharedListener, JoinHandle<()>)>>,
}

impl DevRegistry {
    /// Connects to the server at `url` (`dubbo://host:port?lease=3000`).
    pub async fn connect(url: Url) -> RegistryResult<Self> {
        let target = url
            .with_path(DEV_REGISTRY_INTERFACE)
            .with_params([(keys::VERSION_KEY, "1.0.0"), (keys::TIMEOUT_KEY, "15000")]);
        let invoker: BoxInvoker =
            DubboProtocol::new()
                .refer(target)
                .await
                .map_err(|e| RegistryError::Unavailable {
                    address: url.address(),
                    reason: e.to_string(),
                })?;
        let client = DevRegistryServiceClient::new(invoker);
        let lease = url.param::<keys::Lease>();
        let registered: Arc<Mutex<Vec<String>>> = Arc::default();
        let renewer = tokio::spawn({
            let client = client.clone();
            let registered = Arc::downgrade(&registered);
            async move {
                let mut tick = tokio::time::interval((lease / 3).max(Duration::from_millis(50)));
                loop {
                    tick.tick().await;
                    let Some(list) = registered.upgrade() else {
                        return;
                    };
                    let urls = list.lock().clone();
                    for u in urls {
                        if let Err(e) = client.register(u.clone(), lease.as_millis() as i64).await {
                            warn!(url = u, error = %e, "lease renewal failed");
                        }
                    }
                }
            }
        });
        Ok(DevRegistry {
            url,
            client,
            lease,
            registered,
            renewer,
            subscriptions: Mutex::new(Vec::new()),
        })
    }
}

impl Drop for DevRegistry {
    fn drop(&mut self) {
        self.renewer.abort();
        for (_, _, task) in self.subscriptions.lock().drain(..) {
            task.abort();
        }
    }
}

fn rpc_to_registry(e: RpcError) -> RegistryError {
    RegistryError::Unavailable {
        address: "dev registry".to_owned(),
        reason: e.to_string(),
    }
}

/// Turns a snapshot into per-category lists (with `empty://` for empty ones).
fn deliver(sub: &Url, urls: &[String], listener: &dyn NotifyListener) {
    let parsed: Vec<Url> = urls
        .iter()
        .filter_map(|u| match Url::parse(u) {
            Ok(url) => Some(url),
            Err(e) => {
                warn!(url = u, error = %e, "unparseable URL from the dev registry skipped");
                None
            }
        })
        .collect();
    for category in categories(sub) {
        let list: Vec<Url> = parsed
            .iter()
            .filter(|u| list_category(u) == category)
            .cloned()
            .collect();
        let list = if list.is_empty() {
            vec![empty_url(sub, category)]
        } else {
            list
        };
        rubbo_registry::notify_safely(listener, list);
    }
}

impl Registry for DevRegistry {
    fn url(&self) -> &Url {
        &self.url
    }

    fn is_available(&self) -> bool {
        self.client.invoker().is_available()
    }

    fn register(&self, url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move {
            let full = url.to_full_string();
            self.client
                .register(full.clone(), self.lease.as_millis() as i64)
                .await
                .map_err(rpc_to_registry)?;
            let mut r = self.registered.lock();
            if !r.contains(&full) {
                r.push(full);
            }
            Ok(())
        })
    }

    fn unregister(&self, url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move {
            let full = url.to_full_string();
            self.registered.lock().retain(|u| *u != full);
            self.client.unregister(full).await.map_err(rpc_to_registry)
        })
    }

    fn subscribe(&self, url: Url, listener: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move {
            let sub = url.to_full_string();
            let first = self
                .client
                .watch(sub.clone(), -1, 0)
                .await
                .map_err(rpc_to_registry)?;
            deliver(&url, &first.urls, &*listener);
            let task = tokio::spawn({
                let client = self.client.clone();
                let listener = listener.clone();
                let url = url.clone();
                async move {
                    let mut since = first.version;
                    let mut last = first.urls;
                    // While the registry is down, retries back off from 500 ms to 10 s.
                    let mut delay = WATCH_RETRY_MIN;
                    loop {
                        match client.watch(sub.clone(), since, WATCH_WAIT_MS).await {
                            Ok(snap) => {
                                delay = WATCH_RETRY_MIN;
                                since = snap.version;
                                let mut urls = snap.urls;
                                urls.sort();
                                if urls != last {
                                    deliver(&url, &urls, &*listener);
                                    last = urls;
                                }
                            }
                            Err(e) => {
                                debug!(error = %e, retry_ms = delay.as_millis() as u64, "dev registry watch failed, retrying");
                                tokio::time::sleep(delay).await;
                                delay = (delay * 2).min(WATCH_RETRY_MAX);
                            }
                        }
                    }
                }
            });
            self.subscriptions.lock().push((url, listener, task));
            Ok(())
        })
    }

    fn unsubscribe(&self, url: Url, listener: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move {
            self.subscriptions.lock().retain(|(u, l, task)| {
                let same = *u == url && same_listener(l, &listener);
                if same {
                    task.abort();
                }
                !same
            });
            Ok(())
        })
    }

    fn lookup(&self, url: Url) -> BoxFuture<'_, RegistryResult<Vec<Url>>> {
        Box::pin(async move {
            let snap = self
                .client
                .watch(url.to_full_string(), -1, 0)
                .await
                .map_err(rpc_to_registry)?;
            Ok(snap
                .urls
                .iter()
                .filter_map(|u| Url::parse(u).ok())
                .collect())
        })
    }

    fn destroy(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let urls: Vec<String> = self.registered.lock().drain(..).collect();
            for u in urls {
                let _ = self.client.unregister(u).await;
            }
            for (_, _, task) in self.subscriptions.lock().drain(..) {
                task.abort();
            }
        })
    }
}

/// The `dubbo` registry factory: `dubbo://host:port` addresses a dev registry.
/// Registries are shared per address.
#[derive(Debug, Default)]
pub struct DevRegistryFactory {
    registries: Arc<Mutex<HashMap<String, SharedRegistry>>>,
}

impl RegistryFactory for DevRegistryFactory {
    fn get_registry(&self, url: &Url) -> BoxFuture<'static, RegistryResult<SharedRegistry>> {
        let key = rubbo_registry::registry_key(url);
        let registries = self.registries.clone();
        let url = url.clone();
        Box::pin(async move {
            if let Some(r) = registries.lock().get(&key) {
                return Ok(r.clone());
            }
            let fresh: SharedRegistry = Arc::new(DevRegistry::connect(url).await?);
            Ok(registries.lock().entry(key).or_insert(fresh).clone())
        })
    }
}
