//! `RegistryFactory`: the registry extension point.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use rubbo_common::{BoxFuture, ExtensionTable, Url};

use crate::{MemoryRegistry, RegistryError, RegistryResult, SharedRegistry, resolve_registry_url};

/// Makes (or shares) the registry for a registry URL. One implementation per
/// protocol (`zookeeper`, `memory`...), found in the table built by
/// [`registry_factories`].
///
/// Factories share one registry per address and group, as Java's
/// `AbstractRegistryFactory` does, so a process's providers and consumers use one
/// connection.
///
/// ```
/// use rubbo_registry::{RegistryFactory, MemoryRegistryFactory};
/// use rubbo_common::Url;
/// use std::sync::Arc;
///
/// let factory: Arc<dyn RegistryFactory> = Arc::new(MemoryRegistryFactory::default());
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let a = factory.get_registry(&Url::parse("memory://local").unwrap()).await.unwrap();
/// let b = factory.get_registry(&Url::parse("memory://local").unwrap()).await.unwrap();
/// assert!(Arc::ptr_eq(&a, &b));
/// # });
/// ```
pub trait RegistryFactory: Send + Sync + fmt::Debug + 'static {
    /// The registry for `url` (its protocol already resolved, see
    /// [`resolve_registry_url`]).
    fn get_registry(&self, url: &Url) -> BoxFuture<'static, RegistryResult<SharedRegistry>>;
}

/// The key under which factories share registries: protocol, credentials, address and
/// `group`.
pub fn registry_key(url: &Url) -> String {
    let mut key = url.with_path("").to_identity_string();
    if let Some(g) = url.group() {
        key.push('/');
        key.push_str(g);
    }
    key
}

/// Makes [`MemoryRegistry`]s, one per address.
#[derive(Debug, Default, Clone)]
pub struct MemoryRegistryFactory {
    registries: Arc<Mutex<HashMap<String, SharedRegistry>>>,
}

impl RegistryFactory for MemoryRegistryFactory {
    fn get_registry(&self, url: &Url) -> BoxFuture<'static, RegistryResult<SharedRegistry>> {
        let url = url.clone();
        let registries = self.registries.clone();
        Box::pin(async move {
            let key = registry_key(&url);
            let mut map = registries.lock();
            if let Some(r) = map.get(&key).filter(|r| r.is_available()) {
                return Ok(r.clone());
            }
            let registry: SharedRegistry = Arc::new(MemoryRegistry::new(url));
            map.insert(key, registry.clone());
            Ok(registry)
        })
    }
}

/// The registry extension table with the built-in factories of this crate (`memory`).
/// Plugin crates add theirs (`rubbo_registry_zookeeper::register_factory`); the
/// default name is `zookeeper`.
pub fn registry_factories() -> ExtensionTable<dyn RegistryFactory> {
    let mut table: ExtensionTable<dyn RegistryFactory> =
        ExtensionTable::new("registry", "zookeeper");
    table.register("memory", Arc::new(MemoryRegistryFactory::default()));
    table
}

/// Resolves `url` (`registry://...?registry=x` becomes `x://...`) and asks the factory
/// of its protocol for the registry.
pub async fn get_registry(
    factories: &ExtensionTable<dyn RegistryFactory>,
    url: &Url,
) -> RegistryResult<SharedRegistry> {
    let url = resolve_registry_url(url);
    let name = url
        .protocol()
        .ok_or_else(|| RegistryError::Config(format!("no protocol in {url}")))?;
    factories.get(name)?.get_registry(&url).await
}
