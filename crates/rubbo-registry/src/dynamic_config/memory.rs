//! `MemoryDynamicConfiguration`: a config center inside one process, for tests of the
//! layers above.

use std::collections::HashMap;
use std::fmt;

use parking_lot::Mutex;
use rubbo_common::{BoxFuture, Url};

use super::{
    ConfigChangeEvent, ConfigChangeType, ConfigItem, DEFAULT_GROUP, DynamicConfiguration,
    SharedConfigListener, process_safely, same_config_listener,
};
use crate::RegistryResult;

/// A config center held in memory. Listeners are called synchronously, in order,
/// outside the lock, by the call that changed the key.
pub struct MemoryDynamicConfiguration {
    url: Url,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// (group, key) -> (content, version).
    items: HashMap<(String, String), (String, i64)>,
    listeners: Vec<((String, String), SharedConfigListener)>,
}

impl fmt::Debug for MemoryDynamicConfiguration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.lock();
        f.debug_struct("MemoryDynamicConfiguration")
            .field("items", &s.items.len())
            .field("listeners", &s.listeners.len())
            .finish()
    }
}

impl Default for MemoryDynamicConfiguration {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryDynamicConfiguration {
    /// An empty config center (`memory://127.0.0.1`, default group `dubbo`).
    pub fn new() -> Self {
        let url = Url::new("memory", "127.0.0.1", 0);
        MemoryDynamicConfiguration {
            url,
            state: Mutex::new(State::default()),
        }
    }

    fn id(&self, key: &str, group: &str) -> (String, String) {
        let group = if group.is_empty() {
            DEFAULT_GROUP
        } else {
            group
        };
        (group.to_owned(), key.to_owned())
    }

    /// Applies `change` to the item under `id` and notifies its listeners.
    fn change(
        &self,
        id: (String, String),
        change: impl FnOnce(Option<&(String, i64)>) -> Option<Option<String>>,
    ) -> bool {
        let (event, listeners) = {
            let mut s = self.state.lock();
            let current = s.items.get(&id);
            let Some(next) = change(current) else {
                return false;
            };
            let existed = current.is_some();
            let (content, change_type) = match next {
                Some(content) => {
                    let version = current.map_or(0, |(_, v)| v + 1);
                    s.items.insert(id.clone(), (content.clone(), version));
                    let t = if existed {
                        ConfigChangeType::Modified
                    } else {
                        ConfigChangeType::Added
                    };
                    (content, t)
                }
                None => {
                    if s.items.remove(&id).is_none() {
                        return false;
                    }
                    (String::new(), ConfigChangeType::Deleted)
                }
            };
            let listeners: Vec<SharedConfigListener> = s
                .listeners
                .iter()
                .filter(|(k, _)| *k == id)
                .map(|(_, l)| l.clone())
                .collect();
            let event = ConfigChangeEvent {
                key: id.1.clone(),
                group: id.0.clone(),
                content,
                change_type,
            };
            (event, listeners)
        };
        for l in listeners {
            process_safely(&*l, event.clone());
        }
        true
    }
}

impl DynamicConfiguration for MemoryDynamicConfiguration {
    fn url(&self) -> &Url {
        &self.url
    }

    fn default_group(&self) -> &str {
        DEFAULT_GROUP
    }

    fn is_available(&self) -> bool {
        true
    }

    fn get_config_item<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, RegistryResult<Option<ConfigItem>>> {
        let id = self.id(key, group);
        let item = self
            .state
            .lock()
            .items
            .get(&id)
            .map(|(content, version)| ConfigItem {
                content: content.clone(),
                version: *version,
            });
        Box::pin(async move { Ok(item) })
    }

    fn publish_config<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
        content: &'a str,
    ) -> BoxFuture<'a, RegistryResult<()>> {
        self.change(self.id(key, group), |_| Some(Some(content.to_owned())));
        Box::pin(async { Ok(()) })
    }

    fn publish_config_cas<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
        content: &'a str,
        expected: Option<i64>,
    ) -> BoxFuture<'a, RegistryResult<bool>> {
        let written = self.change(self.id(key, group), |current| {
            (current.map(|(_, v)| *v) == expected).then(|| Some(content.to_owned()))
        });
        Box::pin(async move { Ok(written) })
    }

    fn remove_config<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, RegistryResult<bool>> {
        let removed = self.change(self.id(key, group), |current| current.map(|_| None));
        Box::pin(async move { Ok(removed) })
    }

    fn add_listener<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
        listener: SharedConfigListener,
    ) -> BoxFuture<'a, RegistryResult<Option<String>>> {
        let id = self.id(key, group);
        let mut s = self.state.lock();
        let now = s.items.get(&id).map(|(c, _)| c.clone());
        s.listeners.push((id, listener));
        Box::pin(async move { Ok(now) })
    }

    fn remove_listener(&self, key: &str, group: &str, listener: &SharedConfigListener) {
        let id = self.id(key, group);
        self.state
            .lock()
            .listeners
            .retain(|(k, l)| !(*k == id && same_config_listener(l, listener)));
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.state.lock().listeners.clear();
        Box::pin(async {})
    }
}
