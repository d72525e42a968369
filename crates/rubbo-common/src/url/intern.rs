//! Sharing of repeated URL parts.
//!
//! A consumer may hold tens of thousands of provider URLs that differ only in host and
//! port. Like Dubbo 3's `URLItemCache` and `URLParam`, we share what repeats:
//! - short strings that recur across URLs (protocols, paths, parameter keys, common
//!   values such as `true` or `hessian2`) are interned into one `Arc<str>` each;
//! - whole parameter sets are interned, so identical parameter maps are one allocation.
//!
//! Both tables hold weak references to parameter sets and a bounded number of strings,
//! so they never keep memory alive that no URL uses.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, Weak};

use super::params::UrlParams;

/// Strings longer than this are not interned (they are rarely shared).
const MAX_INTERNED_LEN: usize = 64;
/// The string table stops growing at this many entries (a bound against unique values
/// such as timestamps filling it); strings not in it are simply not shared.
const MAX_INTERNED_STRINGS: usize = 16 * 1024;

static STRINGS: Mutex<Option<HashSet<Arc<str>>>> = Mutex::new(None);
static PARAM_SETS: Mutex<Option<ParamTable>> = Mutex::new(None);

struct ParamTable {
    sets: HashMap<u64, Vec<Weak<UrlParams>>>,
    /// Purge dead entries once the table grows past this.
    purge_at: usize,
    hasher: std::collections::hash_map::RandomState,
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

/// Returns the shared parameter set equal to `params`, or stores `params` as the shared one.
pub(crate) fn share_params(params: UrlParams) -> Arc<UrlParams> {
    let mut guard = PARAM_SETS.lock().unwrap_or_else(|e| e.into_inner());
    let table = guard.get_or_insert_with(|| ParamTable {
        sets: HashMap::new(),
        purge_at: 1024,
        hasher: Default::default(),
    });
    let key = table.hasher.hash_one(&params);
    let bucket = table.sets.entry(key).or_default();
    for weak in bucket.iter() {
        if let Some(existing) = weak.upgrade() {
            if *existing == params {
                return existing;
            }
        }
    }
    let arc = Arc::new(params);
    bucket.retain(|w| w.strong_count() > 0);
    bucket.push(Arc::downgrade(&arc));
    if table.sets.len() >= table.purge_at {
        table
            .sets
            .retain(|_, b| b.iter().any(|w| w.strong_count() > 0));
        table.purge_at = (table.sets.len() * 2).max(1024);
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
    fn equal_parameter_sets_are_shared_and_released() {
        let p = |v: &str| UrlParams::from_pairs([("a", "1"), ("side", v)]);
        let a = share_params(p("provider"));
        let b = share_params(p("provider"));
        let c = share_params(p("consumer"));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        let weak = Arc::downgrade(&a);
        drop((a, b));
        assert!(
            weak.upgrade().is_none(),
            "the table must not keep sets alive"
        );
    }
}
