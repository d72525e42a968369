//! [`InstanceMetadata`]: an instance's metadata map, kept compact, its texts shareable.

use std::collections::BTreeMap;
use std::ops::Index;
use std::sync::Arc;

use crate::interner::MetadataInterner;

/// One entry: a key and its value, each a text that equal texts of other instances
/// may share (see [`MetadataInterner`]).
type Entry = (Arc<String>, Arc<String>);

/// An instance's metadata (`dubbo.metadata.revision`, `dubbo.endpoints`...): string
/// keys to string values, sorted by key as Java's `getSortedMetadata`, with the
/// reading API of a `BTreeMap<String, String>`.
///
/// Kept as one sorted vector of the size it holds rather than a `BTreeMap`, whose
/// smallest node is 544 bytes: an instance usually has 3 to 7 entries, and a consumer
/// keeps one instance per provider (10,000 or more). Each key and value is an
/// `Arc<String>` (an entry is 16 bytes), so that the instances of one application,
/// parsed with one [`MetadataInterner`], hold one copy of the texts they share (every
/// key; the revision, endpoints and MetadataService parameters of a revision): only
/// what differs per instance (`timestamp`) is their own. Sharing changes nothing that
/// can be observed but memory: equality, hashing, order and iteration are the texts'.
///
/// ```
/// use rubbo_metadata::InstanceMetadata;
/// let mut m = InstanceMetadata::new();
/// m.insert("b".into(), "2".into());
/// m.insert("a".into(), "1".into());
/// assert_eq!(m.insert("a".into(), "3".into()).as_deref(), Some("1"));
/// assert_eq!(m["a"], "3");
/// assert_eq!(m.keys().map(String::as_str).collect::<Vec<_>>(), ["a", "b"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct InstanceMetadata(Vec<Entry>);

/// The borrowed entries of an [`InstanceMetadata`], by key.
pub type Iter<'a> =
    std::iter::Map<std::slice::Iter<'a, Entry>, fn(&'a Entry) -> (&'a String, &'a String)>;

/// The owned entries of an [`InstanceMetadata`], by key (a text still shared with
/// another instance is copied).
pub type IntoIter = std::iter::Map<std::vec::IntoIter<Entry>, fn(Entry) -> (String, String)>;

fn borrowed(e: &Entry) -> (&String, &String) {
    (&e.0, &e.1)
}

fn owned(e: Entry) -> (String, String) {
    (Arc::unwrap_or_clone(e.0), Arc::unwrap_or_clone(e.1))
}

impl InstanceMetadata {
    /// No entries.
    pub fn new() -> Self {
        InstanceMetadata(Vec::new())
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&String> {
        self.find(key).ok().map(|i| &*self.0[i].1)
    }

    /// Whether `key` has a value.
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Sets `key` to `value`, returning the value it replaced. Room is made for one
    /// entry at a time: a map filled by inserts stays the size of what it holds.
    pub fn insert(&mut self, key: String, value: String) -> Option<String> {
        self.insert_shared(Arc::new(key), Arc::new(value))
    }

    /// [`insert`](Self::insert) of texts that may be shared (from a
    /// [`MetadataInterner`]).
    pub fn insert_shared(&mut self, key: Arc<String>, value: Arc<String>) -> Option<String> {
        match self.find(&key) {
            Ok(i) => Some(Arc::unwrap_or_clone(std::mem::replace(
                &mut self.0[i].1,
                value,
            ))),
            Err(i) => {
                self.0.reserve_exact(1);
                self.0.insert(i, (key, value));
                None
            }
        }
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        self.find(key)
            .ok()
            .map(|i| Arc::unwrap_or_clone(self.0.remove(i).1))
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The entries, by key.
    pub fn iter(&self) -> Iter<'_> {
        self.into_iter()
    }

    /// The keys, sorted.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator {
        self.0.iter().map(|(k, _)| &**k)
    }

    /// The values, by key.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator {
        self.0.iter().map(|(_, v)| &**v)
    }

    /// Makes each key and value the text `interner` shares for it (the same entries,
    /// less memory when other instances hold the same texts).
    pub fn share(&mut self, interner: &mut MetadataInterner) {
        for (k, v) in &mut self.0 {
            *k = interner.intern_shared(k.clone());
            *v = interner.intern_shared(v.clone());
        }
    }

    /// The entries given, each text taken from `interner` (see
    /// [`share`](Self::share)); of a key given twice, the last value wins.
    pub fn collect_shared<I>(entries: I, interner: &mut MetadataInterner) -> Self
    where
        I: IntoIterator<Item = (String, String)>,
    {
        Self::from_entries(
            entries
                .into_iter()
                .map(|(k, v)| (interner.intern(k), interner.intern(v)))
                .collect(),
        )
    }

    /// Sorted by key, the last of equal keys kept, no spare room.
    fn from_entries(mut entries: Vec<Entry>) -> Self {
        // Stable: of equal keys, the last one given is the last one here.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<Entry> = Vec::with_capacity(entries.len());
        for e in entries {
            match out.last_mut() {
                Some(last) if last.0 == e.0 => *last = e,
                _ => out.push(e),
            }
        }
        out.shrink_to_fit();
        InstanceMetadata(out)
    }
}

impl Index<&str> for InstanceMetadata {
    type Output = String;

    /// The value of `key`; panics when there is none, as `BTreeMap`'s index does.
    fn index(&self, key: &str) -> &String {
        #[allow(clippy::expect_used)]
        self.get(key)
            .expect("no entry for this key in the instance metadata")
    }
}

impl FromIterator<(String, String)> for InstanceMetadata {
    /// The last value of a key repeated wins, as in a `BTreeMap`.
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Self {
        Self::from_entries(
            iter.into_iter()
                .map(|(k, v)| (Arc::new(k), Arc::new(v)))
                .collect(),
        )
    }
}

impl Extend<(String, String)> for InstanceMetadata {
    fn extend<I: IntoIterator<Item = (String, String)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<const N: usize> From<[(String, String); N]> for InstanceMetadata {
    fn from(entries: [(String, String); N]) -> Self {
        entries.into_iter().collect()
    }
}

impl From<BTreeMap<String, String>> for InstanceMetadata {
    fn from(map: BTreeMap<String, String>) -> Self {
        // Already sorted and unique.
        let mut v: Vec<Entry> = map
            .into_iter()
            .map(|(k, v)| (Arc::new(k), Arc::new(v)))
            .collect();
        v.shrink_to_fit();
        InstanceMetadata(v)
    }
}

impl From<InstanceMetadata> for BTreeMap<String, String> {
    fn from(m: InstanceMetadata) -> Self {
        m.into_iter().collect()
    }
}

impl PartialEq<BTreeMap<String, String>> for InstanceMetadata {
    fn eq(&self, other: &BTreeMap<String, String>) -> bool {
        self.iter().eq(other.iter())
    }
}

impl PartialEq<InstanceMetadata> for BTreeMap<String, String> {
    fn eq(&self, other: &InstanceMetadata) -> bool {
        other == self
    }
}

impl<'a> IntoIterator for &'a InstanceMetadata {
    type Item = (&'a String, &'a String);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.0
            .iter()
            .map(borrowed as fn(&'a Entry) -> (&'a String, &'a String))
    }
}

impl IntoIterator for InstanceMetadata {
    type Item = (String, String);
    type IntoIter = IntoIter;

    fn into_iter(self) -> Self::IntoIter {
        self.0
            .into_iter()
            .map(owned as fn(Entry) -> (String, String))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> String {
        v.to_owned()
    }

    #[test]
    fn behaves_as_a_btreemap() {
        let ops: [(&str, Option<&str>); 9] = [
            ("m", Some("1")),
            ("c", Some("2")),
            ("x", Some("3")),
            ("c", Some("4")),
            ("a", None),
            ("m", None),
            ("a", Some("5")),
            ("z", Some("6")),
            ("x", None),
        ];
        let mut ours = InstanceMetadata::new();
        let mut map = BTreeMap::new();
        for (k, v) in ops {
            match v {
                Some(v) => assert_eq!(ours.insert(s(k), s(v)), map.insert(s(k), s(v))),
                None => assert_eq!(ours.remove(k), map.remove(k)),
            }
            assert!(ours.iter().eq(map.iter()));
            assert_eq!(ours.len(), map.len());
            for key in ["a", "c", "m", "x", "z", "q"] {
                assert_eq!(ours.get(key), map.get(key));
                assert_eq!(ours.contains_key(key), map.contains_key(key));
            }
        }
        assert_eq!(ours, map);
        assert_eq!(BTreeMap::from(ours.clone()), map);
        assert_eq!(InstanceMetadata::from(map), ours);
    }

    #[test]
    fn collected_it_keeps_the_last_value_of_a_key_and_no_spare_room() {
        let m: InstanceMetadata = [(s("b"), s("1")), (s("a"), s("2")), (s("b"), s("3"))]
            .into_iter()
            .collect();
        assert!(m.iter().eq([(&s("a"), &s("2")), (&s("b"), &s("3"))]));
        assert_eq!(m.0.capacity(), 2);
        let mut m = InstanceMetadata::new();
        for i in 0..5 {
            m.insert(format!("k{i}"), s("v"));
        }
        assert_eq!(m.0.capacity(), 5);
    }
}
