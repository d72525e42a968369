//! What one application-level subscription knows of the instances it follows, kept
//! per instance so that a change costs the changed instances only: the provider URLs
//! each instance gave (keyed by the version they were made from), and how many
//! instances carry each revision. The instances themselves, as each backend lists
//! them, are the watches' lists (shared by every subscription of the application):
//! the version that counts is looked up there ([`effective`]), not copied per
//! subscription.

use std::collections::{HashMap, HashSet};

use super::small_map::SmallMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use rubbo_common::Url;
use rubbo_metadata::{EMPTY_REVISION, InstanceList, ServiceInstance};

/// What changed between two lists of one application's instances.
#[derive(Debug, Default)]
pub(crate) struct InstanceChanges {
    /// Instances of the old list not in the new one (by id), or replaced.
    pub(crate) removed: Vec<Arc<ServiceInstance>>,
    /// Instances of the new list not in the old one, or changed.
    pub(crate) upserted: Vec<Arc<ServiceInstance>>,
}

/// What changed from `old` to `new`, both sorted by id (as every `InstanceList` is):
/// one walk comparing pointers, and ids where the pointers differ. An instance kept
/// under the same `Arc` costs a pointer comparison. A list out of order still gives
/// the right result when the removals are applied before the upserts (an instance may
/// then be reported removed and upserted).
pub(crate) fn changes(
    old: &[Arc<ServiceInstance>],
    new: &[Arc<ServiceInstance>],
) -> InstanceChanges {
    let mut out = InstanceChanges::default();
    let (mut o, mut n) = (0, 0);
    while o < old.len() && n < new.len() {
        let (a, b) = (&old[o], &new[n]);
        if Arc::ptr_eq(a, b) {
            o += 1;
            n += 1;
            continue;
        }
        match a.cmp_id(b) {
            std::cmp::Ordering::Less => {
                out.removed.push(a.clone());
                o += 1;
            }
            std::cmp::Ordering::Greater => {
                out.upserted.push(b.clone());
                n += 1;
            }
            std::cmp::Ordering::Equal => {
                if a.service_name != b.service_name {
                    out.removed.push(a.clone());
                    out.upserted.push(b.clone());
                } else if a != b {
                    out.upserted.push(b.clone());
                }
                o += 1;
                n += 1;
            }
        }
    }
    out.removed.extend(old[o..].iter().cloned());
    out.upserted.extend(new[n..].iter().cloned());
    out
}

/// The revision of `instance` to fetch, when it has a usable one.
pub(crate) fn usable_revision(instance: &ServiceInstance) -> Option<&str> {
    instance
        .revision()
        .filter(|r| !r.is_empty() && *r != EMPTY_REVISION)
}

/// The version of `at` (its application and id) that counts: the one the first backend
/// listing it lists, `lists` giving, per backend in backend order, each application's
/// list (sorted by id, as every [`InstanceList`] is). A binary search per backend.
pub(crate) fn effective<'a>(
    lists: impl IntoIterator<Item = Option<&'a InstanceList>>,
    at: &ServiceInstance,
) -> Option<&'a Arc<ServiceInstance>> {
    lists.into_iter().flatten().find_map(|list| {
        list.binary_search_by(|i| i.cmp_id(at))
            .ok()
            .map(|k| &list[k])
            .filter(|i| i.service_name == at.service_name)
    })
}

/// An instance's place in a subscription's table: its id (`host:port`), read from the
/// (shared) instance held, so that the table keeps no id string of its own. After
/// [`Watcher::recompute`](super::consumer), the instance held is the version that
/// counts, the one its URLs and its revision count were made from.
#[derive(Debug, Clone)]
pub(crate) struct ById(pub(crate) Arc<ServiceInstance>);

impl Hash for ById {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.host.hash(state);
        self.0.port.hash(state);
    }
}

impl PartialEq for ById {
    fn eq(&self, other: &Self) -> bool {
        self.0.port == other.0.port && self.0.host == other.0.host
    }
}

impl Eq for ById {}

/// The instances of one application in a subscription, each with the provider URLs it
/// gave: one table per (application, interface subscribed), so 10 entries per instance
/// of an application of 10 interfaces.
///
/// A vector of the instance and its URL (16 bytes an entry) and, in the same order, a
/// vector of their 4-byte fingerprints, ascending, to find them by; both grown by an
/// eighth: about 21 bytes per instance, where a hash table of 24-byte entries (the
/// instance, and none, one or several URLs) took 25 to 50 (at most 7/8 full, a power of
/// two buckets). An instance giving no URL or several (rare: an interface on two
/// protocols, or in two groups) has `None` there, its URLs in `several`. A changed
/// instance is set in place; a join or a leave moves the entries after it, as the
/// watches' lists already cost a walk of the application's instances per change.
#[derive(Debug, Default)]
pub(crate) struct UrlTable {
    /// The entries' fingerprints ([`fingerprint`]), ascending: a lookup reads this dense
    /// vector, not the instances (cold, one pointer each), except for a match.
    fps: Vec<u32>,
    /// In the order of `fps`.
    entries: Vec<(ById, Option<Url>)>,
    several: HashMap<ById, Box<[Url]>>,
}

/// A 32-bit FNV-1a of an instance's host and port: where it goes in a [`UrlTable`].
fn fingerprint(id: &ServiceInstance) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in id.host.bytes().chain(id.port.to_le_bytes()) {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    h
}

impl UrlTable {
    /// Where `id`'s host and port are, or would go: a binary search of the fingerprints,
    /// then the instances of an equal fingerprint compared. A leave looks the instance up
    /// in the table of every other application of the subscription, where it is
    /// usually not: that costs no read of their (cold) instances.
    fn find(&self, id: &ServiceInstance) -> Result<usize, usize> {
        let fp = fingerprint(id);
        let start = self.fps.partition_point(|&f| f < fp);
        let mut k = start;
        while k < self.fps.len() && self.fps[k] == fp {
            let e = &self.entries[k].0.0;
            if e.port == id.port && e.host == id.host {
                return Ok(k);
            }
            k += 1;
        }
        Err(start)
    }

    /// The URLs `id` gave, if it is in the table.
    pub(crate) fn get(&self, id: &ById) -> Option<&[Url]> {
        let k = self.find(&id.0).ok()?;
        Some(self.urls_at(k))
    }

    fn urls_at(&self, k: usize) -> &[Url] {
        match &self.entries[k] {
            (_, Some(u)) => std::slice::from_ref(u),
            (id, None) => self.several.get(id).map_or(&[], |v| &v[..]),
        }
    }

    /// The version of `id` held, and its URLs.
    pub(crate) fn held(&self, id: &ById) -> Option<(Arc<ServiceInstance>, Vec<Url>)> {
        let k = self.find(&id.0).ok()?;
        Some((self.entries[k].0.0.clone(), self.urls_at(k).to_vec()))
    }

    /// Sets what the instance of `id`'s id gives: `Some((version held, its URLs))` puts
    /// it in the table (in place when it is there), `None` takes it out. A change of an
    /// instance in the table moves nothing; a join or a leave moves the entries after
    /// it.
    pub(crate) fn set(&mut self, id: &ServiceInstance, to: Option<(ById, Vec<Url>)>) {
        let at = self.find(id);
        if let Ok(k) = at {
            let was = self.entries[k].0.clone();
            self.several.remove(&was);
        }
        match (at, to) {
            (Ok(k), None) => {
                self.entries.remove(k);
                self.fps.remove(k);
            }
            (Err(_), None) => {}
            (at, Some((key, mut urls))) => {
                let one = if urls.len() == 1 { urls.pop() } else { None };
                if !urls.is_empty() {
                    self.several.insert(key.clone(), urls.into_boxed_slice());
                }
                match at {
                    Ok(k) => self.entries[k] = (key, one),
                    Err(k) => {
                        if self.entries.len() == self.entries.capacity() {
                            let more = (self.entries.len() / 8).max(4);
                            self.entries.reserve_exact(more);
                            self.fps.reserve_exact(more);
                        }
                        self.entries.insert(k, (key, one));
                        self.fps.insert(k, fingerprint(id));
                    }
                }
            }
        }
    }

    /// The instances held (the version of each its URLs came from).
    pub(crate) fn keys(&self) -> impl Iterator<Item = &ById> {
        self.entries.iter().map(|(k, _)| k)
    }

    /// Every URL of the table.
    pub(crate) fn urls(&self) -> impl Iterator<Item = &Url> {
        (0..self.entries.len()).flat_map(|k| self.urls_at(k))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Gives back what more than an eighth of the table is free, when it shrank.
    pub(crate) fn trim(&mut self) {
        let len = self.entries.len();
        if self.entries.capacity() - len > len / 8 + 4 {
            self.entries.shrink_to(len + len / 16);
            self.fps.shrink_to(len + len / 16);
        }
    }
}

/// The instances of one application in a subscription.
#[derive(Debug, Default)]
pub(crate) struct AppInstances {
    /// Every instance listed, at the version that counts when last recomputed, with
    /// the provider URLs it gave.
    pub(crate) by_id: UrlTable,
    /// How many instances (their current version) carry each usable revision.
    pub(crate) revisions: SmallMap<String, usize>,
}

impl AppInstances {
    /// Counts `new` instead of `old` for their revisions.
    pub(crate) fn recount(&mut self, old: Option<&ServiceInstance>, new: Option<&ServiceInstance>) {
        let (old, new) = (old.and_then(usable_revision), new.and_then(usable_revision));
        if old == new {
            return;
        }
        if let Some(r) = old {
            if let Some(n) = self.revisions.get_mut(r) {
                *n -= 1;
                if *n == 0 {
                    self.revisions.remove(r);
                }
            }
        }
        if let Some(r) = new {
            match self.revisions.get_mut(r) {
                Some(n) => *n += 1,
                None => {
                    self.revisions.insert(r.to_owned(), 1);
                }
            }
        }
    }

    /// The instances whose version last recomputed carries `revision`.
    pub(crate) fn carrying(&self, revision: &str) -> Vec<ById> {
        self.by_id
            .keys()
            .filter(|id| usable_revision(&id.0) == Some(revision))
            .cloned()
            .collect()
    }
}

/// What an instance's URLs became: the ones it no longer gives and the new ones.
pub(crate) fn url_changes(old: &[Url], new: &[Url], removed: &mut Vec<Url>, added: &mut Vec<Url>) {
    if old == new {
        return;
    }
    if old.len() + new.len() > 16 {
        let was: HashSet<&Url> = old.iter().collect();
        let now: HashSet<&Url> = new.iter().collect();
        removed.extend(old.iter().filter(|u| !now.contains(u)).cloned());
        added.extend(new.iter().filter(|u| !was.contains(u)).cloned());
    } else {
        removed.extend(old.iter().filter(|u| !new.contains(u)).cloned());
        added.extend(new.iter().filter(|u| !old.contains(u)).cloned());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rubbo_common::keys;

    fn inst(app: &str, port: u16, rev: &str) -> Arc<ServiceInstance> {
        let mut i = ServiceInstance::new(app, "10.0.0.1", port);
        i.metadata.insert(
            keys::EXPORTED_SERVICES_REVISION_PROPERTY_NAME.into(),
            rev.into(),
        );
        Arc::new(i)
    }

    fn ids(list: &[Arc<ServiceInstance>]) -> Vec<String> {
        list.iter().map(|i| i.id()).collect()
    }

    fn sorted(mut v: Vec<Arc<ServiceInstance>>) -> Vec<Arc<ServiceInstance>> {
        v.sort_by(|a, b| a.cmp_id(b));
        v
    }

    #[test]
    fn changes_find_joins_leaves_and_new_versions() {
        let (a, b, c) = (inst("x", 1, "r1"), inst("x", 2, "r1"), inst("x", 3, "r1"));
        let old = sorted(vec![a.clone(), b.clone(), c.clone()]);
        // Unchanged: nothing.
        let same = changes(&old, &old);
        assert!(same.removed.is_empty() && same.upserted.is_empty());
        // b leaves, d joins, c gets a new revision (a new Arc, equal id).
        let d = inst("x", 4, "r1");
        let c2 = inst("x", 3, "r2");
        let new = sorted(vec![a.clone(), c2.clone(), d.clone()]);
        let ch = changes(&old, &new);
        assert_eq!(ids(&ch.removed), ["10.0.0.1:2"]);
        assert_eq!(ids(&ch.upserted), ["10.0.0.1:3", "10.0.0.1:4"]);
        assert!(Arc::ptr_eq(&ch.upserted[0], &c2));
        // An equal instance under another Arc is no change.
        let a_copy = Arc::new(ServiceInstance::clone(&a));
        let ch = changes(std::slice::from_ref(&a), &[a_copy]);
        assert!(ch.removed.is_empty() && ch.upserted.is_empty());
        // From and to nothing.
        assert_eq!(changes(&[], &new).upserted.len(), 3);
        assert_eq!(changes(&new, &[]).removed.len(), 3);
    }

    #[test]
    fn lists_out_of_order_still_converge_when_removals_go_first() {
        let (a, b, c) = (inst("x", 1, "r"), inst("x", 2, "r"), inst("x", 3, "r"));
        let old = vec![c.clone(), a.clone()];
        let new = vec![b.clone(), a.clone(), c.clone()];
        let ch = changes(&old, &new);
        let mut set: Vec<String> = ids(&old);
        set.retain(|id| !ch.removed.iter().any(|r| r.id() == *id));
        for u in &ch.upserted {
            if !set.contains(&u.id()) {
                set.push(u.id());
            }
        }
        set.sort();
        assert_eq!(set, ids(&sorted(new)));
    }

    #[test]
    fn revisions_are_counted_by_the_version_that_counts() {
        let mut app = AppInstances::default();
        let (a, a2) = (inst("x", 1, "r1"), inst("x", 1, "r2"));
        app.recount(None, Some(&a));
        app.recount(None, Some(&inst("x", 2, "r1")));
        assert_eq!(app.revisions["r1"], 2);
        app.recount(Some(&a), Some(&a2));
        assert_eq!(app.revisions["r1"], 1);
        assert_eq!(app.revisions["r2"], 1);
        app.recount(Some(&a2), None);
        assert!(!app.revisions.contains_key("r2"));
        app.recount(None, Some(&inst("x", 3, EMPTY_REVISION)));
        assert_eq!(
            app.revisions.len(),
            1,
            "an unusable revision is not counted"
        );
    }

    #[test]
    fn the_version_that_counts_is_the_first_backends_and_an_entry_is_small() {
        assert_eq!(std::mem::size_of::<(ById, Option<Url>)>(), 16);
        let (a, b) = (inst("x", 1, "r1"), inst("x", 1, "r2"));
        let list = |v: Vec<Arc<ServiceInstance>>| -> InstanceList { Arc::new(sorted(v)) };
        let first = list(vec![inst("x", 0, "r"), a.clone(), inst("x", 2, "r")]);
        let second = list(vec![b.clone(), inst("x", 3, "r")]);
        let found =
            |lists: [Option<&InstanceList>; 2], at: &ServiceInstance| effective(lists, at).cloned();
        assert!(Arc::ptr_eq(
            &found([Some(&first), Some(&second)], &b).unwrap(),
            &a
        ));
        assert!(Arc::ptr_eq(&found([None, Some(&second)], &a).unwrap(), &b));
        assert!(Arc::ptr_eq(
            &found([Some(&second), Some(&first)], &a).unwrap(),
            &b
        ));
        assert!(found([Some(&first), None], &inst("x", 3, "r")).is_none());
        assert!(
            found([Some(&first), Some(&second)], &inst("y", 1, "r1")).is_none(),
            "another application's instance at the same address is another instance"
        );
    }

    #[test]
    fn the_url_table_keeps_none_one_or_several_urls_by_id() {
        let u = |p: u16| Url::parse(&format!("dubbo://10.0.0.1:{p}/I")).unwrap();
        let mut t = UrlTable::default();
        for port in [30, 10, 20, 40] {
            let urls = match port {
                10 => vec![],
                20 => vec![u(20), u(21)],
                _ => vec![u(port)],
            };
            let i = inst("x", port, "r");
            t.set(&i, Some((ById(i.clone()), urls)));
        }
        let mut ports: Vec<u16> = t.keys().map(|k| k.0.port).collect();
        ports.sort_unstable();
        assert_eq!(ports, [10, 20, 30, 40]);
        assert!(t.fps.is_sorted());
        assert_eq!(t.get(&ById(inst("x", 10, "r"))), Some(&[][..]));
        assert_eq!(t.get(&ById(inst("x", 20, "r"))), Some(&[u(20), u(21)][..]));
        assert_eq!(t.get(&ById(inst("x", 30, "other"))), Some(&[u(30)][..]));
        assert_eq!(t.get(&ById(inst("x", 50, "r"))), None);
        assert_eq!(t.urls().count(), 4);
        let (held, urls) = t.held(&ById(inst("x", 20, "r2"))).unwrap();
        assert_eq!(
            (usable_revision(&held), urls),
            (Some("r"), vec![u(20), u(21)])
        );
        // A new version in place, giving one URL: out of `several`.
        let new = inst("x", 20, "r2");
        t.set(&new, Some((ById(new.clone()), vec![u(22)])));
        assert!(t.several.is_empty());
        assert_eq!(t.get(&ById(inst("x", 20, "r"))), Some(&[u(22)][..]));
        assert!(Arc::ptr_eq(
            &t.held(&ById(inst("x", 20, "r"))).unwrap().0,
            &new
        ));
        t.set(&new, None);
        assert_eq!(t.get(&ById(new)), None);
        for port in 100..1100 {
            let i = inst("x", port, "r");
            t.set(&i, Some((ById(i.clone()), vec![u(port)])));
        }
        assert!(t.entries.capacity() <= t.entries.len() + t.entries.len() / 8 + 4);
        for port in 100..1100 {
            t.set(&inst("x", port, "r"), None);
        }
        t.trim();
        assert!(
            t.entries.capacity() <= 3 + 4 + 1,
            "{}",
            t.entries.capacity()
        );
        assert!(!t.is_empty());
    }

    #[test]
    fn url_changes_are_the_difference() {
        let u = |p: u16| Url::parse(&format!("dubbo://10.0.0.1:{p}/I")).unwrap();
        let (mut removed, mut added) = (Vec::new(), Vec::new());
        url_changes(&[u(1), u(2)], &[u(2), u(3)], &mut removed, &mut added);
        assert_eq!((removed, added), (vec![u(1)], vec![u(3)]));
        let old: Vec<Url> = (1..=10).map(u).collect();
        let new: Vec<Url> = (5..=14).map(u).collect();
        let (mut removed, mut added) = (Vec::new(), Vec::new());
        url_changes(&old, &new, &mut removed, &mut added);
        assert_eq!(removed, (1..=4).map(u).collect::<Vec<_>>());
        assert_eq!(added, (11..=14).map(u).collect::<Vec<_>>());
    }
}
