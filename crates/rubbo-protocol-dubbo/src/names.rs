//! The names every request repeats (service path, version, method, descriptor),
//! shared instead of allocated per request.
//!
//! A per-thread cache maps the encoded bytes of the four names, as they sit in the
//! frame, to their decoded `Arc<str>`s: equal bytes decode to equal strings, so one
//! lookup replaces four allocations. The cache is bounded and starts over when full,
//! so a peer sending ever new names costs memory only up to the bound.
//!
//! The keys come from peers, yet the map hashes them with foldhash (seeded per
//! process) rather than SipHash: it is several times faster on these 50-100 byte keys,
//! and a peer forcing collisions could slow lookups only within the 256-entry bound.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

/// Entries per thread before the cache starts over.
const MAX_ENTRIES: usize = 256;
/// Longer encodings are decoded without caching.
const MAX_KEY: usize = 1024;

/// The decoded names of a request body, plus its argument count.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    pub(crate) path: Arc<str>,
    pub(crate) version: Arc<str>,
    pub(crate) method: Arc<str>,
    pub(crate) parameter_types: Arc<str>,
    pub(crate) count: usize,
}

type Cache = HashMap<Box<[u8]>, Names, foldhash::fast::RandomState>;

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// The names encoded as `key`: cached, or built by `decode` (then cached when it
/// succeeds).
pub(crate) fn lookup<E>(key: &[u8], decode: impl FnOnce() -> Result<Names, E>) -> Result<Names, E> {
    if key.len() > MAX_KEY {
        return decode();
    }
    if let Some(hit) = CACHE.with_borrow(|c| c.get(key).cloned()) {
        return Ok(hit);
    }
    let names = decode()?;
    CACHE.with_borrow_mut(|c| {
        if c.len() >= MAX_ENTRIES {
            c.clear();
        }
        c.insert(Box::from(key), names.clone());
    });
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(method: &str) -> Names {
        Names {
            path: Arc::from("p"),
            version: Arc::from(""),
            method: Arc::from(method),
            parameter_types: Arc::from(""),
            count: 0,
        }
    }

    #[test]
    fn equal_keys_share_the_strings_and_others_do_not() {
        let a = lookup::<()>(b"key-a", || Ok(names("a"))).unwrap();
        let again = lookup::<()>(b"key-a", || panic!("decoded twice")).unwrap();
        assert!(Arc::ptr_eq(&a.method, &again.method));
        let b = lookup::<()>(b"key-b", || Ok(names("b"))).unwrap();
        assert_eq!(&*b.method, "b");
        assert!(lookup::<&str>(b"key-c", || Err("bad")).is_err());
        let c = lookup::<()>(b"key-c", || Ok(names("c"))).unwrap();
        assert_eq!(&*c.method, "c", "a failed decode is not cached");
    }

    #[test]
    fn the_cache_stays_bounded() {
        for i in 0..(MAX_ENTRIES * 3) {
            let key = format!("bound-{i}");
            lookup::<()>(key.as_bytes(), || Ok(names("m"))).unwrap();
        }
        assert!(CACHE.with_borrow(|c| c.len()) <= MAX_ENTRIES);
        let long = vec![b'x'; MAX_KEY + 1];
        lookup::<()>(&long, || Ok(names("long"))).unwrap();
        assert!(CACHE.with_borrow(|c| !c.contains_key(&long[..])));
    }
}
