//! [`MethodStats`]: the counters of one method on one side, atomics only.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rubbo_common::{ErrorKind, Side};

use crate::names::{self, MethodKey};
use crate::window::{FixedHistogram, Window};

/// How a call ended, as Java's `MetricsSupport.getMetricsKey` sorts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ending {
    /// It answered a value.
    Succeeded,
    /// The service answered with an exception (or a `Biz` error).
    Business,
    /// A timeout.
    Timeout,
    /// A limit refused it (`executes`, `actives`, `tps`...).
    Limit,
    /// A network failure.
    Network,
    /// A serialization failure.
    Codec,
    /// Any other framework failure (forbidden, no provider, method not found...).
    Unknown,
}

impl Ending {
    /// The ending of a call that failed with `kind`.
    pub fn of_error(kind: ErrorKind) -> Ending {
        match kind {
            ErrorKind::Timeout => Ending::Timeout,
            ErrorKind::LimitExceeded => Ending::Limit,
            ErrorKind::Biz => Ending::Business,
            ErrorKind::Serialization => Ending::Codec,
            ErrorKind::Network => Ending::Network,
            _ => Ending::Unknown,
        }
    }
}

/// One method's (or, at service level, one service's) statistics on one side, and
/// the labels it is exported under. Recording is a handful of relaxed atomic
/// operations on the recording thread's own shard: no lock, no allocation, and no
/// cache line that two cores write at once (the shards are summed when read, as
/// Java's `LongAdder` cells are).
#[derive(Debug)]
pub struct MethodStats {
    side: Side,
    pub(crate) labels: Vec<(&'static str, String)>,
    shards: Box<[Shard]>,
    /// The histogram and sliding windows, when on.
    pub(crate) extras: Extras,
}

/// One core's share of a [`MethodStats`]'s counters, on cache lines of its own.
#[derive(Debug)]
#[repr(align(128))]
struct Shard {
    counters: [AtomicU64; names::COUNTERS.len()],
    /// Calls started minus calls ended on this shard: one shard alone may be
    /// negative (a call that ends on another thread), their sum is not.
    processing: AtomicI64,
    rt_last: AtomicU64,
    /// When `rt_last` was taken, in ns since [`epoch`] (the newest shard's wins).
    rt_last_at: AtomicU64,
    rt_min: AtomicU64,
    rt_max: AtomicU64,
    rt_sum: AtomicU64,
    rt_count: AtomicU64,
}

impl Default for Shard {
    fn default() -> Self {
        Shard {
            counters: Default::default(),
            processing: AtomicI64::new(0),
            rt_last: AtomicU64::new(0),
            rt_last_at: AtomicU64::new(0),
            rt_min: AtomicU64::new(u64::MAX),
            rt_max: AtomicU64::new(0),
            rt_sum: AtomicU64::new(0),
            rt_count: AtomicU64::new(0),
        }
    }
}

/// How many shards a [`MethodStats`] has: the cores, rounded up to a power of two,
/// at most 16 (2 KiB a method).
fn shard_count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(16)
            .next_power_of_two()
    })
}

/// The recording thread's shard index (before masking): threads take consecutive
/// numbers on first use, so a runtime's workers spread over the shards.
fn thread_slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    SLOT.with(|s| *s)
}

/// The clock `rt_last_at` is read on.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// What [`MethodStats`] records besides Java's default counters: the response time
/// histogram (`dubbo.metrics.histogram.enabled`) and the sliding-window aggregates
/// (`dubbo.metrics.aggregation.enabled`).
#[derive(Debug, Default)]
pub(crate) struct Extras {
    pub(crate) histogram: Option<FixedHistogram>,
    pub(crate) aggregate: Option<Aggregate>,
}

/// The sliding windows of one method: the aggregated request counters and response
/// times (with quantiles) over `time-window-seconds`, and the calls over the QPS
/// window.
#[derive(Debug)]
pub(crate) struct Aggregate {
    pub(crate) window: Window,
    pub(crate) qps: Window,
}

/// Where each aggregated counter is in [`names::AGGREGATE_COUNTERS`].
pub(crate) mod agg {
    pub(crate) const TOTAL: usize = 0;
    pub(crate) const SUCCEED: usize = 1;
    pub(crate) const FAILED: usize = 2;
    pub(crate) const BUSINESS: usize = 3;
    pub(crate) const TIMEOUT: usize = 4;
    pub(crate) const LIMIT: usize = 5;
    pub(crate) const TOTAL_FAILED: usize = 6;
    pub(crate) const NETWORK: usize = 7;
    pub(crate) const CODEC: usize = 8;
    pub(crate) const UNAVAILABLE: usize = 9;
}

/// Where each counter is in [`names::COUNTERS`].
const REQUESTS: usize = 0;
const SUCCEED: usize = 1;
const BUSINESS: usize = 2;
const TIMEOUT: usize = 3;
const LIMIT: usize = 4;
const UNKNOWN: usize = 5;
const FAILED: usize = 6;
const NETWORK: usize = 7;
const UNAVAILABLE: usize = 8;
const CODEC: usize = 9;

/// A snapshot of one [`MethodStats`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Each counter of [`names::COUNTERS`], in that order.
    pub counters: [u64; names::COUNTERS.len()],
    /// Calls in flight.
    pub processing: i64,
    /// Response times in ms, once a call ended: (last, min, max, sum, count).
    pub rt: Option<(u64, u64, u64, u64, u64)>,
}

impl Snapshot {
    /// The value of counter `key`.
    pub fn counter(&self, key: MethodKey) -> u64 {
        names::COUNTERS
            .iter()
            .position(|k| *k == key)
            .map_or(0, |i| self.counters[i])
    }
}

impl MethodStats {
    #[cfg(test)]
    pub(crate) fn new(side: Side, labels: Vec<(&'static str, String)>) -> Self {
        MethodStats::with_extras(side, labels, Extras::default())
    }

    pub(crate) fn with_extras(
        side: Side,
        labels: Vec<(&'static str, String)>,
        extras: Extras,
    ) -> Self {
        epoch();
        MethodStats {
            extras,
            side,
            labels,
            shards: (0..shard_count()).map(|_| Shard::default()).collect(),
        }
    }

    /// The calling thread's shard.
    fn shard(&self) -> &Shard {
        // `shards.len()` is a power of two.
        &self.shards[thread_slot() & (self.shards.len() - 1)]
    }

    /// The side it counts.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The labels it is exported under, in order.
    pub fn labels(&self) -> &[(&'static str, String)] {
        &self.labels
    }

    /// A call starts: `requests` and `processing` go up.
    pub fn start(&self) {
        self.start_at(Instant::now());
    }

    /// [`start`](Self::start) of a call made at `now` (the sliding windows' clock).
    pub fn start_at(&self, now: Instant) {
        let shard = self.shard();
        shard.counters[REQUESTS].fetch_add(1, Ordering::Relaxed);
        shard.processing.fetch_add(1, Ordering::Relaxed);
        if let Some(a) = &self.extras.aggregate {
            a.qps.count(0, now);
            a.window.count(agg::TOTAL, now);
        }
    }

    /// A started call went away unanswered (its future was dropped): only
    /// `processing` goes down.
    pub fn abandon(&self) {
        self.shard().processing.fetch_sub(1, Ordering::Relaxed);
    }

    /// A started call ended as `ending` after `elapsed` (Java's `onFinish` /
    /// `onError`): `processing` goes down, the ending's counter (and `failed` for a
    /// failure) goes up, and the response time is taken.
    pub fn finish(&self, ending: Ending, elapsed: Duration) {
        self.finish_at(ending, elapsed, Instant::now());
    }

    /// [`finish`](Self::finish) of a call that ended at `now` (the sliding windows'
    /// clock).
    pub fn finish_at(&self, ending: Ending, elapsed: Duration, now: Instant) {
        let shard = self.shard();
        shard.processing.fetch_sub(1, Ordering::Relaxed);
        let slot = match ending {
            Ending::Succeeded => SUCCEED,
            Ending::Business => BUSINESS,
            Ending::Timeout => TIMEOUT,
            Ending::Limit => LIMIT,
            Ending::Network => NETWORK,
            Ending::Codec => CODEC,
            Ending::Unknown => UNKNOWN,
        };
        shard.counters[slot].fetch_add(1, Ordering::Relaxed);
        if ending != Ending::Succeeded {
            shard.counters[FAILED].fetch_add(1, Ordering::Relaxed);
        }
        let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        let at =
            u64::try_from(now.saturating_duration_since(epoch()).as_nanos()).unwrap_or(u64::MAX);
        shard.rt_last.store(ms, Ordering::Relaxed);
        shard.rt_last_at.store(at, Ordering::Relaxed);
        shard.rt_min.fetch_min(ms, Ordering::Relaxed);
        shard.rt_max.fetch_max(ms, Ordering::Relaxed);
        shard.rt_sum.fetch_add(ms, Ordering::Relaxed);
        shard.rt_count.fetch_add(1, Ordering::Relaxed);
        if let Some(h) = &self.extras.histogram {
            h.record(ms, now);
        }
        if let Some(a) = &self.extras.aggregate {
            let slot = match ending {
                Ending::Succeeded => agg::SUCCEED,
                Ending::Business => agg::BUSINESS,
                Ending::Timeout => agg::TIMEOUT,
                Ending::Limit => agg::LIMIT,
                Ending::Network => agg::NETWORK,
                Ending::Codec => agg::CODEC,
                Ending::Unknown => agg::FAILED,
            };
            a.window.count_rt(slot, ms, now);
            if ending != Ending::Succeeded {
                a.window.count(agg::TOTAL_FAILED, now);
            }
        }
    }

    /// A consumer call found no usable provider (Java's `MetricsClusterFilter` on a
    /// forbidden call): `requests.failed.service.unavailable` goes up.
    pub fn unavailable(&self) {
        self.shard().counters[UNAVAILABLE].fetch_add(1, Ordering::Relaxed);
        if let Some(a) = &self.extras.aggregate {
            a.window.count(agg::UNAVAILABLE, Instant::now());
        }
    }

    /// The values now.
    pub fn snapshot(&self) -> Snapshot {
        let load = |f: fn(&Shard) -> &AtomicU64| {
            self.shards
                .iter()
                .map(move |s| f(s).load(Ordering::Relaxed))
        };
        let count: u64 = load(|s| &s.rt_count).sum();
        Snapshot {
            counters: std::array::from_fn(|i| {
                self.shards
                    .iter()
                    .map(|s| s.counters[i].load(Ordering::Relaxed))
                    .sum()
            }),
            processing: self
                .shards
                .iter()
                .map(|s| s.processing.load(Ordering::Relaxed))
                .sum(),
            rt: (count > 0).then(|| {
                let last = self
                    .shards
                    .iter()
                    .filter(|s| s.rt_count.load(Ordering::Relaxed) > 0)
                    .max_by_key(|s| s.rt_last_at.load(Ordering::Relaxed))
                    .map_or(0, |s| s.rt_last.load(Ordering::Relaxed));
                (
                    last,
                    load(|s| &s.rt_min).min().unwrap_or(0),
                    load(|s| &s.rt_max).max().unwrap_or(0),
                    load(|s| &s.rt_sum).sum(),
                    count,
                )
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_counts_its_reason_and_failed_and_the_response_time() {
        let s = MethodStats::new(Side::Provider, Vec::new());
        s.start();
        s.start();
        s.start();
        assert_eq!(s.snapshot().processing, 3);
        s.finish(Ending::Succeeded, Duration::from_millis(7));
        s.finish(
            Ending::of_error(ErrorKind::Timeout),
            Duration::from_millis(3),
        );
        s.abandon();
        let snap = s.snapshot();
        assert_eq!(snap.counter(names::REQUESTS), 3);
        assert_eq!(snap.counter(names::REQUESTS_SUCCEED), 1);
        assert_eq!(snap.counter(names::REQUESTS_TIMEOUT), 1);
        assert_eq!(snap.counter(names::REQUESTS_FAILED), 1);
        assert_eq!(snap.counter(names::REQUESTS_BUSINESS_FAILED), 0);
        assert_eq!(snap.processing, 0);
        assert_eq!(snap.rt, Some((3, 3, 7, 10, 2)));
    }

    #[test]
    fn threads_recording_at_once_sum_exactly_and_the_newest_time_is_last() {
        let s = std::sync::Arc::new(MethodStats::new(Side::Consumer, Vec::new()));
        // Calls started on four threads each end on another thread.
        let started: Vec<_> = (0..4)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || (0..1000).for_each(|_| s.start()))
            })
            .collect();
        started.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(s.snapshot().processing, 4000);
        let ended: Vec<_> = (0..4u64)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for i in 0..1000u64 {
                        let ending = if i % 10 == 0 {
                            Ending::Network
                        } else {
                            Ending::Succeeded
                        };
                        s.finish(ending, Duration::from_millis(t * 10 + i % 5 + 1));
                    }
                })
            })
            .collect();
        ended.into_iter().for_each(|t| t.join().unwrap());
        let snap = s.snapshot();
        assert_eq!(snap.processing, 0);
        assert_eq!(snap.counter(names::REQUESTS), 4000);
        assert_eq!(snap.counter(names::REQUESTS_SUCCEED), 3600);
        assert_eq!(snap.counter(names::REQUESTS_FAILED), 400);
        // Each thread's times are t*10 + 1..=5, 200 calls of each.
        let sum: u64 = (0..4u64)
            .map(|t| (1..=5).map(|k| (t * 10 + k) * 200).sum::<u64>())
            .sum();
        let (_, min, max, total, count) = snap.rt.unwrap();
        assert_eq!((min, max, total, count), (1, 35, sum, 4000));
        // The newest response time is the last one, whichever shard took it.
        std::thread::spawn({
            let s = s.clone();
            move || {
                s.start();
                s.finish(Ending::Succeeded, Duration::from_millis(77));
            }
        })
        .join()
        .unwrap();
        assert_eq!(s.snapshot().rt.unwrap().0, 77);
    }

    #[test]
    fn errors_sort_as_java_sorts_rpc_exceptions() {
        assert_eq!(Ending::of_error(ErrorKind::Biz), Ending::Business);
        assert_eq!(Ending::of_error(ErrorKind::LimitExceeded), Ending::Limit);
        assert_eq!(Ending::of_error(ErrorKind::Serialization), Ending::Codec);
        assert_eq!(Ending::of_error(ErrorKind::Network), Ending::Network);
        assert_eq!(Ending::of_error(ErrorKind::Forbidden), Ending::Unknown);
        assert_eq!(Ending::of_error(ErrorKind::NoProvider), Ending::Unknown);
    }
}
