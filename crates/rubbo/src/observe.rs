//! Metrics and tracing of a [`Rubbo`] application ([`rubbo_metrics`]): the builder's
//! switches, the `dubbo.metrics.*` / `dubbo.tracing.*` configuration, and the
//! filters they put in the application's filter table.
//!
//! # Off unless asked
//!
//! Java collects metrics whenever its metrics module is on the class path and traces
//! when `dubbo.tracing.enabled=true`. Rubbo does both only when asked: with
//! [`RubboBuilder::metrics`] / [`RubboBuilder::tracing`], or in the configuration with
//! `dubbo.metrics.protocol=prometheus` (or `default`), `dubbo.metrics.enabled=true`,
//! `dubbo.metrics.prometheus.exporter.enabled=true`, and `dubbo.tracing.enabled=true`.
//! Off, no filter is registered and calls cost nothing more. On, the metrics filters
//! `metrics-provider` and `metricsConsumerFilter` and the tracing filters
//! `observationreceiver` and `observationsender` run on every service and reference
//! (remove one with `service.filter=-metrics-provider`, as in Java).
//!
//! With `dubbo.tracing.tracing-exporter.otlp-config.endpoint` set too, and the
//! facade's `otlp` feature, the spans are exported over OTLP ([`crate::otlp`]); the
//! exporter is flushed by [`Rubbo::shutdown`].
//!
//! The Prometheus text is the QoS `metrics` command (`GET /metrics` on the QoS
//! port), as Java 3.3 serves it, and [`Rubbo::metrics`] in code. Java 3.3 has no
//! port of its own for it (`dubbo.metrics.prometheus.exporter.metrics.port` is a
//! constant no code reads), and neither has Rubbo.
//!
//! (This file is the `bootstrap::observe` module, beside `qos.rs`.)

use rubbo_common::{ExtensionTable, Filter, Url, keys};
use rubbo_config::Config;
use rubbo_metrics::Metrics;

use super::{Rubbo, RubboBuilder};

/// The keys read from `dubbo.*` in the configuration, each the builder's key too.
const CONFIG_KEYS: &[&str] = &[
    keys::METRICS_ENABLED_KEY,
    keys::METRICS_PROTOCOL_KEY,
    keys::METRICS_ENABLE_RPC_KEY,
    keys::METRICS_RPC_LEVEL_KEY,
    keys::PROMETHEUS_EXPORTER_ENABLED_KEY,
    keys::METRICS_HISTOGRAM_ENABLED_KEY,
    keys::METRICS_AGGREGATION_ENABLED_KEY,
    keys::METRICS_AGGREGATION_BUCKET_NUM_KEY,
    keys::METRICS_AGGREGATION_TIME_WINDOW_KEY,
    keys::TRACING_ENABLED_KEY,
];

/// The protocols Java's metrics know.
const METRICS_PROTOCOLS: &[&str] = &["prometheus", "default"];

/// The builder's metrics and tracing settings, by Java's keys.
#[derive(Debug, Clone, Default)]
pub(crate) struct ObserveSettings {
    params: Vec<(String, String)>,
    /// An exporter the application built itself ([`RubboBuilder::otlp`]).
    #[cfg(feature = "otlp")]
    otlp: Option<crate::otlp::OtlpTracing>,
}

impl ObserveSettings {
    fn set(&mut self, key: &str, value: String) {
        self.params.retain(|(k, _)| k != key);
        self.params.push((key.to_owned(), value));
    }

    /// Nothing configured: no metrics, tracing or exporter (all off by default).
    pub(crate) fn is_empty(&self) -> bool {
        #[cfg(feature = "otlp")]
        if self.otlp.is_some() {
            return false;
        }
        self.params.is_empty()
    }

    fn url(&self) -> Url {
        Url::new("metrics", "", 0).with_params(self.params.iter().map(|(k, v)| (k, v)))
    }

    /// Takes `dubbo.metrics.*` and `dubbo.tracing.*` from the configuration.
    pub(crate) fn apply(&mut self, config: &Config) {
        for key in CONFIG_KEYS {
            if let Some(v) = config.get(&format!("dubbo.{key}")) {
                self.set(key, v.trim().to_owned());
            }
        }
        // The rest of `dubbo.tracing.*`: sampling and the OTLP exporter.
        let tracing: Vec<(String, String)> = config
            .iter()
            .filter_map(|(k, e)| {
                let key = k.strip_prefix("dubbo.")?;
                (key.starts_with("tracing.") && key != keys::TRACING_ENABLED_KEY)
                    .then(|| (key.to_owned(), e.value.trim().to_owned()))
            })
            .collect();
        for (k, v) in tracing {
            self.set(&k, v);
        }
    }

    /// Starts the OTLP exporter when tracing is on and an endpoint is configured (or
    /// answers the one the application gave), and sets the global subscriber to it
    /// when none is set.
    #[cfg(feature = "otlp")]
    pub(crate) fn start_otlp(
        &self,
        application: &str,
    ) -> Result<Option<crate::otlp::OtlpTracing>, rubbo_common::RpcError> {
        if let Some(otlp) = &self.otlp {
            return Ok(Some(otlp.clone()));
        }
        let get = |k: &str| {
            self.params
                .iter()
                .find(|(pk, _)| pk == k)
                .map(|(_, v)| v.as_str())
        };
        let all = self.params.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let settings = crate::otlp::OtlpSettings::from_keys(get, all)
            .map_err(|e| crate::registry_protocol::config_err(e.to_string()))?;
        let Some(settings) = settings else {
            return Ok(None);
        };
        let otlp = crate::otlp::OtlpTracing::start(&settings, application)
            .map_err(|e| crate::registry_protocol::config_err(e.to_string()))?;
        if !otlp.try_init_global() && !crate::otlp::global_is_rubbo() {
            tracing::warn!(
                "a global tracing subscriber is set already: spans are not exported unless it \
                 has the layer of rubbo::otlp::OtlpTracing (see RubboBuilder::otlp)"
            );
        }
        Ok(Some(otlp))
    }

    /// Warns that an OTLP endpoint is configured in a build without the exporter.
    #[cfg(not(feature = "otlp"))]
    pub(crate) fn start_otlp(
        &self,
        _application: &str,
    ) -> Result<Option<()>, rubbo_common::RpcError> {
        let url = self.url();
        if url.param::<keys::TracingEnabled>()
            && url.get_param(keys::TRACING_OTLP_ENDPOINT_KEY).is_some()
        {
            tracing::warn!(
                "dubbo.tracing.tracing-exporter.otlp-config.endpoint is set but rubbo was built \
                 without its `otlp` feature: spans are not exported"
            );
        }
        Ok(None)
    }

    /// Whether metrics were asked for.
    fn metrics_wanted(&self) -> bool {
        let url = self.url();
        if url.get_param(keys::METRICS_ENABLED_KEY).is_some() {
            return url.param::<keys::MetricsEnabled>();
        }
        url.param::<keys::PrometheusExporterEnabled>()
            || url
                .get_param(keys::METRICS_PROTOCOL_KEY)
                .is_some_and(|p| METRICS_PROTOCOLS.iter().any(|k| p.eq_ignore_ascii_case(k)))
    }

    /// Registers the filters asked for in `filters`; answers the application's
    /// metrics when they are on.
    pub(crate) fn install(
        &self,
        filters: &mut ExtensionTable<dyn Filter>,
        application: &str,
        host: &str,
    ) -> Option<Metrics> {
        let url = self.url();
        if url.param::<keys::TracingEnabled>() {
            rubbo_metrics::register_tracing_filters(filters);
        }
        if !self.metrics_wanted() {
            return None;
        }
        let service_level = url
            .str_param::<keys::MetricsRpcLevel>()
            .eq_ignore_ascii_case("SERVICE");
        let metrics = Metrics::new(application)
            .with_ip(host)
            .with_application_version(env!("CARGO_PKG_VERSION"))
            .with_service_level(service_level)
            .with_histogram(url.param::<keys::MetricsHistogramEnabled>())
            .with_aggregation(url.param::<keys::MetricsAggregationEnabled>().then(|| {
                rubbo_metrics::Aggregation {
                    bucket_num: url.param::<keys::MetricsAggregationBucketNum>().max(1),
                    time_window: std::time::Duration::from_secs(
                        url.param::<keys::MetricsAggregationTimeWindow>().max(1),
                    ),
                    ..Default::default()
                }
            }));
        if url.param::<keys::MetricsEnableRpc>() {
            rubbo_metrics::register_metrics_filters(filters, &metrics);
        }
        Some(metrics)
    }
}

impl RubboBuilder {
    /// Collects Prometheus metrics with Java Dubbo's names (see
    /// [`rubbo_metrics`]): every call of every service and reference is counted,
    /// and the QoS port answers `GET /metrics`. Off by default; the configuration's
    /// `dubbo.metrics.protocol=prometheus` turns it on too.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let app = rubbo::Rubbo::builder().application("demo").port(0).metrics(true).build()?;
    /// let text = app.metrics().unwrap().encode();
    /// assert!(text.contains("dubbo_application_info_total{"));
    /// # Ok::<(), rubbo::RpcError>(()) }).unwrap();
    /// ```
    pub fn metrics(mut self, enable: bool) -> Self {
        self.observe
            .set(keys::METRICS_ENABLED_KEY, enable.to_string());
        self
    }

    /// A metrics or tracing setting by Java's key under `dubbo.`:
    /// `metrics.protocol`, `metrics.enable-rpc`, `metrics.rpc-level` (`SERVICE`
    /// for one series per service), `metrics.prometheus.exporter.enabled`,
    /// `metrics.histogram.enabled`, `metrics.aggregation.enabled`,
    /// `metrics.aggregation.bucket-num`, `metrics.aggregation.time-window-seconds`,
    /// `tracing.enabled`.
    pub fn metrics_param(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.observe.set(&key.into(), value.into());
        self
    }

    /// Traces every call (see [`rubbo_metrics::TracingFilter`]): a `tracing` span
    /// per call, joined to the caller's trace through the W3C `traceparent`
    /// attachment, and passed on to the providers called from it. Off by default;
    /// `dubbo.tracing.enabled=true` turns it on too.
    pub fn tracing(mut self, enable: bool) -> Self {
        self.observe
            .set(keys::TRACING_ENABLED_KEY, enable.to_string());
        self
    }
}

#[cfg(feature = "otlp")]
impl RubboBuilder {
    /// Exports the spans with `otlp`, an exporter the application built (and whose
    /// [`layer`](crate::otlp::OtlpTracing::layer) is in its own subscriber) instead of
    /// one built from the configuration; turns tracing on. [`Rubbo::shutdown`] flushes
    /// it.
    pub fn otlp(mut self, otlp: crate::otlp::OtlpTracing) -> Self {
        self.observe.otlp = Some(otlp);
        self.observe
            .set(keys::TRACING_ENABLED_KEY, true.to_string());
        self
    }
}

impl Rubbo {
    /// The application's metrics, when on ([`RubboBuilder::metrics`]).
    pub fn metrics(&self) -> Option<&Metrics> {
        self.inner.metrics.as_ref()
    }
}
