//! [`Metrics`]: one application's metrics, and their Prometheus text.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use rubbo_common::Side;
use rubbo_common::executor::Executions;

use crate::encode_windows::{encode_aggregates, encode_histograms};
use crate::events::Events;
use crate::names::{self, MethodKey, labels};
use crate::stats::{Aggregate, Extras, MethodStats};
use crate::window::{DEFAULT_HISTOGRAM_BUCKETS_MS, FixedHistogram, Window};

/// Numbers the applications of this process, for `application_module_id` (Java's
/// application model ids `1.1`, `1.2`...).
static APPLICATIONS: AtomicU64 = AtomicU64::new(1);

/// Which statistics one [`MethodStats`] holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct StatsKey {
    side: Side,
    interface: String,
    group: String,
    version: String,
    method: String,
}

/// Every statistics made, by key and in the order made (the export order).
#[derive(Debug, Clone, Default)]
struct Table {
    by_key: HashMap<StatsKey, Arc<MethodStats>>,
    ordered: Vec<Arc<MethodStats>>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) application: String,
    pub(crate) module_id: String,
    pub(crate) application_version: String,
    pub(crate) ip: String,
    pub(crate) hostname: String,
    service_level: bool,
    stats: Mutex<Table>,
    /// The provider servers' execution bounds, by pool name, in the order added.
    pools: Mutex<Vec<(String, Arc<Executions>)>>,
    /// The histogram's bucket bounds in ms, when the histogram is on.
    histogram: Option<Arc<[u64]>>,
    /// The sliding windows' shape, when aggregation is on.
    aggregation: Option<Aggregation>,
    /// The registry and config center series.
    pub(crate) events: Mutex<Events>,
}

/// The shape of the sliding windows of Java's aggregation
/// (`dubbo.metrics.aggregation.*`, Java's `AggregationConfig` defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aggregation {
    /// Panes per window (`bucket-num`, default 10).
    pub bucket_num: u32,
    /// The window of the aggregated counters and response times
    /// (`time-window-seconds`, default 120 s).
    pub time_window: Duration,
    /// The window of the QPS (`qps-time-window-mill-seconds`, default 3 s).
    pub qps_time_window: Duration,
}

impl Default for Aggregation {
    fn default() -> Self {
        Aggregation {
            bucket_num: 10,
            time_window: Duration::from_secs(120),
            qps_time_window: Duration::from_secs(3),
        }
    }
}

/// One application's metrics (Java's `DefaultMetricsCollector` with its
/// `PrometheusMetricsReporter`): the request counters, in-flight gauges and response
/// times of every method on each side, recorded by the
/// [`MetricsFilter`](crate::MetricsFilter)s, and the application info; [`encode`](Self::encode)
/// writes them in the Prometheus text format with Java Dubbo 3.3's names and labels.
///
/// ```
/// use rubbo_common::Side;
/// use rubbo_metrics::{Ending, Metrics};
/// use std::time::Duration;
///
/// let metrics = Metrics::new("greeter").with_ip("10.0.0.7");
/// let hello = metrics.method(Side::Provider, "org.example.Greeter", "", "1.0.0", "hello");
/// hello.start();
/// hello.finish(Ending::Succeeded, Duration::from_millis(4));
/// let text = metrics.encode();
/// let requests = text
///     .lines()
///     .find(|l| l.starts_with("dubbo_provider_requests_total{"))
///     .unwrap();
/// assert!(requests.contains(
///     "application_name=\"greeter\",group=\"\",interface=\"org.example.Greeter\",\
///      method=\"hello\",version=\"1.0.0\"}"
/// ));
/// assert!(requests.ends_with("} 1"));
/// assert!(text.contains("dubbo_provider_rt_milliseconds_max{"));
/// ```
#[derive(Debug, Clone)]
pub struct Metrics {
    pub(crate) inner: Arc<Inner>,
    registry: Arc<Registry>,
}

impl Metrics {
    /// The metrics of application `application`: `ip` 127.0.0.1, the hostname the
    /// system gives, method-level statistics.
    pub fn new(application: impl Into<String>) -> Self {
        let n = APPLICATIONS.fetch_add(1, Ordering::Relaxed);
        Metrics::build(Inner {
            application: application.into(),
            module_id: format!("1.{n}"),
            application_version: String::new(),
            ip: "127.0.0.1".to_owned(),
            hostname: hostname(),
            service_level: false,
            stats: Mutex::default(),
            pools: Mutex::default(),
            histogram: None,
            aggregation: None,
            events: Mutex::default(),
        })
    }

    fn build(inner: Inner) -> Self {
        let inner = Arc::new(inner);
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Exported(inner.clone())));
        Metrics {
            inner,
            registry: Arc::new(registry),
        }
    }

    fn with(self, f: impl FnOnce(&mut Inner)) -> Self {
        let Metrics { inner, registry } = self;
        // The registry's collector holds the other reference.
        drop(registry);
        let mut inner = Arc::try_unwrap(inner).unwrap_or_else(|shared| Inner {
            application: shared.application.clone(),
            module_id: shared.module_id.clone(),
            application_version: shared.application_version.clone(),
            ip: shared.ip.clone(),
            hostname: shared.hostname.clone(),
            service_level: shared.service_level,
            stats: Mutex::new(shared.stats.lock().clone()),
            pools: Mutex::new(shared.pools.lock().clone()),
            histogram: shared.histogram.clone(),
            aggregation: shared.aggregation,
            events: Mutex::new(shared.events.lock().clone()),
        });
        f(&mut inner);
        Metrics::build(inner)
    }

    /// The `ip` label of the application info (the address the application
    /// advertises).
    pub fn with_ip(self, ip: impl Into<String>) -> Self {
        let ip = ip.into();
        self.with(|i| i.ip = ip)
    }

    /// The `application_version` label of the application info (Java puts the
    /// framework's version there).
    pub fn with_application_version(self, version: impl Into<String>) -> Self {
        let version = version.into();
        self.with(|i| i.application_version = version)
    }

    /// Service-level statistics (Java's `dubbo.metrics.rpc-level=SERVICE`): one
    /// series per service, with an empty `method` label.
    pub fn with_service_level(self, service_level: bool) -> Self {
        self.with(|i| i.service_level = service_level)
    }

    /// Records each call's response time in Java's histogram too
    /// (`dubbo.metrics.histogram.enabled=true`; buckets 100, 300, 500, 1000, 3000, 5000
    /// and 10000 ms, as Java's defaults), exported as
    /// `dubbo_{side}_rt_milliseconds_histogram_seconds`. Applies to the methods whose
    /// statistics are made afterwards: set it before the filters run.
    pub fn with_histogram(self, enabled: bool) -> Self {
        self.with_histogram_buckets(enabled.then_some(&DEFAULT_HISTOGRAM_BUCKETS_MS[..]))
    }

    /// [`with_histogram`](Self::with_histogram) with these bucket bounds in ms (Java's
    /// `dubbo.metrics.histogram.buckets-ms`); `None` turns it off.
    pub fn with_histogram_buckets(self, buckets_ms: Option<&[u64]>) -> Self {
        let buckets = buckets_ms.map(Arc::from);
        self.with(|i| i.histogram = buckets)
    }

    /// Keeps Java's sliding-window aggregates (`dubbo.metrics.aggregation.enabled=true`):
    /// calls per second, response time quantiles, min, max and average, and the
    /// request counters over the window; `None` turns them off. Applies to the
    /// methods whose statistics are made afterwards.
    pub fn with_aggregation(self, aggregation: Option<Aggregation>) -> Self {
        self.with(|i| i.aggregation = aggregation)
    }

    /// The application name.
    pub fn application(&self) -> &str {
        &self.inner.application
    }

    /// The statistics of `method` of `interface` (`group` and `version` empty when
    /// none) on `side`, made and exported at 0 on first asking.
    pub fn method(
        &self,
        side: Side,
        interface: &str,
        group: &str,
        version: &str,
        method: &str,
    ) -> Arc<MethodStats> {
        let i = &self.inner;
        let method = if i.service_level { "" } else { method };
        let key = StatsKey {
            side,
            interface: interface.to_owned(),
            group: group.to_owned(),
            version: version.to_owned(),
            method: method.to_owned(),
        };
        let mut stats = i.stats.lock();
        if let Some(s) = stats.by_key.get(&key) {
            return s.clone();
        }
        // Sorted by name, as Micrometer writes them.
        let labels = vec![
            (labels::APPLICATION_MODULE_ID, i.module_id.clone()),
            (labels::APPLICATION_NAME, i.application.clone()),
            (labels::GROUP, key.group.clone()),
            (labels::INTERFACE, key.interface.clone()),
            (labels::METHOD, key.method.clone()),
            (labels::VERSION, key.version.clone()),
        ];
        let extras = Extras {
            histogram: i.histogram.as_deref().map(FixedHistogram::new),
            aggregate: i.aggregation.map(|a| Aggregate {
                window: Window::new(
                    a.bucket_num,
                    a.time_window,
                    names::aggregate::COUNTERS.len(),
                    true,
                ),
                qps: Window::new(a.bucket_num, a.qps_time_window, 1, false),
            }),
        };
        let s = Arc::new(MethodStats::with_extras(side, labels, extras));
        stats.by_key.insert(key, s.clone());
        stats.ordered.push(s.clone());
        s
    }

    /// Exports the gauges of a provider server's execution bound under `name` (Java's
    /// thread pool metrics; [`names::thread_pool::server_pool_name`] names a server's
    /// pool as Java does). Its counters are read on each scrape: recording them costs
    /// the pool's own atomics, nothing here. A pool of the same name is replaced.
    ///
    /// ```
    /// use rubbo_common::executor::{ExecutorBound, Executions};
    /// use rubbo_metrics::Metrics;
    ///
    /// let metrics = Metrics::new("demo");
    /// let pool = Executions::new(ExecutorBound { threads: 4, queues: 0 });
    /// metrics.thread_pool("DubboServerHandler-20880", pool);
    /// let text = metrics.encode();
    /// let core = text.lines().find(|l| l.starts_with("dubbo_thread_pool_core_size{")).unwrap();
    /// assert!(core.contains("thread_pool_name=\"DubboServerHandler-20880\"") && core.ends_with(" 4"));
    /// ```
    pub fn thread_pool(&self, name: impl Into<String>, pool: Arc<Executions>) {
        let name = name.into();
        let mut pools = self.inner.pools.lock();
        match pools.iter_mut().find(|(n, _)| *n == name) {
            Some(p) => p.1 = pool,
            None => pools.push((name, pool)),
        }
    }

    /// The metrics in the Prometheus text format (OpenMetrics flavour, ending in
    /// `# EOF`), what Java's QoS `metrics` command answers.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            // Writing to a String cannot fail; answer what was written.
            let _ = writeln!(out, "# EOF");
        }
        out
    }
}

/// The host's name, as Java's `NetUtils.getLocalHostName` gives it; `localhost` when
/// the system does not say.
fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "localhost".to_owned())
}

/// The collector the registry calls on each scrape.
#[derive(Debug)]
struct Exported(Arc<Inner>);

pub(crate) fn side_name(side: Side, key: MethodKey) -> String {
    format!("dubbo_{}_{}", side.as_str(), key.suffix)
}

impl Collector for Exported {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let i = &self.0;
        let info = ConstGauge::new(1i64);
        let info_labels = [
            (labels::APPLICATION_MODULE_ID, i.module_id.as_str()),
            (labels::APPLICATION_NAME, i.application.as_str()),
            (labels::APPLICATION_VERSION, i.application_version.as_str()),
            (labels::GIT_COMMIT_ID, ""),
            (labels::HOSTNAME, i.hostname.as_str()),
            (labels::IP, i.ip.as_str()),
        ];
        let mut m = encoder.encode_descriptor(
            names::APPLICATION_INFO,
            names::APPLICATION_INFO_HELP,
            None,
            MetricType::Gauge,
        )?;
        info.encode(m.encode_family(&info_labels)?)?;

        encode_thread_pools(i, &mut encoder)?;

        let all: Vec<Arc<MethodStats>> = i.stats.lock().ordered.clone();
        let snaps: Vec<_> = all.iter().map(|s| (s, s.snapshot())).collect();
        for side in [Side::Provider, Side::Consumer] {
            let of_side = || snaps.iter().filter(move |(s, _)| s.side() == side);
            if of_side().next().is_none() {
                continue;
            }
            for (n, key) in names::COUNTERS.iter().enumerate() {
                let shown: Vec<_> = of_side()
                    .filter(|(_, snap)| key.initialized || snap.counters[n] > 0)
                    .collect();
                if shown.is_empty() {
                    continue;
                }
                let name = side_name(side, *key);
                let mut m =
                    encoder.encode_descriptor(&name, key.help, None, MetricType::Counter)?;
                for (s, snap) in shown {
                    ConstCounter::new(snap.counters[n]).encode(m.encode_family(&s.labels())?)?;
                }
            }
            let name = side_name(side, names::REQUESTS_PROCESSING);
            let mut m = encoder.encode_descriptor(
                &name,
                names::REQUESTS_PROCESSING.help,
                None,
                MetricType::Gauge,
            )?;
            for (s, snap) in of_side() {
                ConstGauge::new(snap.processing).encode(m.encode_family(&s.labels())?)?;
            }
            let timed: Vec<_> = of_side()
                .filter_map(|(s, snap)| snap.rt.map(|rt| (s, rt)))
                .collect();
            let stats: Vec<&Arc<MethodStats>> = of_side().map(|(s, _)| *s).collect();
            encode_histograms(side, &stats, &mut encoder)?;
            encode_aggregates(side, &stats, &mut encoder)?;
            if timed.is_empty() {
                continue;
            }
            type Pick = fn((u64, u64, u64, u64, u64)) -> i64;
            let gauges: [(MethodKey, Pick); 5] = [
                (names::RT_LAST, |r| clamp(r.0)),
                (names::RT_MIN, |r| clamp(r.1)),
                (names::RT_MAX, |r| clamp(r.2)),
                (names::RT_SUM, |r| clamp(r.3)),
                (names::RT_AVG, |r| clamp(r.3 / r.4.max(1))),
            ];
            for (key, pick) in gauges {
                let name = side_name(side, key);
                let mut m = encoder.encode_descriptor(&name, key.help, None, MetricType::Gauge)?;
                for (s, rt) in &timed {
                    ConstGauge::new(pick(*rt)).encode(m.encode_family(&s.labels())?)?;
                }
            }
        }
        i.events.lock().encode(&mut encoder)?;
        Ok(())
    }
}

/// Java's thread pool gauges, one series per pool (labels sorted, as Micrometer
/// writes them). Java's core and max sizes are both `threads` for its default fixed
/// pool; its thread count (threads started, which a fixed pool never stops) is the
/// largest number that ever ran at once here, as a task needs no thread of its own.
fn encode_thread_pools(i: &Inner, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let pools = i.pools.lock().clone();
    if pools.is_empty() {
        return Ok(());
    }
    use names::thread_pool as tp;
    type Read = fn(&Executions) -> u64;
    let gauges: [((&str, &str), Read); 7] = [
        (tp::CORE_SIZE, |e| size(e.bound().threads)),
        (tp::LARGEST_SIZE, |e| size(e.largest())),
        (tp::MAX_SIZE, |e| size(e.bound().threads)),
        (tp::ACTIVE_SIZE, |e| size(e.running())),
        (tp::THREAD_COUNT, |e| size(e.largest())),
        (tp::QUEUE_SIZE, |e| size(e.queued())),
        (tp::REJECT_THREAD_COUNT, Executions::rejected),
    ];
    let pid = std::process::id().to_string();
    for ((name, help), read) in gauges {
        let mut m = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for (pool, e) in &pools {
            let labels = [
                (labels::APPLICATION_NAME, i.application.as_str()),
                (labels::HOSTNAME, i.hostname.as_str()),
                (labels::IP, i.ip.as_str()),
                (labels::PID, pid.as_str()),
                (labels::THREAD_POOL_NAME, pool.as_str()),
            ];
            ConstGauge::new(clamp(read(e))).encode(m.encode_family(&labels)?)?;
        }
    }
    Ok(())
}

fn size(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

pub(crate) fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::Ending;

    fn line<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
        text.lines().find(|l| l.starts_with(prefix))
    }

    #[test]
    fn exports_java_names_and_labels() {
        let metrics = Metrics::new("demo").with_ip("10.1.2.3");
        let id = metrics.inner.module_id.clone();
        let s = metrics.method(Side::Consumer, "org.example.Greeter", "g", "1.0.0", "hello");
        assert!(Arc::ptr_eq(
            &s,
            &metrics.method(Side::Consumer, "org.example.Greeter", "g", "1.0.0", "hello")
        ));
        s.start();
        s.finish(Ending::Business, Duration::from_millis(12));
        let text = metrics.encode();
        let labels = format!(
            "{{application_module_id=\"{id}\",application_name=\"demo\",group=\"g\",\
             interface=\"org.example.Greeter\",method=\"hello\",version=\"1.0.0\"}}"
        );
        for (name, value) in [
            ("dubbo_consumer_requests_total", "1"),
            ("dubbo_consumer_requests_succeed_total", "0"),
            ("dubbo_consumer_requests_business_failed_total", "1"),
            ("dubbo_consumer_requests_failed_total", "1"),
            ("dubbo_consumer_requests_processing", "0"),
            ("dubbo_consumer_rt_milliseconds_max", "12"),
            ("dubbo_consumer_rt_milliseconds_avg", "12"),
        ] {
            let want = format!("{name}{labels} {value}");
            assert!(text.lines().any(|l| l == want), "no {want} in\n{text}");
        }
        // Series Java does not export before their first event.
        assert!(line(&text, "dubbo_consumer_requests_timeout_total").is_none());
        assert!(line(&text, "dubbo_provider_").is_none(), "{text}");
        let info = line(&text, "dubbo_application_info_total{").unwrap();
        assert!(info.contains("application_name=\"demo\"") && info.contains("ip=\"10.1.2.3\""));
        assert!(info.ends_with(" 1"), "{info}");
        assert!(
            text.contains("# TYPE dubbo_consumer_requests counter"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn thread_pool_gauges_read_the_pool_at_each_scrape() {
        use rubbo_common::executor::ExecutorBound;
        let metrics = Metrics::new("demo").with_ip("10.1.2.3");
        let pool = Executions::new(ExecutorBound {
            threads: 2,
            queues: 1,
        });
        metrics.thread_pool(names::thread_pool::server_pool_name(20880), pool.clone());
        let labels = format!(
            "{{application_name=\"demo\",hostname=\"{}\",ip=\"10.1.2.3\",pid=\"{}\",\
             thread_pool_name=\"DubboServerHandler-20880\"}}",
            metrics.inner.hostname,
            std::process::id()
        );
        let check = |want: &[(&str, u64)]| {
            let text = metrics.encode();
            for (name, value) in want {
                let line = format!("{name}{labels} {value}");
                assert!(text.lines().any(|l| l == line), "no {line} in\n{text}");
            }
        };
        let admitted: Vec<_> = (0..3).map(|_| pool.try_admit().unwrap()).collect();
        assert!(pool.try_admit().is_err());
        check(&[
            ("dubbo_thread_pool_core_size", 2),
            ("dubbo_thread_pool_max_size", 2),
            ("dubbo_thread_pool_largest_size", 2),
            ("dubbo_thread_pool_active_size", 2),
            ("dubbo_thread_pool_thread_count", 2),
            ("dubbo_thread_pool_queue_size", 1),
            ("dubbo_thread_pool_reject_thread_count", 1),
        ]);
        drop(admitted);
        check(&[
            ("dubbo_thread_pool_largest_size", 2),
            ("dubbo_thread_pool_active_size", 0),
            ("dubbo_thread_pool_queue_size", 0),
            ("dubbo_thread_pool_reject_thread_count", 1),
        ]);
        assert_eq!((pool.tasks(), pool.completed()), (3, 3));
        // Java writes them as gauges, the reject count too.
        let text = metrics.encode();
        assert!(text.contains("# TYPE dubbo_thread_pool_reject_thread_count gauge"));
        // Added again under the same name: replaced, not doubled.
        metrics.thread_pool("DubboServerHandler-20880", pool);
        let text = metrics.encode();
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("dubbo_thread_pool_core_size{"))
                .count(),
            1
        );
    }

    #[test]
    fn windows_show_at_zero_and_histogram_with_its_first_call() {
        let metrics = Metrics::new("demo")
            .with_histogram(true)
            .with_aggregation(Some(Aggregation::default()));
        let s = metrics.method(Side::Provider, "S", "", "", "m");
        let text = metrics.encode();
        // Java initializes the aggregated counters and the QPS with the method.
        for name in [
            "dubbo_provider_requests_total_aggregate{",
            "dubbo_provider_requests_failed_service_unavailable_total_aggregate{",
            "dubbo_provider_qps_total{",
        ] {
            let value: f64 = line(&text, name)
                .unwrap()
                .rsplit(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(value, 0.0, "{name}\n{text}");
        }
        assert!(line(&text, "dubbo_provider_rt_milliseconds_p99").is_none());
        assert!(line(&text, "dubbo_provider_rt_milliseconds_histogram").is_none());
        s.start();
        s.finish(Ending::Succeeded, Duration::from_millis(250));
        let text = metrics.encode();
        assert!(text.contains("# TYPE dubbo_provider_rt_milliseconds_histogram_seconds histogram"));
        let bucket = |le: &str| {
            text.lines()
                .find(|l| {
                    l.starts_with("dubbo_provider_rt_milliseconds_histogram_seconds_bucket{")
                        && l.contains(&format!("le=\"{le}\""))
                })
                .unwrap()
                .rsplit(' ')
                .next()
                .unwrap()
                .to_owned()
        };
        assert_eq!(
            (bucket("0.1"), bucket("0.3"), bucket("+Inf")),
            ("0".into(), "1".into(), "1".into())
        );
        assert!(
            line(
                &text,
                "dubbo_provider_rt_milliseconds_histogram_seconds_sum{"
            )
            .unwrap()
            .ends_with(" 0.25")
        );
        assert!(
            line(&text, "dubbo_provider_rt_milliseconds_p99{")
                .unwrap()
                .ends_with(" 250.0"),
            "{text}"
        );
        assert!(
            line(&text, "dubbo_provider_requests_succeed_aggregate{")
                .unwrap()
                .ends_with(" 1")
        );
    }

    #[test]
    fn service_level_drops_the_method() {
        let metrics = Metrics::new("demo").with_service_level(true);
        let a = metrics.method(Side::Provider, "S", "", "", "a");
        let b = metrics.method(Side::Provider, "S", "", "", "b");
        assert!(Arc::ptr_eq(&a, &b));
        assert!(a.labels().contains(&(labels::METHOD, String::new())));
    }
}
