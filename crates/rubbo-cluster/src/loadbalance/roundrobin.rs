//! `roundrobin`: smooth weighted round robin (Java's `RoundRobinLoadBalance`).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use rubbo_common::{BoxInvoker, Invocation, Url};

use super::LoadBalance;
use super::weight::{WeightCache, now_millis};
use crate::status::{PtrMap, invoker_key};

/// Entries not selected-over for this long are recycled (Java's `RECYCLE_PERIOD`).
const RECYCLE_PERIOD_MS: u64 = 60_000;

#[derive(Debug)]
struct WeightedRoundRobin {
    weight: i32,
    current: i64,
    last_update_ms: u64,
}

/// The state of one `serviceKey.method`: the entries of the last list, aligned with
/// it (fast path), and the entries of providers not in that list (kept until stale).
#[derive(Debug, Default)]
struct MethodState {
    ptr: usize,
    keys: Vec<usize>,
    slots: Vec<WeightedRoundRobin>,
    others: PtrMap<WeightedRoundRobin>,
}

impl MethodState {
    fn align(&mut self, invokers: &[BoxInvoker], weights: &[i32], now_ms: u64) {
        let ptr = invokers.as_ptr() as usize;
        if self.ptr == ptr
            && self.keys.len() == invokers.len()
            && self
                .keys
                .iter()
                .zip(invokers)
                .all(|(k, i)| *k == invoker_key(i))
        {
            return;
        }
        for (k, slot) in self.keys.drain(..).zip(self.slots.drain(..)) {
            self.others.insert(k, slot);
        }
        self.ptr = ptr;
        for (i, inv) in invokers.iter().enumerate() {
            let k = invoker_key(inv);
            let slot = self.others.remove(&k).unwrap_or(WeightedRoundRobin {
                weight: weights[i],
                current: 0,
                last_update_ms: now_ms,
            });
            self.keys.push(k);
            self.slots.push(slot);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.slots.len() + self.others.len()
    }
}

/// Smooth weighted round robin: each pick adds each provider's weight to its current
/// value, picks the highest (first on ties) and subtracts the total from the winner.
/// State is kept per `serviceKey.method` and per provider; entries unused for 60 s are
/// recycled. With weights 5, 1, 1 the sequence is `A A B A C A A`.
#[derive(Debug)]
pub struct RoundRobinLoadBalance {
    methods: Mutex<HashMap<u64, Arc<Mutex<MethodState>>>>,
    cache: WeightCache,
    epoch: Instant,
}

impl Default for RoundRobinLoadBalance {
    fn default() -> Self {
        Self::new()
    }
}

impl RoundRobinLoadBalance {
    /// A balancer with no state.
    pub fn new() -> Self {
        RoundRobinLoadBalance {
            methods: Mutex::new(HashMap::new()),
            cache: WeightCache::default(),
            epoch: Instant::now(),
        }
    }

    fn state(&self, inv: &Invocation) -> Arc<Mutex<MethodState>> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (inv.group(), inv.interface(), inv.version(), inv.method()).hash(&mut h);
        self.methods.lock().entry(h.finish()).or_default().clone()
    }

    fn select_at(
        &self,
        invokers: &[BoxInvoker],
        inv: &Invocation,
        now_ms: u64,
    ) -> Option<BoxInvoker> {
        if invokers.is_empty() {
            return None;
        }
        let mut weights = Vec::with_capacity(invokers.len());
        self.cache
            .weights(invokers, inv.method(), now_millis(), &mut weights);
        let state = self.state(inv);
        let mut state = state.lock();
        state.align(invokers, &weights, now_ms);
        let mut total: i64 = 0;
        let mut best: Option<(usize, i64)> = None;
        for (i, e) in state.slots.iter_mut().enumerate() {
            let weight = weights[i];
            if e.weight != weight {
                e.weight = weight;
                e.current = 0;
            }
            e.current += i64::from(weight);
            e.last_update_ms = now_ms;
            if best.is_none_or(|(_, max)| e.current > max) {
                best = Some((i, e.current));
            }
            total += i64::from(weight);
        }
        if !state.others.is_empty() {
            state
                .others
                .retain(|_, e| now_ms.saturating_sub(e.last_update_ms) <= RECYCLE_PERIOD_MS);
        }
        let (i, _) = best?;
        state.slots[i].current -= total;
        Some(invokers[i].clone())
    }

    #[cfg(test)]
    fn entry_count(&self, inv: &Invocation) -> usize {
        self.state(inv).lock().len()
    }
}

impl LoadBalance for RoundRobinLoadBalance {
    fn select(&self, invokers: &[BoxInvoker], _: &Url, inv: &Invocation) -> Option<BoxInvoker> {
        let now = self.epoch.elapsed().as_millis() as u64;
        self.select_at(invokers, inv, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rubbo_common::{InvokeFuture, Invoker, RpcResult};

    #[derive(Debug)]
    struct P(Url);
    impl Invoker for P {
        fn invoke(&self, _: Invocation) -> InvokeFuture {
            Box::pin(async { Ok(RpcResult::null()) })
        }
        fn url(&self) -> &Url {
            &self.0
        }
    }

    #[test]
    fn stale_entries_are_recycled_after_60s() {
        let lb = RoundRobinLoadBalance::new();
        let mk = |h: &str| -> BoxInvoker { Arc::new(P(Url::new("dubbo", h, 1))) };
        let (a, b, c) = (mk("a"), mk("b"), mk("c"));
        let inv = Invocation::new("S", "m");
        lb.select_at(&[a.clone(), b.clone(), c.clone()], &inv, 0);
        assert_eq!(lb.entry_count(&inv), 3);
        // c leaves; within the period its entry stays.
        lb.select_at(&[a.clone(), b.clone()], &inv, 30_000);
        assert_eq!(lb.entry_count(&inv), 3);
        lb.select_at(&[a.clone(), b.clone()], &inv, 90_001);
        assert_eq!(lb.entry_count(&inv), 2);
    }
}
