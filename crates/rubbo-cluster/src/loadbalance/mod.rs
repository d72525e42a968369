//! Load balancing: picks one provider of the routed list (Java's `LoadBalance` SPI).
//!
//! | name | algorithm |
//! |---|---|
//! | `random` (default) | weighted random |
//! | `roundrobin` | smooth weighted round robin per `serviceKey.method` |
//! | `leastactive` | fewest calls in flight, ties by weight |
//! | `shortestresponse` | lowest recent latency x (active + 1), ties by weight |
//! | `consistenthash` | MD5 ring of `hash.nodes` virtual nodes, keyed by arguments |
//! | `p2c` / `adaptive` | power of two choices on a load estimate |
//!
//! Weights come from the provider URL (`weight`, method level honoured, default 100)
//! with warm-up (see [`warmup_weight`]).

mod adaptive;
mod consistent;
mod leastactive;
mod random;
mod roundrobin;
mod shortest;
mod weight;

use std::fmt;
use std::sync::Arc;

use rubbo_common::{BoxInvoker, ExtensionTable, Invocation, Url};

pub use adaptive::AdaptiveLoadBalance;
pub use consistent::ConsistentHashLoadBalance;
pub use leastactive::LeastActiveLoadBalance;
pub use random::RandomLoadBalance;
pub use roundrobin::RoundRobinLoadBalance;
pub use shortest::ShortestResponseLoadBalance;
pub use weight::{invoker_weight, now_millis, warmup_weight};

use crate::{Rand, RpcStatus};

/// Picks one invoker of a non-empty routed list.
///
/// Implementations return `None` only for an empty list; a list of one returns it.
///
/// ```
/// use rubbo_cluster::LoadBalance;
/// use rubbo_common::{BoxInvoker, Invocation, Url};
///
/// /// Always the first provider.
/// #[derive(Debug)]
/// struct First;
///
/// impl LoadBalance for First {
///     fn select(&self, invokers: &[BoxInvoker], _: &Url, _: &Invocation) -> Option<BoxInvoker> {
///         invokers.first().cloned()
///     }
/// }
///
/// // Balancers are looked up by name as trait objects.
/// let mut table = rubbo_cluster::load_balances(&Default::default());
/// table.register("first", std::sync::Arc::new(First));
/// let _dyn: std::sync::Arc<dyn LoadBalance> = table.get("first").unwrap();
/// ```
pub trait LoadBalance: Send + Sync + fmt::Debug + 'static {
    /// Picks one of `invokers` for `invocation`; `url` is the consumer URL.
    fn select(
        &self,
        invokers: &[BoxInvoker],
        url: &Url,
        invocation: &Invocation,
    ) -> Option<BoxInvoker>;

    /// Picks from a shared, immutable list (a directory snapshot or routing result),
    /// which a balancer may recognise by identity to reuse state built for it.
    /// Defaults to [`select`](Self::select).
    fn select_list(
        &self,
        invokers: &Arc<Vec<BoxInvoker>>,
        url: &Url,
        invocation: &Invocation,
    ) -> Option<BoxInvoker> {
        self.select(invokers, url, invocation)
    }
}

/// What the built-in balancers share: call statistics and a random source.
#[derive(Debug, Clone, Default)]
pub struct BalancerEnv {
    /// Call statistics, fed by [`StatusInvoker`](crate::StatusInvoker)s.
    pub status: Arc<RpcStatus>,
    /// Randomness (seed it in tests).
    pub rand: Rand,
}

/// The table of built-in balancers, default `random`:
/// `random`, `roundrobin`, `leastactive`, `shortestresponse`, `consistenthash`,
/// `p2c`, `adaptive`.
pub fn load_balances(env: &BalancerEnv) -> ExtensionTable<dyn LoadBalance> {
    let mut t: ExtensionTable<dyn LoadBalance> =
        ExtensionTable::new("loadbalance", rubbo_common::keys::defaults::LOADBALANCE);
    t.register("random", Arc::new(RandomLoadBalance::new(env.rand.clone())));
    t.register("roundrobin", Arc::new(RoundRobinLoadBalance::new()));
    t.register(
        "leastactive",
        Arc::new(LeastActiveLoadBalance::new(
            env.status.clone(),
            env.rand.clone(),
        )),
    );
    t.register(
        "shortestresponse",
        Arc::new(ShortestResponseLoadBalance::new(
            env.status.clone(),
            env.rand.clone(),
        )),
    );
    t.register("consistenthash", Arc::new(ConsistentHashLoadBalance::new()));
    let adaptive = Arc::new(AdaptiveLoadBalance::new(
        env.status.clone(),
        env.rand.clone(),
    ));
    t.register("p2c", adaptive.clone());
    t.register("adaptive", adaptive);
    t
}
