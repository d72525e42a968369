//! The pending-request map: request id -> waiting caller, sharded to keep locks short,
//! and the calls' timeouts.
//!
//! A call does not arm a timer of its own: its entry carries its deadline, and one
//! sweeper per connection ([`Pending::run_timeouts`]) sleeps until the earliest
//! deadline, fails the calls whose deadline passed and sleeps again. Per call that is
//! one atomic load (a `fetch_min` when its deadline is the earliest) instead of a
//! timer-wheel entry registered and cleared under the timer's locks (Java's
//! `DefaultFuture` likewise shares one wheel timer).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rubbo_common::ceil_ms;
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::{RemotingError, Response};

const SHARDS: usize = 32;

pub(crate) type Reply = Result<Response, RemotingError>;

#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) tx: oneshot::Sender<Reply>,
    /// The writer wrote the request to the socket.
    pub(crate) sent: bool,
    /// When the call times out, in ms since [`Pending::epoch`].
    deadline: u64,
    /// The call's timeout, for its error.
    timeout: Duration,
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

/// `earliest` when nothing is pending.
const NO_DEADLINE: u64 = u64::MAX;

/// `d` in whole milliseconds, rounded up (a call never times out early).
fn shard_of(id: i64) -> usize {
    (id as u64 as usize) % SHARDS
}

type Map = HashMap<i64, Entry, BuildHasherDefault<IdHasher>>;

/// One shard: its own cache lines (consecutive ids go to neighbouring shards, often
/// from different threads), and its entry count beside its lock, so counting costs
/// no write to a line every call shares.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard {
    map: Mutex<Map>,
    /// `map.len()`, written under the lock, read without it.
    len: AtomicUsize,
}

impl Shard {
    fn lock(&self) -> ShardGuard<'_> {
        ShardGuard {
            map: self.map.lock(),
            len: &self.len,
        }
    }
}

/// A locked shard; publishes the entry count when unlocked.
struct ShardGuard<'a> {
    map: parking_lot::MutexGuard<'a, Map>,
    len: &'a AtomicUsize,
}

impl std::ops::Deref for ShardGuard<'_> {
    type Target = Map;
    fn deref(&self) -> &Map {
        &self.map
    }
}

impl std::ops::DerefMut for ShardGuard<'_> {
    fn deref_mut(&mut self) -> &mut Map {
        &mut self.map
    }
}

impl Drop for ShardGuard<'_> {
    fn drop(&mut self) {
        self.len.store(self.map.len(), Ordering::Relaxed);
    }
}

#[derive(Debug)]
pub(crate) struct Pending {
    shards: Box<[Shard]>,
    /// No entry's deadline is earlier than this (ms since `epoch`; `u64::MAX`: none
    /// pending). May be earlier than every entry's: a completed call leaves it.
    earliest: AtomicU64,
    /// Wakes the sweeper when a deadline earlier than `earliest` arrives.
    wake: Notify,
    epoch: Instant,
    /// The bound on pending calls ([`usize::MAX`]: none).
    max: usize,
    /// A call sums the shards' counts only when its shard holds this many or more.
    check_from: usize,
}

impl Pending {
    /// A map with no bound on pending calls.
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Self::bounded(0)
    }

    /// A map that refuses calls once `max` are pending (0: no bound); see
    /// [`insert`](Pending::insert) for how exact the bound is.
    pub(crate) fn bounded(max: usize) -> Self {
        let max = if max == 0 { usize::MAX } else { max };
        Pending {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            earliest: AtomicU64::new(NO_DEADLINE),
            wake: Notify::new(),
            epoch: Instant::now(),
            max,
            check_from: max / SHARDS,
        }
    }

    fn shard(&self, id: i64) -> &Shard {
        &self.shards[shard_of(id)]
    }

    /// Registers call `id`; [`run_timeouts`](Pending::run_timeouts) fails it with
    /// [`RemotingError::Timeout`] once `timeout` has passed (or at `deadline`, when
    /// the caller has one already: no clock read then), unless it completed.
    ///
    /// Refuses the call, registering nothing, when the bound is reached: `Err` holds
    /// the number of calls pending then.
    ///
    /// The cost of the bound: a call reads its own shard's count (a line it is about
    /// to lock anyway); only when that shard holds `max / 32` calls or more does it
    /// sum the 32 counts (32 relaxed loads, no write). Below that nothing is shared
    /// and nothing is written, so a connection far from its bound pays one load.
    /// With ids spread over the shards (sequential ids are) the check starts when
    /// about `max - 32` calls are pending and the bound is exact, up to calls racing
    /// on other threads. A call to a shard under `max / 32` is not checked, so with
    /// shards very unevenly filled up to `max + 32 * (max / 32)` (at most `2 * max`)
    /// calls can be pending; a bound under 32 is checked on every call.
    pub(crate) fn insert(
        &self,
        id: i64,
        tx: oneshot::Sender<Reply>,
        timeout: Duration,
        deadline: Option<Instant>,
    ) -> Result<(), usize> {
        let shard = self.shard(id);
        if shard.len.load(Ordering::Relaxed) >= self.check_from {
            let pending = self.len();
            if pending >= self.max {
                return Err(pending);
            }
        }
        let deadline = match deadline {
            Some(at) => ceil_ms(at.saturating_duration_since(self.epoch)),
            None => self.ms_at(Instant::now()).saturating_add(ceil_ms(timeout)),
        };
        let deadline = deadline.min(NO_DEADLINE - 1);
        let entry = Entry {
            tx,
            sent: false,
            deadline,
            timeout,
        };
        shard.lock().insert(id, entry);
        // Calls usually share one timeout, so a new deadline is rarely the earliest:
        // then this reads a line no call writes, and the sweeper stays asleep.
        if deadline < self.earliest.load(Ordering::Acquire)
            && deadline < self.earliest.fetch_min(deadline, Ordering::AcqRel)
        {
            self.wake.notify_one();
        }
        Ok(())
    }

    fn ms_at(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_millis()).unwrap_or(u64::MAX)
    }

    /// Fails the calls whose deadline passed until `stop` fires. `addr` names the
    /// provider in the errors.
    pub(crate) async fn run_timeouts(&self, addr: &str, stop: &CancellationToken) {
        loop {
            let earliest = self.earliest.load(Ordering::Acquire);
            let woken = self.wake.notified();
            if earliest == NO_DEADLINE {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = woken => continue,
                }
            }
            let at = self.epoch + Duration::from_millis(earliest);
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = woken => continue,
                _ = tokio::time::sleep_until(at) => {}
            }
            self.expire(self.ms_at(Instant::now()), addr);
        }
    }

    /// Fails every call whose deadline is `now` (ms since `epoch`) or earlier.
    fn expire(&self, now: u64, addr: &str) {
        // Reset first: a call registered meanwhile lowers it again itself.
        self.earliest.store(NO_DEADLINE, Ordering::Release);
        let mut next = NO_DEADLINE;
        let mut expired: Vec<(i64, Entry)> = Vec::new();
        let mut due: Vec<i64> = Vec::new();
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            due.clear();
            due.extend(
                shard
                    .iter()
                    .filter(|(_, e)| e.deadline <= now)
                    .map(|(id, _)| *id),
            );
            expired.extend(due.iter().filter_map(|id| Some((*id, shard.remove(id)?))));
            if let Some(min) = shard.values().map(|e| e.deadline).min() {
                next = next.min(min);
            }
        }
        self.earliest.fetch_min(next, Ordering::AcqRel);
        for (id, e) in expired {
            debug!(id, sent = e.sent, "request timed out");
            let _ = e.tx.send(Err(RemotingError::Timeout {
                addr: addr.to_owned(),
                id,
                timeout: e.timeout,
                sent: e.sent,
            }));
        }
    }

    /// The number of pending calls (a snapshot; exact when nothing changes meanwhile).
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.len.load(Ordering::Relaxed))
            .sum()
    }

    pub(crate) fn remove(&self, id: i64) -> Option<Entry> {
        self.shard(id).lock().remove(&id)
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
            let drained: Vec<(i64, Entry)> = { shard.lock().drain().collect() };
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
            p.insert(id, tx, Duration::from_secs(60), None)
                .expect("unbounded");
            rxs.push(rx);
        }
        assert_eq!(p.len(), 100);
        let (tx, _rx) = oneshot::channel();
        p.insert(5, tx, Duration::from_secs(60), None)
            .expect("unbounded");
        assert_eq!(p.len(), 100, "replacing an id does not count twice");
        let mut ids = vec![9, 41, 10, 73, 9];
        p.mark_sent(&mut ids);
        assert!(ids.is_empty());
        for id in [9, 41, 10, 73] {
            let (tx, rx) = oneshot::channel();
            let old = p.remove(id).expect("pending");
            assert!(old.sent, "call {id} marked sent");
            p.insert(id, tx, Duration::from_secs(60), None)
                .expect("unbounded");
            rxs.push(rx);
        }
        assert!(
            !p.remove(11).expect("pending").sent,
            "an unwritten call is not sent"
        );
        let (tx, rx) = oneshot::channel();
        p.insert(11, tx, Duration::from_secs(60), None)
            .expect("unbounded");
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

    #[test]
    fn the_bound_refuses_without_registering_and_frees_with_completions() {
        for max in [1usize, 4, 31, 64, 1000] {
            let p = Pending::bounded(max);
            let mut rxs = Vec::new();
            for id in 0..max as i64 {
                let (tx, rx) = oneshot::channel();
                p.insert(id, tx, Duration::from_secs(60), None)
                    .unwrap_or_else(|n| panic!("max {max}: call {id} refused at {n}"));
                rxs.push(rx);
            }
            let (tx, rx) = oneshot::channel();
            assert_eq!(
                p.insert(max as i64, tx, Duration::from_secs(60), None),
                Err(max),
                "max {max}: sequential ids fill the shards evenly, so the bound is exact"
            );
            assert!(
                rx.blocking_recv().is_err(),
                "a refused call's sender is dropped, not kept"
            );
            assert_eq!(p.len(), max, "nothing registered for the refused call");
            assert!(p.complete(Response::new(0, 2, crate::Status::OK, bytes::Bytes::new())));
            let (tx, _rx) = oneshot::channel();
            p.insert(max as i64 + 1, tx, Duration::from_secs(60), None)
                .expect("room again after a reply");
        }
        // 0: no bound.
        let p = Pending::bounded(0);
        let mut rxs = Vec::new();
        for id in 0..100_000 {
            let (tx, rx) = oneshot::channel();
            p.insert(id, tx, Duration::from_secs(60), None)
                .expect("unbounded");
            rxs.push(rx);
        }
    }

    #[tokio::test]
    async fn each_call_times_out_at_its_own_deadline() {
        let p = std::sync::Arc::new(Pending::new());
        let stop = CancellationToken::new();
        let sweeper = tokio::spawn({
            let (p, stop) = (p.clone(), stop.clone());
            async move { p.run_timeouts("peer:1", &stop).await }
        });
        let (tx, long) = oneshot::channel();
        p.insert(1, tx, Duration::from_secs(30), None)
            .expect("unbounded");
        // The sweeper is (or soon will be) asleep until the long deadline; a
        // shorter one registered later must wake it.
        tokio::task::yield_now().await;
        let started = Instant::now();
        let (tx, short) = oneshot::channel();
        p.insert(2, tx, Duration::from_millis(60), None)
            .expect("unbounded");
        let reply = tokio::time::timeout(Duration::from_secs(5), short)
            .await
            .expect("the sweeper failed the short call")
            .expect("a reply");
        let took = started.elapsed();
        assert!(
            matches!(
                reply,
                Err(RemotingError::Timeout { id: 2, sent: false, timeout, .. })
                    if timeout == Duration::from_millis(60)
            ),
            "{reply:?}"
        );
        assert!(
            took >= Duration::from_millis(60) && took < Duration::from_secs(2),
            "timed out after {took:?}"
        );
        assert_eq!(p.len(), 1, "the long call still waits");
        assert!(p.complete(Response::new(1, 2, crate::Status::OK, bytes::Bytes::new())));
        assert!(long.await.expect("a reply").is_ok());
        stop.cancel();
        tokio::time::timeout(Duration::from_secs(5), sweeper)
            .await
            .expect("the sweeper stops")
            .expect("no panic");
    }

    #[tokio::test]
    async fn a_given_deadline_wins_over_the_timeout() {
        let p = std::sync::Arc::new(Pending::new());
        let stop = CancellationToken::new();
        let sweeper = tokio::spawn({
            let (p, stop) = (p.clone(), stop.clone());
            async move { p.run_timeouts("peer:1", &stop).await }
        });
        // The timeout says 30 s, the caller's deadline 60 ms from now: the deadline
        // fails the call (the timeout only names it in the error).
        let started = Instant::now();
        let (tx, rx) = oneshot::channel();
        p.insert(
            3,
            tx,
            Duration::from_secs(30),
            Some(started + Duration::from_millis(60)),
        )
        .expect("unbounded");
        let reply = tokio::time::timeout(Duration::from_secs(10), rx)
            .await
            .expect("failed at the deadline, long before the timeout")
            .expect("a reply");
        assert!(
            matches!(reply, Err(RemotingError::Timeout { id: 3, .. })),
            "{reply:?}"
        );
        assert!(started.elapsed() >= Duration::from_millis(60));
        stop.cancel();
        tokio::time::timeout(Duration::from_secs(5), sweeper)
            .await
            .expect("the sweeper stops")
            .expect("no panic");
    }
}
