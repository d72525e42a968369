//! The registry and config center series (Java's `RegistryMetricsCollector` with its
//! `RegistryStatComposite` and `RtStatComposite`, and `ConfigCenterMetricsCollector`).
//! They move at registrations, subscriptions, notifications and rule changes, never
//! per call, so one lock guards them.

use std::collections::BTreeMap;
use std::time::Duration;

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;

use crate::Metrics;
use crate::names::{self, RT_AVG, RT_LAST, RT_MAX, RT_MIN, RT_SUM, labels, registry as reg};

/// A registry operation that Java's registry metrics count, with the series it moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RegistryOp {
    /// The application instance is registered (application-level discovery):
    /// `dubbo_registry_register_requests_*`, `dubbo_register_rt_milliseconds_*`.
    Register,
    /// A reference subscribes to its registry: `dubbo_registry_subscribe_num_*`,
    /// `dubbo_subscribe_rt_milliseconds_*`.
    Subscribe,
    /// A provider URL is registered: `dubbo_registry_register_service_*`,
    /// `dubbo_register_service_rt_milliseconds_*`.
    RegisterService,
    /// A service's instances are subscribed (application-level discovery):
    /// `dubbo_registry_subscribe_service_num_*`,
    /// `dubbo_subscribe_service_rt_milliseconds_*`.
    SubscribeService,
}

type Name = (&'static str, &'static str);

impl RegistryOp {
    /// The (total, succeed, failed) series and the response time prefix.
    fn series(self) -> ([Name; 3], &'static str, bool) {
        match self {
            RegistryOp::Register => (
                [
                    reg::REGISTER_REQUESTS,
                    reg::REGISTER_REQUESTS_SUCCEED,
                    reg::REGISTER_REQUESTS_FAILED,
                ],
                "register",
                false,
            ),
            RegistryOp::Subscribe => (
                [
                    reg::SUBSCRIBE_NUM,
                    reg::SUBSCRIBE_NUM_SUCCEED,
                    reg::SUBSCRIBE_NUM_FAILED,
                ],
                "subscribe",
                false,
            ),
            RegistryOp::RegisterService => (
                [
                    reg::REGISTER_SERVICE,
                    reg::REGISTER_SERVICE_SUCCEED,
                    reg::REGISTER_SERVICE_FAILED,
                ],
                "register_service",
                true,
            ),
            RegistryOp::SubscribeService => (
                [
                    reg::SUBSCRIBE_SERVICE_NUM,
                    reg::SUBSCRIBE_SERVICE_NUM_SUCCEED,
                    reg::SUBSCRIBE_SERVICE_NUM_FAILED,
                ],
                "subscribe_service",
                true,
            ),
        }
    }
}

pub(crate) type Labels = Vec<(&'static str, String)>;

/// Response times of one operation and label set: last, min, max, sum, count.
#[derive(Debug, Clone, Copy, Default)]
struct Rt(u64, u64, u64, u64, u64);

/// A gauge's help and its series.
type Family = (&'static str, Vec<(Labels, i64)>);

/// Every registry and config center series, by name, in name order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Events {
    gauges: BTreeMap<&'static str, Family>,
    rts: BTreeMap<&'static str, Vec<(Labels, Rt)>>,
}

pub(crate) fn sort_labels(mut labels: Labels) -> Labels {
    labels.sort_by(|a, b| a.0.cmp(b.0));
    labels
}

impl Events {
    fn slot(&mut self, (name, help): Name, labels: &Labels) -> &mut i64 {
        let series = &mut self.gauges.entry(name).or_insert((help, Vec::new())).1;
        let i = match series.iter().position(|(l, _)| l == labels) {
            Some(i) => i,
            None => {
                series.push((labels.clone(), 0));
                series.len() - 1
            }
        };
        &mut series[i].1
    }

    pub(crate) fn add(&mut self, name: Name, labels: &Labels, n: i64) {
        *self.slot(name, labels) += n;
    }

    pub(crate) fn set(&mut self, name: Name, labels: &Labels, v: i64) {
        *self.slot(name, labels) = v;
    }

    pub(crate) fn rt(&mut self, op: &'static str, labels: &Labels, elapsed: Duration) {
        let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        let series = self.rts.entry(op).or_default();
        let i = match series.iter().position(|(l, _)| l == labels) {
            Some(i) => i,
            None => {
                series.push((labels.clone(), Rt(0, u64::MAX, 0, 0, 0)));
                series.len() - 1
            }
        };
        let rt = &mut series[i].1;
        *rt = Rt(
            ms,
            rt.1.min(ms),
            rt.2.max(ms),
            rt.3.saturating_add(ms),
            rt.4 + 1,
        );
    }

    /// Records an operation of `op`: its total, then its succeed or failed series
    /// (all three shown from the first, as Java's `fillZero`), and its time.
    /// `rt_labels`: the labels of its response time series, when not the counters'
    /// (Java's subscribe times leave out the registry).
    pub(crate) fn op(
        &mut self,
        op: RegistryOp,
        app: Labels,
        service: Labels,
        rt_labels: Option<Labels>,
        ok: bool,
        elapsed: Duration,
    ) {
        let ([total, succeed, failed], rt_op, service_level) = op.series();
        let labels = sort_labels(if service_level { service } else { app });
        self.add(total, &labels, 1);
        // Java shows the three application-level series from the first operation
        // (its `fillZero`), the service-level ones only once they move.
        if ok || !service_level {
            self.add(succeed, &labels, i64::from(ok));
        }
        if !ok || !service_level {
            self.add(failed, &labels, i64::from(!ok));
        }
        let rt_labels = rt_labels.map_or(labels, sort_labels);
        self.rt(rt_op, &rt_labels, elapsed);
    }

    pub(crate) fn encode(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for (name, (help, series)) in &self.gauges {
            let mut m = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (labels, v) in series {
                ConstGauge::new(*v).encode(m.encode_family(labels)?)?;
            }
        }
        for (op, series) in &self.rts {
            type Pick = fn(Rt) -> u64;
            let gauges: [(_, Pick); 5] = [
                (RT_LAST, |r| r.0),
                (RT_MIN, |r| r.1),
                (RT_MAX, |r| r.2),
                (RT_SUM, |r| r.3),
                (RT_AVG, |r| r.3 / r.4.max(1)),
            ];
            for (key, pick) in gauges {
                let name = format!("dubbo_{op}_{}", key.suffix);
                let mut m = encoder.encode_descriptor(&name, key.help, None, MetricType::Gauge)?;
                for (labels, rt) in series {
                    let v = i64::try_from(pick(*rt)).unwrap_or(i64::MAX);
                    ConstGauge::new(v).encode(m.encode_family(labels)?)?;
                }
            }
        }
        Ok(())
    }
}

/// Recording the registry and config center series.
impl Metrics {
    /// The labels of an application-level series (Java's `ApplicationMetric`).
    fn app_labels(&self, extra: &[(&'static str, &str)]) -> Labels {
        let i = &self.inner;
        let mut l: Labels = vec![
            (labels::APPLICATION_MODULE_ID, i.module_id.clone()),
            (labels::APPLICATION_NAME, i.application.clone()),
            (labels::APPLICATION_VERSION, i.application_version.clone()),
            (labels::GIT_COMMIT_ID, String::new()),
            (labels::HOSTNAME, i.hostname.clone()),
            (labels::IP, i.ip.clone()),
        ];
        l.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
        sort_labels(l)
    }

    /// The labels of a service-level series (Java's `ServiceKeyMetric`): `interface`
    /// is the service key.
    fn service_labels(&self, service: &str, extra: &[(&'static str, &str)]) -> Labels {
        let i = &self.inner;
        let mut l: Labels = vec![
            (labels::APPLICATION_MODULE_ID, i.module_id.clone()),
            (labels::APPLICATION_NAME, i.application.clone()),
            (labels::INTERFACE, service.to_owned()),
        ];
        l.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
        sort_labels(l)
    }

    /// Records a registry operation of `service` (a service key; unused for the
    /// application-level [`RegistryOp`]s) in the registry of cluster
    /// `registry_cluster` (its `registry-cluster` parameter, else its protocol, as
    /// Java names it), successful or not, that took `elapsed`.
    ///
    /// ```
    /// use rubbo_metrics::{Metrics, RegistryOp};
    /// use std::time::Duration;
    ///
    /// let metrics = Metrics::new("demo");
    /// metrics.registry_op(RegistryOp::Subscribe, "zookeeper", "org.example.Greeter", true, Duration::from_millis(3));
    /// let text = metrics.encode();
    /// let line = text.lines().find(|l| l.starts_with("dubbo_registry_subscribe_num_total{")).unwrap();
    /// assert!(line.contains("registry_cluster=\"zookeeper\"") && line.ends_with(" 1"));
    /// assert!(text.contains("dubbo_registry_subscribe_num_failed_total{"));
    /// assert!(text.contains("dubbo_subscribe_rt_milliseconds_max{"));
    /// ```
    pub fn registry_op(
        &self,
        op: RegistryOp,
        registry_cluster: &str,
        service: &str,
        ok: bool,
        elapsed: Duration,
    ) {
        let extra = [(labels::REGISTRY_CLUSTER, registry_cluster)];
        let app = self.app_labels(&extra);
        let service = self.service_labels(service, &extra);
        let rt = (op == RegistryOp::Subscribe).then(|| self.app_labels(&[]));
        self.inner
            .events
            .lock()
            .op(op, app, service, rt, ok, elapsed);
    }

    /// Records a provider list of `urls` addresses received for `service` (a
    /// service key): `dubbo_registry_notify_requests_total` goes up,
    /// `dubbo_registry_notify_num_last` is set, and the time it took to apply is
    /// taken (`dubbo_notify_rt_milliseconds_*`). Labels as Java 3.3.6 writes them:
    /// the application's name and module id only on the count, and on the times the
    /// application's name as `interface` too.
    pub fn registry_notify(&self, service: &str, urls: usize, elapsed: Duration) {
        let i = &self.inner;
        let app = sort_labels(vec![
            (labels::APPLICATION_MODULE_ID, i.module_id.clone()),
            (labels::APPLICATION_NAME, i.application.clone()),
        ]);
        let rt = self.service_labels(&i.application, &[]);
        let svc = self.service_labels(service, &[]);
        let mut events = i.events.lock();
        events.add(names::registry::NOTIFY_REQUESTS, &app, 1);
        events.set(
            names::registry::NOTIFY_NUM_LAST,
            &svc,
            i64::try_from(urls).unwrap_or(i64::MAX),
        );
        events.rt("notify", &rt, elapsed);
    }

    /// Sets the directory gauges of `service` (a service key) subscribed at
    /// `register_mode` level (`interface` or `instance`) in registry `registry` (its
    /// cluster name): the providers its directory lists and how many of them are
    /// available (`to_reconnect` stays 0: a provider is reconnected by its own
    /// connection, not listed apart).
    pub fn registry_directory(
        &self,
        service: &str,
        register_mode: &str,
        registry: &str,
        all: usize,
        valid: usize,
    ) {
        let svc = self.service_labels(
            service,
            &[
                (labels::REGISTER_MODE, register_mode),
                (labels::REGISTRY, registry),
            ],
        );
        let n = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
        let mut events = self.inner.events.lock();
        events.set(names::registry::DIRECTORY_NUM_ALL, &svc, n(all));
        events.set(names::registry::DIRECTORY_NUM_VALID, &svc, n(valid));
        events.set(names::registry::DIRECTORY_NUM_TO_RECONNECT, &svc, 0);
        events.set(
            names::registry::DIRECTORY_NUM_DISABLE,
            &svc,
            n(all.saturating_sub(valid)),
        );
    }

    /// Records a change the config center delivered: `key` in `group` of the config
    /// center `config_center` (its protocol, as Java's `zookeeper`), `change_type`
    /// `added`, `modified` or `deleted` (`dubbo_configcenter_total`).
    ///
    /// ```
    /// let metrics = rubbo_metrics::Metrics::new("demo");
    /// metrics.config_changed("demo.configurators", "dubbo", "zookeeper", "added");
    /// let text = metrics.encode();
    /// let line = text.lines().find(|l| l.starts_with("dubbo_configcenter_total{")).unwrap();
    /// assert!(line.contains("change_type=\"added\"") && line.contains("key=\"demo.configurators\""));
    /// ```
    pub fn config_changed(&self, key: &str, group: &str, config_center: &str, change_type: &str) {
        let i = &self.inner;
        let l = sort_labels(vec![
            (labels::APPLICATION_NAME, i.application.clone()),
            (labels::CHANGE_TYPE, change_type.to_ascii_lowercase()),
            (labels::CONFIG_CENTER, config_center.to_owned()),
            (labels::GROUP, group.to_owned()),
            (labels::HOSTNAME, i.hostname.clone()),
            (labels::IP, i.ip.clone()),
            (labels::KEY, key.to_owned()),
        ]);
        i.events.lock().add(names::CONFIG_CENTER_TOTAL, &l, 1);
    }
}
