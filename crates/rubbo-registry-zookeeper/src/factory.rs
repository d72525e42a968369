//! `ZookeeperRegistryFactory`: the `zookeeper` entry of the registry extension table.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use rubbo_common::{BoxFuture, ExtensionTable, Url};
use rubbo_registry::{
    FailbackRegistry, RegistryFactory, RegistryResult, SharedRegistry, registry_key,
};

use crate::ZookeeperRegistry;

/// Makes ZooKeeper registries wrapped in a [`FailbackRegistry`] (retries, cache file),
/// one per address and group, shared by every caller.
#[derive(Debug, Default, Clone)]
pub struct ZookeeperRegistryFactory {
    registries: Arc<Mutex<HashMap<String, Arc<FailbackRegistry>>>>,
}

impl RegistryFactory for ZookeeperRegistryFactory {
    fn get_registry(&self, url: &Url) -> BoxFuture<'static, RegistryResult<SharedRegistry>> {
        let url = url.clone();
        let registries = self.registries.clone();
        Box::pin(async move {
            let key = registry_key(&url);
            if let Some(r) = registries.lock().get(&key).filter(|r| !r.is_destroyed()) {
                return Ok(r.clone() as SharedRegistry);
            }
            let zk = ZookeeperRegistry::connect(url).await?;
            let registry = Arc::new(FailbackRegistry::new(Arc::new(zk)));
            let mut map = registries.lock();
            match map.get(&key).filter(|r| !r.is_destroyed()) {
                // Lost a race with another caller: use theirs (ours closes on drop).
                Some(existing) => Ok(existing.clone() as SharedRegistry),
                None => {
                    map.insert(key, registry.clone());
                    Ok(registry as SharedRegistry)
                }
            }
        })
    }
}

/// Adds the `zookeeper` factory to `table`.
pub fn register_factory(table: &mut ExtensionTable<dyn RegistryFactory>) {
    table.register("zookeeper", Arc::new(ZookeeperRegistryFactory::default()));
}

/// [`rubbo_registry::registry_factories`] plus `zookeeper`.
pub fn registry_factories() -> ExtensionTable<dyn RegistryFactory> {
    let mut table = rubbo_registry::registry_factories();
    register_factory(&mut table);
    table
}
