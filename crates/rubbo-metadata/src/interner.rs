//! [`MetadataInterner`]: one copy of the metadata texts that instances share.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// The table's size below which it is never pruned.
const MIN_LIMIT: usize = 32;

/// Hands out one shared `Arc<String>` per text, so that the instances parsed with it
/// hold one copy of what they have in common: an application's instances carry the
/// same keys, and those of one revision the same revision, endpoints, storage type and
/// MetadataService parameters; only e.g. `timestamp` differs per instance.
///
/// Not global: whoever parses an application's instances owns one (the ZooKeeper
/// discovery's follower of that application). Bounded, whatever churns: when the
/// table reaches its limit it forgets every text fewer than two holders share besides
/// itself (a text nobody holds any more, or that one instance holds alone, such as its
/// `timestamp`), and the limit becomes twice what is left (at least 32). So the
/// table holds at most twice the texts shared at its last pruning (or 32), whatever
/// number of instances come and go; each pruning is paid for by the insertions
/// since the last. A text forgotten while one instance held it is shared again from
/// the next instance that brings it (the first keeps its own copy).
///
/// ```
/// use std::sync::Arc;
/// use rubbo_metadata::{InstanceMetadata, MetadataInterner};
/// let mut interner = MetadataInterner::default();
/// let one = |ts: &str, interner: &mut MetadataInterner| {
///     InstanceMetadata::collect_shared(
///         [("dubbo.metadata.revision".to_owned(), "abc".to_owned()), ("timestamp".to_owned(), ts.to_owned())],
///         interner,
///     )
/// };
/// let (a, b) = (one("1", &mut interner), one("2", &mut interner));
/// assert_eq!(a["dubbo.metadata.revision"], b["dubbo.metadata.revision"]);
/// assert!(std::ptr::eq(&a["dubbo.metadata.revision"], &b["dubbo.metadata.revision"]));
/// assert_ne!(a["timestamp"], b["timestamp"]);
/// ```
#[derive(Debug, Default)]
pub struct MetadataInterner {
    texts: HashSet<Shared>,
    /// The size at which the table is pruned next (0: [`MIN_LIMIT`]).
    limit: usize,
}

/// A text of the table, found by its `str`.
#[derive(Debug)]
struct Shared(Arc<String>);

impl Borrow<str> for Shared {
    fn borrow(&self) -> &str {
        self.0.as_str()
    }
}

impl Hash for Shared {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // As `str` hashes, so that a `&str` finds it.
        self.0.as_str().hash(state);
    }
}

impl PartialEq for Shared {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_str() == other.0.as_str()
    }
}

impl Eq for Shared {}

impl MetadataInterner {
    /// The shared copy of `text` (`text` itself, now shared, when it is new).
    pub fn intern(&mut self, text: String) -> Arc<String> {
        match self.texts.get(text.as_str()) {
            Some(shared) => shared.0.clone(),
            None => self.add(Arc::new(text)),
        }
    }

    /// [`intern`](Self::intern) of a text already in an `Arc`.
    pub fn intern_shared(&mut self, text: Arc<String>) -> Arc<String> {
        match self.texts.get(text.as_str()) {
            Some(shared) => shared.0.clone(),
            None => self.add(text),
        }
    }

    /// The number of texts the table holds.
    pub fn len(&self) -> usize {
        self.texts.len()
    }

    /// Whether the table holds no text.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    fn add(&mut self, text: Arc<String>) -> Arc<String> {
        if self.texts.len() >= self.limit.max(MIN_LIMIT) {
            self.prune();
        }
        self.texts.insert(Shared(text.clone()));
        text
    }

    /// Forgets the texts fewer than two holders share besides the table.
    fn prune(&mut self) {
        self.texts.retain(|t| Arc::strong_count(&t.0) > 2);
        self.limit = (2 * self.texts.len()).max(MIN_LIMIT);
        self.texts.shrink_to(self.limit);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::InstanceMetadata;

    const REVISION: &str = "dubbo.metadata.revision";
    const ENDPOINTS: &str = "dubbo.endpoints";
    const TIMESTAMP: &str = "timestamp";

    /// An instance of revision `rev`, started at `ts`.
    fn instance(rev: usize, ts: usize, interner: &mut MetadataInterner) -> InstanceMetadata {
        InstanceMetadata::collect_shared(
            [
                (REVISION.to_owned(), format!("rev-{rev}")),
                (
                    ENDPOINTS.to_owned(),
                    r#"[{"port":20880,"protocol":"dubbo"}]"#.to_owned(),
                ),
                (TIMESTAMP.to_owned(), format!("{}", 1_700_000_000_000 + ts)),
            ],
            interner,
        )
    }

    fn same(a: &String, b: &String) -> bool {
        std::ptr::eq(a, b)
    }

    #[test]
    fn equal_texts_are_shared_and_the_rest_is_not() {
        let mut interner = MetadataInterner::default();
        let a = instance(1, 1, &mut interner);
        let b = instance(1, 2, &mut interner);
        let c = instance(2, 3, &mut interner);
        for key in [REVISION, ENDPOINTS, TIMESTAMP] {
            let (ka, kb) = (
                a.keys()
                    .find(|k| *k == key)
                    .unwrap_or_else(|| panic!("{key}")),
                b.keys()
                    .find(|k| *k == key)
                    .unwrap_or_else(|| panic!("{key}")),
            );
            assert!(same(ka, kb), "key {key}");
        }
        assert!(same(&a[REVISION], &b[REVISION]));
        assert!(same(&a[ENDPOINTS], &c[ENDPOINTS]));
        assert!(!same(&a[REVISION], &c[REVISION]));
        assert_ne!(a[TIMESTAMP], b[TIMESTAMP]);
        // Shared or not, the same map as one built without an interner.
        let plain: InstanceMetadata = a.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(plain, a);
        // `share` gives a map built otherwise the same texts.
        let mut d = plain.clone();
        d.share(&mut interner);
        assert_eq!(d, a);
        assert!(same(&d[REVISION], &a[REVISION]));
        assert!(same(&d[TIMESTAMP], &a[TIMESTAMP]));
    }

    #[test]
    fn bounded_as_instances_come_and_go() {
        let mut interner = MetadataInterner::default();
        let mut live = VecDeque::new();
        let mut most = 0;
        for ts in 0..20_000 {
            // 100 instances live at a time, each its own timestamp; a new revision
            // every 5,000.
            live.push_back(instance(ts / 5_000, ts, &mut interner));
            if live.len() > 100 {
                live.pop_front();
            }
            most = most.max(interner.len());
        }
        // The keys, one or two revisions and the endpoints are shared: the table stays
        // at its smallest limit, not one text per timestamp seen (20,000).
        assert!(most <= MIN_LIMIT, "{most} texts");
        // Still shared among the live ones.
        let (first, last) = (&live[0], &live[live.len() - 1]);
        assert!(same(&first[REVISION], &last[REVISION]));
        assert!(same(&first[ENDPOINTS], &last[ENDPOINTS]));
    }

    #[test]
    fn bounded_by_what_is_shared_when_everything_stays() {
        let mut interner = MetadataInterner::default();
        // 1,000 revisions of 5 instances each, all kept: 1,000 revisions shared, 5,000
        // timestamps of one instance each.
        let kept: Vec<InstanceMetadata> = (0..5_000)
            .map(|ts| instance(ts / 5, ts, &mut interner))
            .collect();
        // At most twice the shared texts (3 keys, the endpoints, 1,000 revisions).
        assert!(interner.len() <= 2 * 1_004, "{} texts", interner.len());
        let (a, b) = (&kept[4_995], &kept[4_999]);
        assert!(same(&a[REVISION], &b[REVISION]));
        // Nothing held, everything goes at the next pruning.
        drop(kept);
        let mut more = Vec::new();
        for ts in 0..3 * 1_004 {
            more.push(instance(0, 10_000 + ts, &mut interner));
            more.truncate(1);
        }
        assert!(interner.len() <= 2 * 1_004);
        interner.prune();
        assert!(interner.len() <= MIN_LIMIT, "{} texts", interner.len());
    }
}
