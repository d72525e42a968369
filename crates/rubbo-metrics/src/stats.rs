//! [`MethodStats`]: the counters of one method on one side, atomics only.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
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
/// operations: no lock, no allocation.
#[derive(Debug)]
pub struct MethodStats {
    side: Side,
    pub(crate) labels: Vec<(&'static str, String)>,
    counters: [AtomicU64; names::COUNTERS.len()],
    processing: AtomicI64,
    rt_last: AtomicU64,
    rt_min: AtomicU64,
    rt_max: AtomicU64,
    rt_sum: AtomicU64,
    rt_count: AtomicU64,
    /// The histogram and sliding windows, when on.
    pub(crate) extras: Extras,
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
        MethodStats {
            extras,
            side,
            labels,
            counters: Default::default(),
            processing: AtomicI64::new(0),
            rt_last: AtomicU64::new(0),
            rt_min: AtomicU64::new(u64::MAX),
            rt_max: AtomicU64::new(0),
            rt_sum: AtomicU64::new(0),
            rt_count: AtomicU64::new(0),
        }
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
        self.counters[REQUESTS].fetch_add(1, Ordering::Relaxed);
        self.processing.fetch_add(1, Ordering::Relaxed);
        if let Some(a) = &self.extras.aggregate {
            a.qps.count(0, now);
            a.window.count(agg::TOTAL, now);
        }
    }

    /// A started call went away unanswered (its future was dropped): only
    /// `processing` goes down.
    pub fn abandon(&self) {
        self.processing.fetch_sub(1, Ordering::Relaxed);
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
        self.processing.fetch_sub(1, Ordering::Relaxed);
        let slot = match ending {
            Ending::Succeeded => SUCCEED,
            Ending::Business => BUSINESS,
            Ending::Timeout => TIMEOUT,
            Ending::Limit => LIMIT,
            Ending::Network => NETWORK,
            Ending::Codec => CODEC,
            Ending::Unknown => UNKNOWN,
        };
        self.counters[slot].fetch_add(1, Ordering::Relaxed);
        if ending != Ending::Succeeded {
            self.counters[FAILED].fetch_add(1, Ordering::Relaxed);
        }
        let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        self.rt_last.store(ms, Ordering::Relaxed);
        self.rt_min.fetch_min(ms, Ordering::Relaxed);
        self.rt_max.fetch_max(ms, Ordering::Relaxed);
        self.rt_sum.fetch_add(ms, Ordering::Relaxed);
        self.rt_count.fetch_add(1, Ordering::Relaxed);
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
        self.counters[UNAVAILABLE].fetch_add(1, Ordering::Relaxed);
        if let Some(a) = &self.extras.aggregate {
            a.window.count(agg::UNAVAILABLE, Instant::now());
        }
    }

    /// The values now.
    pub fn snapshot(&self) -> Snapshot {
        let count = self.rt_count.load(Ordering::Relaxed);
        Snapshot {
            counters: std::array::from_fn(|i| self.counters[i].load(Ordering::Relaxed)),
            processing: self.processing.load(Ordering::Relaxed),
            rt: (count > 0).then(|| {
                (
                    self.rt_last.load(Ordering::Relaxed),
                    self.rt_min.load(Ordering::Relaxed),
                    self.rt_max.load(Ordering::Relaxed),
                    self.rt_sum.load(Ordering::Relaxed),
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
    fn errors_sort_as_java_sorts_rpc_exceptions() {
        assert_eq!(Ending::of_error(ErrorKind::Biz), Ending::Business);
        assert_eq!(Ending::of_error(ErrorKind::LimitExceeded), Ending::Limit);
        assert_eq!(Ending::of_error(ErrorKind::Serialization), Ending::Codec);
        assert_eq!(Ending::of_error(ErrorKind::Network), Ending::Network);
        assert_eq!(Ending::of_error(ErrorKind::Forbidden), Ending::Unknown);
        assert_eq!(Ending::of_error(ErrorKind::NoProvider), Ending::Unknown);
    }
}
