//! [`MetricsFilter`]: records each call in a [`Metrics`] (Java's
//! `MetricsProviderFilter` and `MetricsConsumerFilter` with `MetricsClusterFilter`).

use std::sync::Arc;
use std::time::Instant;

use foldhash::HashMap;
use parking_lot::RwLock;
use rubbo_common::filter::Activate;
use rubbo_common::keys::METHODS_KEY;
use rubbo_common::{
    BoxInvoker, ErrorKind, Filter, Invocation, InvokeFuture, Invoker, RpcError, RpcResult, Side,
    Url,
};

use crate::Metrics;
use crate::stats::{Ending, MethodStats};

/// The generic call methods, whose first argument names the method called (Java's
/// `RpcUtils.getMethodName`).
const GENERIC_METHODS: [&str; 2] = ["$invoke", "$invokeAsync"];

/// Java's order of both metrics filters: `Integer.MIN_VALUE + 100`, outside every
/// other filter but tracing's.
pub const ORDER: i32 = i32::MIN + 100;

/// Counts every call, its ending and its response time, per method, in a
/// [`Metrics`]: on a provider (name `metrics-provider`, provider stage) or a consumer
/// (name `metricsConsumerFilter`, once per call around the cluster, as Java's
/// `ClusterFilter`). Both run unasked, at Java's order `MIN + 100`, wherever they are
/// registered: the bootstrap registers them when metrics are enabled.
///
/// The statistics of the methods the URL lists (`methods`) are looked up when the
/// chain is built; a call costs a hash lookup by method name, a few relaxed atomic
/// operations and the boxed future that waits for the answer: no lock, no label
/// allocation. A method the URL does not list (a generic call's) gets its
/// statistics on its first call, under a read-mostly lock.
///
/// ```
/// use rubbo_common::{filter::Stage, Filter};
/// use rubbo_metrics::{Metrics, MetricsFilter};
///
/// let metrics = Metrics::new("demo");
/// let provider = MetricsFilter::provider(metrics.clone());
/// let consumer = MetricsFilter::consumer(metrics);
/// assert!(provider.activate().runs_in(Stage::Provider));
/// assert!(consumer.activate().runs_in(Stage::Cluster));
/// fn _dyn_ok(_: &dyn Filter) {}
/// _dyn_ok(&provider);
/// ```
#[derive(Debug, Clone)]
pub struct MetricsFilter {
    metrics: Metrics,
    side: Side,
}

impl MetricsFilter {
    /// The provider-side filter (Java's `metrics-provider`).
    pub fn provider(metrics: Metrics) -> Self {
        MetricsFilter {
            metrics,
            side: Side::Provider,
        }
    }

    /// The consumer-side filter (Java's `metricsConsumerFilter`).
    pub fn consumer(metrics: Metrics) -> Self {
        MetricsFilter {
            metrics,
            side: Side::Consumer,
        }
    }
}

/// The service a URL stands for: interface, group, version (`""` when unset).
fn service_of(url: &Url) -> (String, String, String) {
    (
        url.service_interface().unwrap_or_default().to_owned(),
        url.group().unwrap_or_default().to_owned(),
        url.version().unwrap_or_default().to_owned(),
    )
}

impl Filter for MetricsFilter {
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        let (interface, group, version) = service_of(next.url());
        let declared = next
            .url()
            .get_param(METHODS_KEY)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(|m| {
                let stats = self
                    .metrics
                    .method(self.side, &interface, &group, &version, m);
                (Box::<str>::from(m), stats)
            })
            .collect();
        Arc::new(Recorded {
            next,
            metrics: self.metrics.clone(),
            side: self.side,
            interface,
            group,
            version,
            declared,
            others: RwLock::default(),
        })
    }

    fn activate(&self) -> Activate {
        match self.side {
            Side::Provider => Activate::provider(ORDER),
            Side::Consumer => Activate::cluster(ORDER),
        }
    }
}

/// How many methods a URL does not list get series of their own, per service.
const MAX_UNDECLARED_METHODS: usize = 256;

/// The method label of calls to undeclared methods past [`MAX_UNDECLARED_METHODS`].
const OTHER_METHODS: &str = "<other>";

#[derive(Debug)]
struct Recorded {
    next: BoxInvoker,
    metrics: Metrics,
    side: Side,
    interface: String,
    group: String,
    version: String,
    /// The statistics of the methods the URL lists, resolved up front.
    declared: HashMap<Box<str>, Arc<MethodStats>>,
    /// Those of other methods, made on their first call.
    others: RwLock<HashMap<Box<str>, Arc<MethodStats>>>,
}

/// The method a call is counted under: the called one for a generic call.
fn method_name(inv: &Invocation) -> &str {
    let method = inv.method();
    if GENERIC_METHODS.contains(&method) {
        if let Some(name) = inv
            .arguments()
            .as_values()
            .and_then(|v| v.first())
            .and_then(|v| v.as_str())
        {
            return name;
        }
    }
    method
}

impl Recorded {
    fn stats(&self, method: &str) -> Arc<MethodStats> {
        if let Some(s) = self.declared.get(method) {
            return s.clone();
        }
        if let Some(s) = self.others.read().get(method) {
            return s.clone();
        }
        let mut others = self.others.write();
        // A peer names the method: past a bound, undeclared names share one series
        // instead of growing memory and every scrape without limit.
        let method = if others.len() >= MAX_UNDECLARED_METHODS {
            OTHER_METHODS
        } else {
            method
        };
        others
            .entry(method.into())
            .or_insert_with(|| {
                self.metrics.method(
                    self.side,
                    &self.interface,
                    &self.group,
                    &self.version,
                    method,
                )
            })
            .clone()
    }
}

/// A call in flight: counted as abandoned if dropped before it ends.
struct InFlight {
    stats: Option<Arc<MethodStats>>,
    start: Instant,
    side: Side,
}

impl InFlight {
    fn finish(mut self, result: &Result<RpcResult, RpcError>) {
        let Some(stats) = self.stats.take() else {
            return;
        };
        let ending = match result {
            Ok(r) if r.exception().is_some() => Ending::Business,
            Ok(_) => Ending::Succeeded,
            Err(e) => {
                if self.side == Side::Consumer
                    && matches!(e.kind(), ErrorKind::Forbidden | ErrorKind::NoProvider)
                {
                    stats.unavailable();
                }
                Ending::of_error(e.kind())
            }
        };
        let now = Instant::now();
        stats.finish_at(ending, now.saturating_duration_since(self.start), now);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(stats) = self.stats.take() {
            stats.abandon();
        }
    }
}

impl Invoker for Recorded {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let stats = self.stats(method_name(&inv));
        let start = Instant::now();
        stats.start_at(start);
        let flight = InFlight {
            stats: Some(stats),
            start,
            side: self.side,
        };
        let call = self.next.invoke(inv);
        Box::pin(async move {
            let result = call.await;
            flight.finish(&result);
            result
        })
    }

    fn url(&self) -> &Url {
        self.next.url()
    }

    fn is_available(&self) -> bool {
        self.next.is_available()
    }

    fn destroy(&self) {
        self.next.destroy()
    }
}
