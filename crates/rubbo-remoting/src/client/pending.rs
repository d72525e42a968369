//! The pending-request map: request id -> waiting caller, sharded to keep locks short.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

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

type Shard = Mutex<HashMap<i64, Entry, BuildHasherDefault<IdHasher>>>;

#[derive(Debug)]
pub(crate) struct Pending {
    shards: Box<[Shard]>,
}

impl Pending {
    pub(crate) fn new() -> Self {
        Pending {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }

    fn shard(&self, id: i64) -> &Shard {
        &self.shards[(id as u64 as usize) % SHARDS]
    }

    pub(crate) fn insert(&self, id: i64, tx: oneshot::Sender<Reply>) {
        self.shard(id).lock().insert(id, Entry { tx, sent: false });
    }

    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }

    pub(crate) fn remove(&self, id: i64) -> Option<Entry> {
        self.shard(id).lock().remove(&id)
    }

    pub(crate) fn mark_sent(&self, id: i64) {
        if let Some(e) = self.shard(id).lock().get_mut(&id) {
            e.sent = true;
        }
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
            let drained: Vec<(i64, Entry)> = shard.lock().drain().collect();
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
