#![doc = include_str!("../README.md")]

mod encode_windows;
mod events;
mod filter;
pub mod names;
mod registry;
mod stats;
pub mod trace;
mod window;

use rubbo_common::{ExtensionTable, Filter};
use std::sync::Arc;

pub use events::RegistryOp;
pub use filter::{MetricsFilter, ORDER as METRICS_ORDER};
pub use registry::{Aggregation, Metrics};
pub use stats::{Ending, MethodStats, Snapshot};
pub use trace::{TraceContext, TracingFilter};
pub use window::DEFAULT_HISTOGRAM_BUCKETS_MS;

/// The filter names, Java's.
pub mod filter_names {
    /// The provider metrics filter (Java's `MetricsProviderFilter`).
    pub const METRICS_PROVIDER: &str = "metrics-provider";
    /// The consumer metrics filter (Java's `MetricsConsumerFilter`, a cluster filter).
    pub const METRICS_CONSUMER: &str = "metricsConsumerFilter";
    /// The provider tracing filter (Java's `ObservationReceiverFilter`).
    pub const OBSERVATION_RECEIVER: &str = "observationreceiver";
    /// The consumer tracing filter (Java's `ObservationSenderFilter`, a cluster filter).
    pub const OBSERVATION_SENDER: &str = "observationsender";
}

/// Adds the two metrics filters, recording in `metrics`, to `table` under their
/// [`filter_names`].
///
/// ```
/// let mut table = rubbo_common::ExtensionTable::new("filter", "");
/// rubbo_metrics::register_metrics_filters(&mut table, &rubbo_metrics::Metrics::new("demo"));
/// assert!(table.contains("metrics-provider") && table.contains("metricsConsumerFilter"));
/// ```
pub fn register_metrics_filters(table: &mut ExtensionTable<dyn Filter>, metrics: &Metrics) {
    table.register(
        filter_names::METRICS_PROVIDER,
        Arc::new(MetricsFilter::provider(metrics.clone())),
    );
    table.register(
        filter_names::METRICS_CONSUMER,
        Arc::new(MetricsFilter::consumer(metrics.clone())),
    );
}

/// Adds the two tracing filters to `table` under their [`filter_names`].
///
/// ```
/// let mut table = rubbo_common::ExtensionTable::new("filter", "");
/// rubbo_metrics::register_tracing_filters(&mut table);
/// assert!(table.contains("observationsender") && table.contains("observationreceiver"));
/// ```
pub fn register_tracing_filters(table: &mut ExtensionTable<dyn Filter>) {
    table.register(
        filter_names::OBSERVATION_SENDER,
        Arc::new(TracingFilter::sender()),
    );
    table.register(
        filter_names::OBSERVATION_RECEIVER,
        Arc::new(TracingFilter::receiver()),
    );
}
