//! The load engine of `rubbo bench`: closed loop (a fixed number of calls in flight,
//! each caller starting its next call when the last one answered) or open loop (calls
//! started at a fixed rate, at most `concurrency` in flight: a call that cannot start
//! on time is counted as missed, never queued).
//!
//! Per call, nothing is allocated that could be reused: the invocation is a clone of
//! one template (its arguments are shared, pre-built values), latencies go into
//! preallocated HDR histograms (one shard per runtime thread, behind an uncontended
//! lock) and counters are atomics. What remains per call is what the invoker API
//! itself takes: the owned invocation (its attachment map) and the call's boxed
//! future.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rubbo_common::{BoxInvoker, ErrorKind, Invocation, Outcome, RpcError, RpcResult};
use tokio::sync::{Semaphore, mpsc};

/// The slowest call a histogram holds (longer ones are recorded as this).
const MAX_LATENCY_NS: u64 = 60_000_000_000;

/// Error buckets, by Java's `RpcException` code (0..=13); the last is for codes
/// beyond.
pub(crate) const KINDS: usize = 16;

/// The name of error bucket `i` in reports.
pub(crate) fn kind_name(i: usize) -> &'static str {
    match i {
        0 => "unknown",
        1 => "network",
        2 => "timeout",
        3 => "biz",
        4 => "forbidden",
        5 => "serialization",
        6 => "no_provider",
        7 => "limit_exceeded",
        9 => "registry",
        11 => "method_not_found",
        12 => "validation",
        13 => "authorization",
        _ => "other",
    }
}

fn kind_index(kind: ErrorKind) -> usize {
    usize::try_from(kind.code())
        .ok()
        .filter(|&c| c < KINDS - 1)
        .unwrap_or(KINDS - 1)
}

/// What to run: the connections' invokers and the call every caller makes.
#[derive(Debug)]
pub(crate) struct Load {
    /// One per connection; caller `i` uses invoker `i % len`.
    pub(crate) invokers: Vec<BoxInvoker>,
    /// The call, cloned for each call.
    pub(crate) template: Invocation,
    /// Calls in flight at most.
    pub(crate) concurrency: usize,
    /// Open loop: calls started per second.
    pub(crate) rate: Option<f64>,
    /// Histogram shards (runtime threads).
    pub(crate) shards: usize,
}

/// When a phase ends: at `deadline`, or after `calls` calls (closed loop: calls made;
/// open loop: calls scheduled, started or missed), whichever comes first.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bound {
    pub(crate) deadline: Instant,
    pub(crate) calls: Option<u64>,
}

/// The counts of one phase, shared by its callers and the progress line.
#[derive(Debug)]
pub(crate) struct Stats {
    /// Calls claimed (closed loop) or scheduled (open loop).
    claimed: AtomicU64,
    pub(crate) ok: AtomicU64,
    pub(crate) errors: [AtomicU64; KINDS],
    /// Open loop: calls that could not start on time (all `concurrency` in flight).
    pub(crate) missed: AtomicU64,
    /// Latencies of successful calls, in nanoseconds.
    pub(crate) shards: Vec<Mutex<Histogram<u64>>>,
    /// The phase is over (set by Ctrl-C too).
    pub(crate) stop: AtomicBool,
}

impl Stats {
    pub(crate) fn new(shards: usize) -> anyhow::Result<Self> {
        let shards = (0..shards.max(1))
            .map(|_| Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).map(Mutex::new))
            .collect::<Result<_, _>>()?;
        Ok(Stats {
            claimed: AtomicU64::new(0),
            ok: AtomicU64::new(0),
            errors: Default::default(),
            missed: AtomicU64::new(0),
            shards,
            stop: AtomicBool::new(false),
        })
    }

    /// Calls that got an answer or an error.
    pub(crate) fn done(&self) -> u64 {
        self.ok.load(Ordering::Relaxed) + self.failed()
    }

    /// Calls that failed, whatever the kind.
    pub(crate) fn failed(&self) -> u64 {
        self.errors.iter().map(|e| e.load(Ordering::Relaxed)).sum()
    }

    /// Every shard's latencies added into `into` (cleared first).
    pub(crate) fn merge_into(&self, into: &mut Histogram<u64>) {
        into.reset();
        for s in &self.shards {
            let h = s.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            // Same bounds everywhere: adding cannot fail.
            let _ = into.add(&*h);
        }
    }

    fn record(&self, shard: usize, started: Instant, r: Result<RpcResult, RpcError>) {
        let failed = match r {
            Ok(res) => match res.outcome() {
                Outcome::Value(_) => None,
                Outcome::Exception(_) => Some(ErrorKind::Biz),
            },
            Err(e) => Some(e.kind()),
        };
        match failed {
            None => {
                let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
                let mut h = self.shards[shard % self.shards.len()]
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                h.saturating_record(ns.max(1));
                drop(h);
                self.ok.fetch_add(1, Ordering::Relaxed);
            }
            Some(kind) => {
                self.errors[kind_index(kind)].fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Claims the next call of a phase bounded by `bound`: false once it is over.
    fn claim(&self, bound: &Bound) -> bool {
        if self.stop.load(Ordering::Relaxed) || Instant::now() >= bound.deadline {
            return false;
        }
        match bound.calls {
            Some(n) => self.claimed.fetch_add(1, Ordering::Relaxed) < n,
            None => true,
        }
    }
}

/// Runs one phase to its bound and returns when every call it started has ended.
pub(crate) async fn run_phase(load: &Arc<Load>, stats: &Arc<Stats>, bound: Bound) {
    match load.rate {
        None => closed_loop(load, stats, bound).await,
        Some(rate) => open_loop(load, stats, bound, rate).await,
    }
    stats.stop.store(true, Ordering::Relaxed);
}

async fn closed_loop(load: &Arc<Load>, stats: &Arc<Stats>, bound: Bound) {
    let mut callers = tokio::task::JoinSet::new();
    for i in 0..load.concurrency {
        let (load, stats) = (load.clone(), stats.clone());
        callers.spawn(async move {
            let invoker = &load.invokers[i % load.invokers.len()];
            while stats.claim(&bound) {
                let started = Instant::now();
                let r = invoker.invoke(load.template.clone()).await;
                stats.record(i, started, r);
            }
        });
    }
    while callers.join_next().await.is_some() {}
}

/// A call due at an instant, and its place among the `concurrency` in flight.
type Ticket = (Instant, tokio::sync::OwnedSemaphorePermit);

async fn open_loop(load: &Arc<Load>, stats: &Arc<Stats>, bound: Bound, rate: f64) {
    let slots = Arc::new(Semaphore::new(load.concurrency));
    // Never more tickets than permits: the channel cannot fill up.
    let (tx, rx) = mpsc::channel::<Ticket>(load.concurrency);
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let mut callers = tokio::task::JoinSet::new();
    for i in 0..load.concurrency {
        let (load, stats, rx) = (load.clone(), stats.clone(), rx.clone());
        callers.spawn(async move {
            let invoker = &load.invokers[i % load.invokers.len()];
            loop {
                let ticket = rx.lock().await.recv().await;
                let Some((due, slot)) = ticket else { break };
                let r = invoker.invoke(load.template.clone()).await;
                // Latency from when the call was due, not from when it started: a
                // late start is part of what the caller waited.
                stats.record(i, due, r);
                drop(slot);
            }
        });
    }
    let period = Duration::from_secs_f64(1.0 / rate);
    let start = Instant::now();
    let mut k: u32 = 0;
    let mut due = start;
    loop {
        if !stats.claim(&bound) || due >= bound.deadline {
            break;
        }
        if due > Instant::now() {
            tokio::time::sleep_until(due.into()).await;
        }
        match slots.clone().try_acquire_owned() {
            Ok(slot) => {
                if tx.try_send((due, slot)).is_err() {
                    stats.missed.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(_) => {
                stats.missed.fetch_add(1, Ordering::Relaxed);
            }
        }
        k = k.saturating_add(1);
        due = start + period.saturating_mul(k);
    }
    drop(tx);
    while callers.join_next().await.is_some() {}
}
