//! What every cluster invoker shares (Java's `AbstractClusterInvoker`).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use rubbo_common::keys::{ClusterAvailableCheck, LOADBALANCE_KEY, Param, Sticky};
use rubbo_common::resolve::{Sources, lookup, lookup_param};
use rubbo_common::{
    BoxInvoker, ErrorKind, ExtensionTable, Invocation, InvokeFuture, Invoker, RpcError, Url,
};

/// The balancer and `sticky` setting resolved for calls whose first provider is
/// `first`, when neither the consumer URL nor that provider's has method-level
/// parameters: then they are the same for every call until the first provider changes.
struct Resolved {
    /// Weak, so that a provider gone from the directory is not kept alive; its
    /// allocation is, so no other provider can take its address meanwhile.
    first: Weak<dyn Invoker>,
    lb: Arc<dyn LoadBalance>,
    sticky: bool,
}

use crate::{ClusterContext, Directory, LoadBalance, Rand};

/// Java's `dubbo.reselect.count`.
const RESELECT_COUNT: usize = 10;

/// The directory, balancers and sticky state of one cluster invoker, with Java's
/// `list` / `select` / `reselect`.
pub struct ClusterBase {
    directory: Arc<dyn Directory>,
    balancers: Arc<ExtensionTable<dyn LoadBalance>>,
    sticky: Mutex<Option<BoxInvoker>>,
    available_check: bool,
    rand: Rand,
    destroyed: AtomicBool,
    /// The consumer URL has no method-level parameters (settings may be cached).
    uniform: bool,
    resolved: Mutex<Option<Resolved>>,
}

impl fmt::Debug for ClusterBase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterBase")
            .field("directory", &self.directory)
            .finish()
    }
}

fn contains(list: &[BoxInvoker], inv: &BoxInvoker) -> bool {
    list.iter().any(|i| Arc::ptr_eq(i, inv))
}

impl ClusterBase {
    /// State for a cluster invoker over `directory`.
    pub fn new(directory: Arc<dyn Directory>, ctx: &ClusterContext) -> Self {
        let available_check = directory.url().param::<ClusterAvailableCheck>();
        let uniform = !directory.url().has_method_params();
        ClusterBase {
            uniform,
            resolved: Mutex::new(None),
            directory,
            balancers: ctx.load_balances.clone(),
            sticky: Mutex::new(None),
            available_check,
            rand: ctx.rand.clone(),
            destroyed: AtomicBool::new(false),
        }
    }

    /// The directory.
    pub fn directory(&self) -> &Arc<dyn Directory> {
        &self.directory
    }

    /// The consumer URL.
    pub fn url(&self) -> &Url {
        self.directory.url()
    }

    /// Whether the cluster invoker was destroyed.
    pub fn is_destroyed(&self) -> bool {
        self.destroyed.load(Ordering::Acquire)
    }

    /// Destroys the directory.
    pub fn destroy(&self) {
        if !self.destroyed.swap(true, Ordering::AcqRel) {
            self.directory.destroy();
        }
    }

    /// Routed providers, or a no-provider error (Java's `list` + `checkInvokers`).
    pub fn list(&self, inv: &Invocation) -> Result<Arc<Vec<BoxInvoker>>, RpcError> {
        if self.is_destroyed() {
            return Err(RpcError::new(
                ErrorKind::Unknown,
                format!(
                    "rpc cluster invoker for {} on consumer {} is now destroyed, can not be invoked any more",
                    self.url().service_key(),
                    self.url().host().unwrap_or("")
                ),
            ));
        }
        let list = self.directory.list(inv);
        if list.is_empty() {
            return Err(self.no_provider(inv));
        }
        Ok(list)
    }

    /// The no-provider error for `inv`.
    pub fn no_provider(&self, inv: &Invocation) -> RpcError {
        RpcError::no_provider(format!(
            "Failed to invoke the method {} in the service {}. No provider available for the service {} on the consumer {}. Please check if the providers have been started and registered.",
            inv.method(),
            inv.interface(),
            self.url().service_key(),
            self.url().host().unwrap_or("")
        ))
    }

    /// A setting for a call, in Dubbo's order: consumer method level, provider method
    /// level (first provider), consumer, provider.
    pub fn setting<'a>(
        &'a self,
        provider: Option<&'a Url>,
        inv: &Invocation,
        key: &str,
    ) -> Option<&'a str> {
        let sources = Sources {
            overrides: &[],
            consumer: Some(self.url()),
            provider,
        };
        lookup(&sources, Some(inv.method()), key)
    }

    /// A typed setting for a call, in the order of [`setting`](Self::setting), with its
    /// default.
    pub fn setting_param<P: Param>(&self, provider: Option<&Url>, inv: &Invocation) -> P::Value {
        let sources = Sources {
            overrides: &[],
            consumer: Some(self.url()),
            provider,
        };
        lookup_param::<P>(&sources, Some(inv.method()))
    }

    /// The balancer named by `loadbalance` (see [`setting`](Self::setting)), or the
    /// default.
    pub fn load_balance(
        &self,
        invokers: &[BoxInvoker],
        inv: &Invocation,
    ) -> Result<Arc<dyn LoadBalance>, RpcError> {
        if let Some((lb, _)) = invokers.first().and_then(|f| self.cached(f)) {
            return Ok(lb);
        }
        let name = self
            .setting(invokers.first().map(|i| i.url()), inv, LOADBALANCE_KEY)
            .unwrap_or(self.balancers.default_name());
        let lb = self
            .balancers
            .get(name)
            .map_err(|e| RpcError::new(ErrorKind::Unknown, e.to_string()))?;
        if let Some(first) = invokers.first() {
            if self.uniform && !first.url().has_method_params() {
                let sticky = self.setting_param::<Sticky>(Some(first.url()), inv);
                *self.resolved.lock() = Some(Resolved {
                    first: Arc::downgrade(first),
                    lb: lb.clone(),
                    sticky,
                });
            }
        }
        Ok(lb)
    }

    /// The balancer and `sticky` resolved for `first` (see [`Resolved`]), if still valid.
    fn cached(&self, first: &BoxInvoker) -> Option<(Arc<dyn LoadBalance>, bool)> {
        if !self.uniform {
            return None;
        }
        let resolved = self.resolved.lock();
        resolved
            .as_ref()
            .filter(|r| std::ptr::addr_eq(r.first.as_ptr(), Arc::as_ptr(first)))
            .map(|r| (r.lb.clone(), r.sticky))
    }

    /// Java's `select`: sticky reuse, then balance and reselect avoiding `selected`.
    pub fn select(
        &self,
        lb: &dyn LoadBalance,
        inv: &Invocation,
        invokers: &Arc<Vec<BoxInvoker>>,
        selected: &[BoxInvoker],
    ) -> Option<BoxInvoker> {
        let first = invokers.first()?;
        let sticky = match self.cached(first) {
            Some((_, sticky)) => sticky,
            None => self.setting_param::<Sticky>(Some(first.url()), inv),
        };
        {
            let mut current = self.sticky.lock();
            if current.as_ref().is_some_and(|s| !contains(invokers, s)) {
                *current = None;
            }
            if sticky {
                if let Some(s) = current.as_ref() {
                    if !contains(selected, s) && (!self.available_check || s.is_available()) {
                        return Some(s.clone());
                    }
                }
            }
        }
        let chosen = self.do_select(lb, inv, invokers, Some(invokers), selected)?;
        if sticky {
            *self.sticky.lock() = Some(chosen.clone());
        }
        Some(chosen)
    }

    fn do_select(
        &self,
        lb: &dyn LoadBalance,
        inv: &Invocation,
        invokers: &[BoxInvoker],
        list: Option<&Arc<Vec<BoxInvoker>>>,
        selected: &[BoxInvoker],
    ) -> Option<BoxInvoker> {
        if invokers.len() == 1 {
            return Some(invokers[0].clone());
        }
        let mut chosen = match list {
            Some(list) => lb.select_list(list, self.url(), inv)?,
            None => lb.select(invokers, self.url(), inv)?,
        };
        let is_selected = contains(selected, &chosen);
        let unavailable = self.available_check && !chosen.is_available();
        if is_selected || unavailable {
            match self.reselect(lb, inv, invokers, selected) {
                Some(r) => chosen = r,
                None => {
                    let idx = invokers
                        .iter()
                        .position(|i| Arc::ptr_eq(i, &chosen))
                        .unwrap_or(0);
                    chosen = invokers[(idx + 1) % invokers.len()].clone();
                }
            }
        }
        Some(chosen)
    }

    fn reselect(
        &self,
        lb: &dyn LoadBalance,
        inv: &Invocation,
        invokers: &[BoxInvoker],
        selected: &[BoxInvoker],
    ) -> Option<BoxInvoker> {
        let mut candidates: Vec<BoxInvoker> =
            Vec::with_capacity(invokers.len().min(RESELECT_COUNT));
        if RESELECT_COUNT >= invokers.len() {
            for i in invokers {
                if self.available_check && !i.is_available() {
                    continue;
                }
                if !contains(selected, i) {
                    candidates.push(i.clone());
                }
            }
        } else {
            for _ in 0..RESELECT_COUNT {
                let i = &invokers[self.rand.below(invokers.len())];
                if self.available_check && !i.is_available() {
                    continue;
                }
                if !contains(selected, i) && !contains(&candidates, i) {
                    candidates.push(i.clone());
                }
            }
        }
        if !candidates.is_empty() {
            return lb.select(&candidates, self.url(), inv);
        }
        for i in selected {
            if i.is_available() && !contains(&candidates, i) {
                candidates.push(i.clone());
            }
        }
        if !candidates.is_empty() {
            return lb.select(&candidates, self.url(), inv);
        }
        None
    }
}

/// The strategy of a cluster invoker that keeps no state beyond its
/// [`ClusterBase`]: one call, given the base and the invocation.
pub(crate) type StrategyFn = fn(Arc<ClusterBase>, Invocation) -> InvokeFuture;

/// A cluster invoker made of the shared [`ClusterBase`] and a [`StrategyFn`]; what
/// every such invoker does besides calling (URL, availability, destroy) lives here once.
pub(crate) struct StrategyInvoker {
    name: &'static str,
    base: Arc<ClusterBase>,
    call: StrategyFn,
}

impl StrategyInvoker {
    /// The invoker `name` (for `Debug`) calling `directory` with `call`.
    pub(crate) fn join(
        name: &'static str,
        directory: Arc<dyn Directory>,
        ctx: &ClusterContext,
        call: StrategyFn,
    ) -> BoxInvoker {
        Arc::new(StrategyInvoker {
            name,
            base: Arc::new(ClusterBase::new(directory, ctx)),
            call,
        })
    }
}

impl fmt::Debug for StrategyInvoker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(self.name).field("base", &self.base).finish()
    }
}

impl Invoker for StrategyInvoker {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        (self.call)(self.base.clone(), inv)
    }

    fn url(&self) -> &Url {
        self.base.url()
    }

    fn is_available(&self) -> bool {
        !self.base.is_destroyed() && self.base.directory().is_available()
    }

    fn destroy(&self) {
        self.base.destroy()
    }
}
