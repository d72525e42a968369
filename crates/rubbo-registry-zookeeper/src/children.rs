//! `ChildCache`: child node names to URLs, parsed once, diffed on every push.
//!
//! A consumer may watch 20,000 providers of one interface; a push after one of them
//! changed must not parse 20,000 names again. The cache maps each child name to its
//! parsed URL (or to nothing, for a name that does not parse or does not match the
//! subscription), so a push costs one hash of each name plus the parsing of the new
//! names.
//!
//! The names themselves (about 1 KB each) are not kept: an entry is keyed by a 96-bit
//! keyed hash of its name ([`NameHash`]: a 64-bit key and a 32-bit check from
//! independent lanes, seeds random per process). Two names with the same key but
//! different checks are a detected collision: the second name is then kept whole in a
//! small exact-string table. Only a collision of all 96 bits goes undetected
//! (about 2^-96 per pair of names of one category).

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
    /// One entry per child, sorted by key: 24 bytes a child, no per-child allocation
    /// besides its URL.
    entries: Vec<Entry>,
    /// `starts[b]`: the first entry whose key's top `bits` bits are `b` or more.
    starts: Vec<u32>,
    bits: u32,
    /// Names whose key is taken by another name (a detected collision): kept whole.
    collided: HashMap<String, Collided>,
    hasher: NameHash,
    generation: u32,
    delivered: bool,
    empty_protection: bool,
}

struct Entry {
    /// [`NameHash::hash`] of the name: key and check.
    key: u64,
    check: u32,
    /// `None`: unparseable or not for this subscription.
    url: Option<Url>,
}

struct Collided {
    seen: u32,
    url: Option<Url>,
}

impl fmt::Debug for ChildCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildCache")
            .field("category", &self.category)
            .field("children", &self.len())
            .field("collided", &self.collided.len())
            .finish()
    }
}

impl ChildCache {
    /// An empty cache for `category` of `subscription`.
    pub fn new(subscription: Url, category: &str) -> Self {
        ChildCache {
            subscription,
            category: category.to_owned(),
            entries: Vec::new(),
            starts: vec![0, 0],
            bits: 0,
            collided: HashMap::new(),
            hasher: NameHash::random(),
            generation: 0,
            delivered: false,
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
        self.entries.len() + self.collided.len()
    }

    /// Whether no child is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Applies the current child list; returns the list to deliver.
    pub fn update(&mut self, children: Vec<String>) -> ChildUpdate {
        self.update_names(&children)
    }

    /// [`update`](Self::update) from borrowed names.
    pub fn update_names<S: AsRef<str>>(&mut self, children: &[S]) -> ChildUpdate {
        self.generation = self.generation.wrapping_add(1);
        let generation = self.generation;
        // Hash every name first, then look the keys up in table order: streaming
        // through the names evicts the table, and walking it forwards does not miss.
        let hashes = self.hash_in_table_order(children);
        let mut seen_bits = vec![0u64; self.entries.len().div_ceil(64)];
        let mut seen = 0;
        // New entries, with the index of their name.
        let mut fresh: Vec<(Entry, usize)> = Vec::new();
        let mut added = 0;
        for (key, check, at) in hashes {
            let at = at as usize;
            let found = self.find(key);
            if let Some(i) = found {
                if self.entries[i].check == check {
                    let (word, bit) = (i / 64, 1u64 << (i % 64));
                    if seen_bits[word] & bit == 0 {
                        seen_bits[word] |= bit;
                        seen += 1;
                    }
                    continue;
                }
            }
            let name = children[at].as_ref();
            if !self.collided.is_empty() {
                if let Some(e) = self.collided.get_mut(name) {
                    e.seen = generation;
                    continue;
                }
            }
            added += 1;
            let url = self.parse(name);
            if found.is_some() {
                debug!(category = %self.category, "child name hash collision: keeping the name");
                self.collided.insert(
                    name.to_owned(),
                    Collided {
                        seen: generation,
                        url,
                    },
                );
            } else {
                fresh.push((Entry { key, check, url }, at));
            }
        }
        let mut removed = self.entries.len() - seen;
        if removed > 0 {
            let mut i = 0;
            self.entries.retain(|_| {
                let keep = seen_bits[i / 64] & (1 << (i % 64)) != 0;
                i += 1;
                keep
            });
        }
        let before = self.collided.len();
        self.collided.retain(|_, e| e.seen == generation);
        removed += before - self.collided.len();
        if !fresh.is_empty() {
            fresh.sort_unstable_by_key(|(e, _)| e.key);
            self.entries.reserve_exact(fresh.len());
            let mut last: Option<(u64, u32)> = None;
            for (e, at) in fresh {
                match last {
                    // The same name twice in one list.
                    Some((k, c)) if k == e.key && c == e.check => added -= 1,
                    // Two new names with one key.
                    Some((k, _)) if k == e.key => {
                        self.collided.insert(
                            children[at].as_ref().to_owned(),
                            Collided {
                                seen: generation,
                                url: e.url,
                            },
                        );
                    }
                    _ => {
                        last = Some((e.key, e.check));
                        self.entries.push(e);
                    }
                }
            }
            // Two sorted runs: the stable sort merges them in linear time.
            self.entries.sort_by_key(|e| e.key);
        }
        if added > 0 || removed > 0 {
            self.index();
        }
        let mut urls: Vec<Url> = Vec::with_capacity(self.len().max(1));
        urls.extend(
            self.entries
                .iter()
                .filter_map(|e| e.url.clone())
                .chain(self.collided.values().filter_map(|e| e.url.clone())),
        );
        if urls.is_empty() {
            if self.empty_protection && self.category == PROVIDERS_CATEGORY {
                warn!(subscription = %self.subscription, "empty provider list ignored (empty protection)");
            } else {
                urls.push(empty_url(&self.subscription, &self.category));
            }
        }
        let first = !self.delivered;
        self.delivered = true;
        ChildUpdate {
            urls,
            changed: added > 0 || removed > 0 || first,
            added,
            removed,
        }
    }

    /// `(key, check, index of the name)` of every name, sorted by bucket.
    fn hash_in_table_order<S: AsRef<str>>(&self, children: &[S]) -> Vec<(u64, u32, u32)> {
        let hashes: Vec<(u64, u32)> = children
            .iter()
            .map(|n| self.hasher.hash(n.as_ref().as_bytes()))
            .collect();
        let mut next = vec![0u32; self.starts.len()];
        for (key, _) in &hashes {
            next[bucket(*key, self.bits) + 1] += 1;
        }
        for b in 1..next.len() {
            next[b] += next[b - 1];
        }
        let mut out = vec![(0, 0, 0); hashes.len()];
        for (at, (key, check)) in hashes.into_iter().enumerate() {
            let slot = &mut next[bucket(key, self.bits)];
            // A child list is far shorter than 2^32 names.
            out[*slot as usize] = (key, check, u32::try_from(at).unwrap_or(u32::MAX));
            *slot += 1;
        }
        out
    }

    /// The index of the entry with `key`.
    fn find(&self, key: u64) -> Option<usize> {
        let b = bucket(key, self.bits);
        let (lo, hi) = (self.starts[b] as usize, self.starts[b + 1] as usize);
        self.entries[lo..hi]
            .iter()
            .position(|e| e.key == key)
            .map(|p| lo + p)
    }

    /// Rebuilds `starts` for the sorted entries: about four entries a bucket.
    fn index(&mut self) {
        let n = self.entries.len();
        self.bits = (usize::BITS - (n / 4).leading_zeros()).min(24);
        let buckets = 1usize << self.bits;
        self.starts.clear();
        self.starts.resize(buckets + 1, 0);
        for e in &self.entries {
            self.starts[bucket(e.key, self.bits) + 1] += 1;
        }
        for b in 0..buckets {
            self.starts[b + 1] += self.starts[b];
        }
        self.starts.shrink_to_fit();
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

/// A keyed hash of a whole child name: a 64-bit key and a 32-bit check, from four
/// independent folded-multiply lanes over 32-byte blocks (every byte is read once).
#[derive(Clone, Copy)]
struct NameHash {
    seeds: [u64; 4],
    /// Tests: every name gets key 0, so names differ only by their check.
    #[cfg(test)]
    colliding: bool,
}

impl NameHash {
    fn random() -> NameHash {
        let state = std::collections::hash_map::RandomState::new();
        NameHash {
            seeds: [1u64, 2, 3, 4].map(|i| state.hash_one(i) | 1),
            #[cfg(test)]
            colliding: false,
        }
    }

    /// `(key, check)` of `name`.
    fn hash(&self, name: &[u8]) -> (u64, u32) {
        let [s0, s1, s2, s3] = self.seeds;
        let (mut a0, mut a1, mut b0, mut b1) = (s0, s1 ^ K, s2, s3 ^ K);
        let mut block = |c: &[u8]| {
            let (w0, w1, w2, w3) = (word(c, 0), word(c, 8), word(c, 16), word(c, 24));
            a0 = fold(w0 ^ s0, w1 ^ a0);
            a1 = fold(w2 ^ s1, w3 ^ a1);
            b0 = fold(w0 ^ s2, w2 ^ b0);
            b1 = fold(w1 ^ s3, w3 ^ b1);
        };
        let mut chunks = name.chunks_exact(32);
        for c in &mut chunks {
            block(c);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 32];
            last[..rest.len()].copy_from_slice(rest);
            block(&last);
        }
        let len = name.len() as u64;
        let key = avalanche(fold(a0 ^ len, a1 ^ s3));
        let check = avalanche(fold(b0 ^ s1, b1 ^ len.rotate_left(32)));
        #[cfg(test)]
        if self.colliding {
            return (0, (check >> 32) as u32);
        }
        (key, (check >> 32) as u32)
    }
}

impl fmt::Debug for NameHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NameHash")
    }
}

fn word(c: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&c[at..at + 8]);
    u64::from_le_bytes(w)
}

fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// The bucket of `key` among `2^bits`: its top bits.
fn bucket(key: u64, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        (key >> (64 - bits)) as usize
    }
}

/// splitmix64's finalizer.
fn avalanche(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
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
    use std::collections::HashSet;

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
    fn names_differing_only_in_the_middle_are_different_children() {
        let sub = Url::parse("consumer://h/a.B?interface=a.B&category=providers").unwrap();
        let mut cache = ChildCache::new(sub, "providers");
        let url = |methods: &str| {
            crate::paths::node_name(
                &Url::parse(&format!(
                    "dubbo://10.0.0.1:20880/a.B?interface=a.B&methods={methods}&{}side=provider",
                    "x=1&".repeat(40)
                ))
                .unwrap(),
            )
        };
        let (a, b) = (url("aaaa"), url("aaab"));
        assert_eq!(a.len(), b.len());
        assert!(cache.update(vec![a.clone()]).changed);
        let up = cache.update(vec![b]);
        assert_eq!((up.added, up.removed), (1, 1));
        assert_eq!(up.urls[0].get_param("methods"), Some("aaab"));
    }

    #[test]
    fn key_collisions_keep_the_names_apart() {
        let sub = Url::parse("consumer://h/a.B?interface=a.B&category=providers").unwrap();
        let mut cache = ChildCache::new(sub, "providers");
        cache.hasher.colliding = true;
        let first = cache.update((0..50).map(name).collect());
        assert_eq!((first.added, first.urls.len()), (50, 50));
        assert_eq!(
            cache.collided.len(),
            49,
            "one name holds the key, the others are kept"
        );
        let same = cache.update((0..50).map(name).collect());
        assert!(!same.changed);
        // The name holding the key leaves; the others stay found.
        let next = cache.update((1..51).map(name).collect());
        assert_eq!((next.added, next.removed, next.urls.len()), (1, 1, 50));
        let mut hosts: Vec<String> = next
            .urls
            .iter()
            .map(|u| u.host().unwrap().to_owned())
            .collect();
        hosts.sort();
        let mut want: Vec<String> = (1..51).map(|i| format!("10.0.0.{i}")).collect();
        want.sort();
        assert_eq!(hosts, want);
        assert!(!cache.update((1..51).map(name).collect()).changed);
    }

    #[test]
    fn name_hash_depends_on_every_byte_and_on_the_seed() {
        let h = NameHash::random();
        let base = vec![b'a'; 1000];
        let (k0, c0) = h.hash(&base);
        for at in [0, 31, 32, 500, 990, 999] {
            let mut v = base.clone();
            v[at] = b'b';
            let (k, c) = h.hash(&v);
            assert!(k != k0 && c != c0, "byte {at}");
        }
        assert_ne!(h.hash(&base[..999]).0, k0, "length counts");
        assert_ne!(NameHash::random().hash(&base).0, k0, "seeded per cache");
        let keys: HashSet<u64> = (0..20_000).map(|i| h.hash(name(i).as_bytes()).0).collect();
        assert_eq!(keys.len(), 20_000);
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
