//! `ChildCache`: child node names to URLs, parsed once, diffed on every push.
//!
//! A consumer may watch 20,000 providers of one interface; a push after one of them
//! changed must not parse 20,000 names again. The cache maps each child name to its
//! parsed URL (or to nothing, for a name that does not parse or does not match the
//! subscription), so a push costs one hash of each name plus the parsing of the new
//! names.
//!
//! The names themselves (about 1 KB each) are not kept: an entry is a 96-bit keyed
//! hash of its name ([`NameHash`], seeds random per cache) and the URL, 24 bytes. Two
//! different names are taken for one only if all 96 bits collide (about 2^-96 per
//! pair of names of one category).
//!
//! The entries are kept in the order of the last list. ZooKeeper lists the children
//! of a node in the iteration order of a Java `HashSet`, which keeps its order when a
//! child comes or goes (it changes when the set is resized), so a push is mostly the
//! last list with a few names inserted or taken out. [`ChildCache::update`] walks the
//! new list and the entries side by side, comparing each name's hash with the next
//! entries; only names that do not line up are looked up, in maps whose size is the
//! size of the change. Any order gives the right result; a shuffled list is only
//! slower.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{BuildHasher, Hasher};

use rubbo_common::Url;
use rubbo_registry::{PROVIDERS_CATEGORY, empty_url, is_match};
use tracing::{debug, warn};

mod apply;

/// The result of [`ChildCache::update`] and [`ChildCache::apply`].
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
    /// One entry per distinct child, in the order of the last list: 24 bytes a child,
    /// no per-child allocation besides its URL.
    entries: Vec<Entry>,
    hasher: NameHash,
    delivered: bool,
    empty_protection: bool,
}

struct Entry {
    id: Id,
    /// `None`: unparseable or not for this subscription.
    url: Option<Url>,
}

/// [`NameHash::hash`] of a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Id {
    key: u64,
    check: u32,
}

/// How far ahead in the entries a name is looked for before it counts as out of
/// order: up to this many consecutive children may go at once without a lookup.
const WINDOW: usize = 4;

/// Up to this many children in or out, the entries are edited one by one.
const FEW_EDITS: usize = 4;

// Where the entry of a listed name comes from, when not from an index into the
// previous entries:
/// a new name, parsed;
const NEW: u32 = u32::MAX;
/// none: the same name is listed elsewhere in the list;
const DUPLICATE: u32 = u32::MAX - 1;
/// not known yet (between [`ChildCache::walk`] and [`resolve`]).
const UNRESOLVED: u32 = u32::MAX - 2;

impl fmt::Debug for ChildCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildCache")
            .field("category", &self.category)
            .field("children", &self.len())
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
            hasher: NameHash::random(),
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
        self.entries.len()
    }

    /// Whether no child is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Applies the current child list; returns the list to deliver.
    ///
    /// This frees the names before it returns; a caller that wants the list delivered
    /// first (freeing 20,000 names of 1 KB takes a few tenths of a millisecond) calls
    /// [`update_names`](Self::update_names) and drops the names after delivering.
    pub fn update(&mut self, children: Vec<String>) -> ChildUpdate {
        self.update_names(&children)
    }

    /// [`update`](Self::update) from borrowed names.
    pub fn update_names<S: AsRef<str>>(&mut self, children: &[S]) -> ChildUpdate {
        let walk = self.walk(children, &self.entries);
        let (mut added, mut removed) = (0, 0);
        if !walk.in_place(self.entries.len()) {
            let plan = resolve(walk, &self.entries);
            let fresh = self.parse_new(children, &plan.from);
            (added, removed) = (fresh.len(), plan.gone.len());
            if plan.moved {
                let old = std::mem::take(&mut self.entries);
                self.entries = rebuild(old, &plan.from, fresh);
            } else {
                patch(&mut self.entries, &plan.gone, fresh);
            }
        }
        self.finish(added, removed)
    }

    /// The list to deliver after `added` children came and `removed` went.
    fn finish(&mut self, added: usize, removed: usize) -> ChildUpdate {
        let mut urls: Vec<Url> = Vec::with_capacity(self.len().max(1));
        urls.extend(self.entries.iter().filter_map(|e| e.url.clone()));
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

    /// Hashes each name and lines it up with the previous entries `old`, in order.
    fn walk<S: AsRef<str>>(&self, children: &[S], old: &[Entry]) -> Walk {
        let mut walk = Walk {
            from: Vec::with_capacity(children.len()),
            unresolved: Vec::new(),
            skipped: Vec::new(),
            next: 0,
        };
        // Built only when names stop lining up for longer than the window.
        let mut index: Option<HashMap<Id, u32, IdState>> = None;
        let mut misses = 0;
        for (i, name) in children.iter().enumerate() {
            let id = self.hasher.hash(name.as_ref().as_bytes());
            let j = walk.next;
            let ahead = old.get(j..old.len().min(j + WINDOW)).unwrap_or_default();
            let mut at = ahead.iter().position(|e| e.id == id).map(|p| j + p);
            if at.is_none() {
                misses += 1;
                if misses > WINDOW {
                    // A long run of new names, or of entries gone: find where this
                    // name was, to carry on from there.
                    let index = index.get_or_insert_with(|| {
                        old.iter()
                            .enumerate()
                            .map(|(k, e)| (e.id, k as u32))
                            .collect()
                    });
                    at = index.get(&id).map(|&k| k as usize).filter(|&k| k >= j);
                }
            }
            match at {
                Some(k) => {
                    misses = 0;
                    walk.skipped.extend(j as u32..k as u32);
                    walk.from.push(k as u32);
                    walk.next = k + 1;
                }
                None => {
                    walk.from.push(UNRESOLVED);
                    walk.unresolved.push((i, id));
                }
            }
        }
        walk
    }

    /// The entries of the names `from` marks [`NEW`], parsed, with their places in the
    /// new entries.
    fn parse_new<S: AsRef<str>>(&self, children: &[S], from: &[u32]) -> Vec<(usize, Entry)> {
        let mut fresh = Vec::new();
        let mut place = 0;
        for (name, &src) in children.iter().zip(from) {
            match src {
                DUPLICATE => continue,
                NEW => {
                    let name = name.as_ref();
                    let id = self.hasher.hash(name.as_bytes());
                    fresh.push((
                        place,
                        Entry {
                            id,
                            url: self.parse(name),
                        },
                    ));
                }
                _ => {}
            }
            place += 1;
        }
        fresh
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

/// The new list lined up with the previous entries.
struct Walk {
    /// Per name: the index of its previous entry, or [`UNRESOLVED`].
    from: Vec<u32>,
    /// The names that did not line up, with their hashes.
    unresolved: Vec<(usize, Id)>,
    /// Previous entries passed over: gone, or listed elsewhere.
    skipped: Vec<u32>,
    /// The first previous entry not reached.
    next: usize,
}

impl Walk {
    /// Whether the list is the previous one, in the same order.
    fn in_place(&self, old: usize) -> bool {
        self.unresolved.is_empty() && self.skipped.is_empty() && self.next == old
    }
}

/// Where each name's entry comes from, once [`resolve`]d.
struct Plan {
    /// Per name: the index of its previous entry, [`NEW`] or [`DUPLICATE`].
    from: Vec<u32>,
    /// The previous entries gone, ascending.
    gone: Vec<u32>,
    /// Whether some previous entries are listed in another order.
    moved: bool,
}

/// Places the names that did not line up: a previous entry listed elsewhere, a name
/// listed twice, or a new name.
fn resolve(walk: Walk, old: &[Entry]) -> Plan {
    let Walk {
        mut from,
        unresolved,
        skipped,
        next,
    } = walk;
    // The previous entries not lined up with a name: gone, unless listed elsewhere.
    let mut pending: HashMap<Id, u32, IdState> = skipped
        .into_iter()
        .chain(next as u32..old.len() as u32)
        .map(|k| (old[k as usize].id, k))
        .collect();
    let mut placed: HashSet<Id, IdState> =
        HashSet::with_capacity_and_hasher(unresolved.len(), IdState);
    let mut fresh: Vec<(Id, usize)> = Vec::new();
    let mut moved = false;
    for (i, id) in unresolved {
        from[i] = if !placed.insert(id) {
            DUPLICATE
        } else if let Some(k) = pending.remove(&id) {
            moved = true;
            k
        } else {
            fresh.push((id, i));
            NEW
        };
    }
    if !fresh.is_empty() {
        // A new-looking name whose entry was lined up with another copy of the name.
        fresh.sort_unstable();
        for e in old {
            if let Ok(p) = fresh.binary_search_by_key(&e.id, |&(id, _)| id) {
                from[fresh[p].1] = DUPLICATE;
            }
        }
    }
    let mut gone: Vec<u32> = pending.into_values().collect();
    gone.sort_unstable();
    Plan { from, gone, moved }
}

/// The new entries, in list order: `from` the previous ones, or `fresh`.
fn rebuild(mut old: Vec<Entry>, from: &[u32], fresh: Vec<(usize, Entry)>) -> Vec<Entry> {
    let mut entries = Vec::with_capacity(from.len());
    let mut fresh = fresh.into_iter().map(|(_, e)| e);
    for &src in from {
        match src {
            DUPLICATE => {}
            NEW => entries.extend(fresh.next()),
            k => {
                let e = &mut old[k as usize];
                entries.push(Entry {
                    id: e.id,
                    url: e.url.take(),
                });
            }
        }
    }
    entries
}

/// Edits `entries` in place (the previous entries kept in their order): takes out the
/// `gone` ones and puts each `fresh` one at its place, keeping the allocation.
fn patch(entries: &mut Vec<Entry>, gone: &[u32], mut fresh: Vec<(usize, Entry)>) {
    if gone.len() + fresh.len() <= FEW_EDITS {
        // One move of the entries after each edit: the common push with a provider or
        // two replaced.
        for &k in gone.iter().rev() {
            entries.remove(k as usize);
        }
        entries.reserve_exact(fresh.len());
        for (place, e) in fresh {
            entries.insert(place, e);
        }
        return;
    }
    // Many edits: one pass over the entries from the first edit on.
    if let Some(&first) = gone.first() {
        let mut gone = gone.iter().map(|&k| k as usize).peekable();
        let mut kept = first as usize;
        for k in first as usize..entries.len() {
            if gone.next_if_eq(&k).is_none() {
                entries.swap(kept, k);
                kept += 1;
            }
        }
        entries.truncate(kept);
        if entries.capacity() > kept + kept / 8 + 64 {
            entries.shrink_to_fit();
        }
    }
    if fresh.is_empty() {
        return;
    }
    // Grow by the new ones, then fill from the end: each slot gets the last fresh entry
    // if that is its place, else the last kept entry not yet moved.
    let mut kept = entries.len();
    entries.reserve_exact(fresh.len());
    entries.resize_with(kept + fresh.len(), || Entry {
        id: Id { key: 0, check: 0 },
        url: None,
    });
    for slot in (0..entries.len()).rev() {
        if fresh.last().is_some_and(|(place, _)| *place == slot) {
            if let Some((_, e)) = fresh.pop() {
                entries[slot] = e;
            }
            if fresh.is_empty() {
                break;
            }
        } else {
            kept -= 1;
            entries.swap(slot, kept);
        }
    }
}

/// Hashes [`Id`]s, which are already keyed hashes: their bits are used as they are.
#[derive(Debug, Clone, Copy, Default)]
struct IdState;

impl BuildHasher for IdState {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

#[derive(Debug)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }

    fn write_u32(&mut self, v: u32) {
        self.0 ^= u64::from(v).wrapping_mul(K);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A keyed hash of a whole child name: a 64-bit key and a 32-bit check.
///
/// Eight folded-multiply lanes, each with its own random seed, read every byte:
/// lane `l` takes bytes `16l..16l + 16` of each 128-byte half of a 256-byte block and
/// chains them into its 64-bit state; the tail goes 16 bytes at a time to the lanes in
/// turn, the last piece being the name's last 16 bytes (zero-padded if the name is
/// shorter), and the length is mixed in at the end. The key and the check fold the
/// eight states in two different pairings, so for two different names both match with
/// a probability of about 2^-96.
///
/// Why this shape: a list of 20,000 names of 1 KB is more than the caches hold, so the
/// hash runs at the speed memory is read, which depends on how many cache lines are
/// requested at once. Loading a whole 256-byte block (four lines) before folding it
/// keeps more lines in flight than folding each word as it is read. In `push_scale`
/// (23 MB of names) it takes 1.2-1.5 ms, where the four-lane, 32-byte-block loop it
/// replaced took 1.8-2.3 ms and merely adding up the words takes 1.1 ms. (XXH3-128 with
/// AVX2 was slower here: 2.7 ms against 1.4 ms in a probe with cold names.)
#[derive(Clone, Copy)]
struct NameHash {
    seeds: [u64; LANES],
    /// Tests: every name gets key 0, so names differ only by their check.
    #[cfg(test)]
    colliding: bool,
}

const LANES: usize = 8;
const BLOCK: usize = 32 * LANES;

impl NameHash {
    fn random() -> NameHash {
        let state = std::collections::hash_map::RandomState::new();
        NameHash {
            seeds: std::array::from_fn(|i| state.hash_one(i) | 1),
            #[cfg(test)]
            colliding: false,
        }
    }

    /// The [`Id`] of `name`.
    ///
    /// Not inlined: inlined into [`ChildCache::walk`]'s loop, the lanes no longer fit
    /// in registers and a push took 2.4 times as long.
    #[inline(never)]
    fn hash(&self, name: &[u8]) -> Id {
        let s = self.seeds;
        let mut a = s.map(|x| x ^ K);
        let mut blocks = name.chunks_exact(BLOCK);
        for c in &mut blocks {
            let w: [u64; BLOCK / 8] = std::array::from_fn(|i| word(c, 8 * i));
            for half in (0..BLOCK / 8).step_by(2 * LANES) {
                for l in 0..LANES {
                    a[l] = fold(w[half + 2 * l] ^ s[l], w[half + 2 * l + 1] ^ a[l]);
                }
            }
        }
        let rest = blocks.remainder();
        let mut padded = [0u8; 16];
        let mut pairs = rest.chunks_exact(16);
        let mut l = 0;
        for c in &mut pairs {
            a[l] = fold(word(c, 0) ^ s[l], word(c, 8) ^ a[l]);
            l = (l + 1) % LANES;
        }
        let last = pairs.remainder();
        if !last.is_empty() {
            // The last 16 bytes of the name, overlapping the pieces before (the length,
            // mixed in below, tells the overlap); a name shorter than 16 is padded.
            let c = match name.len().checked_sub(16) {
                Some(from) => &name[from..],
                None => {
                    padded[..last.len()].copy_from_slice(last);
                    &padded[..]
                }
            };
            a[l] = fold(word(c, 0) ^ s[l], word(c, 8) ^ a[l]);
        }
        let len = name.len() as u64;
        let key = avalanche(
            fold(a[0] ^ a[4] ^ len, a[1] ^ a[5] ^ s[1])
                ^ fold(a[2] ^ a[6] ^ s[2], a[3] ^ a[7] ^ s[3]),
        );
        let check = avalanche(
            fold(a[0] ^ a[5] ^ s[4], a[2] ^ a[7] ^ len.rotate_left(32))
                ^ fold(a[1] ^ a[6] ^ s[5], a[3] ^ a[4] ^ s[6]),
        );
        let check = (check >> 32) as u32;
        #[cfg(test)]
        if self.colliding {
            return Id { key: 0, check };
        }
        Id { key, check }
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

/// splitmix64's finalizer.
fn avalanche(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The golden-ratio constant of the hashers above.
const K: u64 = 0x9e37_79b9_7f4a_7c15;

#[cfg(test)]
mod tests {
    use super::*;
    use rubbo_registry::is_empty_url;
    use std::collections::HashSet;

    pub(super) fn name(i: usize) -> String {
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
        assert_eq!((first.added, first.urls.len(), cache.len()), (50, 50, 50));
        let same = cache.update((0..50).map(name).collect());
        assert!(!same.changed);
        let next = cache.update((1..51).rev().map(name).collect());
        assert_eq!((next.added, next.removed, next.urls.len()), (1, 1, 50));
        let mut want: Vec<String> = (1..51).map(host).collect();
        want.sort();
        assert_eq!(hosts(&next.urls), want);
        assert!(!cache.update((1..51).map(name).collect()).changed);
    }

    pub(super) fn host(i: usize) -> String {
        format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256)
    }

    /// The hosts of `urls`, sorted.
    pub(super) fn hosts(urls: &[Url]) -> Vec<String> {
        let mut hosts: Vec<String> = urls.iter().map(|u| u.host().unwrap().to_owned()).collect();
        hosts.sort();
        hosts
    }

    #[test]
    fn the_delivered_list_follows_the_order_of_the_children() {
        let sub = Url::parse("consumer://h/a.B?interface=a.B&category=providers").unwrap();
        let mut cache = ChildCache::new(sub, "providers");
        cache.update((0..10).map(name).collect());
        let order = [3, 1, 4, 0, 5, 9, 2, 6, 8, 7];
        let up = cache.update(order.iter().map(|&i| name(i)).collect());
        assert!(!up.changed, "the same children in another order");
        let got: Vec<&str> = up.urls.iter().map(|u| u.host().unwrap()).collect();
        let want: Vec<String> = order.iter().map(|&i| host(i)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn duplicate_names_count_once() {
        let sub = Url::parse("consumer://h/a.B?interface=a.B&category=providers").unwrap();
        let mut cache = ChildCache::new(sub, "providers");
        let first = cache.update(vec![name(1), name(2), name(1), name(3), name(3)]);
        assert_eq!((first.added, first.urls.len(), cache.len()), (3, 3, 3));
        // A copy before, and long after, the place the name lines up with.
        let mut list: Vec<String> = vec![name(3)];
        list.extend([1, 2, 3].map(name));
        list.extend((10..20).map(name));
        list.push(name(2));
        let up = cache.update(list);
        assert_eq!((up.added, up.removed, up.urls.len()), (10, 0, 13));
        let again = cache.update(vec![name(4), name(4)]);
        assert_eq!((again.added, again.removed, again.urls.len()), (1, 13, 1));
    }

    #[test]
    fn long_runs_of_new_and_gone_children_line_up_again() {
        let sub = Url::parse("consumer://h/a.B?interface=a.B&category=providers").unwrap();
        let mut cache = ChildCache::new(sub, "providers");
        cache.update((0..1000).map(name).collect());
        // 100 gone in one run, 50 new in another, 1 gone alone.
        let list: Vec<usize> = (0..200)
            .chain(300..600)
            .chain(5000..5050)
            .chain(600..700)
            .chain(701..1000)
            .collect();
        let up = cache.update(list.iter().map(|&i| name(i)).collect());
        assert_eq!((up.added, up.removed, up.urls.len()), (50, 101, 949));
        let got: Vec<&str> = up.urls.iter().map(|u| u.host().unwrap()).collect();
        let want: Vec<String> = list.iter().map(|&i| host(i)).collect();
        assert_eq!(got, want);
        assert!(
            !cache
                .update(list.iter().map(|&i| name(i)).collect())
                .changed
        );
    }

    /// Random pushes (new, gone, moved and repeated names) against a plain set of names.
    #[test]
    fn any_sequence_of_lists_matches_a_set_of_names() {
        let sub = Url::parse("consumer://h/a.B?interface=a.B&category=providers").unwrap();
        let mut cache = ChildCache::new(sub, "providers");
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rand = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut list: Vec<usize> = (0..300).collect();
        let mut before: HashSet<usize> = HashSet::new();
        let mut next_id = 300;
        for round in 0..200 {
            match rand(6) {
                // Remove a run, somewhere.
                0 if !list.is_empty() => {
                    let at = rand(list.len());
                    let most = if rand(4) == 0 { 40 } else { 3 };
                    let n = 1 + rand(most);
                    list.drain(at..(at + n).min(list.len()));
                }
                // Insert a run of new names.
                1 => {
                    let at = rand(list.len() + 1);
                    let most = if rand(4) == 0 { 40 } else { 3 };
                    let n = 1 + rand(most);
                    list.splice(at..at, next_id..next_id + n);
                    next_id += n;
                }
                // Move names around.
                2 if list.len() > 1 => {
                    let most = if rand(3) == 0 { list.len() } else { 3 };
                    for _ in 0..1 + rand(most) {
                        let (a, b) = (rand(list.len()), rand(list.len()));
                        list.swap(a, b);
                    }
                }
                // Repeat a name (not something ZooKeeper does, but harmless).
                3 if !list.is_empty() => {
                    let i = list[rand(list.len())];
                    list.insert(rand(list.len() + 1), i);
                }
                // Replace one name by a new one, in place.
                4 if !list.is_empty() => {
                    let at = rand(list.len());
                    list[at] = next_id;
                    next_id += 1;
                }
                _ => {}
            }
            let now: HashSet<usize> = list.iter().copied().collect();
            let up = cache.update(list.iter().map(|&i| name(i)).collect());
            let (added, removed) = (
                now.difference(&before).count(),
                before.difference(&now).count(),
            );
            assert_eq!((up.added, up.removed), (added, removed), "round {round}");
            assert_eq!(
                up.changed,
                added + removed > 0 || round == 0,
                "round {round}"
            );
            assert_eq!(cache.len(), now.len(), "round {round}");
            let mut want: Vec<String> = now.iter().map(|&i| host(i)).collect();
            want.sort();
            if now.is_empty() {
                assert!(is_empty_url(&up.urls[0]));
            } else {
                assert_eq!(hosts(&up.urls), want, "round {round}");
            }
            before = now;
        }
    }

    #[test]
    fn name_hash_depends_on_every_byte_and_on_the_seed() {
        let h = NameHash::random();
        let base = vec![b'a'; 1000];
        let id0 = h.hash(&base);
        // Every position of the 256-byte blocks, the 16-byte tail pieces and the last
        // padded piece.
        for at in (0..1000)
            .step_by(7)
            .chain([255, 256, 511, 767, 768, 990, 999])
        {
            let mut v = base.clone();
            v[at] = b'b';
            let id = h.hash(&v);
            assert!(id.key != id0.key && id.check != id0.check, "byte {at}");
        }
        assert_ne!(h.hash(&base[..999]).key, id0.key, "length counts");
        assert_ne!(
            h.hash(&[b'a', 0]).key,
            h.hash(b"a").key,
            "padding is not a byte"
        );
        assert_ne!(
            NameHash::random().hash(&base).key,
            id0.key,
            "seeded per cache"
        );
        let keys: HashSet<u64> = (0..20_000)
            .map(|i| h.hash(name(i).as_bytes()).key)
            .collect();
        assert_eq!(keys.len(), 20_000);
    }
}
