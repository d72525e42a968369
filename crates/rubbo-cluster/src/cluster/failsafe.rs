//! `failsafe` (Java's `FailsafeClusterInvoker`).

use std::sync::Arc;

use rubbo_common::{BoxInvoker, Invocation, InvokeFuture, RpcResult};
use tracing::error;

use super::failover::invoke_one;
use super::{Cluster, ClusterBase, StrategyInvoker};
use crate::{ClusterContext, Directory};

/// One attempt; an error is logged and an empty (`null`) result returned.
#[derive(Debug, Clone, Copy, Default)]
pub struct FailsafeCluster;

impl Cluster for FailsafeCluster {
    fn join(&self, directory: Arc<dyn Directory>, ctx: &ClusterContext) -> BoxInvoker {
        StrategyInvoker::join("FailsafeClusterInvoker", directory, ctx, call)
    }
}

/// The strategy: one call over the shared base.
fn call(base: Arc<ClusterBase>, inv: Invocation) -> InvokeFuture {
    Box::pin(async move {
        let attempt = async {
            let invokers = base.list(&inv)?;
            let lb = base.load_balance(&invokers, &inv)?;
            let invoker = base
                .select(&*lb, &inv, &invokers, &[])
                .ok_or_else(|| base.no_provider(&inv))?;
            invoke_one(&invoker, &inv).await
        };
        match attempt.await {
            Ok(r) => Ok(r),
            Err(e) => {
                error!(method = inv.method(), service = %base.url().service_key(), error = %e, "failsafe ignored exception");
                Ok(RpcResult::null())
            }
        }
    })
}
