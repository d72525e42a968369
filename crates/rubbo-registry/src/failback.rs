//! `FailbackRegistry`: retries what failed, in the background, for any registry.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use rubbo_common::keys::{Check, Param, RegistryTimeout, RetryPeriod};
use rubbo_common::{BoxFuture, Url};
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

use crate::category::{group_by_category, is_empty_url, is_match};
use crate::{
    NotifyListener, Registry, RegistryCache, RegistryError, RegistryResult, SharedListener,
    SharedRegistry, UrlDelta, notify_delta_safely, notify_safely, same_listener,
};

/// Wraps a registry so that a failed `register`, `unregister`, `subscribe` or
/// `unsubscribe` is retried every `retry.period` ms (registry URL, default 5000) until it
/// succeeds, and so that every subscription's last lists are kept in the
/// [`RegistryCache`] (registry URL `file=`).
///
/// - Each call to the wrapped registry is bounded by the registry URL's `timeout`
///   (default 5000 ms), so a slow or unreachable registry never blocks start-up.
/// - `register` reports the failure when `check` is true on both the registry URL and
///   the registered URL (and the URL has a port); `subscribe` when `check` is true on
///   both and the cache file has nothing for the subscription. In every case the
///   operation is retried in the background: call `unregister` / `unsubscribe` /
///   `destroy` to give up.
/// - When `subscribe` fails, the listener is fed from the cache file, so a consumer
///   restarted during a registry outage still has its last addresses.
pub struct FailbackRegistry {
    shared: Arc<Shared>,
}

struct Shared {
    inner: SharedRegistry,
    address: String,
    retry_period: Duration,
    op_timeout: Duration,
    check: bool,
    cache: Option<RegistryCache>,
    state: Mutex<State>,
    retry_task: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Default)]
struct State {
    destroyed: bool,
    subscribed: Vec<Sub>,
    failed_registered: Vec<Url>,
    failed_unregistered: Vec<Url>,
    failed_subscribed: Vec<Sub>,
    failed_unsubscribed: Vec<Sub>,
}

#[derive(Clone)]
struct Sub {
    url: Url,
    user: SharedListener,
    wrapped: SharedListener,
}

impl Sub {
    fn is(&self, url: &Url, user: &SharedListener) -> bool {
        self.url == *url && same_listener(&self.user, user)
    }
}

/// Records each list in the cache, then hands it to the user's listener.
struct CachingListener {
    subscription: Url,
    user: SharedListener,
    cache: Option<RegistryCache>,
}

impl NotifyListener for CachingListener {
    fn notify(&self, urls: Vec<Url>) {
        if let Some(cache) = &self.cache {
            cache.update(&self.subscription, &urls);
        }
        notify_safely(&*self.user, urls);
    }

    /// Forwards the delta; the cache file, when there is one, records the whole list.
    fn notify_delta(&self, delta: UrlDelta, full: &dyn Fn() -> Vec<Url>) {
        if let Some(cache) = &self.cache {
            cache.update(&self.subscription, &full());
        }
        notify_delta_safely(&*self.user, delta, full);
    }
}

impl fmt::Debug for FailbackRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FailbackRegistry")
            .field("inner", &self.shared.inner)
            .field("retry_period", &self.shared.retry_period)
            .field("pending_retries", &self.pending_retries())
            .finish()
    }
}

impl FailbackRegistry {
    /// Wraps `inner`, configured from its URL (`retry.period`, `timeout`, `check`,
    /// `file`, `file.cache`).
    pub fn new(inner: SharedRegistry) -> Self {
        let url = inner.url().clone();
        let cache = RegistryCache::for_registry(&url);
        Self::with_cache(inner, cache)
    }

    /// Wraps `inner` with an explicit cache (or none).
    pub fn with_cache(inner: SharedRegistry, cache: Option<RegistryCache>) -> Self {
        let url = inner.url().clone();
        // Zero (or negative) means the default.
        fn ms<P: Param<Value = Duration>>(url: &Url) -> Duration {
            let d = url.param::<P>();
            if d.is_zero() { P::default_value() } else { d }
        }
        FailbackRegistry {
            shared: Arc::new(Shared {
                address: url.address(),
                retry_period: ms::<RetryPeriod>(&url),
                op_timeout: ms::<RegistryTimeout>(&url),
                check: url.param::<Check>(),
                cache,
                inner,
                state: Mutex::new(State::default()),
                retry_task: Mutex::new(None),
            }),
        }
    }

    /// The wrapped registry.
    pub fn get_ref(&self) -> &SharedRegistry {
        &self.shared.inner
    }

    /// The cache file, if enabled.
    pub fn cache(&self) -> Option<&RegistryCache> {
        self.shared.cache.as_ref()
    }

    /// Whether [`destroy`](Registry::destroy) was called.
    pub fn is_destroyed(&self) -> bool {
        self.shared.state.lock().destroyed
    }

    /// How many operations wait for a retry.
    pub fn pending_retries(&self) -> usize {
        let s = self.shared.state.lock();
        s.failed_registered.len()
            + s.failed_unregistered.len()
            + s.failed_subscribed.len()
            + s.failed_unsubscribed.len()
    }

    /// Retries every failed operation now (the background task does this every
    /// `retry.period`).
    pub async fn retry_now(&self) {
        self.shared.retry().await;
    }
}

impl Shared {
    async fn bounded<T>(
        &self,
        operation: &'static str,
        fut: impl Future<Output = RegistryResult<T>>,
    ) -> RegistryResult<T> {
        match tokio::time::timeout(self.op_timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(RegistryError::Timeout {
                address: self.address.clone(),
                operation,
                timeout: self.op_timeout,
            }),
        }
    }

    fn destroyed(&self) -> RegistryResult<()> {
        if self.state.lock().destroyed {
            Err(RegistryError::Destroyed(self.address.clone()))
        } else {
            Ok(())
        }
    }

    fn ensure_retry_task(self: &Arc<Self>) {
        let mut task = self.retry_task.lock();
        if task.as_ref().is_some_and(|t| !t.is_finished()) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            warn!(registry = %self.address, "no tokio runtime: failed registry operations will not be retried");
            return;
        };
        let weak: Weak<Shared> = Arc::downgrade(self);
        let period = self.retry_period;
        *task = Some(handle.spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                let Some(shared) = weak.upgrade() else { return };
                if shared.state.lock().destroyed {
                    return;
                }
                shared.retry().await;
            }
        }));
    }

    async fn retry(&self) {
        let (reg, unreg, sub, unsub) = {
            let s = self.state.lock();
            (
                s.failed_registered.clone(),
                s.failed_unregistered.clone(),
                s.failed_subscribed.clone(),
                s.failed_unsubscribed.clone(),
            )
        };
        for url in reg {
            match self
                .bounded("register", self.inner.register(url.clone()))
                .await
            {
                Ok(()) => {
                    info!(registry = %self.address, url = %url, "register retried successfully");
                    self.state.lock().failed_registered.retain(|u| *u != url);
                }
                Err(e) => {
                    debug!(registry = %self.address, url = %url, error = %e, "register retry failed")
                }
            }
        }
        for url in unreg {
            match self
                .bounded("unregister", self.inner.unregister(url.clone()))
                .await
            {
                Ok(()) => self.state.lock().failed_unregistered.retain(|u| *u != url),
                Err(e) => {
                    debug!(registry = %self.address, url = %url, error = %e, "unregister retry failed")
                }
            }
        }
        for s in sub {
            let fut = self.inner.subscribe(s.url.clone(), s.wrapped.clone());
            match self.bounded("subscribe", fut).await {
                Ok(()) => {
                    info!(registry = %self.address, url = %s.url, "subscribe retried successfully");
                    self.state
                        .lock()
                        .failed_subscribed
                        .retain(|x| !x.is(&s.url, &s.user));
                }
                Err(e) => {
                    debug!(registry = %self.address, url = %s.url, error = %e, "subscribe retry failed")
                }
            }
        }
        for s in unsub {
            let fut = self.inner.unsubscribe(s.url.clone(), s.wrapped.clone());
            match self.bounded("unsubscribe", fut).await {
                Ok(()) => self
                    .state
                    .lock()
                    .failed_unsubscribed
                    .retain(|x| !x.is(&s.url, &s.user)),
                Err(e) => {
                    debug!(registry = %self.address, url = %s.url, error = %e, "unsubscribe retry failed")
                }
            }
        }
    }

    /// Feeds `listener` from the cache file; returns whether anything was there.
    fn notify_from_cache(&self, url: &Url, listener: &SharedListener) -> bool {
        let Some(cache) = &self.cache else {
            return false;
        };
        let cached = cache.get(url);
        if cached.is_empty() {
            return false;
        }
        let lists = group_by_category(url, &cached);
        warn!(registry = %self.address, url = %url, urls = cached.len(), file = %cache.path().display(),
            "registry unavailable: using the cached address lists");
        for (_, list) in lists {
            notify_safely(&**listener, list);
        }
        true
    }
}

impl Registry for FailbackRegistry {
    fn url(&self) -> &Url {
        self.shared.inner.url()
    }

    fn is_available(&self) -> bool {
        self.shared.inner.is_available()
    }

    fn register(&self, url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move {
            let sh = &self.shared;
            sh.destroyed()?;
            {
                let mut s = sh.state.lock();
                s.failed_registered.retain(|u| *u != url);
                s.failed_unregistered.retain(|u| *u != url);
            }
            match sh.bounded("register", sh.inner.register(url.clone())).await {
                Ok(()) => Ok(()),
                Err(e) if !e.is_retryable() => Err(e),
                Err(e) => {
                    sh.state.lock().failed_registered.push(url.clone());
                    sh.ensure_retry_task();
                    let check = sh.check && url.param::<Check>() && url.port() != 0;
                    warn!(registry = %sh.address, url = %url, error = %e, retry_in = ?sh.retry_period,
                        "register failed; will retry");
                    if check { Err(e) } else { Ok(()) }
                }
            }
        })
    }

    fn unregister(&self, url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move {
            let sh = &self.shared;
            sh.destroyed()?;
            {
                let mut s = sh.state.lock();
                s.failed_registered.retain(|u| *u != url);
                s.failed_unregistered.retain(|u| *u != url);
            }
            if let Err(e) = sh
                .bounded("unregister", sh.inner.unregister(url.clone()))
                .await
            {
                warn!(registry = %sh.address, url = %url, error = %e, "unregister failed; will retry");
                sh.state.lock().failed_unregistered.push(url);
                sh.ensure_retry_task();
            }
            Ok(())
        })
    }

    fn subscribe(&self, url: Url, listener: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move {
            let sh = &self.shared;
            sh.destroyed()?;
            let sub = {
                let mut s = sh.state.lock();
                s.failed_subscribed.retain(|x| !x.is(&url, &listener));
                s.failed_unsubscribed.retain(|x| !x.is(&url, &listener));
                match s.subscribed.iter().find(|x| x.is(&url, &listener)) {
                    Some(existing) => existing.clone(),
                    None => {
                        let wrapped: SharedListener = Arc::new(CachingListener {
                            subscription: url.clone(),
                            user: listener.clone(),
                            cache: sh.cache.clone(),
                        });
                        let sub = Sub {
                            url: url.clone(),
                            user: listener.clone(),
                            wrapped,
                        };
                        s.subscribed.push(sub.clone());
                        sub
                    }
                }
            };
            let fut = sh.inner.subscribe(url.clone(), sub.wrapped.clone());
            match sh.bounded("subscribe", fut).await {
                Ok(()) => Ok(()),
                Err(e) if !e.is_retryable() => {
                    sh.state
                        .lock()
                        .subscribed
                        .retain(|x| !x.is(&url, &listener));
                    Err(e)
                }
                Err(e) => {
                    sh.state.lock().failed_subscribed.push(sub);
                    sh.ensure_retry_task();
                    warn!(registry = %sh.address, url = %url, error = %e, retry_in = ?sh.retry_period,
                        "subscribe failed; will retry");
                    let from_cache = sh.notify_from_cache(&url, &listener);
                    let check = sh.check && url.param::<Check>();
                    if check && !from_cache { Err(e) } else { Ok(()) }
                }
            }
        })
    }

    fn unsubscribe(&self, url: Url, listener: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move {
            let sh = &self.shared;
            sh.destroyed()?;
            let sub = {
                let mut s = sh.state.lock();
                s.failed_subscribed.retain(|x| !x.is(&url, &listener));
                let pos = s.subscribed.iter().position(|x| x.is(&url, &listener));
                match pos {
                    Some(i) => s.subscribed.remove(i),
                    None => return Ok(()),
                }
            };
            let fut = sh.inner.unsubscribe(url.clone(), sub.wrapped.clone());
            if let Err(e) = sh.bounded("unsubscribe", fut).await {
                warn!(registry = %sh.address, url = %url, error = %e, "unsubscribe failed; will retry");
                sh.state.lock().failed_unsubscribed.push(sub);
                sh.ensure_retry_task();
            }
            Ok(())
        })
    }

    fn lookup(&self, url: Url) -> BoxFuture<'_, RegistryResult<Vec<Url>>> {
        Box::pin(async move {
            let sh = &self.shared;
            sh.destroyed()?;
            match sh.bounded("lookup", sh.inner.lookup(url.clone())).await {
                Ok(list) => Ok(list),
                Err(e) => {
                    let cached: Vec<Url> = sh
                        .cache
                        .as_ref()
                        .map(|c| c.get(&url))
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|u| !is_empty_url(u) && is_match(&url, u))
                        .collect();
                    if cached.is_empty() {
                        Err(e)
                    } else {
                        Ok(cached)
                    }
                }
            }
        })
    }

    fn destroy(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let sh = &self.shared;
            {
                let mut s = sh.state.lock();
                if s.destroyed {
                    return;
                }
                s.destroyed = true;
            }
            if let Some(task) = sh.retry_task.lock().take() {
                task.abort();
            }
            if let Some(cache) = &sh.cache {
                let cache = cache.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    if let Err(e) = cache.flush() {
                        warn!(error = %e, "cannot write registry cache");
                    }
                })
                .await;
            }
            if tokio::time::timeout(sh.op_timeout, sh.inner.destroy())
                .await
                .is_err()
            {
                warn!(registry = %sh.address, "registry destroy timed out");
            }
        })
    }
}

impl Drop for FailbackRegistry {
    fn drop(&mut self) {
        if let Some(task) = self.shared.retry_task.lock().take() {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests;
