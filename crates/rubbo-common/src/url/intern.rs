//! Sharing of repeated URL parts.
//!
//! A consumer may hold millions of provider URLs that differ only in host, port, `pid`
//! and `timestamp`. Like Dubbo 3's `URLItemCache`, `URLAddress` and `URLParam`, we share
//! what repeats:
//! - short strings that recur across URLs (protocols, paths, parameter keys, common
//!   values such as `true` or `hessian2`) are interned into one `Arc<str>` each;
//! - parameter cores (every parameter but `pid` and `timestamp`) are interned, so the
//!   providers of one service share one map;
//! - address bases (protocol, credentials, path) are interned likewise.
//!
//! The tables hold weak references to cores and bases and a bounded number of strings,
//! so they never keep memory alive that no URL uses.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, Weak};

use super::AddrBase;
use super::params::ParamCore;

/// Strings longer than this are not interned (they are rarely shared).
const MAX_INTERNED_LEN: usize = 64;
/// The string table stops growing at this many entries (a bound against unique values
/// filling it); strings not in it are simply not shared.
const MAX_INTERNED_STRINGS: usize = 16 * 1024;

static STRINGS: Mutex<Option<HashSet<Arc<str>>>> = Mutex::new(None);
static CORES: Mutex<Option<WeakTable<ParamCore>>> = Mutex::new(None);
static BASES: Mutex<Option<WeakTable<AddrBase>>> = Mutex::new(None);

/// Values by hash, held weakly.
struct WeakTable<T> {
    sets: HashMap<u64, Vec<Weak<T>>>,
    /// Purge dead entries once the table grows past this.
    purge_at: usize,
    hasher: RandomState,
}

impl<T> WeakTable<T> {
    fn new() -> Self {
        WeakTable {
            sets: HashMap::new(),
            purge_at: 1024,
            hasher: RandomState::new(),
        }
    }

    /// The live value with hash `hash` for which `same` holds, or `make()` stored.
    fn get_or_make(
        &mut self,
        hash: u64,
        same: impl Fn(&T) -> bool,
        make: impl FnOnce() -> T,
    ) -> Arc<T> {
        let bucket = self.sets.entry(hash).or_default();
        for weak in bucket.iter() {
            if let Some(existing) = weak.upgrade() {
                if same(&existing) {
                    return existing;
                }
            }
        }
        let arc = Arc::new(make());
        bucket.retain(|w| w.strong_count() > 0);
        bucket.push(Arc::downgrade(&arc));
        if self.sets.len() >= self.purge_at {
            self.sets
                .retain(|_, b| b.iter().any(|w| w.strong_count() > 0));
            self.purge_at = (self.sets.len() * 2).max(1024);
        }
        arc
    }
}

/// The shared core for the non-slot parameters `map` and slot mask `slots`.
pub(crate) fn share_core(map: BTreeMap<Arc<str>, Arc<str>>, slots: u8) -> Arc<ParamCore> {
    let mut guard = CORES.lock().unwrap_or_else(|e| e.into_inner());
    let table = guard.get_or_insert_with(WeakTable::new);
    let hash = table.hasher.hash_one((&map, slots));
    table.get_or_make(
        hash,
        |c| c.slots == slots && c.map == map,
        || ParamCore::new(map.clone(), slots),
    )
}

/// The shared address base equal to `base`.
pub(crate) fn share_base(base: AddrBase) -> Arc<AddrBase> {
    let mut guard = BASES.lock().unwrap_or_else(|e| e.into_inner());
    let table = guard.get_or_insert_with(WeakTable::new);
    let hash = table.hasher.hash_one(&base);
    table.get_or_make(hash, |b| *b == base, || base.clone())
}

/// Returns a shared `Arc<str>` for `s`, interning it when it is short.
pub(crate) fn intern(s: &str) -> Arc<str> {
    if s.len() > MAX_INTERNED_LEN {
        return Arc::from(s);
    }
    let mut guard = STRINGS.lock().unwrap_or_else(|e| e.into_inner());
    let set = guard.get_or_insert_with(HashSet::new);
    if let Some(found) = set.get(s) {
        return found.clone();
    }
    let arc: Arc<str> = Arc::from(s);
    if set.len() < MAX_INTERNED_STRINGS {
        set.insert(arc.clone());
    }
    arc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_strings_are_shared() {
        let a = intern("interface");
        let b = intern("interface");
        assert!(Arc::ptr_eq(&a, &b));
        let long = "x".repeat(MAX_INTERNED_LEN + 1);
        assert!(!Arc::ptr_eq(&intern(&long), &intern(&long)));
    }

    #[test]
    fn equal_parameter_cores_are_shared_and_released() {
        let m = |v: &str| BTreeMap::from([(intern("a"), intern("1")), (intern("side"), intern(v))]);
        let a = share_core(m("provider"), 1);
        let b = share_core(m("provider"), 1);
        let c = share_core(m("consumer"), 1);
        let d = share_core(m("provider"), 3);
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert!(!Arc::ptr_eq(&a, &d), "the slot mask is part of the core");
        let weak = Arc::downgrade(&a);
        drop((a, b));
        assert!(
            weak.upgrade().is_none(),
            "the table must not keep cores alive"
        );
    }
}
