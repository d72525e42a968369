//! The registry and config center series (Java's `RegistryMetricsCollector` with its
//! `RegistryStatComposite` and `RtStatComposite`, and `ConfigCenterMetricsCollector`).
//! They move at registrations, subscriptions, notifications and rule changes, never
//! per call, so one lock guards them.

use std::collections::BTreeMap;
use std::time::Duration;

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;

use crate::names::{RT_AVG, RT_LAST, RT_MAX, RT_MIN, RT_SUM, registry as reg};

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
