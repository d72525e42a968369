//! Call statistics per provider invoker and method (Java's `RpcStatus`), owned by a
//! [`ClusterContext`](crate::ClusterContext) instead of a global static.
//!
//! [`StatusInvoker`] wraps each provider invoker (the directories do it) and counts
//! its calls; load balancers read the counts through [`RpcStatus::view`].

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use parking_lot::RwLock;
use rubbo_common::{BoxInvoker, Invocation, InvokeFuture, Invoker, Url};

/// Response attachment carrying a provider's load report for the adaptive balancer.
pub(crate) const ADAPTIVE_ATTACHMENT: &str = "lb_adaptive";

/// A hasher for pointer keys: one multiply.
#[derive(Default)]
pub(crate) struct PtrHasher(u64);

impl Hasher for PtrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 =
                (self.0.rotate_left(5) ^ u64::from(*b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_usize(&mut self, i: usize) {
        self.0 = (i as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_right(17);
    }
}

pub(crate) type PtrMap<V> = HashMap<usize, V, BuildHasherDefault<PtrHasher>>;

/// The identity of an invoker in statistics and balancer state: the address of the
/// shared value.
pub(crate) fn invoker_key(invoker: &BoxInvoker) -> usize {
    Arc::as_ptr(invoker) as *const () as usize
}

/// Counters of one method on one provider invoker.
#[derive(Debug, Default)]
pub struct MethodStatus {
    active: AtomicI64,
    total: AtomicU64,
    failed: AtomicU64,
    total_elapsed_ms: AtomicU64,
    failed_elapsed_ms: AtomicU64,
    // shortest-response window offsets
    window_succeeded: AtomicU64,
    window_succeeded_elapsed_ms: AtomicU64,
    // adaptive (p2c) estimates
    ewma_latency_us: AtomicU64,
    provider_load_bits: AtomicU64,
    has_ewma: AtomicBool,
}

impl MethodStatus {
    /// Calls in flight.
    pub fn active(&self) -> i64 {
        self.active.load(Ordering::Relaxed)
    }
    /// Finished calls.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }
    /// Failed calls (an `Err`; a business exception counts as success, as in Java).
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }
    /// Succeeded calls.
    pub fn succeeded(&self) -> u64 {
        self.total().saturating_sub(self.failed())
    }
    /// Total milliseconds of succeeded calls.
    pub fn succeeded_elapsed_ms(&self) -> u64 {
        self.total_elapsed_ms
            .load(Ordering::Relaxed)
            .saturating_sub(self.failed_elapsed_ms.load(Ordering::Relaxed))
    }

    /// Marks a call started (`RpcStatus.beginCount`).
    pub fn begin(&self) {
        self.active.fetch_add(1, Ordering::Relaxed);
    }

    /// Marks a call finished (`RpcStatus.endCount`).
    pub fn end(&self, elapsed_ms: u64, succeeded: bool) {
        self.active.fetch_sub(1, Ordering::Relaxed);
        self.total.fetch_add(1, Ordering::Relaxed);
        self.total_elapsed_ms
            .fetch_add(elapsed_ms, Ordering::Relaxed);
        if !succeeded {
            self.failed.fetch_add(1, Ordering::Relaxed);
            self.failed_elapsed_ms
                .fetch_add(elapsed_ms, Ordering::Relaxed);
        }
    }

    /// Average latency of succeeded calls in the current shortest-response window
    /// (`SlideWindowData.getSucceededAverageElapsed`).
    pub(crate) fn window_average_ms(&self) -> u64 {
        let succeeded = self
            .succeeded()
            .saturating_sub(self.window_succeeded.load(Ordering::Relaxed));
        if succeeded == 0 {
            return 0;
        }
        self.succeeded_elapsed_ms()
            .saturating_sub(self.window_succeeded_elapsed_ms.load(Ordering::Relaxed))
            / succeeded
    }

    pub(crate) fn reset_window(&self) {
        self.window_succeeded
            .store(self.succeeded(), Ordering::Relaxed);
        self.window_succeeded_elapsed_ms
            .store(self.succeeded_elapsed_ms(), Ordering::Relaxed);
    }

    fn record_latency(&self, elapsed_us: u64) {
        // EWMA with beta 0.5, as Java's AdaptiveMetrics.
        if self.has_ewma.swap(true, Ordering::Relaxed) {
            let old = self.ewma_latency_us.load(Ordering::Relaxed);
            self.ewma_latency_us
                .store(old / 2 + elapsed_us / 2, Ordering::Relaxed);
        } else {
            self.ewma_latency_us.store(elapsed_us, Ordering::Relaxed);
        }
    }

    /// Exponentially weighted moving average of the latency, in microseconds.
    pub fn ewma_latency_us(&self) -> u64 {
        self.ewma_latency_us.load(Ordering::Relaxed)
    }

    /// The last load the provider reported (`lb_adaptive` attachment), 1.0 if none.
    pub fn provider_load(&self) -> f64 {
        let bits = self.provider_load_bits.load(Ordering::Relaxed);
        if bits == 0 { 1.0 } else { f64::from_bits(bits) }
    }
}

type MethodTable = RwLock<PtrMap<Arc<MethodStatus>>>;

/// Statistics of every provider invoker wrapped by a [`StatusInvoker`], per method.
///
/// ```
/// use rubbo_cluster::{RpcStatus, StatusInvoker};
/// # use rubbo_common::*; use std::sync::Arc;
/// # #[derive(Debug)] struct P(Url);
/// # impl Invoker for P {
/// #     fn invoke(&self, _: Invocation) -> InvokeFuture { Box::pin(async { Ok(RpcResult::null()) }) }
/// #     fn url(&self) -> &Url { &self.0 }
/// # }
/// let status = Arc::new(RpcStatus::default());
/// let provider = StatusInvoker::wrap(Arc::new(P(Url::new("dubbo", "10.0.0.1", 20880))), status.clone());
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(provider.invoke(Invocation::new("S", "m"))).unwrap();
/// assert_eq!(status.get(&provider, "m").unwrap().total(), 1);
/// ```
#[derive(Default)]
pub struct RpcStatus {
    methods: RwLock<HashMap<Arc<str>, Arc<MethodTable>>>,
}

impl fmt::Debug for RpcStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RpcStatus")
            .field("methods", &self.methods.read().len())
            .finish()
    }
}

/// A read view of one method's statistics, for a balancer's selection loop.
pub struct MethodView<'a> {
    table: Option<parking_lot::RwLockReadGuard<'a, PtrMap<Arc<MethodStatus>>>>,
}

impl fmt::Debug for MethodView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MethodView")
    }
}

impl MethodView<'_> {
    /// The counters of `invoker`, if it has been called.
    pub fn get(&self, invoker: &BoxInvoker) -> Option<&MethodStatus> {
        self.table
            .as_ref()
            .and_then(|t| t.get(&invoker_key(invoker)))
            .map(|s| &**s)
    }

    /// Calls in flight on `invoker`.
    pub fn active(&self, invoker: &BoxInvoker) -> i64 {
        self.get(invoker).map_or(0, MethodStatus::active)
    }
}

impl RpcStatus {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn table(&self, method: &str) -> Option<Arc<MethodTable>> {
        self.methods.read().get(method).cloned()
    }

    fn table_or_create(&self, method: &str) -> Arc<MethodTable> {
        if let Some(t) = self.table(method) {
            return t;
        }
        self.methods
            .write()
            .entry(Arc::from(method))
            .or_default()
            .clone()
    }

    /// The counters of `invoker` for `method`, if any call was made.
    pub fn get(&self, invoker: &BoxInvoker, method: &str) -> Option<Arc<MethodStatus>> {
        self.table(method)?
            .read()
            .get(&invoker_key(invoker))
            .cloned()
    }

    /// Runs `f` with a read view of `method`'s statistics (one lock for the whole loop).
    pub fn view<R>(&self, method: &str, f: impl FnOnce(&MethodView<'_>) -> R) -> R {
        match self.table(method) {
            Some(table) => {
                let view = MethodView {
                    table: Some(table.read()),
                };
                f(&view)
            }
            None => f(&MethodView { table: None }),
        }
    }

    fn status_for(&self, key: usize, method: &str) -> Arc<MethodStatus> {
        let table = self.table_or_create(method);
        if let Some(s) = table.read().get(&key) {
            return s.clone();
        }
        table.write().entry(key).or_default().clone()
    }

    fn remove(&self, key: usize) {
        for table in self.methods.read().values() {
            table.write().remove(&key);
        }
    }

    /// Starts a new shortest-response window for every counter.
    pub(crate) fn reset_windows(&self) {
        for table in self.methods.read().values() {
            for s in table.read().values() {
                s.reset_window();
            }
        }
    }
}

/// A provider invoker that records its calls in an [`RpcStatus`] (the consumer side of
/// Java's `ActiveLimitFilter` counting). Directories wrap every provider in one.
///
/// `destroy()` is graceful: the inner invoker is destroyed once the calls in flight
/// through this wrapper have finished, and the wrapper reports itself unavailable
/// from then on.
pub struct StatusInvoker {
    inner: BoxInvoker,
    status: Arc<RpcStatus>,
    life: Arc<Lifecycle>,
    /// The counters of the method called last (most clients call one or a few
    /// methods): found without the two table lookups.
    last: parking_lot::Mutex<Option<(Arc<str>, Arc<MethodStatus>)>>,
}

struct Lifecycle {
    inner: BoxInvoker,
    inflight: AtomicUsize,
    requested: AtomicBool,
    destroyed: AtomicBool,
}

impl Lifecycle {
    fn maybe_destroy(&self) {
        if self.requested.load(Ordering::Acquire)
            && self.inflight.load(Ordering::Acquire) == 0
            && !self.destroyed.swap(true, Ordering::AcqRel)
        {
            self.inner.destroy();
        }
    }

    fn finish(&self) {
        self.inflight.fetch_sub(1, Ordering::AcqRel);
        self.maybe_destroy();
    }
}

impl StatusInvoker {
    /// Wraps `inner`.
    pub fn wrap(inner: BoxInvoker, status: Arc<RpcStatus>) -> BoxInvoker {
        let life = Arc::new(Lifecycle {
            inner: inner.clone(),
            inflight: AtomicUsize::new(0),
            requested: AtomicBool::new(false),
            destroyed: AtomicBool::new(false),
        });
        Arc::new(StatusInvoker {
            inner,
            status,
            life,
            last: parking_lot::Mutex::new(None),
        })
    }

    fn key(&self) -> usize {
        self as *const Self as *const () as usize
    }

    /// The counters of `method` on this invoker (entries in the table are never
    /// replaced while the invoker lives, so the remembered one stays the table's).
    fn status_of(&self, method: &str) -> Arc<MethodStatus> {
        let mut last = self.last.lock();
        if let Some((m, s)) = last.as_ref() {
            if **m == *method {
                return s.clone();
            }
        }
        let s = self.status.status_for(self.key(), method);
        *last = Some((Arc::from(method), s.clone()));
        s
    }
}

impl fmt::Debug for StatusInvoker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("StatusInvoker").field(&self.inner).finish()
    }
}

impl Drop for StatusInvoker {
    fn drop(&mut self) {
        self.status.remove(self.key());
    }
}

impl Invoker for StatusInvoker {
    fn invoke(&self, invocation: Invocation) -> InvokeFuture {
        let stat = self.status_of(invocation.method());
        stat.begin();
        self.life.inflight.fetch_add(1, Ordering::AcqRel);
        let started = Instant::now();
        let fut = self.inner.invoke(invocation);
        // Ends the count even if the caller drops the future (forking cancels losers).
        struct Guard {
            stat: Arc<MethodStatus>,
            life: Arc<Lifecycle>,
            started: Instant,
            done: bool,
        }
        impl Drop for Guard {
            fn drop(&mut self) {
                if !self.done {
                    let ms = self.started.elapsed().as_millis() as u64;
                    self.stat.end(ms, false);
                }
                self.life.finish();
            }
        }
        let guard = Guard {
            stat,
            life: self.life.clone(),
            started,
            done: false,
        };
        Box::pin(async move {
            let mut guard = guard;
            let result = fut.await;
            guard.done = true;
            let elapsed = guard.started.elapsed();
            guard.stat.end(elapsed.as_millis() as u64, result.is_ok());
            if let Ok(r) = &result {
                guard.stat.record_latency(elapsed.as_micros() as u64);
                if let Some(load) = r
                    .attachments()
                    .get(ADAPTIVE_ATTACHMENT)
                    .and_then(|v| v.as_str())
                    .and_then(parse_adaptive_load)
                {
                    guard
                        .stat
                        .provider_load_bits
                        .store(load.to_bits(), Ordering::Relaxed);
                }
            }
            result
        })
    }

    fn url(&self) -> &Url {
        self.inner.url()
    }

    fn is_available(&self) -> bool {
        !self.life.requested.load(Ordering::Acquire) && self.inner.is_available()
    }

    fn destroy(&self) {
        self.life.requested.store(true, Ordering::Release);
        self.life.maybe_destroy();
    }
}

/// Parses `curTime:...,load:...` (Java's adaptive report) and returns the load.
fn parse_adaptive_load(s: &str) -> Option<f64> {
    s.split(',')
        .filter_map(|kv| kv.split_once(':'))
        .find(|(k, _)| k.trim() == "load")
        .and_then(|(_, v)| v.trim().parse::<f64>().ok())
        .filter(|l| l.is_finite() && *l > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_report_parses() {
        assert_eq!(parse_adaptive_load("curTime:1,load:0.5"), Some(0.5));
        assert_eq!(parse_adaptive_load("load:x"), None);
    }

    #[test]
    fn counters() {
        let s = MethodStatus::default();
        s.begin();
        s.begin();
        assert_eq!(s.active(), 2);
        s.end(10, true);
        s.end(30, false);
        assert_eq!(
            (s.active(), s.total(), s.failed(), s.succeeded()),
            (0, 2, 1, 1)
        );
        assert_eq!(s.succeeded_elapsed_ms(), 10);
        assert_eq!(s.window_average_ms(), 10);
        s.reset_window();
        assert_eq!(s.window_average_ms(), 0);
    }
}
