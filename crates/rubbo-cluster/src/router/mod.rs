//! Routers: filters over the provider list, applied in priority order before load
//! balancing (Java's `StateRouter` chain).
//!
//! Built-in chain, lowest priority first (Java's `@Activate` order):
//! [`MockRouter`] (-100), [`TagRouter`] (100), service-scope [`ConditionRuleRouter`]
//! (140), application-scope [`ConditionRuleRouter`] (150). Rules are replaced at run
//! time through [`RouterChain::set_rule`] (fed by the config center) or the typed
//! setters. A [`DynamicRouters`] set added to the chain holds the routers a source
//! publishes as a list (a registry's `routers` category), replaced as a whole.

mod chain;
pub mod condition;
mod dynamic;
mod matching;
mod mock;
mod snapshot;
pub mod tag;

use std::fmt;

use rubbo_common::{BoxInvoker, Invocation, Url};

pub use chain::RouterChain;
pub use condition::{
    Condition, ConditionRule, ConditionRuleRouter, RuleScope, SingleConditionRouter,
};
pub use dynamic::DynamicRouters;
pub(crate) use matching::java_string;
pub use matching::{is_match_glob_pattern, match_ip_expression};
pub use mock::{MockRouter, NEED_MOCK_ATTACHMENT};
pub use snapshot::{RECENT_ROUTES, RouteRecorder};

pub use tag::{TagRouter, TagRule};

/// The providers still in the running during routing: a view of the directory's list
/// as indexes, so a chain of routers copies no invoker handles until the end (Java's
/// `BitList`).
#[derive(Clone)]
pub struct Candidates<'a> {
    all: &'a [BoxInvoker],
    /// `None`: every invoker of `all`.
    idx: Option<Vec<u32>>,
    meta: Option<&'a RouteMeta>,
}

impl fmt::Debug for Candidates<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|i| i.url().address()))
            .finish()
    }
}

impl<'a> Candidates<'a> {
    /// Every invoker of `all`.
    pub fn new(all: &'a [BoxInvoker]) -> Self {
        Candidates {
            all,
            idx: None,
            meta: None,
        }
    }

    pub(crate) fn with_meta(all: &'a [BoxInvoker], meta: &'a RouteMeta) -> Self {
        Candidates {
            all,
            idx: None,
            meta: Some(meta),
        }
    }

    pub(crate) fn meta(&self) -> Option<&'a RouteMeta> {
        self.meta
    }

    pub(crate) fn all(&self) -> &'a [BoxInvoker] {
        self.all
    }

    /// How many remain.
    pub fn len(&self) -> usize {
        self.idx.as_ref().map_or(self.all.len(), Vec::len)
    }

    /// Whether none remain.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether every invoker of the original list remains.
    pub fn is_full(&self) -> bool {
        self.len() == self.all.len()
    }

    /// The remaining invokers, in directory order.
    pub fn iter(&self) -> impl Iterator<Item = &'a BoxInvoker> + '_ {
        let all = self.all;
        let (full, some) = match &self.idx {
            None => (Some(all.iter()), None),
            Some(idx) => (None, Some(idx.iter().map(move |&i| &all[i as usize]))),
        };
        full.into_iter().flatten().chain(some.into_iter().flatten())
    }

    /// Keeps the invokers for which `keep` says true.
    pub fn retain(&mut self, mut keep: impl FnMut(&BoxInvoker) -> bool) {
        self.retain_indexed(|_, inv| keep(inv));
    }

    /// Keeps the invokers for which `keep(index in the original list, invoker)` says true.
    pub(crate) fn retain_indexed(&mut self, mut keep: impl FnMut(usize, &BoxInvoker) -> bool) {
        let all = self.all;
        match &mut self.idx {
            Some(idx) => idx.retain(|&i| keep(i as usize, &all[i as usize])),
            None => {
                let Some(first_out) = all.iter().enumerate().position(|(i, inv)| !keep(i, inv))
                else {
                    return;
                };
                let mut idx: Vec<u32> = (0..first_out as u32).collect();
                idx.extend(
                    (first_out + 1..all.len())
                        .filter(|&i| keep(i, &all[i]))
                        .map(|i| i as u32),
                );
                self.idx = Some(idx);
            }
        }
    }

    /// A copy holding only the invokers for which `keep` says true.
    pub fn filtered(&self, keep: impl FnMut(&BoxInvoker) -> bool) -> Self {
        let mut out = self.clone();
        out.retain(keep);
        out
    }

    pub(crate) fn filtered_indexed(&self, keep: impl FnMut(usize, &BoxInvoker) -> bool) -> Self {
        let mut out = self.clone();
        out.retain_indexed(keep);
        out
    }

    /// Removes every invoker.
    pub fn clear(&mut self) {
        self.idx = Some(Vec::new());
    }

    /// The remaining invokers as handles.
    pub fn to_vec(&self) -> Vec<BoxInvoker> {
        self.iter().cloned().collect()
    }
}

/// What the built-in routers read from every provider URL, computed once per
/// directory snapshot.
#[derive(Debug, Default)]
pub(crate) struct RouteMeta {
    /// Unique per computed snapshot: keys caches of per-provider results.
    pub(crate) id: u64,
    pub(crate) tags: Vec<Option<std::sync::Arc<str>>>,
    pub(crate) mock: Vec<bool>,
    pub(crate) any_tag: bool,
    pub(crate) any_mock: bool,
}

impl RouteMeta {
    pub(crate) fn of(list: &[BoxInvoker]) -> Self {
        let tags: Vec<Option<std::sync::Arc<str>>> = list
            .iter()
            .map(|i| {
                i.url()
                    .get_param(rubbo_common::keys::TAG_KEY)
                    .filter(|t| !t.is_empty())
                    .map(std::sync::Arc::from)
            })
            .collect();
        let mock: Vec<bool> = list
            .iter()
            .map(|i| i.url().protocol() == Some("mock"))
            .collect();
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        RouteMeta {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            any_tag: tags.iter().any(Option::is_some),
            any_mock: mock.iter().any(|m| *m),
            tags,
            mock,
        }
    }
}

/// A router: narrows the provider list for one call.
///
/// ```
/// use rubbo_cluster::{Candidates, Router};
/// use rubbo_common::{Invocation, Url};
///
/// /// Keeps providers in the consumer's zone.
/// #[derive(Debug)]
/// struct SameZone;
///
/// impl Router for SameZone {
///     fn name(&self) -> &str { "same-zone" }
///     fn priority(&self) -> i32 { 500 }
///     fn route<'a>(&self, mut c: Candidates<'a>, consumer: &Url, _: &Invocation) -> Candidates<'a> {
///         let zone = consumer.get_param("zone").unwrap_or("").to_owned();
///         c.retain(|p| p.url().get_param("zone") == Some(zone.as_str()));
///         c
///     }
/// }
///
/// // Routers live in a chain as trait objects.
/// let _dyn: Box<dyn Router> = Box::new(SameZone);
/// ```
pub trait Router: Send + Sync + fmt::Debug + 'static {
    /// A name for logs.
    fn name(&self) -> &str;

    /// Lower runs first.
    fn priority(&self) -> i32 {
        0
    }

    /// Narrows `candidates` for a call of `invocation` by `consumer`.
    fn route<'a>(
        &self,
        candidates: Candidates<'a>,
        consumer: &Url,
        invocation: &Invocation,
    ) -> Candidates<'a>;
}
