//! A per-thread cache of class definitions, keyed by their exact bytes.
//!
//! Every Hessian stream (every Dubbo body) repeats the class definitions of
//! the objects it carries: a few hundred bytes of names for a typical POJO
//! graph. Validating and storing those names again for each stream costs more
//! than decoding the values. A definition seen before is found here by its
//! bytes and reused, so a repeated one costs a length scan, a hash and one
//! comparison. Equal bytes give an equal definition, so a hit cannot change
//! what is decoded; only definitions whose names are all ASCII are cached
//! (their byte layout follows from the string lengths alone).
//!
//! A decoder takes one snapshot of the table (one reference count for the
//! whole stream, not one per definition) and adds the definitions it had to
//! read in full when it is dropped or reset. The table is bounded: at most
//! [`MAX_ENTRIES`] definitions of at most [`MAX_DEF_BYTES`] bytes each; when
//! full it keeps what it has, and starts over after `16 * MAX_ENTRIES` more
//! definitions were turned away.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// A class name and its field names, shared.
pub(crate) type SharedClass = (Arc<str>, Arc<[Arc<str>]>);

/// The most definitions kept per thread.
pub(crate) const MAX_ENTRIES: usize = 256;
/// The longest definition (in bytes, after the `C` tag) that is cached.
pub(crate) const MAX_DEF_BYTES: usize = 2048;

/// The cached definitions: bytes to slot, and the slots.
#[derive(Debug, Clone, Default)]
pub(crate) struct Table {
    slots: HashMap<Box<[u8]>, u32, BuildHasherDefault<FastHash>>,
    classes: Vec<SharedClass>,
}

impl Table {
    /// The slot of the definition with exactly these bytes.
    #[inline]
    pub(crate) fn find(&self, key: &[u8]) -> Option<u32> {
        if self.classes.is_empty() {
            return None;
        }
        self.slots.get(key).copied()
    }

    /// The definition in `slot`.
    #[inline]
    pub(crate) fn class(&self, slot: u32) -> Option<&SharedClass> {
        self.classes.get(slot as usize)
    }

    /// The number of cached definitions.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.classes.len()
    }
}

/// A thread's cache.
#[derive(Debug)]
struct State {
    table: Option<Arc<Table>>,
    /// Definitions not cached because the table was full.
    turned_away: usize,
}

thread_local! {
    static CACHE: RefCell<State> = const {
        RefCell::new(State {
            table: None,
            turned_away: 0,
        })
    };
}

/// This thread's table as it is now (`None` before anything was cached).
pub(crate) fn snapshot() -> Option<Arc<Table>> {
    CACHE
        .try_with(|c| c.try_borrow().ok()?.table.clone())
        .ok()
        .flatten()
}

/// Caches each `(definition bytes, class)` (their names are all ASCII).
pub(crate) fn insert(new: impl IntoIterator<Item = (Box<[u8]>, SharedClass)>) {
    let _ = CACHE.try_with(|c| {
        let Ok(mut state) = c.try_borrow_mut() else {
            return;
        };
        let State { table, turned_away } = &mut *state;
        let arc = table.get_or_insert_with(Arc::default);
        for (key, class) in new {
            if key.len() > MAX_DEF_BYTES {
                continue;
            }
            if arc.classes.len() >= MAX_ENTRIES {
                // Full: keep what is there (a working set a little larger
                // than the table must not evict everything in turn), but
                // start over after many misses (the working set changed).
                if *turned_away < MAX_ENTRIES * 16 {
                    *turned_away += 1;
                    continue;
                }
                *turned_away = 0;
                *arc = Arc::default();
            }
            // copies the table only if another decoder still holds it
            let t = Arc::make_mut(arc);
            if t.slots.contains_key(&key) {
                continue;
            }
            let slot = u32::try_from(t.classes.len()).unwrap_or(u32::MAX);
            t.classes.push(class);
            t.slots.insert(key, slot);
        }
    });
}

/// The end of the class definition starting at `start` (just after `C`),
/// reading it as all-ASCII strings and a one- or two-byte int; `None`
/// when it has another form or is longer than [`MAX_DEF_BYTES`].
///
/// Nothing is validated: the span is only used to look up bytes that were
/// validated when they were cached (if they match, the layout read here is
/// the real one).
#[inline]
pub(crate) fn span(input: &[u8], start: usize) -> Option<usize> {
    let limit = input.len().min(start.saturating_add(MAX_DEF_BYTES));
    let string_end = |p: usize| -> Option<usize> {
        let tag = *input.get(p)?;
        let end = match tag {
            0x00..=0x1f => p + 1 + usize::from(tag),
            0x30..=0x33 => {
                p + 2 + ((usize::from(tag - 0x30) << 8) | usize::from(*input.get(p + 1)?))
            }
            _ => return None,
        };
        (end <= limit).then_some(end)
    };
    let mut p = string_end(start)?;
    let tag = *input.get(p)?;
    let n = match tag {
        0x90..=0xbf => {
            p += 1;
            usize::from(tag - 0x90)
        }
        0xc8..=0xcf => {
            let n = (usize::from(tag - 0xc8) << 8) | usize::from(*input.get(p + 1)?);
            p += 2;
            n
        }
        _ => return None,
    };
    for _ in 0..n {
        p = string_end(p)?;
    }
    Some(p)
}

/// FxHash-style: a multiply per 8 bytes (keys are bounded and compared in
/// full, so a weak hash only costs time, never correctness).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FastHash(u64);

const K: u64 = 0x517c_c1b7_2722_0a95;

impl Hasher for FastHash {
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.0 = (self.0.rotate_left(5) ^ n as u64).wrapping_mul(K);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_reads_short_definitions() {
        // "A", 2 fields: "x", "yz"
        let def = [0x01, b'A', 0x92, 0x01, b'x', 0x02, b'y', b'z', 0x91];
        assert_eq!(span(&def, 0), Some(8));
        assert_eq!(span(&def[..7], 0), None);
        // a long string form for the name
        let def = [0x30, 0x01, b'B', 0x90];
        assert_eq!(span(&def, 0), Some(4));
    }

    #[test]
    fn bounded_and_copied_only_when_shared() {
        let class = || -> SharedClass { (Arc::from("c"), Arc::from(Vec::new())) };
        for i in 0..MAX_ENTRIES + 10 {
            insert([(format!("{i}").into_bytes().into(), class())]);
        }
        let t = snapshot().expect("table");
        assert_eq!(t.len(), MAX_ENTRIES);
        assert!(t.find(b"0").is_some(), "a full table keeps what it has");
        assert!(t.find(format!("{MAX_ENTRIES}").as_bytes()).is_none());
        // ... until many more were turned away
        for i in 0..MAX_ENTRIES * 16 {
            insert([(format!("x{i}").into_bytes().into(), class())]);
        }
        let now = snapshot().expect("table");
        assert!(now.len() < MAX_ENTRIES, "started over");
        assert_eq!(t.len(), MAX_ENTRIES, "a snapshot does not change");
        insert([(b"new".to_vec().into(), class())]);
        assert!(snapshot().expect("table").find(b"new").is_some());
        let long = vec![b'a'; MAX_DEF_BYTES + 1].into_boxed_slice();
        insert([(long.clone(), class())]);
        assert!(snapshot().expect("table").find(&long).is_none());
    }
}
