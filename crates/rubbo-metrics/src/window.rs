//! Sliding windows as rings of time buckets (Java's `TimeWindowCounter`,
//! `TimeWindowQuantile` and `TimeWindowAggregator`), and the fixed-bucket response
//! time histogram (Java's `HistogramMetricsCollector` timer). Recording is relaxed
//! atomics only: no lock, no allocation.
//!
//! A [`Window`] of `n` panes covers `length`: each pane holds the events of one
//! `length / n` slice, and a pane whose slice is over `n` slices ago is emptied when
//! its turn comes again. Reading sums the panes still inside the window. A pane is
//! emptied by the first call that finds it stale; an event recorded by another thread
//! at that same instant may be lost, a bounded error at each pane turn that a
//! lock would remove at a cost on every call.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Values below this many ms have a quantile bucket of their own.
const EXACT: u64 = 32;
/// Sub-buckets per power of two above [`EXACT`] (4 bits: at most 1/16 wide).
const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;
/// The largest power of two a quantile bucket tells apart (2^36 ms, two years).
const TOP_BIT: u32 = 36;
/// Quantile buckets: the exact ones, then 16 per power of two from 2^5 to 2^35.
pub(crate) const QUANTILE_BUCKETS: usize = EXACT as usize + (TOP_BIT as usize - 5) * SUB as usize;

/// The quantile bucket of `ms`.
fn bucket_of(ms: u64) -> usize {
    if ms < EXACT {
        return ms as usize;
    }
    let ms = ms.min((1 << TOP_BIT) - 1);
    let msb = 63 - ms.leading_zeros();
    let sub = (ms >> (msb - SUB_BITS)) & (SUB - 1);
    EXACT as usize + (msb as usize - 5) * SUB as usize + sub as usize
}

/// The lowest and highest ms of quantile bucket `i`.
fn bucket_range(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < EXACT {
        return (i, i);
    }
    let octave = (i - EXACT) / SUB;
    let sub = (i - EXACT) % SUB;
    let msb = octave + 5;
    let width = 1u64 << (msb - u64::from(SUB_BITS));
    let low = (1u64 << msb) | (sub * width);
    (low, low + width - 1)
}

/// What one pane counts.
#[derive(Debug)]
struct Pane {
    /// The slice it holds plus one; 0 before its first use.
    epoch: AtomicU64,
    counts: Box<[AtomicU64]>,
    rt_count: AtomicU64,
    rt_sum: AtomicU64,
    rt_min: AtomicU64,
    rt_max: AtomicU64,
    /// Response times by quantile bucket; empty when quantiles are off.
    rt_buckets: Box<[AtomicU64]>,
}

fn zeros(n: usize) -> Box<[AtomicU64]> {
    (0..n).map(|_| AtomicU64::new(0)).collect()
}

impl Pane {
    fn new(counters: usize, quantiles: bool) -> Self {
        Pane {
            epoch: AtomicU64::new(0),
            counts: zeros(counters),
            rt_count: AtomicU64::new(0),
            rt_sum: AtomicU64::new(0),
            rt_min: AtomicU64::new(u64::MAX),
            rt_max: AtomicU64::new(0),
            rt_buckets: zeros(if quantiles { QUANTILE_BUCKETS } else { 0 }),
        }
    }

    fn reset(&self) {
        for c in self.counts.iter().chain(self.rt_buckets.iter()) {
            c.store(0, Ordering::Relaxed);
        }
        self.rt_count.store(0, Ordering::Relaxed);
        self.rt_sum.store(0, Ordering::Relaxed);
        self.rt_min.store(u64::MAX, Ordering::Relaxed);
        self.rt_max.store(0, Ordering::Relaxed);
    }
}

/// A ring of panes covering a sliding time window. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct Window {
    base: Instant,
    pane_ms: u64,
    panes: Box<[Pane]>,
}

/// What a [`Window`] holds now, summed over its live panes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WindowSnapshot {
    /// Each counter.
    pub(crate) counts: Vec<u64>,
    /// Response times: count, sum, min, max (min and max 0 when none).
    pub(crate) rt: (u64, u64, u64, u64),
    /// Response times by quantile bucket (empty when quantiles are off).
    pub(crate) rt_buckets: Vec<u64>,
    /// How long the live panes span, in ms (at least 1).
    pub(crate) span_ms: u64,
}

impl Window {
    /// A window of `panes` panes over `length`, with `counters` counters and, when
    /// `quantiles`, response time buckets in each pane.
    pub(crate) fn new(panes: u32, length: Duration, counters: usize, quantiles: bool) -> Self {
        let panes = panes.max(1);
        let length_ms = u64::try_from(length.as_millis()).unwrap_or(u64::MAX);
        Window {
            base: Instant::now(),
            pane_ms: (length_ms / u64::from(panes)).max(1),
            panes: (0..panes).map(|_| Pane::new(counters, quantiles)).collect(),
        }
    }

    fn slot(&self, now: Instant) -> u64 {
        u64::try_from(now.saturating_duration_since(self.base).as_millis()).unwrap_or(u64::MAX)
            / self.pane_ms
    }

    /// The pane of `now`, emptied first if it held an older slice.
    fn pane(&self, now: Instant) -> &Pane {
        let slot = self.slot(now);
        let n = self.panes.len() as u64;
        let pane = &self.panes[(slot % n) as usize];
        let want = slot + 1;
        let seen = pane.epoch.load(Ordering::Acquire);
        if seen < want
            && pane
                .epoch
                .compare_exchange(seen, want, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            pane.reset();
        }
        pane
    }

    /// Adds one to counter `i` at `now`.
    pub(crate) fn count(&self, i: usize, now: Instant) {
        if let Some(c) = self.pane(now).counts.get(i) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Adds one to counter `i` and records response time `ms` at `now`.
    pub(crate) fn count_rt(&self, i: usize, ms: u64, now: Instant) {
        let pane = self.pane(now);
        if let Some(c) = pane.counts.get(i) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        pane.rt_count.fetch_add(1, Ordering::Relaxed);
        pane.rt_sum.fetch_add(ms, Ordering::Relaxed);
        pane.rt_min.fetch_min(ms, Ordering::Relaxed);
        pane.rt_max.fetch_max(ms, Ordering::Relaxed);
        if let Some(b) = pane.rt_buckets.get(bucket_of(ms)) {
            b.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The sums over the panes still in the window at `now`.
    pub(crate) fn snapshot(&self, now: Instant) -> WindowSnapshot {
        let slot = self.slot(now);
        let n = self.panes.len() as u64;
        let oldest = (slot + 1).saturating_sub(n - 1);
        let first = self.panes.first();
        let mut snap = WindowSnapshot {
            counts: vec![0; first.map_or(0, |p| p.counts.len())],
            rt: (0, 0, u64::MAX, 0),
            rt_buckets: vec![0; first.map_or(0, |p| p.rt_buckets.len())],
            span_ms: 1,
        };
        for pane in self.panes.iter() {
            let epoch = pane.epoch.load(Ordering::Acquire);
            if epoch < oldest || epoch > slot + 1 {
                continue;
            }
            for (sum, c) in snap.counts.iter_mut().zip(pane.counts.iter()) {
                *sum += c.load(Ordering::Relaxed);
            }
            for (sum, c) in snap.rt_buckets.iter_mut().zip(pane.rt_buckets.iter()) {
                *sum += c.load(Ordering::Relaxed);
            }
            snap.rt.0 += pane.rt_count.load(Ordering::Relaxed);
            snap.rt.1 += pane.rt_sum.load(Ordering::Relaxed);
            snap.rt.2 = snap.rt.2.min(pane.rt_min.load(Ordering::Relaxed));
            snap.rt.3 = snap.rt.3.max(pane.rt_max.load(Ordering::Relaxed));
        }
        if snap.rt.0 == 0 {
            snap.rt = (0, 0, 0, 0);
        }
        let elapsed =
            u64::try_from(now.saturating_duration_since(self.base).as_millis()).unwrap_or(u64::MAX);
        snap.span_ms = (slot.min(n - 1) * self.pane_ms + elapsed % self.pane_ms).max(1);
        snap
    }
}

impl WindowSnapshot {
    /// The `q` quantile (0..=1) of the response times, in ms: the middle of the
    /// bucket holding it, kept within the window's min and max. `None` when no
    /// response time is in the window or quantiles are off.
    pub(crate) fn quantile(&self, q: f64) -> Option<f64> {
        let (count, _, min, max) = self.rt;
        let total: u64 = self.rt_buckets.iter().sum();
        if count == 0 || total == 0 {
            return None;
        }
        // The rank of the value wanted, 1-based, as the nearest-rank method.
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (i, c) in self.rt_buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (low, high) = bucket_range(i);
                let mid = low as f64 + (high - low) as f64 / 2.0;
                return Some(mid.clamp(min as f64, max as f64));
            }
        }
        Some(max as f64)
    }
}

/// Java's default histogram buckets, in ms (`HistogramMetricsCollector.DEFAULT_BUCKETS_MS`).
pub const DEFAULT_HISTOGRAM_BUCKETS_MS: [u64; 7] = [100, 300, 500, 1000, 3000, 5000, 10000];

/// A response time histogram with fixed upper bounds, as Micrometer's timer with
/// service level objectives counts: each bucket counts the times at most its bound
/// (and above the previous one); the last counts the rest.
#[derive(Debug)]
pub(crate) struct FixedHistogram {
    bounds_ms: Box<[u64]>,
    counts: Box<[AtomicU64]>,
    sum_ms: AtomicU64,
    count: AtomicU64,
    /// The largest time of the last two minutes (Micrometer's `TimeWindowMax`: its
    /// default expiry, 2 minutes, in 3 rotating slots).
    max: Window,
}

impl FixedHistogram {
    pub(crate) fn new(bounds_ms: &[u64]) -> Self {
        let mut bounds: Vec<u64> = bounds_ms.to_vec();
        bounds.sort_unstable();
        bounds.dedup();
        FixedHistogram {
            counts: zeros(bounds.len() + 1),
            bounds_ms: bounds.into(),
            sum_ms: AtomicU64::new(0),
            count: AtomicU64::new(0),
            max: Window::new(3, Duration::from_secs(120), 0, false),
        }
    }

    /// The largest time recorded in the last two minutes, in ms (0 when none).
    pub(crate) fn max_ms(&self, now: Instant) -> u64 {
        self.max.snapshot(now).rt.3
    }

    pub(crate) fn record(&self, ms: u64, now: Instant) {
        self.max.count_rt(0, ms, now);
        let i = self
            .bounds_ms
            .iter()
            .position(|b| ms <= *b)
            .unwrap_or(self.bounds_ms.len());
        if let Some(c) = self.counts.get(i) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        self.sum_ms.fetch_add(ms, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// The upper bounds in ms with each bucket's own count (not cumulative), the
    /// last with bound `None` (+Inf); the sum in ms; the count.
    pub(crate) fn snapshot(&self) -> (Vec<(Option<u64>, u64)>, u64, u64) {
        let buckets = self
            .counts
            .iter()
            .enumerate()
            .map(|(i, c)| (self.bounds_ms.get(i).copied(), c.load(Ordering::Relaxed)))
            .collect();
        (
            buckets,
            self.sum_ms.load(Ordering::Relaxed),
            self.count.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_buckets_cover_every_value_in_order() {
        let mut last = 0;
        for ms in (0..5000).chain([1 << 20, (1 << 36) - 1, u64::MAX]) {
            let b = bucket_of(ms);
            assert!(b >= last && b < QUANTILE_BUCKETS, "{ms} -> {b}");
            let (low, high) = bucket_range(b);
            assert!(ms.min((1 << 36) - 1) >= low && ms.min((1 << 36) - 1) <= high);
            // At most 1/16 of the value wide.
            assert!((high - low) * 16 <= low.max(1) * 2, "{ms}: {low}..{high}");
            last = b;
        }
    }

    #[test]
    fn quantiles_stay_within_the_observed_range() {
        let w = Window::new(10, Duration::from_secs(120), 1, true);
        let now = Instant::now();
        for ms in 1..=1000 {
            w.count_rt(0, ms, now);
        }
        let s = w.snapshot(now);
        assert_eq!(s.counts, vec![1000]);
        assert_eq!(s.rt, (1000, 500_500, 1, 1000));
        for (q, want) in [(0.5, 500.0), (0.9, 900.0), (0.99, 990.0)] {
            let got = s.quantile(q).unwrap();
            assert!((got - want).abs() <= want / 16.0, "p{q}: {got}");
        }
        assert_eq!(s.quantile(1.0), Some(1000.0));
        assert_eq!(s.quantile(0.0), Some(1.0));
    }

    #[test]
    fn old_panes_leave_the_window() {
        let w = Window::new(4, Duration::from_millis(400), 1, false);
        let t0 = w.base;
        w.count(0, t0);
        w.count(0, t0 + Duration::from_millis(150));
        assert_eq!(w.snapshot(t0 + Duration::from_millis(399)).counts, vec![2]);
        // Slice 0 is out once slice 4 is the current one; slice 1 still in.
        assert_eq!(w.snapshot(t0 + Duration::from_millis(420)).counts, vec![1]);
        assert_eq!(w.snapshot(t0 + Duration::from_millis(520)).counts, vec![0]);
        // A pane used again starts empty.
        w.count(0, t0 + Duration::from_millis(530));
        assert_eq!(w.snapshot(t0 + Duration::from_millis(530)).counts, vec![1]);
        assert_eq!(w.snapshot(t0 + Duration::from_millis(250)).span_ms, 250);
        assert_eq!(w.snapshot(t0 + Duration::from_millis(530)).span_ms, 330);
    }

    #[test]
    fn histogram_buckets_as_micrometer_slos() {
        let h = FixedHistogram::new(&DEFAULT_HISTOGRAM_BUCKETS_MS);
        let now = Instant::now();
        for ms in [0, 100, 101, 10_000, 10_001] {
            h.record(ms, now);
        }
        assert_eq!(h.max_ms(now), 10_001);
        assert_eq!(h.max_ms(now + Duration::from_secs(200)), 0);
        let (buckets, sum, count) = h.snapshot();
        assert_eq!(count, 5);
        assert_eq!(sum, 20_202);
        assert_eq!(buckets[0], (Some(100), 2));
        assert_eq!(buckets[1], (Some(300), 1));
        assert_eq!(buckets[6], (Some(10_000), 1));
        assert_eq!(buckets[7], (None, 1));
        assert_eq!(buckets.iter().map(|b| b.1).sum::<u64>(), count);
    }
}
