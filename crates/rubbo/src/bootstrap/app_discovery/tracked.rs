//! What one application-level subscription knows of the instances it follows, kept
//! per instance so that a change costs the changed instances only: the instances as
//! each backend lists them, the one that counts, the provider URLs it gave, and how
//! many instances carry each revision.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use rubbo_common::Url;
use rubbo_metadata::{EMPTY_REVISION, ServiceInstance};

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

/// An instance's place in a subscription's table: its id (`host:port`), read from the
/// (shared) instance held, so that the table keeps no id string of its own. After
/// [`Watcher::recompute`](super::consumer), the instance held is the one that counts.
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

/// No value, one, or several: the usual one inline, several (rare) boxed, so that a
/// pointer-sized `T` takes 16 bytes with no allocation of its own (a `Vec` takes 24
/// and allocates).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
// Boxed `Vec`, not a boxed slice: keeps `Few` two words when `T` is a pointer.
#[allow(clippy::box_collection)]
pub(crate) enum Few<T> {
    #[default]
    None,
    One(T),
    Many(Box<Vec<T>>),
}

impl<T> Few<T> {
    pub(crate) fn as_slice(&self) -> &[T] {
        match self {
            Few::None => &[],
            Few::One(t) => std::slice::from_ref(t),
            Few::Many(v) => v,
        }
    }

    pub(crate) fn from_vec(mut v: Vec<T>) -> Self {
        match v.len() {
            0 => Few::None,
            1 => v.pop().map_or(Few::None, Few::One),
            _ => Few::Many(Box::new(v)),
        }
    }

    pub(crate) fn into_vec(self) -> Vec<T> {
        match self {
            Few::None => Vec::new(),
            Few::One(t) => vec![t],
            Few::Many(v) => *v,
        }
    }

    /// Applies `f` to the values as a `Vec`, keeping the result compact.
    fn update(&mut self, f: impl FnOnce(&mut Vec<T>)) {
        let mut v = std::mem::take(self).into_vec();
        f(&mut v);
        *self = Few::from_vec(v);
    }
}

/// One instance (an application and an id) of a subscription. Kept small: one per
/// (instance, interface subscribed), so 10 per instance of an application of 10
/// interfaces; the usual case (one backend, one URL) is 48 bytes with no allocation of
/// its own.
#[derive(Debug, Default)]
pub(crate) struct Tracked {
    /// The instance as each backend lists it, by backend index, in backend order: the
    /// first one counts.
    sources: Few<(usize, Arc<ServiceInstance>)>,
    /// The instance the URLs and the revision count were made from.
    pub(crate) current: Option<Arc<ServiceInstance>>,
    /// The provider URLs announced for it.
    pub(crate) urls: Few<Url>,
}

impl Tracked {
    /// The instance that counts now.
    pub(crate) fn effective(&self) -> Option<&Arc<ServiceInstance>> {
        self.sources.as_slice().first().map(|(_, i)| i)
    }

    /// Backend `backend` lists `instance` (a new one, or a new version).
    pub(crate) fn set_source(&mut self, backend: usize, instance: Arc<ServiceInstance>) {
        match &mut self.sources {
            Few::None => self.sources = Few::One((backend, instance)),
            Few::One((b, i)) if *b == backend => *i = instance,
            _ => self
                .sources
                .update(|v| match v.binary_search_by_key(&backend, |(b, _)| *b) {
                    Ok(i) => v[i].1 = instance,
                    Err(i) => v.insert(i, (backend, instance)),
                }),
        }
    }

    /// Backend `backend` no longer lists it.
    pub(crate) fn remove_source(&mut self, backend: usize) {
        self.sources.update(|v| v.retain(|(b, _)| *b != backend));
    }
}

/// The instances of one application in a subscription.
#[derive(Debug, Default)]
pub(crate) struct AppInstances {
    pub(crate) by_id: HashMap<ById, Tracked>,
    /// How many instances (their current version) carry each usable revision.
    pub(crate) revisions: HashMap<String, usize>,
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

    /// The instances whose version that counts carries `revision`.
    pub(crate) fn carrying(&self, revision: &str) -> Vec<ById> {
        self.by_id
            .iter()
            .filter(|(_, t)| t.effective().and_then(|i| usable_revision(i)) == Some(revision))
            .map(|(id, _)| id.clone())
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
    fn a_tracked_instance_is_small_and_keeps_its_sources_in_backend_order() {
        assert!(std::mem::size_of::<Tracked>() <= 48);
        assert_eq!(std::mem::size_of::<Few<Url>>(), 16);
        let (a, b) = (inst("x", 1, "r1"), inst("x", 1, "r2"));
        let mut t = Tracked::default();
        t.set_source(1, b.clone());
        t.set_source(0, a.clone());
        assert!(Arc::ptr_eq(t.effective().unwrap(), &a));
        t.set_source(0, b.clone());
        assert!(Arc::ptr_eq(t.effective().unwrap(), &b));
        t.remove_source(0);
        t.remove_source(0);
        assert!(Arc::ptr_eq(t.effective().unwrap(), &b));
        assert!(matches!(t.sources, Few::One(_)));
        t.remove_source(1);
        assert!(t.effective().is_none());
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
