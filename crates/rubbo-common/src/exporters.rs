//! The exporter map of one server, for every protocol: services keyed
//! `{group}/{path}:{version}` and found per request by path, then group and version
//! (Java's `DubboProtocol.getInvoker` / `TripleProtocol` exporter lookups).
//!
//! ```
//! use rubbo_common::exporters::{Exported, ExporterMap, exporter_key};
//! # use rubbo_common::{BoxInvoker, Invocation, InvokeFuture, Invoker, RpcResult, Url};
//! # #[derive(Debug)] struct S(Url);
//! # impl Invoker for S {
//! #     fn invoke(&self, _: Invocation) -> InvokeFuture { Box::pin(async { Ok(RpcResult::null()) }) }
//! #     fn url(&self) -> &Url { &self.0 }
//! # }
//! let url = Url::parse("dubbo://127.0.0.1:20880/a.B?interface=a.B&version=1.0").unwrap();
//! let map = ExporterMap::default();
//! let key = exporter_key(url.group(), "a.B", url.version());
//! map.write().insert(key, "a.B", std::sync::Arc::new(Exported::new(std::sync::Arc::new(S(url)))));
//! assert!(map.read().find_exact("a.B", None, Some("1.0")).is_some());
//! assert!(map.read().find_exact("a.B", None, None).is_none());
//! // Asked for no version, the only service at that path answers.
//! assert!(map.read().find("a.B", None, None).is_some());
//! ```

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::BoxInvoker;

/// A version that counts as absent (Java's `GroupServiceKeyCache`).
fn norm_version(v: Option<&str>) -> Option<&str> {
    v.filter(|v| !v.is_empty() && *v != "0.0.0" && *v != "*")
}

fn norm_group(g: Option<&str>) -> Option<&str> {
    g.filter(|g| !g.is_empty())
}

/// The exporter-map key: `{group}/{path}:{version}`.
pub fn exporter_key(group: Option<&str>, path: &str, version: Option<&str>) -> String {
    crate::service_key(norm_group(group), path, norm_version(version))
}

/// One exported service.
#[derive(Debug)]
#[non_exhaustive]
pub struct Exported {
    /// The service's invoker, with its provider filter chain.
    pub invoker: BoxInvoker,
    /// The interface name, shared into every invocation.
    pub interface: Arc<str>,
    /// Its group, absent when empty.
    pub group: Option<Arc<str>>,
    /// Its version, absent when empty, `0.0.0` or `*`.
    pub version: Option<Arc<str>>,
}

impl Exported {
    /// The service `invoker` serves, identified by its URL.
    pub fn new(invoker: BoxInvoker) -> Self {
        let url = invoker.url();
        Exported {
            interface: Arc::from(url.service_interface().unwrap_or_default()),
            group: norm_group(url.group()).map(Arc::from),
            version: norm_version(url.version()).map(Arc::from),
            invoker,
        }
    }

    /// Whether a request for `group` / `version` reaches this service.
    pub fn matches(&self, group: Option<&str>, version: Option<&str>) -> bool {
        self.group.as_deref() == norm_group(group)
            && self.version.as_deref() == norm_version(version)
    }
}

/// The services of one server, by exporter key and by path (the per-request lookup
/// goes by path and compares group and version, so it builds no key string).
#[derive(Debug, Default)]
pub struct Exporters {
    by_key: BTreeMap<String, Arc<Exported>>,
    /// Hashed with foldhash: every request looks its path up here, and SipHash costs
    /// a few hundred instructions for a Java interface name. Only the application
    /// inserts keys, so a peer cannot grow collision chains.
    by_path: HashMap<String, Vec<(String, Arc<Exported>)>, foldhash::fast::RandomState>,
}

impl Exporters {
    /// Adds (or replaces) the service under `key`, served at `path`.
    pub fn insert(&mut self, key: String, path: &str, e: Arc<Exported>) {
        self.remove(&key);
        self.by_path
            .entry(path.to_owned())
            .or_default()
            .push((key.clone(), e.clone()));
        self.by_key.insert(key, e);
    }

    /// Removes the service under `key`.
    pub fn remove(&mut self, key: &str) {
        if self.by_key.remove(key).is_some() {
            self.by_path.retain(|_, v| {
                v.retain(|(k, _)| k != key);
                !v.is_empty()
            });
        }
    }

    /// Whether no service is left.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// The service at `path` for exactly `group` / `version` (the dubbo protocol's
    /// lookup).
    pub fn find_exact(
        &self,
        path: &str,
        group: Option<&str>,
        version: Option<&str>,
    ) -> Option<&Arc<Exported>> {
        self.by_path
            .get(path)?
            .iter()
            .map(|(_, e)| e)
            .find(|e| e.matches(group, version))
    }

    /// The service at `path` for `group` / `version`. With no version asked for, the
    /// only service of that group at that path answers (Java's
    /// `resolve-fallback-to-default`, on by default; the Triple lookup).
    pub fn find(
        &self,
        path: &str,
        group: Option<&str>,
        version: Option<&str>,
    ) -> Option<&Arc<Exported>> {
        if let Some(e) = self.find_exact(path, group, version) {
            return Some(e);
        }
        let candidates = self.by_path.get(path)?;
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

    /// The exporter keys, sorted (for "not found" messages).
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.by_key.keys().map(String::as_str)
    }

    /// The exported services, by sorted exporter key.
    pub fn services(&self) -> impl Iterator<Item = &Arc<Exported>> {
        self.by_key.values()
    }
}

/// The shared exporter table of one server.
pub type ExporterMap = Arc<RwLock<Exporters>>;

/// One server a protocol bound, and the services exported on it.
#[derive(Debug)]
pub struct Bound<S> {
    /// The server.
    pub server: Arc<S>,
    /// Its services.
    pub exporters: ExporterMap,
}

impl<S> Clone for Bound<S> {
    fn clone(&self) -> Self {
        Bound {
            server: self.server.clone(),
            exporters: self.exporters.clone(),
        }
    }
}

/// A protocol's servers, by bind address.
pub type Servers<S> = Mutex<HashMap<String, Bound<S>>>;

/// Removes the service `key` from the server bound at `bind`. When that was its last
/// service the server leaves the table too and is returned, for the caller to shut
/// down (outside the lock).
pub fn remove_exported<S>(servers: &Servers<S>, bind: &str, key: &str) -> Option<Arc<S>> {
    let mut servers = servers.lock();
    let entry = servers.get(bind)?;
    let mut map = entry.exporters.write();
    map.remove(key);
    if !map.is_empty() {
        return None;
    }
    drop(map);
    servers.remove(bind).map(|b| b.server)
}
