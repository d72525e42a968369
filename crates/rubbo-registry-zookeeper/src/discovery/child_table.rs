//! The known children of one `/services/{app}`, by node name.

/// A table of node name to `V`, in a vector sorted by name (each entry the name, boxed,
/// and the value) grown by an eighth, instead of a `BTreeMap<String, V>`: a B-tree of
/// 40-byte slots is about 60 to 75 bytes per entry, this about 35 at 16-byte values.
/// A change costs a binary search and a move of the entries after it, as publishing
/// the application's list after it costs a walk of every instance.
#[derive(Debug)]
pub(super) struct ChildTable<V> {
    entries: Vec<(Box<str>, V)>,
}

impl<V> Default for ChildTable<V> {
    fn default() -> Self {
        ChildTable {
            entries: Vec::new(),
        }
    }
}

impl<V> ChildTable<V> {
    fn find(&self, name: &str) -> Result<usize, usize> {
        self.entries.binary_search_by(|(n, _)| (**n).cmp(name))
    }

    pub(super) fn get(&self, name: &str) -> Option<&V> {
        self.find(name).ok().map(|k| &self.entries[k].1)
    }

    pub(super) fn contains_key(&self, name: &str) -> bool {
        self.find(name).is_ok()
    }

    /// Sets `name` to `value`.
    pub(super) fn insert(&mut self, name: String, value: V) {
        match self.find(&name) {
            Ok(k) => self.entries[k].1 = value,
            Err(k) => {
                if self.entries.len() == self.entries.capacity() {
                    self.entries.reserve_exact((self.entries.len() / 8).max(4));
                }
                self.entries.insert(k, (name.into_boxed_str(), value));
            }
        }
    }

    pub(super) fn remove(&mut self, name: &str) {
        if let Ok(k) = self.find(name) {
            self.entries.remove(k);
            self.trim();
        }
    }

    /// Keeps the entries `keep` says yes to.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.entries.retain(|(n, _)| keep(n));
        self.trim();
    }

    pub(super) fn clear(&mut self) {
        self.entries = Vec::new();
    }

    /// The values, by name.
    pub(super) fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// How many children are known.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }

    /// Gives back what more than an eighth of the table is free.
    fn trim(&mut self) {
        let len = self.entries.len();
        if self.entries.capacity() - len > len / 8 + 4 {
            self.entries.shrink_to(len + len / 16);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sorted_table_by_name() {
        let mut t = ChildTable::default();
        for n in [5, 1, 9, 3, 7, 3] {
            t.insert(format!("10.0.0.{n}:20880"), n);
        }
        assert_eq!(t.len(), 5);
        assert_eq!(t.values().copied().collect::<Vec<_>>(), [1, 3, 5, 7, 9]);
        assert_eq!(t.get("10.0.0.7:20880"), Some(&7));
        t.remove("10.0.0.7:20880");
        t.remove("10.0.0.8:20880");
        assert!(!t.contains_key("10.0.0.7:20880"));
        t.retain(|n| n != "10.0.0.1:20880");
        assert_eq!(t.values().copied().collect::<Vec<_>>(), [3, 5, 9]);
        for n in 0..1000 {
            t.insert(format!("10.1.{}.{}:20880", n / 250, n % 250), n);
        }
        assert!(t.entries.capacity() <= 1003 + 1003 / 8 + 4);
        t.retain(|n| !n.starts_with("10.1."));
        assert!(
            t.entries.capacity() <= 3 + 4 + 1,
            "{}",
            t.entries.capacity()
        );
        t.clear();
        assert_eq!(t.len(), 0);
    }
}
