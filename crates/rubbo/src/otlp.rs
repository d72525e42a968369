//! OTLP export of the tracing spans (feature `otlp`), configured with Java Dubbo's
//! keys.
//!
//! With `dubbo.tracing.enabled=true` and
//! `dubbo.tracing.tracing-exporter.otlp-config.endpoint` set, the bootstrap sends the
//! spans of the tracing filters ([`rubbo_metrics::TracingFilter`]) to that OTLP
//! collector over gRPC, as Java Dubbo 3.3's `OTlpSpanExporter` does (its
//! `OtlpGrpcSpanExporter`, so one endpoint serves both languages, e.g.
//! `http://127.0.0.1:4317`). The keys, all under `dubbo.tracing.`:
//!
//! | key | Java | default |
//! |---|---|---|
//! | `enabled` | `TracingConfig.enabled` | `false` |
//! | `sampling.probability` | `SamplingConfig.probability` | `0.1` |
//! | `tracing-exporter.otlp-config.endpoint` | `OtlpConfig.endpoint` | none: no export |
//! | `tracing-exporter.otlp-config.timeout` | `OtlpConfig.timeout` | `10s` |
//! | `tracing-exporter.otlp-config.compression-method` | `OtlpConfig.compressionMethod` | `none` (or `gzip`) |
//! | `tracing-exporter.otlp-config.headers.<name>` | `OtlpConfig.headers` | none |
//!
//! As in Java, a new trace is sampled with the probability, and a call that comes with
//! a caller's `traceparent` follows the caller's decision (parent-based). The spans
//! carry the resource `service.name` = the application name.
//!
//! # What it costs
//!
//! Nothing unless configured: no exporter, no layer, no task. Configured, the spans
//! go through a batch processor on the tokio runtime whose queue is bounded (2048
//! spans, the OpenTelemetry default, `OTEL_BSP_*` to change; past it spans are
//! dropped, never the caller held up); [`Rubbo::shutdown`](crate::Rubbo::shutdown)
//! exports what is queued (bounded by the timeout) before it returns.
//!
//! # The subscriber
//!
//! The spans reach OpenTelemetry through a `tracing-opentelemetry` layer in the
//! global `tracing` subscriber. When no global subscriber is set, the bootstrap sets
//! one: that layer, and a log layer to stderr filtered by `RUST_LOG` (default
//! `warn`). An application with its own subscriber builds the exporter first and adds
//! its [`layer`](OtlpTracing::layer), then hands it to the builder:
//!
//! ```no_run
//! # async fn run(config: rubbo::config::Config) -> Result<(), Box<dyn std::error::Error>> {
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! let otlp = rubbo::otlp::OtlpTracing::from_config(&config, "my-app")?;
//! tracing_subscriber::registry()
//!     .with(otlp.as_ref().map(|o| o.layer()))
//!     .with(tracing_subscriber::fmt::layer())
//!     .init();
//! let mut builder = rubbo::Rubbo::builder().config(&config);
//! if let Some(otlp) = otlp {
//!     builder = builder.otlp(otlp);
//! }
//! let app = builder.build()?;
//! // ...
//! app.shutdown().await; // exports the spans still queued
//! # Ok(()) }
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::tonic_types::metadata::MetadataMap;
use opentelemetry_otlp::{Compression, WithExportConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
use opentelemetry_sdk::trace::{BatchConfigBuilder, Sampler, SdkTracerProvider};
use rubbo_common::keys;
use rubbo_config::Config;
use tracing::{Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::FilterFn;
use tracing_subscriber::registry::LookupSpan;

/// Java's `SamplingConfig` default.
const DEFAULT_PROBABILITY: f64 = 0.1;
/// Java's `OtlpConfig` default timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The target of the tracing filters' spans, the only ones exported.
const TRACE_TARGET: &str = "rubbo_metrics::trace";

/// Whether the global subscriber is one [`OtlpTracing::try_init_global`] set (a
/// second application in the process then has nothing to warn about).
static GLOBAL_IS_RUBBO: AtomicBool = AtomicBool::new(false);

/// Whether the global `tracing` subscriber carries an OTLP layer of Rubbo's.
pub(crate) fn global_is_rubbo() -> bool {
    GLOBAL_IS_RUBBO.load(Ordering::Relaxed)
}

/// A bad OTLP setting, or an exporter that cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtlpError {
    /// A key's value does not parse.
    #[error("bad dubbo.{key}: {value:?} ({reason})")]
    BadValue {
        /// The key under `dubbo.`.
        key: String,
        /// The value as configured.
        value: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The exporter could not be built (a bad endpoint, no tokio runtime).
    #[error("cannot build the OTLP exporter: {0}")]
    Build(String),
}

/// The OTLP settings, by Java's keys (see the [module](self)).
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpSettings {
    /// The collector's gRPC endpoint.
    pub endpoint: String,
    /// The time one export may take.
    pub timeout: Duration,
    /// Gzip the exports.
    pub gzip: bool,
    /// Headers sent with each export.
    pub headers: Vec<(String, String)>,
    /// The share of new traces sampled, 0 to 1.
    pub probability: f64,
}

impl OtlpSettings {
    /// The settings from `dubbo.tracing.*` in Java's key form (keys without the
    /// `dubbo.` prefix, as `get` answers them); `None` when tracing is off or no
    /// endpoint is configured.
    pub fn from_keys<'a>(
        get: impl Fn(&str) -> Option<&'a str>,
        all: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Option<Self>, OtlpError> {
        let enabled = get(keys::TRACING_ENABLED_KEY).is_some_and(|v| v.trim() == "true");
        let endpoint = get(keys::TRACING_OTLP_ENDPOINT_KEY)
            .map(str::trim)
            .filter(|e| !e.is_empty());
        let (true, Some(endpoint)) = (enabled, endpoint) else {
            return Ok(None);
        };
        let bad = |key: &str, value: &str, reason| OtlpError::BadValue {
            key: key.to_owned(),
            value: value.to_owned(),
            reason,
        };
        let timeout = match get(keys::TRACING_OTLP_TIMEOUT_KEY) {
            None => DEFAULT_TIMEOUT,
            Some(v) => parse_duration(v).ok_or_else(|| {
                bad(
                    keys::TRACING_OTLP_TIMEOUT_KEY,
                    v,
                    "a duration: 10s, 500ms, PT10S or milliseconds",
                )
            })?,
        };
        let gzip = match get(keys::TRACING_OTLP_COMPRESSION_KEY).map(str::trim) {
            None | Some("") => false,
            Some(v) if v.eq_ignore_ascii_case("none") => false,
            Some(v) if v.eq_ignore_ascii_case("gzip") => true,
            Some(v) => {
                return Err(bad(keys::TRACING_OTLP_COMPRESSION_KEY, v, "gzip or none"));
            }
        };
        let probability = match get(keys::TRACING_SAMPLING_PROBABILITY_KEY) {
            None => DEFAULT_PROBABILITY,
            Some(v) => v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|p| (0.0..=1.0).contains(p))
                .ok_or_else(|| {
                    bad(
                        keys::TRACING_SAMPLING_PROBABILITY_KEY,
                        v,
                        "a number from 0 to 1",
                    )
                })?,
        };
        let headers = all
            .into_iter()
            .filter_map(|(k, v)| {
                k.strip_prefix(keys::TRACING_OTLP_HEADERS_PREFIX)
                    .map(|name| (name.to_owned(), v.to_owned()))
            })
            .collect();
        Ok(Some(OtlpSettings {
            endpoint: endpoint.to_owned(),
            timeout,
            gzip,
            headers,
            probability,
        }))
    }
}

/// `10s`, `500ms`, `2m`, ISO-8601 `PT10S`, or plain milliseconds.
fn parse_duration(v: &str) -> Option<Duration> {
    let v = v.trim();
    if let Some(iso) = v
        .strip_prefix("PT")
        .or_else(|| v.strip_prefix("pt"))
        .and_then(|s| s.strip_suffix(['S', 's']))
    {
        return iso
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64);
    }
    let (num, unit) = match v.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => v.split_at(i),
        None => (v, "ms"),
    };
    let n = num.parse::<u64>().ok()?;
    match unit {
        "ms" => Some(Duration::from_millis(n)),
        "s" => Some(Duration::from_secs(n)),
        "m" => Some(Duration::from_secs(n.checked_mul(60)?)),
        _ => None,
    }
}

/// A running OTLP span exporter: the OpenTelemetry tracer provider with its batch
/// processor. Cheap to clone; [`shutdown`](Self::shutdown) exports what is queued.
#[derive(Debug, Clone)]
pub struct OtlpTracing {
    provider: SdkTracerProvider,
    timeout: Duration,
}

impl OtlpTracing {
    /// The exporter `config` asks for (see the [module](self)) for `application`;
    /// `None` when tracing is off or no endpoint is configured. Call it within a tokio
    /// runtime: the batch processor runs on it.
    pub fn from_config(config: &Config, application: &str) -> Result<Option<Self>, OtlpError> {
        let settings = OtlpSettings::from_keys(
            |k| config.get(&format!("dubbo.{k}")),
            config
                .iter()
                .filter_map(|(k, e)| Some((k.strip_prefix("dubbo.")?, e.value.as_str()))),
        )?;
        settings.map(|s| Self::start(&s, application)).transpose()
    }

    /// Starts exporting to `settings.endpoint`, as `application`. Within a tokio
    /// runtime.
    pub fn start(settings: &OtlpSettings, application: &str) -> Result<Self, OtlpError> {
        let mut headers = http::HeaderMap::new();
        for (name, value) in &settings.headers {
            let key = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| OtlpError::Build(format!("header {name}: {e}")))?;
            let value = http::HeaderValue::try_from(value.as_str())
                .map_err(|e| OtlpError::Build(format!("header {name}: {e}")))?;
            headers.insert(key, value);
        }
        let metadata = MetadataMap::from_headers(headers);
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(settings.endpoint.clone())
            .with_timeout(settings.timeout)
            .with_metadata(metadata);
        if settings.gzip {
            exporter = exporter.with_compression(Compression::Gzip);
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(OtlpError::Build("not within a tokio runtime".to_owned()));
        }
        let exporter = exporter
            .build()
            .map_err(|e| OtlpError::Build(e.to_string()))?;
        let processor = BatchSpanProcessor::builder(exporter, opentelemetry_sdk::runtime::Tokio)
            .with_batch_config(BatchConfigBuilder::default().build())
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
                settings.probability,
            ))))
            .with_resource(
                Resource::builder_empty()
                    .with_service_name(application.to_owned())
                    .build(),
            )
            .build();
        tracing::info!(endpoint = %settings.endpoint, "exporting spans over OTLP");
        Ok(OtlpTracing {
            provider,
            timeout: settings.timeout,
        })
    }

    /// The `tracing` layer that hands the tracing filters' spans to this exporter
    /// (only those: other spans, the exporter's own included, are not exported).
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        let tracer = self.provider.tracer("org.apache.dubbo");
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(FilterFn::new(|m: &Metadata<'_>| {
                m.target().starts_with(TRACE_TARGET)
            }))
    }

    /// Sets the global `tracing` subscriber to this exporter's layer and a log layer
    /// to stderr (`RUST_LOG`, default `warn`); `false` when one was set already.
    pub fn try_init_global(&self) -> bool {
        use tracing_subscriber::layer::SubscriberExt;
        let logs = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
            );
        let subscriber = tracing_subscriber::registry().with(self.layer()).with(logs);
        let set = tracing::subscriber::set_global_default(subscriber).is_ok();
        if set {
            GLOBAL_IS_RUBBO.store(true, Ordering::Relaxed);
        }
        set
    }

    /// Exports the spans still queued and stops the exporter, within the export
    /// timeout (and a second).
    pub async fn shutdown(&self) {
        let provider = self.provider.clone();
        let done = tokio::task::spawn_blocking(move || provider.shutdown());
        match tokio::time::timeout(self.timeout + Duration::from_secs(1), done).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => tracing::warn!(error = %e, "OTLP exporter shutdown"),
            Ok(Err(e)) => tracing::warn!(error = %e, "OTLP exporter shutdown task"),
            Err(_) => tracing::warn!("OTLP exporter shutdown timed out"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Result<Option<OtlpSettings>, OtlpError> {
        let get = |k: &str| pairs.iter().find(|(pk, _)| *pk == k).map(|(_, v)| *v);
        OtlpSettings::from_keys(get, pairs.iter().copied())
    }

    #[test]
    fn off_unless_enabled_with_an_endpoint() {
        assert_eq!(settings(&[]).unwrap(), None);
        assert_eq!(settings(&[("tracing.enabled", "true")]).unwrap(), None);
        assert_eq!(
            settings(&[(keys::TRACING_OTLP_ENDPOINT_KEY, "http://127.0.0.1:4317")]).unwrap(),
            None
        );
    }

    #[test]
    fn reads_java_keys() {
        let s = settings(&[
            ("tracing.enabled", "true"),
            (keys::TRACING_OTLP_ENDPOINT_KEY, "http://127.0.0.1:4317"),
            (keys::TRACING_OTLP_TIMEOUT_KEY, "3s"),
            (keys::TRACING_OTLP_COMPRESSION_KEY, "gzip"),
            (keys::TRACING_SAMPLING_PROBABILITY_KEY, "1.0"),
            (
                "tracing.tracing-exporter.otlp-config.headers.x-token",
                "abc",
            ),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.endpoint, "http://127.0.0.1:4317");
        assert_eq!(s.timeout, Duration::from_secs(3));
        assert!(s.gzip);
        assert_eq!(s.probability, 1.0);
        assert_eq!(s.headers, vec![("x-token".to_owned(), "abc".to_owned())]);
        let d = settings(&[
            ("tracing.enabled", "true"),
            (keys::TRACING_OTLP_ENDPOINT_KEY, "http://127.0.0.1:4317"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(d.timeout, DEFAULT_TIMEOUT);
        assert!(!d.gzip);
        assert_eq!(d.probability, DEFAULT_PROBABILITY);
    }

    #[test]
    fn refuses_bad_values() {
        for (k, v) in [
            (keys::TRACING_OTLP_TIMEOUT_KEY, "soon"),
            (keys::TRACING_OTLP_COMPRESSION_KEY, "brotli"),
            (keys::TRACING_SAMPLING_PROBABILITY_KEY, "1.5"),
        ] {
            let r = settings(&[
                ("tracing.enabled", "true"),
                (keys::TRACING_OTLP_ENDPOINT_KEY, "http://127.0.0.1:4317"),
                (k, v),
            ]);
            assert!(matches!(r, Err(OtlpError::BadValue { .. })), "{k}={v}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Some(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("PT1.5S"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("ten"), None);
    }
}
