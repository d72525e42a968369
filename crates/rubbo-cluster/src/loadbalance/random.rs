//! `random`: weighted random (Java's `RandomLoadBalance`).

use rubbo_common::{BoxInvoker, Invocation, Url};

use super::LoadBalance;
use super::weight::{WeightCache, needs_weight, now_millis};
use crate::Rand;

/// Weighted random over prefix sums; uniform when every weight is equal or the total is
/// 0, or when the first provider's URL has neither `weight` nor `timestamp`.
#[derive(Debug, Default)]
pub struct RandomLoadBalance {
    rand: Rand,
    cache: WeightCache,
}

impl RandomLoadBalance {
    /// A balancer drawing from `rand`.
    pub fn new(rand: Rand) -> Self {
        RandomLoadBalance {
            rand,
            cache: WeightCache::default(),
        }
    }
}

/// Picks by weight: an index into `weights` (Java's prefix-sum walk), or uniform.
pub(crate) fn weighted_index(weights: &[i32], rand: &Rand) -> usize {
    let mut total: i64 = 0;
    let mut same = true;
    for (i, &w) in weights.iter().enumerate() {
        total += i64::from(w);
        if same && total != i64::from(w) * (i as i64 + 1) {
            same = false;
        }
    }
    if total > 0 && !same {
        let mut offset = rand.below(total as usize) as i64;
        for (i, &w) in weights.iter().enumerate() {
            offset -= i64::from(w);
            if offset < 0 {
                return i;
            }
        }
    }
    rand.below(weights.len())
}

impl LoadBalance for RandomLoadBalance {
    fn select(&self, invokers: &[BoxInvoker], _: &Url, inv: &Invocation) -> Option<BoxInvoker> {
        match invokers.len() {
            0 => return None,
            1 => return Some(invokers[0].clone()),
            _ => {}
        }
        if !needs_weight(invokers[0].url(), inv.method()) {
            return Some(invokers[self.rand.below(invokers.len())].clone());
        }
        let mut weights = Vec::with_capacity(invokers.len());
        self.cache
            .weights(invokers, inv.method(), now_millis(), &mut weights);
        Some(invokers[weighted_index(&weights, &self.rand)].clone())
    }
}
