//! The services of one Triple server, keyed `{group}/{path}:{version}` and found per
//! request by path, then group and version.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;
use rubbo_common::BoxInvoker;

/// A version that counts as absent (Java's `GroupServiceKeyCache`).
fn norm_version(v: Option<&str>) -> Option<&str> {
    v.filter(|v| !v.is_empty() && *v != "0.0.0" && *v != "*")
}

fn norm_group(g: Option<&str>) -> Option<&str> {
    g.filter(|g| !g.is_empty())
}

/// The exporter-map key: `{group}/{path}:{version}`.
pub(crate) fn exporter_key(group: Option<&str>, path: &str, version: Option<&str>) -> String {
    rubbo_common::service_key(norm_group(group), path, norm_version(version))
}

/// One exported service.
#[derive(Debug)]
pub(crate) struct Exported {
    /// The service's invoker, with its provider filter chain.
    pub(crate) invoker: BoxInvoker,
    /// The interface name, shared into every invocation.
    pub(crate) interface: Arc<str>,
    pub(crate) group: Option<Arc<str>>,
    pub(crate) version: Option<Arc<str>>,
}

impl Exported {
    pub(crate) fn new(invoker: BoxInvoker) -> Self {
        let url = invoker.url();
        Exported {
            interface: Arc::from(url.service_interface().unwrap_or_default()),
            group: norm_group(url.group()).map(Arc::from),
            version: norm_version(url.version()).map(Arc::from),
            invoker,
        }
    }

    fn matches(&self, group: Option<&str>, version: Option<&str>) -> bool {
        self.group.as_deref() == norm_group(group)
            && self.version.as_deref() == norm_version(version)
    }
}

/// The services of one server.
#[derive(Debug, Default)]
pub(crate) struct Exporters {
    by_key: BTreeMap<String, Arc<Exported>>,
    by_path: HashMap<String, Vec<(String, Arc<Exported>)>>,
}

impl Exporters {
    pub(crate) fn insert(&mut self, key: String, path: &str, e: Arc<Exported>) {
        self.remove(&key);
        self.by_path
            .entry(path.to_owned())
            .or_default()
            .push((key.clone(), e.clone()));
        self.by_key.insert(key, e);
    }

    pub(crate) fn remove(&mut self, key: &str) {
        if self.by_key.remove(key).is_some() {
            self.by_path.retain(|_, v| {
                v.retain(|(k, _)| k != key);
                !v.is_empty()
            });
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// The service at `path` for `group` / `version`. With no version asked for, the
    /// only service of that group at that path answers (Java's
    /// `resolve-fallback-to-default`, on by default).
    pub(crate) fn find(
        &self,
        path: &str,
        group: Option<&str>,
        version: Option<&str>,
    ) -> Option<&Arc<Exported>> {
        let candidates = self.by_path.get(path)?;
        if let Some(e) = candidates
            .iter()
            .map(|(_, e)| e)
            .find(|e| e.matches(group, version))
        {
            return Some(e);
        }
        if norm_version(version).is_some() {
            return None;
        }
        let mut same_group = candidates
            .iter()
            .map(|(_, e)| e)
            .filter(|e| e.group.as_deref() == norm_group(group));
        match (same_group.next(), same_group.next()) {
            (Some(e), None) => Some(e),
            _ => None,
        }
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> {
        self.by_key.keys().map(String::as_str)
    }
}

/// The shared exporter table of one server.
pub(crate) type ExporterMap = Arc<RwLock<Exporters>>;
