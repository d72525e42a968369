//! `ZookeeperRegistryFactory`: the `zookeeper` entry of the registry extension table.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use rubbo_common::{BoxFuture, ExtensionTable, Url};
use rubbo_registry::{
    FailbackRegistry, RegistryFactory, RegistryResult, SharedRegistry, registry_key,
};

use crate::{ZookeeperRegistry, ZookeeperSessions};

/// Makes ZooKeeper registries wrapped in a [`FailbackRegistry`] (retries, cache file),
/// one per address and group, shared by every caller.
#[derive(Debug, Default, Clone)]
pub struct ZookeeperRegistryFactory {
    registries: Arc<Mutex<HashMap<String, Arc<FailbackRegistry>>>>,
    sessions: ZookeeperSessions,
}

impl ZookeeperRegistryFactory {
    /// A factory whose registries use (and share) the sessions of `sessions`: give the
    /// same set to the config center factory and a registry and a config center on
    /// one ZooKeeper share a session.
    pub fn with_sessions(sessions: ZookeeperSessions) -> Self {
        ZookeeperRegistryFactory {
            registries: Arc::default(),
            sessions,
        }
    }

    /// The sessions its registries use.
    pub fn sessions(&self) -> &ZookeeperSessions {
        &self.sessions
    }
}

impl RegistryFactory for ZookeeperRegistryFactory {
    fn get_registry(&self, url: &Url) -> BoxFuture<'static, RegistryResult<SharedRegistry>> {
        let url = url.clone();
        let registries = self.registries.clone();
        let sessions = self.sessions.clone();
        Box::pin(async move {
            let key = registry_key(&url);
            if let Some(r) = registries.lock().get(&key).filter(|r| !r.is_destroyed()) {
                return Ok(r.clone() as SharedRegistry);
            }
            let zk = ZookeeperRegistry::connect_shared(url, &sessions).await?;
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

/// Adds the `zookeeper` factory, on `sessions`, to `table`.
pub fn register_factory_with(
    table: &mut ExtensionTable<dyn RegistryFactory>,
    sessions: ZookeeperSessions,
) {
    table.register(
        "zookeeper",
        Arc::new(ZookeeperRegistryFactory::with_sessions(sessions)),
    );
}

/// [`rubbo_registry::registry_factories`] plus `zookeeper`.
pub fn registry_factories() -> ExtensionTable<dyn RegistryFactory> {
    let mut table = rubbo_registry::registry_factories();
    register_factory(&mut table);
    table
}
