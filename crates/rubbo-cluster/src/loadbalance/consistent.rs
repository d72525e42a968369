//! `consistenthash` (Java's `ConsistentHashLoadBalance`).

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use md5::{Digest, Md5};
use parking_lot::RwLock;
use rubbo_common::keys::{HashArguments, HashNodes};
use rubbo_common::resolve::{Sources, lookup_param, lookup_str};
use rubbo_common::{BoxInvoker, Invocation, Url};

use super::LoadBalance;
use crate::router::java_string;
use crate::status::invoker_key;

/// The ring of one `serviceKey.method`.
#[derive(Debug)]
struct Selector {
    identity: u64,
    /// The shared list this ring was last used with, if any.
    list: Option<std::sync::Weak<Vec<BoxInvoker>>>,
    ring: Arc<BTreeMap<u32, BoxInvoker>>,
    arguments: Arc<[usize]>,
}

/// Word `n` (0..4) of an MD5 digest, little-endian (Java's `hash(digest, n)`).
fn word(digest: &[u8; 16], n: usize) -> u32 {
    u32::from_le_bytes([
        digest[n * 4],
        digest[n * 4 + 1],
        digest[n * 4 + 2],
        digest[n * 4 + 3],
    ])
}

fn md5(s: &str) -> [u8; 16] {
    Md5::digest(s.as_bytes()).into()
}

impl Selector {
    fn new(invokers: &[BoxInvoker], consumer: &Url, method: &str, identity: u64) -> Self {
        // Consumer settings win over the provider's, method level first (as after
        // Dubbo's URL merge).
        let sources = Sources {
            overrides: &[],
            consumer: Some(consumer),
            provider: Some(invokers[0].url()),
        };
        let replicas = lookup_param::<HashNodes>(&sources, Some(method)).max(0) as usize;
        let arguments: Vec<usize> = lookup_str::<HashArguments>(&sources, Some(method))
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        let mut ring = BTreeMap::new();
        for invoker in invokers {
            let address = invoker.url().address();
            for i in 0..replicas / 4 {
                let digest = md5(&format!("{address}{i}"));
                for h in 0..4 {
                    ring.insert(word(&digest, h), invoker.clone());
                }
            }
        }
        Selector {
            identity,
            list: None,
            ring: Arc::new(ring),
            arguments: arguments.into(),
        }
    }

    fn key(&self, inv: &Invocation) -> String {
        let mut key = String::new();
        if let Some(args) = inv.arguments().as_values() {
            for &i in self.arguments.iter() {
                if let Some(v) = args.get(i) {
                    key.push_str(&java_string(v));
                }
            }
        }
        key
    }

    fn select_for_hash(&self, hash: u32) -> Option<BoxInvoker> {
        self.ring
            .range(hash..)
            .next()
            .or_else(|| self.ring.iter().next())
            .map(|(_, inv)| inv.clone())
    }

    fn select(&self, inv: &Invocation) -> Option<BoxInvoker> {
        self.select_for_hash(word(&md5(&self.key(inv)), 0))
    }
}

/// Consistent hashing on an MD5 ring: `hash.nodes` (default 160) virtual nodes per
/// provider, keyed by the arguments listed in `hash.arguments` (default `0`, the
/// first), each as Java's `String.valueOf`. The ring is rebuilt only when the provider
/// list changes; a lookup is O(log n). Given a shared list
/// ([`select_list`](LoadBalance::select_list), what the cluster invokers use), a list
/// seen before is recognised by identity; a plain slice is checked by an O(n) scan of
/// its invoker addresses (Java hashes the list too).
#[derive(Debug, Default)]
pub struct ConsistentHashLoadBalance {
    selectors: RwLock<HashMap<u64, Arc<Selector>>>,
}

impl ConsistentHashLoadBalance {
    /// A balancer with no rings yet.
    pub fn new() -> Self {
        Self::default()
    }
}

fn list_identity(invokers: &[BoxInvoker]) -> u64 {
    let mut h: u64 = invokers.len() as u64;
    for inv in invokers {
        h = (h.rotate_left(7) ^ invoker_key(inv) as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn method_key(inv: &Invocation) -> u64 {
    let mut kh = std::collections::hash_map::DefaultHasher::new();
    (inv.group(), inv.interface(), inv.version(), inv.method()).hash(&mut kh);
    kh.finish()
}

impl ConsistentHashLoadBalance {
    /// The ring for `invokers`, rebuilt only when the list's identity changed.
    fn selector(
        &self,
        invokers: &[BoxInvoker],
        list: Option<&Arc<Vec<BoxInvoker>>>,
        url: &Url,
        inv: &Invocation,
    ) -> Arc<Selector> {
        let key = method_key(inv);
        let current = self.selectors.read().get(&key).cloned();
        if let (Some(s), Some(list)) = (&current, list) {
            // Same shared list: it cannot have changed (the weak handle forbids
            // `Arc::get_mut`), so no scan is needed.
            if s.list
                .as_ref()
                .is_some_and(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(list)))
            {
                return s.clone();
            }
        }
        let identity = list_identity(invokers);
        let selector = match current {
            Some(s) if s.identity == identity => Arc::new(Selector {
                identity,
                list: list.map(Arc::downgrade),
                ring: s.ring.clone(),
                arguments: s.arguments.clone(),
            }),
            _ => {
                let mut s = Selector::new(invokers, url, inv.method(), identity);
                s.list = list.map(Arc::downgrade);
                Arc::new(s)
            }
        };
        self.selectors.write().insert(key, selector.clone());
        selector
    }
}

impl LoadBalance for ConsistentHashLoadBalance {
    fn select_list(
        &self,
        invokers: &Arc<Vec<BoxInvoker>>,
        url: &Url,
        inv: &Invocation,
    ) -> Option<BoxInvoker> {
        if invokers.is_empty() {
            return None;
        }
        self.selector(invokers, Some(invokers), url, inv)
            .select(inv)
    }

    fn select(&self, invokers: &[BoxInvoker], url: &Url, inv: &Invocation) -> Option<BoxInvoker> {
        if invokers.is_empty() {
            return None;
        }
        let selector = self.selector(invokers, None, url, inv);
        selector.select(inv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_words_are_little_endian() {
        // MD5("") = d41d8cd98f00b204e9800998ecf8427e
        let d = md5("");
        assert_eq!(word(&d, 0), 0xd98c_1dd4);
        assert_eq!(word(&d, 3), 0x7e42_f8ec);
    }
}
