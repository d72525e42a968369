//! Fault tolerance: cluster strategies that turn a [`Directory`] into one invoker
//! (Java's `Cluster` SPI and `AbstractClusterInvoker`).
//!
//! | name | behaviour |
//! |---|---|
//! | `failover` (default) | retry other providers on retryable errors, up to `retries` (2) |
//! | `failfast` | one attempt |
//! | `failsafe` | one attempt, errors logged and swallowed (empty result) |
//! | `failback` | on error return empty, retry in the background every 5 s |
//! | `forking` | `forks` (2) providers in parallel, first success wins |
//! | `broadcast` | every provider in turn, fail if any fails |
//! | `available` | the first available provider |
//!
//! Every strategy routes and load-balances through the shared [`ClusterBase`]: `sticky`
//! reuse, reselection avoiding tried providers, availability check.

mod available;
mod base;
mod broadcast;
mod failback;
mod failover;
mod failsafe;
mod forking;

use std::fmt;
use std::sync::Arc;

use rubbo_common::{BoxInvoker, ExtensionTable};

use crate::mock::MockClusterInvoker;
use crate::{ClusterContext, Directory};

pub use available::AvailableCluster;
pub use base::ClusterBase;
pub(crate) use base::StrategyInvoker;
pub use broadcast::BroadcastCluster;
pub use failback::FailbackCluster;
pub use failover::{FailfastCluster, FailoverCluster};
pub use failsafe::FailsafeCluster;
pub use forking::ForkingCluster;

/// A fault-tolerance strategy: joins a directory into one invoker.
///
/// ```
/// use rubbo_cluster::{Cluster, ClusterContext, Directory};
/// use rubbo_common::BoxInvoker;
/// use std::sync::Arc;
///
/// /// Uses the failfast invoker under another name.
/// #[derive(Debug)]
/// struct Strict;
///
/// impl Cluster for Strict {
///     fn join(&self, directory: Arc<dyn Directory>, ctx: &ClusterContext) -> BoxInvoker {
///         rubbo_cluster::cluster::FailfastCluster.join(directory, ctx)
///     }
/// }
///
/// let mut table = rubbo_cluster::clusters();
/// table.register("strict", Arc::new(Strict));
/// let _dyn: Arc<dyn Cluster> = table.get("strict").unwrap();
/// ```
pub trait Cluster: Send + Sync + fmt::Debug + 'static {
    /// The invoker calling the providers of `directory` with this strategy.
    fn join(&self, directory: Arc<dyn Directory>, ctx: &ClusterContext) -> BoxInvoker;
}

/// Wraps every cluster's invoker in a [`MockClusterInvoker`] (Java's
/// `MockClusterWrapper`); with no `mock` setting it just passes calls through.
#[derive(Debug)]
struct MockClusterWrapper(Arc<dyn Cluster>);

impl Cluster for MockClusterWrapper {
    fn join(&self, directory: Arc<dyn Directory>, ctx: &ClusterContext) -> BoxInvoker {
        let inner = self.0.join(directory.clone(), ctx);
        Arc::new(MockClusterInvoker::new(directory, inner, ctx.mocks.clone()))
    }
}

/// The table of built-in strategies (default `failover`), each wrapped for mock:
/// `failover`, `failfast`, `failsafe`, `failback`, `forking`, `broadcast`, `available`.
pub fn clusters() -> ExtensionTable<dyn Cluster> {
    let mut t: ExtensionTable<dyn Cluster> =
        ExtensionTable::new("cluster", rubbo_common::keys::defaults::CLUSTER);
    t.register("failover", Arc::new(FailoverCluster));
    t.register("failfast", Arc::new(FailfastCluster));
    t.register("failsafe", Arc::new(FailsafeCluster));
    t.register("failback", Arc::new(FailbackCluster::default()));
    t.register("forking", Arc::new(ForkingCluster));
    t.register("broadcast", Arc::new(BroadcastCluster));
    t.register("available", Arc::new(AvailableCluster));
    t.add_wrapper(|c| Arc::new(MockClusterWrapper(c)));
    t
}
