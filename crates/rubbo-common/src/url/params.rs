//! The parameter part of a URL: sorted key/value pairs plus a method-level index.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::intern::intern;
use crate::keys::METHODS_KEY;

/// The parameters of a [`Url`](super::Url): an immutable, sorted map shared between all
/// URLs that carry the same set (see the `intern` module).
///
/// Method-level parameters (`sayHello.timeout=500`) are also indexed by method, so a
/// per-call lookup needs no allocation.
#[derive(Debug, Clone, Default)]
pub struct UrlParams {
    map: BTreeMap<Arc<str>, Arc<str>>,
    /// method -> key -> value, built from `{method}.{key}` entries.
    by_method: HashMap<Arc<str>, HashMap<Arc<str>, Arc<str>>>,
}

impl PartialEq for UrlParams {
    fn eq(&self, other: &Self) -> bool {
        self.map == other.map
    }
}

impl Eq for UrlParams {}

impl Hash for UrlParams {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.map.hash(state);
    }
}

impl UrlParams {
    /// Builds a parameter set from key/value pairs (later pairs win).
    pub fn from_pairs<K: AsRef<str>, V: AsRef<str>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let map = pairs
            .into_iter()
            .filter(|(k, _)| !k.as_ref().is_empty())
            .map(|(k, v)| (intern(k.as_ref()), intern(v.as_ref())))
            .collect();
        Self::from_map(map)
    }

    pub(crate) fn from_map(map: BTreeMap<Arc<str>, Arc<str>>) -> Self {
        let by_method = index_methods(&map);
        UrlParams { map, by_method }
    }

    pub(crate) fn map(&self) -> &BTreeMap<Arc<str>, Arc<str>> {
        &self.map
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.map.get(key).map(|v| &**v)
    }

    /// The method-level value of `key` for `method` (`{method}.{key}`), if present.
    pub fn get_method(&self, method: &str, key: &str) -> Option<&str> {
        self.by_method.get(method)?.get(key).map(|v| &**v)
    }

    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are no parameters.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The parameters in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.map.iter().map(|(k, v)| (&**k, &**v))
    }
}

/// Indexes `{method}.{key}` parameters as Java's `URL.toMethodParameters` does: when the
/// URL lists its `methods`, only keys prefixed by a listed method count; otherwise every
/// key with a dot splits at its first dot.
fn index_methods(
    map: &BTreeMap<Arc<str>, Arc<str>>,
) -> HashMap<Arc<str>, HashMap<Arc<str>, Arc<str>>> {
    let mut out: HashMap<Arc<str>, HashMap<Arc<str>, Arc<str>>> = HashMap::new();
    let methods = map.get(METHODS_KEY).filter(|m| !m.is_empty());
    for (key, value) in map {
        match methods {
            Some(list) => {
                for method in list.split(',').map(str::trim).filter(|m| !m.is_empty()) {
                    if let Some(real) = key
                        .strip_prefix(method)
                        .and_then(|rest| rest.strip_prefix('.'))
                    {
                        out.entry(intern(method))
                            .or_default()
                            .insert(intern(real), value.clone());
                    }
                }
            }
            None => {
                if let Some((method, real)) = key.split_once('.') {
                    if !method.is_empty() {
                        out.entry(intern(method))
                            .or_default()
                            .insert(intern(real), value.clone());
                    }
                }
            }
        }
    }
    out
}
