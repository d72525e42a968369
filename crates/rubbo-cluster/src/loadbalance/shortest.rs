//! `shortestresponse` (Java's `ShortestResponseLoadBalance`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use rubbo_common::{BoxInvoker, Invocation, Url};

use super::LoadBalance;
use super::leastactive::pick_among;
use super::weight::{WeightCache, now_millis};
use crate::{Rand, RpcStatus};

/// The statistics window (Java's `shortestResponseSlidePeriod`, 30 s).
const SLIDE_PERIOD_MS: i64 = 30_000;

/// Picks the provider with the lowest estimated response time: the average latency of
/// succeeded calls in the current window times (active + 1). Ties by weight. Windows
/// restart every 30 s.
#[derive(Debug)]
pub struct ShortestResponseLoadBalance {
    status: Arc<RpcStatus>,
    rand: Rand,
    cache: WeightCache,
    last_reset_ms: AtomicI64,
    resetting: AtomicBool,
    period_ms: i64,
}

impl ShortestResponseLoadBalance {
    /// A balancer reading statistics from `status`.
    pub fn new(status: Arc<RpcStatus>, rand: Rand) -> Self {
        ShortestResponseLoadBalance {
            status,
            rand,
            cache: WeightCache::default(),
            last_reset_ms: AtomicI64::new(now_millis()),
            resetting: AtomicBool::new(false),
            period_ms: SLIDE_PERIOD_MS,
        }
    }

    /// Changes the window length (tests).
    pub fn with_slide_period_ms(mut self, ms: i64) -> Self {
        self.period_ms = ms;
        self
    }
}

impl LoadBalance for ShortestResponseLoadBalance {
    fn select(&self, invokers: &[BoxInvoker], _: &Url, inv: &Invocation) -> Option<BoxInvoker> {
        match invokers.len() {
            0 => return None,
            1 => return Some(invokers[0].clone()),
            _ => {}
        }
        let now = now_millis();
        let mut weights = Vec::with_capacity(invokers.len());
        self.cache
            .weights(invokers, inv.method(), now, &mut weights);
        let mut shortest = u64::MAX;
        let mut ties: Vec<usize> = Vec::with_capacity(invokers.len());
        self.status.view(inv.method(), |view| {
            for (i, invoker) in invokers.iter().enumerate() {
                let estimate = view.get(invoker).map_or(0, |s| {
                    s.window_average_ms()
                        .saturating_mul(s.active().max(0) as u64 + 1)
                });
                if estimate < shortest {
                    shortest = estimate;
                    ties.clear();
                    ties.push(i);
                } else if estimate == shortest {
                    ties.push(i);
                }
            }
        });
        if now - self.last_reset_ms.load(Ordering::Relaxed) > self.period_ms
            && self
                .resetting
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            self.status.reset_windows();
            self.last_reset_ms.store(now, Ordering::Relaxed);
            self.resetting.store(false, Ordering::Release);
        }
        Some(invokers[pick_among(&ties, &weights, &self.rand)].clone())
    }
}
