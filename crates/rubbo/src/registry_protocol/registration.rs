//! What the registry protocol keeps of its exports and references for the QoS port:
//! each provider registration, which `offline` / `online` flip without touching the
//! server, and each reference's view of its registry.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use rubbo_cluster::Directory;
use rubbo_common::{RpcError, Url};
use rubbo_registry::SharedRegistry;
use tracing::info;

use super::invoker::RegistryInvoker;
use super::registry_err;

/// A provider URL registered (or not, after `offline`) in one registry (Java's
/// `ProviderModel.RegisterStatedURL`).
#[derive(Debug)]
pub struct Registration {
    registry: SharedRegistry,
    /// The provider URL as exported, before any override rule.
    origin: Url,
    /// The URL registered now: `origin` re-shaped by the provider's override rules.
    provider: Mutex<Url>,
    registered: AtomicBool,
    /// Serializes registering and unregistering, so the state matches the registry.
    op: tokio::sync::Mutex<()>,
}

impl Registration {
    /// `origin` as exported, registered (when `registered`) as `provider`.
    pub(super) fn new(
        registry: SharedRegistry,
        origin: Url,
        provider: Url,
        registered: bool,
    ) -> Self {
        Registration {
            registry,
            origin,
            provider: Mutex::new(provider),
            registered: AtomicBool::new(registered),
            op: tokio::sync::Mutex::new(()),
        }
    }

    /// The provider URL registered (or to register): the exported URL re-shaped by
    /// the override rules of the config center, if any.
    pub fn provider(&self) -> Url {
        self.provider.lock().clone()
    }

    /// The provider URL as exported, before any override rule.
    pub fn origin(&self) -> &Url {
        &self.origin
    }

    /// The registry's URL.
    pub fn registry_url(&self) -> &Url {
        self.registry.url()
    }

    /// Whether the provider URL is in the registry now.
    pub fn is_registered(&self) -> bool {
        self.registered.load(Ordering::SeqCst)
    }

    /// Registers (`true`) or unregisters the provider URL; nothing if it already is
    /// so. The server is left running: calls still reach it directly.
    pub async fn set_registered(&self, registered: bool) -> Result<(), RpcError> {
        let _op = self.op.lock().await;
        if self.is_registered() == registered {
            return Ok(());
        }
        let url = self.provider();
        if registered {
            self.registry
                .register(url.clone())
                .await
                .map_err(registry_err)?;
        } else {
            self.registry
                .unregister(url.clone())
                .await
                .map_err(registry_err)?;
        }
        self.registered.store(registered, Ordering::SeqCst);
        info!(
            service = %url.service_key(),
            provider = %url.address(),
            registry = %self.registry.url().address(),
            registered,
            "registration changed"
        );
        Ok(())
    }

    /// Replaces the registered URL with `url` (Java's `RegistryProtocol.reExport`):
    /// when registered, the old URL is unregistered and `url` registered, in Java's
    /// order. Returns whether the URL changed. When registering `url` fails, `url` is
    /// kept as the URL to register and the registration stays down (`is_registered`
    /// is false) until [`set_registered`](Self::set_registered) succeeds.
    pub(super) async fn reexport(&self, url: Url) -> Result<bool, RpcError> {
        let _op = self.op.lock().await;
        let old = self.provider();
        if old == url {
            return Ok(false);
        }
        if self.is_registered() {
            self.registry
                .unregister(old.clone())
                .await
                .map_err(registry_err)?;
            *self.provider.lock() = url.clone();
            if let Err(e) = self.registry.register(url.clone()).await {
                self.registered.store(false, Ordering::SeqCst);
                return Err(registry_err(e));
            }
        } else {
            *self.provider.lock() = url.clone();
        }
        info!(
            service = %url.service_key(),
            provider = %url.address(),
            registry = %self.registry.url().address(),
            registered = self.is_registered(),
            old = %old,
            new = %url,
            "provider URL re-shaped by override rules"
        );
        Ok(true)
    }
}

/// A reference's registry and the providers its directory lists.
#[derive(Debug, Clone)]
pub struct ReferenceView {
    /// The consumer URL (its service key names the reference).
    pub consumer: Url,
    /// The registry's URL.
    pub registry: Url,
    /// Every provider listed, with whether it is available.
    pub providers: Vec<(Url, bool)>,
    /// Its router chain.
    pub chain: Arc<rubbo_cluster::RouterChain>,
}

/// A reference, not kept alive, and its registry's URL.
type Tracked = (Weak<RegistryInvoker>, Url);

/// The registrations and references of one registry protocol.
#[derive(Debug, Clone, Default)]
pub(super) struct Book {
    registrations: Arc<Mutex<Vec<Arc<Registration>>>>,
    references: Arc<Mutex<Vec<Tracked>>>,
}

impl Book {
    pub(super) fn add_registration(&self, r: Arc<Registration>) {
        self.registrations.lock().push(r);
    }

    pub(super) fn remove_registration(&self, r: &Arc<Registration>) {
        self.registrations.lock().retain(|x| !Arc::ptr_eq(x, r));
    }

    pub(super) fn registrations(&self) -> Vec<Arc<Registration>> {
        self.registrations.lock().clone()
    }

    pub(super) fn add_reference(&self, r: &Arc<RegistryInvoker>, registry: Url) {
        let mut refs = self.references.lock();
        refs.retain(|(w, _)| w.strong_count() > 0);
        refs.push((Arc::downgrade(r), registry));
    }

    pub(super) fn references(&self) -> Vec<ReferenceView> {
        let mut refs = self.references.lock();
        refs.retain(|(w, _)| w.strong_count() > 0);
        refs.iter()
            .filter_map(|(w, registry)| {
                let r = w.upgrade()?;
                if r.subscription.is_closed() {
                    return None;
                }
                let providers = r
                    .directory
                    .all_invokers()
                    .iter()
                    .map(|i| (i.url().clone(), i.is_available()))
                    .collect();
                Some(ReferenceView {
                    consumer: r.consumer.clone(),
                    registry: registry.clone(),
                    providers,
                    chain: r.directory.router_chain().clone(),
                })
            })
            .collect()
    }
}
