//! [`SmallMap`]: a map of a few entries in a vector of their size.

use std::borrow::Borrow;

/// A map of a few entries (a subscription's applications, an application's revisions)
/// in a vector of its size, looked up by a walk. A `HashMap` takes at least 4 buckets
/// once it holds one entry (3 of them empty); a subscription keeps several such maps,
/// each holding one or two entries, for as long as it lives.
#[derive(Debug, Clone)]
pub(crate) struct SmallMap<K, V>(Vec<(K, V)>);

impl<K, V> Default for SmallMap<K, V> {
    fn default() -> Self {
        SmallMap(Vec::new())
    }
}

impl<K: Eq, V> SmallMap<K, V> {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn position<Q>(&self, key: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        self.0.iter().position(|(k, _)| k.borrow() == key)
    }

    pub(crate) fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        self.position(key).map(|i| &self.0[i].1)
    }

    pub(crate) fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        self.position(key).map(|i| &mut self.0[i].1)
    }

    pub(crate) fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        self.position(key).is_some()
    }

    /// Sets `key` to `value`, returning the value it replaced. Room is made for one
    /// entry at a time.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.position(&key) {
            Some(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            None => {
                self.0.reserve_exact(1);
                self.0.push((key, value));
                None
            }
        }
    }

    /// The value of `key`, made with `make` when absent.
    pub(crate) fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.position(&key) {
            Some(i) => i,
            None => {
                self.0.reserve_exact(1);
                self.0.push((key, make()));
                self.0.len() - 1
            }
        };
        &mut self.0[i].1
    }

    pub(crate) fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        let i = self.position(key)?;
        let (_, v) = self.0.swap_remove(i);
        self.0.shrink_to_fit();
        Some(v)
    }

    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        let before = self.0.len();
        self.0.retain_mut(|(k, v)| keep(k, v));
        if self.0.len() != before {
            self.0.shrink_to_fit();
        }
    }

    pub(crate) fn clear(&mut self) {
        self.0 = Vec::new();
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (&K, &mut V)> {
        self.0.iter_mut().map(|(k, v)| (&*k, v))
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = &K> {
        self.0.iter().map(|(k, _)| k)
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.0.iter_mut().map(|(_, v)| v)
    }
}

#[cfg(test)]
impl<K: Eq + Borrow<str>, V> std::ops::Index<&str> for SmallMap<K, V> {
    type Output = V;

    fn index(&self, key: &str) -> &V {
        match self.get(key) {
            Some(v) => v,
            None => panic!("no entry {key}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_of_its_size() {
        let mut m: SmallMap<String, usize> = SmallMap::new();
        assert_eq!(m.insert("a".into(), 1), None);
        assert_eq!(m.insert("b".into(), 2), None);
        assert_eq!(m.insert("a".into(), 3), Some(1));
        assert_eq!(m["a"], 3);
        *m.get_or_insert_with("c".into(), || 0) += 5;
        *m.get_or_insert_with("c".into(), || 0) += 5;
        assert_eq!(m.get("c"), Some(&10));
        assert_eq!(m.0.capacity(), 3);
        assert_eq!(m.remove("b"), Some(2));
        m.retain(|k, _| k != "a");
        assert_eq!(m.keys().collect::<Vec<_>>(), ["c"]);
        assert_eq!(m.0.capacity(), 1);
        assert!(!m.contains_key("a") && m.len() == 1);
    }
}
