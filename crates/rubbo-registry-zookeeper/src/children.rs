//! `ChildCache`: child node names to URLs, parsed once, diffed on every push.
//!
//! A consumer may watch 20,000 providers of one interface; a push after one of them
//! changed must not parse 20,000 names again. The cache maps each child name to its
//! parsed URL (or to nothing, for a name that does not parse or does not match the
//! subscription), so a push costs one hash lookup per child plus the parsing of the new
//! names. Names are hashed by a sampled hasher (length, first and last 64 bytes): node
//! names are long encoded URLs whose differences (host, port, timestamp) sit at both
//! ends, and equality is still checked in full.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hasher};

use rubbo_common::Url;
use rubbo_registry::{PROVIDERS_CATEGORY, empty_url, is_match};
use tracing::{debug, warn};

/// The result of [`ChildCache::update`].
#[derive(Debug, Clone)]
pub struct ChildUpdate {
    /// The category's whole list to deliver: the matching URLs, or one `empty://`
    /// (nothing, under empty protection: then there is nothing to deliver).
    pub urls: Vec<Url>,
    /// Whether the set of children differs from the previous update.
    pub changed: bool,
    /// Children seen for the first time.
    pub added: usize,
    /// Children gone since the previous update.
    pub removed: usize,
}

/// The parsed children of one category path of one subscription.
pub struct ChildCache {
    subscription: Url,
    category: String,
    entries: HashMap<String, Entry, SampledState>,
    generation: u64,
    empty_protection: bool,
}

struct Entry {
    /// `None`: unparseable or not for this subscription.
    url: Option<Url>,
    seen: u64,
}

impl fmt::Debug for ChildCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildCache")
            .field("category", &self.category)
            .field("children", &self.entries.len())
            .finish()
    }
}

impl ChildCache {
    /// An empty cache for `category` of `subscription`.
    pub fn new(subscription: Url, category: &str) -> Self {
        ChildCache {
            subscription,
            category: category.to_owned(),
            entries: HashMap::with_hasher(SampledState),
            generation: 0,
            empty_protection: false,
        }
    }

    /// With `true` and category `providers`, an update where nothing matches yields no
    /// URL at all (nothing to deliver) instead of `empty://`: Java's
    /// `enable-empty-protection`.
    pub fn with_empty_protection(mut self, enabled: bool) -> Self {
        self.empty_protection = enabled;
        self
    }

    /// How many children are cached.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no child is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Applies the current child list; returns the list to deliver.
    pub fn update(&mut self, children: Vec<String>) -> ChildUpdate {
        self.generation += 1;
        let generation = self.generation;
        let mut added = 0;
        let count = children.len();
        for name in children {
            match self.entries.get_mut(name.as_str()) {
                Some(entry) => entry.seen = generation,
                None => {
                    added += 1;
                    let url = self.parse(&name);
                    self.entries.insert(
                        name,
                        Entry {
                            url,
                            seen: generation,
                        },
                    );
                }
            }
        }
        let before = self.entries.len();
        // ZooKeeper children are unique: more entries than children means some left.
        let mut removed = 0;
        if count != before {
            self.entries.retain(|_, e| e.seen == generation);
            removed = before - self.entries.len();
        }
        let mut urls: Vec<Url> = Vec::with_capacity(self.entries.len().max(1));
        urls.extend(self.entries.values().filter_map(|e| e.url.clone()));
        if urls.is_empty() {
            if self.empty_protection && self.category == PROVIDERS_CATEGORY {
                warn!(subscription = %self.subscription, "empty provider list ignored (empty protection)");
            } else {
                urls.push(empty_url(&self.subscription, &self.category));
            }
        }
        ChildUpdate {
            urls,
            changed: added > 0 || removed > 0 || generation == 1,
            added,
            removed,
        }
    }

    fn parse(&self, name: &str) -> Option<Url> {
        match Url::parse_encoded(name) {
            Ok(url) if url.protocol().is_none_or(str::is_empty) => {
                warn!(category = %self.category, node = name, "skipping registry node without a protocol");
                None
            }
            Ok(url) => {
                if is_match(&self.subscription, &url) {
                    Some(url)
                } else {
                    debug!(category = %self.category, url = %url, "registry node not for this subscription");
                    None
                }
            }
            Err(e) => {
                warn!(category = %self.category, node = name, error = %e, "skipping unparseable registry node");
                None
            }
        }
    }
}

/// Builds [`SampledHasher`]s.
#[derive(Debug, Clone, Copy, Default)]
pub struct SampledState;

impl BuildHasher for SampledState {
    type Hasher = SampledHasher;
    fn build_hasher(&self) -> SampledHasher {
        SampledHasher(0x243f_6a88_85a3_08d3)
    }
}

/// Hashes the length and at most the first and last 64 bytes of each write.
#[derive(Debug, Clone)]
pub struct SampledHasher(u64);

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl SampledHasher {
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(23) ^ word).wrapping_mul(K);
    }
}

impl Hasher for SampledHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.mix(bytes.len() as u64);
        let head = &bytes[..bytes.len().min(64)];
        let tail = &bytes[bytes.len().saturating_sub(64).max(head.len())..];
        for chunk in head.chunks(8).chain(tail.chunks(8)) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(buf));
        }
    }

    fn finish(&self) -> u64 {
        // splitmix64 finalizer: spreads entropy to the low and the high bits.
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rubbo_registry::is_empty_url;

    fn name(i: usize) -> String {
        crate::paths::node_name(
            &Url::parse(&format!(
                "dubbo://10.{}.{}.{}:20880/a.B?interface=a.B&side=provider&timestamp=1700000000000",
                i / 65536,
                (i / 256) % 256,
                i % 256
            ))
            .unwrap(),
        )
    }

    #[test]
    fn diff_parses_only_new_children() {
        let sub = Url::parse("consumer://h/a.B?interface=a.B&category=providers").unwrap();
        let mut cache = ChildCache::new(sub, "providers");
        let first = cache.update((0..100).map(name).collect());
        assert!(first.changed);
        assert_eq!(
            (first.added, first.removed, first.urls.len()),
            (100, 0, 100)
        );
        let same = cache.update((0..100).map(name).collect());
        assert!(!same.changed);
        let mut next: Vec<String> = (1..100).map(name).collect();
        next.push(name(500));
        let one = cache.update(next);
        assert!(one.changed);
        assert_eq!((one.added, one.removed, one.urls.len()), (1, 1, 100));
        let none = cache.update(vec![]);
        assert_eq!(none.urls.len(), 1);
        assert!(is_empty_url(&none.urls[0]));
        assert_eq!(none.urls[0].get_param("category"), Some("providers"));
    }

    #[test]
    fn empty_protection_keeps_the_last_provider_list() {
        let sub = Url::parse("consumer://h/a.B?interface=a.B&category=providers").unwrap();
        let mut cache = ChildCache::new(sub.clone(), "providers").with_empty_protection(true);
        assert_eq!(cache.update(vec![name(1)]).urls.len(), 1);
        let gone = cache.update(vec![]);
        assert!(gone.changed && gone.urls.is_empty(), "nothing to deliver");
        let mut routers = ChildCache::new(sub, "routers").with_empty_protection(true);
        assert!(is_empty_url(&routers.update(vec![]).urls[0]));
    }

    #[test]
    fn garbage_and_foreign_children_are_skipped() {
        let sub = Url::parse("consumer://h/a.B?interface=a.B&category=providers").unwrap();
        let mut cache = ChildCache::new(sub, "providers");
        let up = cache.update(vec![
            "%ZZ-not-an-escape".to_owned(),
            "no-protocol-here".to_owned(),
            crate::paths::node_name(&Url::parse("dubbo://1.1.1.1:1/c.D?interface=c.D").unwrap()),
            name(1),
        ]);
        assert_eq!(up.urls.len(), 1);
        assert_eq!(up.urls[0].host(), Some("10.0.0.1"));
        assert_eq!(cache.len(), 4, "bad names are remembered, not re-parsed");
    }

    #[test]
    fn sampled_hash_distinguishes_middle_only_differences_by_equality() {
        let mut m: HashMap<String, u32, SampledState> = HashMap::with_hasher(SampledState);
        let a = format!("{}x{}", "a".repeat(100), "b".repeat(100));
        let b = format!("{}y{}", "a".repeat(100), "b".repeat(100));
        m.insert(a.clone(), 1);
        m.insert(b.clone(), 2);
        assert_eq!((m[&a], m[&b]), (1, 2));
    }
}
