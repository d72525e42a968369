//! `available` (Java's `AvailableClusterInvoker`).

use std::sync::Arc;

use rubbo_common::{BoxInvoker, Invocation, InvokeFuture, RpcError};

use super::failover::invoke_one;
use super::{Cluster, ClusterBase, StrategyInvoker};
use crate::{ClusterContext, Directory};

/// Calls the first available provider of the routed list (no balancing).
#[derive(Debug, Clone, Copy, Default)]
pub struct AvailableCluster;

impl Cluster for AvailableCluster {
    fn join(&self, directory: Arc<dyn Directory>, ctx: &ClusterContext) -> BoxInvoker {
        StrategyInvoker::join("AvailableClusterInvoker", directory, ctx, call)
    }
}

/// The strategy: one call over the shared base.
fn call(base: Arc<ClusterBase>, inv: Invocation) -> InvokeFuture {
    Box::pin(async move {
        let invokers = base.list(&inv)?;
        match invokers.iter().find(|i| i.is_available()) {
            Some(i) => invoke_one(i, &inv).await,
            None => Err(RpcError::no_provider(format!(
                "No provider available in {:?}",
                invokers
                    .iter()
                    .map(|i| i.url().address())
                    .collect::<Vec<_>>()
            ))),
        }
    })
}
