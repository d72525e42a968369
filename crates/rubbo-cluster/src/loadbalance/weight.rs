//! Provider weights with warm-up (Java's `AbstractLoadBalance.getWeight`).

use std::time::{SystemTime, UNIX_EPOCH};

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use arc_swap::ArcSwapOption;
use parking_lot::RwLock;
use rubbo_common::keys::{TIMESTAMP_KEY, Timestamp, WEIGHT_KEY, Warmup, Weight};
use rubbo_common::{BoxInvoker, Url};

use crate::status::{PtrMap, invoker_key};

/// Milliseconds since the Unix epoch.
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Java's `calculateWarmupWeight`: `max(1, min(weight, uptime / (warmup / weight)))`.
///
/// ```
/// use rubbo_cluster::loadbalance::warmup_weight;
/// assert_eq!(warmup_weight(60_000, 600_000, 100), 10);   // a tenth of the way: a tenth of the weight
/// assert_eq!(warmup_weight(1, 600_000, 100), 1);         // never below 1
/// assert_eq!(warmup_weight(599_999, 600_000, 100), 99);
/// ```
pub fn warmup_weight(uptime_ms: i64, warmup_ms: i64, weight: i32) -> i32 {
    // Java: (int) (uptime / ((float) warmup / weight))
    let ww = (uptime_ms as f32 / (warmup_ms as f32 / weight as f32)) as i32;
    if ww < 1 { 1 } else { ww.min(weight) }
}

/// The weight of a provider for `method` at `now_ms` (Java's `getWeight`): the
/// method-level `weight` (default 100), reduced during warm-up when the URL has a
/// `timestamp`; 1 when the provider's clock is ahead; never negative.
///
/// ```
/// use rubbo_cluster::loadbalance::invoker_weight;
/// use rubbo_common::Url;
/// let url = Url::parse("dubbo://h:1/S?weight=200&timestamp=1000&warmup=10000&m.weight=50").unwrap();
/// assert_eq!(invoker_weight(&url, "x", 1000 + 5000), 100);   // half warmed up
/// assert_eq!(invoker_weight(&url, "x", 1000 + 20000), 200);
/// assert_eq!(invoker_weight(&url, "m", 1000 + 20000), 50);
/// assert_eq!(invoker_weight(&url, "x", 500), 1);             // uptime < 0
/// ```
pub fn invoker_weight(url: &Url, method: &str, now_ms: i64) -> i32 {
    let info = WeightInfo::of(url, method);
    info.weight_at(now_ms)
}

#[derive(Debug, Clone)]
struct WeightInfo {
    weight: i64,
    timestamp: i64,
    warmup: i64,
}

impl WeightInfo {
    fn of(url: &Url, method: &str) -> Self {
        WeightInfo {
            weight: url.method_param::<Weight>(method),
            timestamp: url.param::<Timestamp>(),
            warmup: i64::try_from(url.param::<Warmup>().as_millis()).unwrap_or(i64::MAX),
        }
    }

    fn weight_at(&self, now_ms: i64) -> i32 {
        let mut weight = self.weight.clamp(i32::MIN as i64, i32::MAX as i64) as i32;
        if weight > 0 && self.timestamp > 0 {
            let uptime = now_ms - self.timestamp;
            if uptime < 0 {
                return 1;
            }
            if uptime > 0 && uptime < self.warmup {
                weight = warmup_weight(uptime, self.warmup, weight);
            }
        }
        weight.max(0)
    }
}

/// Whether Java's random balancer weighs at all: the first provider's URL has a
/// method-level `weight` or a `timestamp`.
pub(crate) fn needs_weight(url: &Url, method: &str) -> bool {
    url.get_method_param(method, WEIGHT_KEY).is_some()
        || url.get_param(TIMESTAMP_KEY).is_some_and(|t| !t.is_empty())
}

struct Entry {
    url: Url,
    /// The interface-level weight info; `None` when the URL has method-level weights
    /// (then computed per call).
    info: Option<WeightInfo>,
}

/// Caches parsed weight parameters per provider invoker, so a selection over many
/// providers reads no URL. Entries are checked against the invoker's current URL
/// parameters (shared, so a pointer compare).
#[derive(Default)]
pub(crate) struct WeightCache {
    map: RwLock<PtrMap<Entry>>,
    /// The last recurring list, aligned with it: the fast path for a directory
    /// snapshot passed unfiltered.
    list: ArcSwapOption<ListEntry>,
    last_miss: AtomicUsize,
}

/// Holds the invokers themselves, so their addresses cannot be reused by other
/// invokers while cached: an equal address is the same invoker, with the same URL.
struct ListEntry {
    ptr: usize,
    invokers: Vec<BoxInvoker>,
    infos: Vec<Option<WeightInfo>>,
}

impl std::fmt::Debug for WeightCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeightCache")
            .field("entries", &self.map.read().len())
            .finish()
    }
}

fn has_method_weights(url: &Url) -> bool {
    url.params()
        .iter()
        .any(|(k, _)| k.strip_suffix(WEIGHT_KEY).is_some_and(|m| m.ends_with('.')))
}

impl WeightCache {
    /// The weight of one invoker (per-invoker cache only).
    pub(crate) fn weight_of(&self, inv: &BoxInvoker, method: &str, now_ms: i64) -> i32 {
        if let Some(e) = self.map.read().get(&invoker_key(inv)) {
            if e.url.shares_params_with(inv.url()) {
                return match &e.info {
                    Some(info) => info.weight_at(now_ms),
                    None => WeightInfo::of(inv.url(), method).weight_at(now_ms),
                };
            }
        }
        let url = inv.url();
        let w = WeightInfo::of(url, method).weight_at(now_ms);
        let mut map = self.map.write();
        if map.len() > 4096 {
            map.clear();
        }
        map.insert(
            invoker_key(inv),
            Entry {
                url: url.clone(),
                info: (!has_method_weights(url)).then(|| WeightInfo::of(url, "")),
            },
        );
        w
    }

    /// Fills `out` with the weight of each invoker.
    pub(crate) fn weights(
        &self,
        invokers: &[BoxInvoker],
        method: &str,
        now_ms: i64,
        out: &mut Vec<i32>,
    ) {
        out.clear();
        let ptr = invokers.as_ptr() as usize;
        if let Some(list) = self.list.load().as_deref() {
            if list.ptr == ptr && list.invokers.len() == invokers.len() {
                let hit = invokers.iter().zip(&list.invokers).zip(&list.infos).all(
                    |((inv, cached), info)| {
                        if invoker_key(inv) != invoker_key(cached) {
                            return false;
                        }
                        out.push(match info {
                            Some(info) => info.weight_at(now_ms),
                            None => WeightInfo::of(inv.url(), method).weight_at(now_ms),
                        });
                        true
                    },
                );
                if hit {
                    return;
                }
                out.clear();
            }
        }
        if self.last_miss.swap(ptr, Ordering::Relaxed) == ptr {
            // The same list again: remember it aligned.
            let infos = invokers
                .iter()
                .map(|inv| {
                    let url = inv.url();
                    (!has_method_weights(url)).then(|| WeightInfo::of(url, ""))
                })
                .collect();
            self.list.store(Some(Arc::new(ListEntry {
                ptr,
                invokers: invokers.to_vec(),
                infos,
            })));
        }
        let mut missing = false;
        {
            let map = self.map.read();
            for inv in invokers {
                let w = match map.get(&invoker_key(inv)) {
                    Some(e) if e.url.shares_params_with(inv.url()) => match &e.info {
                        Some(info) => info.weight_at(now_ms),
                        None => WeightInfo::of(inv.url(), method).weight_at(now_ms),
                    },
                    _ => {
                        missing = true;
                        WeightInfo::of(inv.url(), method).weight_at(now_ms)
                    }
                };
                out.push(w);
            }
        }
        if missing {
            let mut map = self.map.write();
            if map.len() > 4 * invokers.len().max(256) {
                map.clear();
            }
            for inv in invokers {
                let url = inv.url();
                let info = (!has_method_weights(url)).then(|| WeightInfo::of(url, ""));
                map.insert(
                    invoker_key(inv),
                    Entry {
                        url: url.clone(),
                        info,
                    },
                );
            }
        }
    }
}
