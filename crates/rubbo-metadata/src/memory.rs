//! In-memory [`ServiceDiscovery`] and [`ServiceNameMapping`]: for tests, and for
//! applications in one process.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;
use rubbo_common::BoxFuture;
use tokio::sync::watch;

use crate::discovery::{
    InstancesWatch, MappingWatch, ServiceDiscovery, ServiceNameMapping, parse_mapping,
};
use crate::error::MetadataResult;
use crate::instance::ServiceInstance;

type Instances = BTreeMap<String, Arc<ServiceInstance>>;
type Publisher = watch::Sender<Arc<Vec<Arc<ServiceInstance>>>>;

/// Instances and mappings in memory; clones share them.
#[derive(Debug, Clone, Default)]
pub struct MemoryServiceDiscovery {
    inner: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    apps: HashMap<String, (Instances, Publisher)>,
    mappings: HashMap<String, String>,
    /// The watchers of each interface's mapping.
    mapping_watches: HashMap<String, watch::Sender<Arc<Vec<String>>>>,
    /// What this handle registered, for `destroy`.
    mine: Vec<(String, String)>,
}

impl State {
    fn app(&mut self, app: &str) -> &mut (Instances, Publisher) {
        self.apps
            .entry(app.to_owned())
            .or_insert_with(|| (BTreeMap::new(), watch::channel(Arc::new(Vec::new())).0))
    }

    fn publish(&mut self, app: &str) {
        let (instances, tx) = self.app(app);
        let list: Vec<Arc<ServiceInstance>> = instances.values().cloned().collect();
        tx.send_replace(Arc::new(list));
    }
}

impl MemoryServiceDiscovery {
    /// An empty one.
    pub fn new() -> Self {
        Self::default()
    }

    /// The mapping value of `interface` as stored (comma-joined), if any.
    pub fn mapping_value(&self, interface: &str) -> Option<String> {
        self.inner.lock().mappings.get(interface).cloned()
    }
}

impl ServiceDiscovery for MemoryServiceDiscovery {
    fn register(&self, instance: ServiceInstance) -> BoxFuture<'_, MetadataResult<()>> {
        let mut s = self.inner.lock();
        let app = instance.service_name.clone();
        let id = instance.id();
        s.app(&app).0.insert(id.clone(), Arc::new(instance));
        if !s.mine.iter().any(|(a, i)| *a == app && *i == id) {
            s.mine.push((app.clone(), id));
        }
        s.publish(&app);
        Box::pin(async { Ok(()) })
    }

    fn unregister(&self, instance: &ServiceInstance) -> BoxFuture<'_, MetadataResult<()>> {
        let mut s = self.inner.lock();
        let app = instance.service_name.clone();
        let id = instance.id();
        s.app(&app).0.remove(&id);
        s.mine.retain(|(a, i)| !(*a == app && *i == id));
        s.publish(&app);
        Box::pin(async { Ok(()) })
    }

    fn instances(&self, app: &str) -> BoxFuture<'_, MetadataResult<Vec<ServiceInstance>>> {
        let list = self
            .inner
            .lock()
            .app(app)
            .0
            .values()
            .map(|i| ServiceInstance::clone(i))
            .collect();
        Box::pin(async { Ok(list) })
    }

    fn watch(&self, app: &str) -> BoxFuture<'_, MetadataResult<InstancesWatch>> {
        let rx = self.inner.lock().app(app).1.subscribe();
        Box::pin(async { Ok(rx) })
    }

    fn destroy(&self) -> BoxFuture<'_, ()> {
        let mut s = self.inner.lock();
        let mine = std::mem::take(&mut s.mine);
        for (app, id) in mine {
            s.app(&app).0.remove(&id);
            s.publish(&app);
        }
        Box::pin(async {})
    }
}

impl ServiceNameMapping for MemoryServiceDiscovery {
    fn map(&self, interface: &str, app: &str) -> BoxFuture<'_, MetadataResult<()>> {
        let mut s = self.inner.lock();
        let value = s.mappings.entry(interface.to_owned()).or_default();
        if !parse_mapping(value).iter().any(|a| a == app) {
            if value.is_empty() {
                *value = app.to_owned();
            } else {
                value.push(',');
                value.push_str(app);
            }
            let apps = Arc::new(parse_mapping(value));
            if let Some(tx) = s.mapping_watches.get(interface) {
                tx.send_replace(apps);
            }
        }
        Box::pin(async { Ok(()) })
    }

    fn get(&self, interface: &str) -> BoxFuture<'_, MetadataResult<Vec<String>>> {
        let apps = self
            .inner
            .lock()
            .mappings
            .get(interface)
            .map(|v| parse_mapping(v))
            .unwrap_or_default();
        Box::pin(async { Ok(apps) })
    }

    fn watch_mapping(&self, interface: &str) -> BoxFuture<'_, MetadataResult<MappingWatch>> {
        let mut s = self.inner.lock();
        let apps = Arc::new(
            s.mappings
                .get(interface)
                .map(|v| parse_mapping(v))
                .unwrap_or_default(),
        );
        let rx = s
            .mapping_watches
            .entry(interface.to_owned())
            .or_insert_with(|| watch::channel(apps).0)
            .subscribe();
        Box::pin(async { Ok(rx) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn destroy_removes_only_what_it_registered() {
        let d = MemoryServiceDiscovery::new();
        d.register(ServiceInstance::new("a", "h", 1)).await.unwrap();
        // A clone shares the state; here it forgets what `d` registered so far.
        let shared = MemoryServiceDiscovery {
            inner: d.inner.clone(),
        };
        shared.inner.lock().mine.clear();
        let mut w = d.watch("a").await.unwrap();
        assert_eq!(w.borrow_and_update().len(), 1);
        d.register(ServiceInstance::new("a", "h", 3)).await.unwrap();
        assert_eq!(w.borrow_and_update().len(), 2);
        d.destroy().await;
        assert!(w.has_changed().unwrap());
        // Instance 1 was forgotten, so only 3 goes.
        assert_eq!(w.borrow()[0].port, 1);
        assert_eq!(w.borrow().len(), 1);
    }

    #[tokio::test]
    async fn mapping_appends_once() {
        let d = MemoryServiceDiscovery::new();
        d.map("I", "a").await.unwrap();
        d.map("I", "b").await.unwrap();
        d.map("I", "a").await.unwrap();
        assert_eq!(d.mapping_value("I").as_deref(), Some("a,b"));
        assert_eq!(d.get("I").await.unwrap(), ["a", "b"]);
        assert!(d.get("J").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_mapping_watch_sees_new_applications() {
        let d = MemoryServiceDiscovery::new();
        d.map("I", "a").await.unwrap();
        let mut w = d.watch_mapping("I").await.unwrap();
        assert_eq!(**w.borrow_and_update(), ["a"]);
        d.map("I", "b").await.unwrap();
        assert!(w.has_changed().unwrap());
        assert_eq!(**w.borrow_and_update(), ["a", "b"]);
        d.map("I", "b").await.unwrap();
        assert!(!w.has_changed().unwrap(), "no change, no notification");
    }
}
