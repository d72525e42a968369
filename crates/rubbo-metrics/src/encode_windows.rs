//! Exporting the histogram and the sliding windows of each method (Java's
//! `HistogramMetricsCollector` and `AggregateMetricsCollector` series).

use std::sync::Arc;
use std::time::Instant;

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use rubbo_common::Side;

use crate::names::{self, MethodKey};
use crate::registry::{clamp, side_name};
use crate::stats::MethodStats;

/// Java's response time histogram (a Micrometer timer with service level
/// objectives, in seconds), one per method whose histogram has a count.
pub(crate) fn encode_histograms(
    side: Side,
    stats: &[&Arc<MethodStats>],
    encoder: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let shown: Vec<_> = stats
        .iter()
        .filter_map(|s| s.extras.histogram.as_ref().map(|h| (s, h.snapshot())))
        .filter(|(_, (_, _, count))| *count > 0)
        .collect();
    if shown.is_empty() {
        return Ok(());
    }
    let key = names::RT_HISTOGRAM;
    let name = side_name(side, key);
    let mut m = encoder.encode_descriptor(&name, key.help, None, MetricType::Histogram)?;
    for (s, (buckets, sum_ms, count)) in &shown {
        let buckets: Vec<(f64, u64)> = buckets
            .iter()
            // The encoder writes `le="+Inf"` for `f64::MAX`.
            .map(|(bound, n)| (bound.map_or(f64::MAX, |b| b as f64 / 1000.0), *n))
            .collect();
        m.encode_family(&s.labels())?
            .encode_histogram::<Vec<(String, String)>>(
                *sum_ms as f64 / 1000.0,
                *count,
                &buckets,
                None,
            )?;
    }
    // Micrometer's `_max` gauge of the timer, beside it.
    let now = Instant::now();
    let key = names::RT_HISTOGRAM_MAX;
    let name = side_name(side, key);
    let mut m = encoder.encode_descriptor(&name, key.help, None, MetricType::Gauge)?;
    for (s, _) in &shown {
        if let Some(h) = &s.extras.histogram {
            let max = h.max_ms(now) as f64 / 1000.0;
            ConstGauge::new(max).encode(m.encode_family(&s.labels())?)?;
        }
    }
    Ok(())
}

/// Java's sliding-window gauges (`AggregateMetricsCollector`): the request counters
/// and QPS of every method from its first appearance, the response time quantiles,
/// min, max and average once a call ended in the window.
pub(crate) fn encode_aggregates(
    side: Side,
    stats: &[&Arc<MethodStats>],
    encoder: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    use names::aggregate as agg;
    let now = Instant::now();
    let shown: Vec<_> = stats
        .iter()
        .filter_map(|s| {
            s.extras
                .aggregate
                .as_ref()
                .map(|a| (s, a.window.snapshot(now), a.qps.snapshot(now)))
        })
        .collect();
    if shown.is_empty() {
        return Ok(());
    }
    for (n, key) in agg::COUNTERS.iter().enumerate() {
        let name = side_name(side, *key);
        let mut m = encoder.encode_descriptor(&name, key.help, None, MetricType::Gauge)?;
        for (s, w, _) in &shown {
            let v = w.counts.get(n).copied().unwrap_or(0);
            ConstGauge::new(clamp(v)).encode(m.encode_family(&s.labels())?)?;
        }
    }
    let name = side_name(side, agg::QPS);
    let mut m = encoder.encode_descriptor(&name, agg::QPS.help, None, MetricType::Gauge)?;
    for (s, _, q) in &shown {
        let calls = q.counts.first().copied().unwrap_or(0);
        let qps = calls as f64 * 1000.0 / q.span_ms as f64;
        ConstGauge::new(qps).encode(m.encode_family(&s.labels())?)?;
    }
    let timed: Vec<_> = shown.iter().filter(|(_, w, _)| w.rt.0 > 0).collect();
    if timed.is_empty() {
        return Ok(());
    }
    for (key, q) in agg::RT_QUANTILES {
        let name = side_name(side, key);
        let mut m = encoder.encode_descriptor(&name, key.help, None, MetricType::Gauge)?;
        for (s, w, _) in &timed {
            let v = w.quantile(q).unwrap_or(0.0);
            ConstGauge::new(v).encode(m.encode_family(&s.labels())?)?;
        }
    }
    type Pick = fn((u64, u64, u64, u64)) -> f64;
    let gauges: [(MethodKey, Pick); 3] = [
        (agg::RT_MIN, |r| r.2 as f64),
        (agg::RT_MAX, |r| r.3 as f64),
        (agg::RT_AVG, |r| r.1 as f64 / r.0.max(1) as f64),
    ];
    for (key, pick) in gauges {
        let name = side_name(side, key);
        let mut m = encoder.encode_descriptor(&name, key.help, None, MetricType::Gauge)?;
        for (s, w, _) in &timed {
            ConstGauge::new(pick(w.rt)).encode(m.encode_family(&s.labels())?)?;
        }
    }
    Ok(())
}
