//! The parameter part of a URL: sorted key/value pairs plus a method-level index.
//!
//! A parameter set is split in two: a shared core (every key except the per-instance
//! ones, with the method index), interned so that every provider of a service points to
//! one core, and the values of the per-instance keys ([`SLOT_KEYS`]: `pid`,
//! `timestamp`), which differ per provider and are kept inline in the URL.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::intern::{intern, share_core};
use super::packed::Packed;
use crate::keys::{METHODS_KEY, PID_KEY, TIMESTAMP_KEY};

/// Keys whose values differ between the providers of one service, in key order. None
/// contains a `.`, so none is ever a method-level key.
pub(crate) const SLOT_KEYS: [&str; 2] = [PID_KEY, TIMESTAMP_KEY];

fn slot_index(key: &str) -> Option<usize> {
    SLOT_KEYS.iter().position(|k| *k == key)
}

/// The shared part of a parameter set.
#[derive(Debug, Default)]
pub(crate) struct ParamCore {
    /// Every parameter except the slot keys.
    pub(crate) map: BTreeMap<Arc<str>, Arc<str>>,
    /// Bit `i` set: `SLOT_KEYS[i]` is present (its value is in the URL).
    pub(crate) slots: u8,
    /// method -> key -> value, built from `{method}.{key}` entries.
    by_method: HashMap<Arc<str>, HashMap<Arc<str>, Arc<str>>>,
}

impl ParamCore {
    pub(crate) fn new(map: BTreeMap<Arc<str>, Arc<str>>, slots: u8) -> ParamCore {
        let by_method = index_methods(&map);
        ParamCore {
            map,
            slots,
            by_method,
        }
    }
}

/// The parameters of a [`Url`](super::Url): an immutable, sorted map. Its shared core
/// is one allocation for every URL that carries the same parameters apart from `pid`
/// and `timestamp` (see the `intern` module).
///
/// Method-level parameters (`sayHello.timeout=500`) are also indexed by method, so a
/// per-call lookup needs no allocation.
#[derive(Clone)]
pub struct UrlParams {
    core: Arc<ParamCore>,
    /// The values of the present slot keys, in `SLOT_KEYS` order; with the host and
    /// port of the owning URL, so that a URL is one allocation.
    values: Packed,
}

impl Default for UrlParams {
    fn default() -> Self {
        UrlParams::from_map(BTreeMap::new())
    }
}

impl PartialEq for UrlParams {
    fn eq(&self, other: &Self) -> bool {
        if Arc::ptr_eq(&self.core, &other.core) {
            return self.values.values_eq(&other.values);
        }
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for UrlParams {}

impl Hash for UrlParams {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.len());
        for (k, v) in self.iter() {
            k.hash(state);
            v.hash(state);
        }
    }
}

impl fmt::Debug for UrlParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
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

    /// Splits `map` into the shared core and the slot values.
    pub(crate) fn from_map(map: BTreeMap<Arc<str>, Arc<str>>) -> Self {
        Self::from_map_at(map, None, 0)
    }

    /// [`from_map`](Self::from_map), carrying the host and port of the URL that owns
    /// the set (kept beside the slot values; not part of the parameters).
    pub(crate) fn from_map_at(
        mut map: BTreeMap<Arc<str>, Arc<str>>,
        host: Option<&str>,
        port: u16,
    ) -> Self {
        let mut slots = 0u8;
        let mut found: [Option<Arc<str>>; 2] = [None, None];
        for (i, key) in SLOT_KEYS.iter().enumerate() {
            if let Some(v) = map.remove(*key) {
                slots |= 1 << i;
                found[i] = Some(v);
            }
        }
        let [a, b] = found;
        let values = match (a.as_deref(), b.as_deref()) {
            (Some(a), Some(b)) => Packed::new(a, b, host, port),
            (Some(v), None) | (None, Some(v)) => Packed::new(v, "", host, port),
            (None, None) => Packed::new("", "", host, port),
        };
        UrlParams {
            core: share_core(map, slots),
            values,
        }
    }

    /// The whole map (slot values included).
    pub(crate) fn to_map(&self) -> BTreeMap<Arc<str>, Arc<str>> {
        let mut map = self.core.map.clone();
        for (k, v) in self.slot_pairs().into_iter().flatten() {
            map.insert(intern(k), Arc::from(v));
        }
        map
    }

    /// The present slot keys with their values, in key order (absent ones last).
    fn slot_pairs(&self) -> [Option<(&'static str, &str)>; 2] {
        match self.core.slots {
            0 => [None, None],
            1 => [Some((SLOT_KEYS[0], self.values.first())), None],
            2 => [Some((SLOT_KEYS[1], self.values.first())), None],
            _ => [
                Some((SLOT_KEYS[0], self.values.first())),
                Some((SLOT_KEYS[1], self.values.second())),
            ],
        }
    }

    /// Whether the two sets share one core (tests).
    #[cfg(test)]
    pub(crate) fn shares_core_with(&self, other: &UrlParams) -> bool {
        Arc::ptr_eq(&self.core, &other.core)
    }

    /// Whether the two sets are the same core with the same slot values (cheap).
    pub(crate) fn same_as(&self, other: &UrlParams) -> bool {
        Arc::ptr_eq(&self.core, &other.core) && self.values.values_eq(&other.values)
    }

    /// The host of the URL that owns this set.
    pub(crate) fn host(&self) -> Option<&str> {
        self.values.host()
    }

    /// The port of the URL that owns this set.
    pub(crate) fn port(&self) -> u16 {
        self.values.port()
    }

    /// This set for a URL at another host and port.
    pub(crate) fn at(&self, host: Option<&str>, port: u16) -> UrlParams {
        UrlParams {
            core: self.core.clone(),
            values: self.values.at(host, port),
        }
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        match slot_index(key) {
            Some(i) => self
                .slot_pairs()
                .into_iter()
                .flatten()
                .find(|(k, _)| *k == SLOT_KEYS[i])
                .map(|(_, v)| v),
            None => self.core.map.get(key).map(|v| &**v),
        }
    }

    /// The method-level value of `key` for `method` (`{method}.{key}`), if present.
    pub fn get_method(&self, method: &str, key: &str) -> Option<&str> {
        self.core.by_method.get(method)?.get(key).map(|v| &**v)
    }

    /// Whether any parameter is method-level (`{method}.{key}`).
    pub fn has_method_params(&self) -> bool {
        !self.core.by_method.is_empty()
    }

    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.core.map.len() + self.core.slots.count_ones() as usize
    }

    /// Whether there are no parameters.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The parameters in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        let slots = self.slot_pairs();
        let mut next_slot = 0;
        let mut core = self.core.map.iter().map(|(k, v)| (&**k, &**v)).peekable();
        std::iter::from_fn(move || {
            let slot = slots.get(next_slot).copied().flatten();
            match (core.peek(), slot) {
                (Some(&(k, _)), Some((s, _))) if k < s => core.next(),
                (_, Some(pair)) => {
                    next_slot += 1;
                    Some(pair)
                }
                (_, None) => core.next(),
            }
        })
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
