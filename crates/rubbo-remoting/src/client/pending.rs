//! The pending-request map: request id -> waiting caller, sharded to keep locks short.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::{RemotingError, Response};

const SHARDS: usize = 32;

pub(crate) type Reply = Result<Response, RemotingError>;

#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) tx: oneshot::Sender<Reply>,
    /// The writer wrote the request to the socket.
    pub(crate) sent: bool,
}

/// Multiplicative hash of an id (ids are sequential).
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_i64(&mut self, v: i64) {
        self.0 = (v as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

fn shard_of(id: i64) -> usize {
    (id as u64 as usize) % SHARDS
}

type Shard = Mutex<HashMap<i64, Entry, BuildHasherDefault<IdHasher>>>;

#[derive(Debug)]
pub(crate) struct Pending {
    shards: Box<[Shard]>,
    /// Entries in all shards, kept beside them so [`len`](Pending::len) locks nothing
    /// (the writer reads it once per batch).
    len: AtomicUsize,
}

impl Pending {
    pub(crate) fn new() -> Self {
        Pending {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            len: AtomicUsize::new(0),
        }
    }

    fn shard(&self, id: i64) -> &Shard {
        &self.shards[shard_of(id)]
    }

    pub(crate) fn insert(&self, id: i64, tx: oneshot::Sender<Reply>) {
        // The count changes under the shard's lock, so it never goes below zero.
        let mut shard = self.shard(id).lock();
        if shard.insert(id, Entry { tx, sent: false }).is_none() {
            self.len.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The number of pending calls (a snapshot; exact when nothing changes meanwhile).
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    pub(crate) fn remove(&self, id: i64) -> Option<Entry> {
        let mut shard = self.shard(id).lock();
        let removed = shard.remove(&id);
        if removed.is_some() {
            self.len.fetch_sub(1, Ordering::Relaxed);
        }
        removed
    }

    /// Marks the calls of `ids` as written to the socket, locking each shard once.
    /// Leaves `ids` empty (its capacity is for the next batch).
    pub(crate) fn mark_sent(&self, ids: &mut Vec<i64>) {
        ids.sort_unstable_by_key(|id| shard_of(*id));
        for run in ids.chunk_by(|a, b| shard_of(*a) == shard_of(*b)) {
            let mut shard = self.shards[shard_of(run[0])].lock();
            for id in run {
                if let Some(e) = shard.get_mut(id) {
                    e.sent = true;
                }
            }
        }
        ids.clear();
    }

    /// Completes the call waiting for `resp.id`; `false` when none waits (late reply).
    pub(crate) fn complete(&self, resp: Response) -> bool {
        match self.remove(resp.id) {
            Some(e) => {
                let _ = e.tx.send(Ok(resp));
                true
            }
            None => false,
        }
    }

    /// Fails every pending call with the error `err(id)` builds.
    pub(crate) fn fail_all(&self, err: impl Fn(i64) -> RemotingError) -> usize {
        let mut n = 0;
        for shard in self.shards.iter() {
            let drained: Vec<(i64, Entry)> = {
                let mut shard = shard.lock();
                self.len.fetch_sub(shard.len(), Ordering::Relaxed);
                shard.drain().collect()
            };
            n += drained.len();
            for (id, e) in drained {
                let _ = e.tx.send(Err(err(id)));
            }
        }
        n
    }
}

impl std::fmt::Debug for IdHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IdHasher")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn len_follows_insert_remove_complete_and_fail_all() {
        let p = Pending::new();
        let mut rxs = Vec::new();
        for id in 0..100 {
            let (tx, rx) = oneshot::channel();
            p.insert(id, tx);
            rxs.push(rx);
        }
        assert_eq!(p.len(), 100);
        let (tx, _rx) = oneshot::channel();
        p.insert(5, tx);
        assert_eq!(p.len(), 100, "replacing an id does not count twice");
        let mut ids = vec![9, 41, 10, 73, 9];
        p.mark_sent(&mut ids);
        assert!(ids.is_empty());
        for id in [9, 41, 10, 73] {
            let (tx, rx) = oneshot::channel();
            let old = p.remove(id).expect("pending");
            assert!(old.sent, "call {id} marked sent");
            p.insert(id, tx);
            rxs.push(rx);
        }
        assert!(
            !p.remove(11).expect("pending").sent,
            "an unwritten call is not sent"
        );
        let (tx, rx) = oneshot::channel();
        p.insert(11, tx);
        rxs.push(rx);
        assert!(p.remove(7).is_some());
        assert!(p.remove(7).is_none());
        assert_eq!(p.len(), 99);
        assert!(p.complete(Response::new(8, 2, crate::Status::OK, bytes::Bytes::new())));
        assert_eq!(p.len(), 98);
        assert_eq!(
            p.fail_all(|_| RemotingError::Closed { addr: "x".into() }),
            98
        );
        assert_eq!(p.len(), 0);
    }
}
