//! `p2c` / `adaptive`: power of two choices on a load estimate (Java's
//! `AdaptiveLoadBalance`).

use std::sync::Arc;

use rubbo_common::{BoxInvoker, Invocation, Url};

use super::LoadBalance;
use super::weight::{WeightCache, now_millis};
use crate::status::MethodStatus;
use crate::{Rand, RpcStatus};

/// Picks two distinct providers at random and keeps the less loaded one, where
/// `load = providerLoad x (sqrt(ewma latency) + 1) x (in flight + 1) /
/// ((succeeded / (requests + 1)) x weight + 1)`. `providerLoad` is what the provider
/// reports in the `lb_adaptive` response attachment (`curTime:..,load:..`), 1 if
/// nothing. Equal loads: weighted random between the two.
#[derive(Debug)]
pub struct AdaptiveLoadBalance {
    status: Arc<RpcStatus>,
    rand: Rand,
    cache: WeightCache,
}

impl AdaptiveLoadBalance {
    /// A balancer reading statistics from `status`.
    pub fn new(status: Arc<RpcStatus>, rand: Rand) -> Self {
        AdaptiveLoadBalance {
            status,
            rand,
            cache: WeightCache::default(),
        }
    }
}

/// The load estimate of one provider.
pub(crate) fn load(s: Option<&MethodStatus>, weight: i32) -> f64 {
    let Some(s) = s else {
        return 0.0;
    };
    let active = s.active().max(0) as f64;
    let requests = s.total() as f64 + active;
    let success = s.succeeded() as f64;
    let ewma_ms = s.ewma_latency_us() as f64 / 1000.0;
    s.provider_load() * (ewma_ms.sqrt() + 1.0) * (active + 1.0)
        / ((success / (requests + 1.0)) * f64::from(weight) + 1.0)
}

impl LoadBalance for AdaptiveLoadBalance {
    fn select(&self, invokers: &[BoxInvoker], _: &Url, inv: &Invocation) -> Option<BoxInvoker> {
        let n = invokers.len();
        match n {
            0 => return None,
            1 => return Some(invokers[0].clone()),
            _ => {}
        }
        let (a, b) = if n == 2 {
            (0, 1)
        } else {
            let a = self.rand.below(n);
            let mut b = self.rand.below(n - 1);
            if b >= a {
                b += 1;
            }
            (a, b)
        };
        let (pa, pb) = (&invokers[a], &invokers[b]);
        let now = now_millis();
        let w = [
            self.cache.weight_of(pa, inv.method(), now),
            self.cache.weight_of(pb, inv.method(), now),
        ];
        let (la, lb) = self.status.view(inv.method(), |v| {
            (load(v.get(pa), w[0]), load(v.get(pb), w[1]))
        });
        let (pa, pb) = (pa.clone(), pb.clone());
        if la == lb {
            let total = i64::from(w[0]) + i64::from(w[1]);
            if total > 0 {
                return Some(
                    if (self.rand.below(total as usize) as i64) < i64::from(w[0]) {
                        pa
                    } else {
                        pb
                    },
                );
            }
            return Some(if self.rand.below(2) == 0 { pa } else { pb });
        }
        Some(if la > lb { pb } else { pa })
    }
}
