//! `leastactive`: fewest calls in flight (Java's `LeastActiveLoadBalance`).

use std::sync::Arc;

use rubbo_common::{BoxInvoker, Invocation, Url};

use super::LoadBalance;
use super::weight::{WeightCache, now_millis};
use crate::{Rand, RpcStatus};

/// Picks the provider with the fewest active calls for the method; ties are broken by
/// weighted random (uniform when their weights are equal).
#[derive(Debug)]
pub struct LeastActiveLoadBalance {
    status: Arc<RpcStatus>,
    rand: Rand,
    cache: WeightCache,
}

impl LeastActiveLoadBalance {
    /// A balancer reading active counts from `status`.
    pub fn new(status: Arc<RpcStatus>, rand: Rand) -> Self {
        LeastActiveLoadBalance {
            status,
            rand,
            cache: WeightCache::default(),
        }
    }
}

/// Java's tie-break: weighted random among `ties` (indexes), uniform if equal weights.
pub(crate) fn pick_among(ties: &[usize], weights: &[i32], rand: &Rand) -> usize {
    if ties.len() == 1 {
        return ties[0];
    }
    let first = weights[ties[0]];
    let mut total: i64 = 0;
    let mut same = true;
    for &i in ties {
        total += i64::from(weights[i]);
        same &= weights[i] == first;
    }
    if !same && total > 0 {
        let mut offset = rand.below(total as usize) as i64;
        for &i in ties {
            offset -= i64::from(weights[i]);
            if offset < 0 {
                return i;
            }
        }
    }
    ties[rand.below(ties.len())]
}

impl LoadBalance for LeastActiveLoadBalance {
    fn select(&self, invokers: &[BoxInvoker], _: &Url, inv: &Invocation) -> Option<BoxInvoker> {
        match invokers.len() {
            0 => return None,
            1 => return Some(invokers[0].clone()),
            _ => {}
        }
        let mut weights = Vec::with_capacity(invokers.len());
        self.cache
            .weights(invokers, inv.method(), now_millis(), &mut weights);
        let mut least = i64::MAX;
        let mut ties: Vec<usize> = Vec::with_capacity(invokers.len());
        self.status.view(inv.method(), |view| {
            for (i, invoker) in invokers.iter().enumerate() {
                let active = view.active(invoker);
                if active < least {
                    least = active;
                    ties.clear();
                    ties.push(i);
                } else if active == least {
                    ties.push(i);
                }
            }
        });
        Some(invokers[pick_among(&ties, &weights, &self.rand)].clone())
    }
}
