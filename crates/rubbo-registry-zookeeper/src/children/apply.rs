//! [`ChildCache::apply`]: children created and deleted, as a persistent watch names
//! them, without listing the others.
//!
//! The cost is one hash per named child plus one pass over the 24-byte entries
//! (480 KB for 20,000 children) to find the ones to take out, and the list to
//! deliver. No index is kept between calls: it would cost more memory per child than
//! the pass costs time.

use std::collections::{HashMap, HashSet};

use super::{ChildCache, ChildUpdate, Entry, FEW_EDITS, Id, IdState};

impl ChildCache {
    /// Applies a change named child by child: the children `deleted` are taken out,
    /// then the children `created` are added; returns the list to deliver, as
    /// [`update`](Self::update) does (same empty protection and `empty://`).
    ///
    /// Both are set operations: deleting a child not cached, or creating one already
    /// cached, changes nothing, so events that came before the last full list are
    /// harmless. A caller that saw a child created then deleted (or the other way) in
    /// one batch passes only its last event. A name that does not parse, or is not for
    /// the subscription, is kept (so its deletion is known) but not delivered, as in
    /// `update`.
    pub fn apply<S: AsRef<str>>(&mut self, created: &[S], deleted: &[S]) -> ChildUpdate {
        let gone: Vec<Id> = deleted
            .iter()
            .map(|n| self.hasher.hash(n.as_ref().as_bytes()))
            .collect();
        let mut new: Vec<(Id, &str)> = Vec::with_capacity(created.len());
        for name in created {
            let name = name.as_ref();
            let id = self.hasher.hash(name.as_bytes());
            if !new.iter().take(FEW_EDITS).any(|&(n, _)| n == id) {
                new.push((id, name));
            }
        }
        if new.len() > FEW_EDITS {
            // Duplicates beyond the first few are dropped here (the check above only
            // looks at the first few, to stay linear for a large batch).
            let mut seen: HashSet<Id, IdState> =
                HashSet::with_capacity_and_hasher(new.len(), IdState);
            new.retain(|&(id, _)| seen.insert(id));
        }
        let before = self.entries.len();
        if gone.len() + new.len() <= FEW_EDITS {
            for id in &gone {
                if let Some(k) = self.entries.iter().position(|e| e.id == *id) {
                    self.entries.remove(k);
                }
            }
            new.retain(|(id, _)| !self.entries.iter().any(|e| e.id == *id));
        } else {
            // One pass: take out the gone entries and mark the created ones that are
            // already cached.
            let gone: HashSet<Id, IdState> = gone.into_iter().collect();
            let mut fresh: HashMap<Id, bool, IdState> =
                new.iter().map(|&(id, _)| (id, true)).collect();
            self.entries.retain(|e| {
                if gone.contains(&e.id) {
                    return false;
                }
                if let Some(f) = fresh.get_mut(&e.id) {
                    *f = false;
                }
                true
            });
            new.retain(|(id, _)| fresh.get(id).copied().unwrap_or(false));
        }
        let removed = before - self.entries.len();
        let added = new.len();
        let need = self.entries.len() + added;
        if need > self.entries.capacity() {
            // A little room for the next few children, not a doubling: 20,000 entries
            // doubled would cost 24 bytes more per child.
            self.entries
                .reserve_exact(need - self.entries.len() + need / 64);
        } else if self.entries.capacity() > need + need / 8 + 64 {
            self.entries.shrink_to(need + need / 64);
        }
        for (id, name) in new {
            let url = self.parse(name);
            self.entries.push(Entry { id, url });
        }
        self.finish(added, removed)
    }
}

#[cfg(test)]
mod tests {
    use rubbo_common::Url;
    use rubbo_registry::is_empty_url;

    use super::super::tests::{host, hosts, name};
    use crate::ChildCache;

    fn cache() -> ChildCache {
        let sub = Url::parse("consumer://h/a.B?interface=a.B&category=providers").unwrap();
        ChildCache::new(sub, "providers")
    }

    fn sorted_hosts(ids: impl IntoIterator<Item = usize>) -> Vec<String> {
        let mut v: Vec<String> = ids.into_iter().map(host).collect();
        v.sort();
        v
    }

    fn sorted(urls: &[rubbo_common::Url]) -> Vec<String> {
        let mut v = hosts(urls);
        v.sort();
        v
    }

    const NONE: &[String] = &[];

    #[test]
    fn created_and_deleted_children_are_added_and_taken_out() {
        let mut c = cache();
        c.update((0..10).map(name).collect());
        let up = c.apply(&[name(10)], &[name(3)]);
        assert_eq!((up.added, up.removed, up.changed), (1, 1, true));
        assert_eq!(sorted(&up.urls), sorted_hosts((0..11).filter(|&i| i != 3)));
        assert_eq!(c.len(), 10);
        // The same result as a full list of the same children.
        let full = c.update((0..11).filter(|&i| i != 3).map(name).collect());
        assert!(!full.changed);
    }

    #[test]
    fn apply_is_idempotent() {
        let mut c = cache();
        c.update((0..5).map(name).collect());
        let first = c.apply(&[name(7)], &[name(1)]);
        assert!(first.changed);
        let again = c.apply(&[name(7)], &[name(1)]);
        assert_eq!((again.added, again.removed, again.changed), (0, 0, false));
        assert_eq!(sorted(&again.urls), sorted_hosts([0, 2, 3, 4, 7]));
    }

    #[test]
    fn removing_an_unknown_child_or_adding_a_known_one_changes_nothing() {
        let mut c = cache();
        c.update((0..5).map(name).collect());
        let up = c.apply(&[name(2)], &[name(99)]);
        assert_eq!((up.added, up.removed, up.changed), (0, 0, false));
        assert_eq!(sorted(&up.urls), sorted_hosts(0..5));
        assert_eq!(c.len(), 5);
    }

    #[test]
    fn duplicates_in_one_batch_count_once() {
        let mut c = cache();
        c.update(vec![name(0)]);
        let created: Vec<String> = [1, 1, 2, 1, 3, 4, 5, 6, 2, 6].map(name).to_vec();
        let up = c.apply(&created, NONE);
        assert_eq!((up.added, c.len()), (6, 7));
        let deleted = vec![name(1), name(1), name(2)];
        let up = c.apply(NONE, &deleted);
        assert_eq!((up.removed, c.len()), (2, 5));
    }

    #[test]
    fn a_name_one_byte_different_is_another_child() {
        let mut c = cache();
        let a = name(1);
        c.update(vec![a.clone()]);
        // Same URL text but one byte of a parameter value changed.
        let b = a.replacen("1700000000000", "1700000000001", 1);
        assert_ne!(a, b);
        let up = c.apply(std::slice::from_ref(&b), NONE);
        assert_eq!((up.added, c.len()), (1, 2));
        let up = c.apply(NONE, std::slice::from_ref(&a));
        assert_eq!((up.removed, c.len(), up.urls.len()), (1, 1, 1));
        let up = c.apply(NONE, std::slice::from_ref(&a));
        assert_eq!((up.removed, c.len()), (0, 1), "a is gone, b stays");
    }

    #[test]
    fn the_last_child_gone_delivers_empty_or_nothing_under_protection() {
        let mut c = cache();
        c.update(vec![name(1)]);
        let up = c.apply(NONE, &[name(1)]);
        assert_eq!(up.urls.len(), 1);
        assert!(is_empty_url(&up.urls[0]));
        assert!(up.changed);

        let sub = Url::parse("consumer://h/a.B?interface=a.B&category=providers").unwrap();
        let mut p = ChildCache::new(sub, "providers").with_empty_protection(true);
        p.update(vec![name(1)]);
        let up = p.apply(NONE, &[name(1)]);
        assert!(
            up.urls.is_empty(),
            "nothing to deliver under empty protection"
        );
        assert_eq!(up.removed, 1);
        let up = p.apply(&[name(2)], NONE);
        assert_eq!(hosts(&up.urls), vec![host(2)]);
    }

    #[test]
    fn garbage_names_are_kept_but_not_delivered() {
        let mut c = cache();
        c.update(vec![name(1)]);
        let garbage = vec!["not%a%url".to_owned(), "%2Fno-protocol".to_owned()];
        let up = c.apply(&garbage, NONE);
        assert_eq!((up.added, c.len()), (2, 3));
        assert_eq!(hosts(&up.urls), vec![host(1)]);
        let up = c.apply(NONE, &garbage);
        assert_eq!((up.removed, c.len()), (2, 1));
    }

    #[test]
    fn a_large_batch_matches_a_full_list() {
        let mut c = cache();
        c.update((0..2000).map(name).collect());
        let created: Vec<String> = (1990..2100).map(name).collect();
        let deleted: Vec<String> = (0..2000).step_by(10).map(name).collect();
        let up = c.apply(&created, &deleted);
        // 1990 is both deleted and created: taken out, then added again.
        assert_eq!((up.added, up.removed), (101, 200));
        let want: Vec<usize> = (0..2100).filter(|i| *i >= 1990 || i % 10 != 0).collect();
        assert_eq!(sorted(&up.urls), sorted_hosts(want.iter().copied()));
        let full = c.update(want.iter().map(|&i| name(i)).collect());
        assert!(!full.changed, "the same set as the full list");
        assert!(c.entries.capacity() <= c.len() + c.len() / 8 + 64);
    }

    #[test]
    fn a_child_deleted_and_created_in_one_call_is_there_after() {
        let mut c = cache();
        c.update(vec![name(1), name(2)]);
        let up = c.apply(&[name(1)], &[name(1)]);
        assert_eq!((up.added, up.removed), (1, 1));
        assert_eq!(sorted(&up.urls), sorted_hosts([1, 2]));
    }
}
