//! Routers: filters over the provider list, applied in priority order before load
//! balancing (Java's `StateRouter` chain).
//!
//! Built-in chain, lowest priority first (Java's `@Activate` order):
//! [`MockRouter`] (-100), [`TagRouter`] (100), service-scope [`ConditionRuleRouter`]
//! (140), application-scope [`ConditionRuleRouter`] (150). Rules are replaced at run
//! time through [`RouterChain::set_rule`] (fed by the config center) or the typed
//! setters.

mod chain;
pub mod condition;
mod matching;
mod mock;
pub mod tag;

use std::fmt;

use rubbo_common::{BoxInvoker, Invocation, Url};

pub use chain::RouterChain;
pub use condition::{Condition, ConditionRule, ConditionRuleRouter, RuleScope};
pub(crate) use matching::java_string;
pub use matching::{is_match_glob_pattern, match_ip_expression};
pub use mock::{MockRouter, NEED_MOCK_ATTACHMENT};
pub use tag::{TagRouter, TagRule};

/// The providers still in the running during routing: a view of the directory's list
/// as indexes, so a chain of routers copies no invoker handles until the end (Java's
/// `BitList`).
#[derive(Clone)]
pub struct Candidates<'a> {
    all: &'a [BoxInvoker],
    idx: Vec<u32>,
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
            idx: (0..all.len() as u32).collect(),
        }
    }

    /// How many remain.
    pub fn len(&self) -> usize {
        self.idx.len()
    }

    /// Whether none remain.
    pub fn is_empty(&self) -> bool {
        self.idx.is_empty()
    }

    /// The remaining invokers, in directory order.
    pub fn iter(&self) -> impl Iterator<Item = &'a BoxInvoker> + '_ {
        let all = self.all;
        self.idx.iter().map(move |&i| &all[i as usize])
    }

    /// Keeps the invokers for which `keep` says true.
    pub fn retain(&mut self, mut keep: impl FnMut(&BoxInvoker) -> bool) {
        let all = self.all;
        self.idx.retain(|&i| keep(&all[i as usize]));
    }

    /// A copy holding only the invokers for which `keep` says true.
    pub fn filtered(&self, keep: impl FnMut(&BoxInvoker) -> bool) -> Self {
        let mut out = self.clone();
        out.retain(keep);
        out
    }

    /// Removes every invoker.
    pub fn clear(&mut self) {
        self.idx.clear();
    }

    /// The remaining invokers as handles.
    pub fn to_vec(&self) -> Vec<BoxInvoker> {
        self.iter().cloned().collect()
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
