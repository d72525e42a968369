//! `broadcast` (Java's `BroadcastClusterInvoker`).

use std::sync::Arc;

use rubbo_common::keys::BroadcastFailPercent;
use rubbo_common::{BoxInvoker, Invocation, InvokeFuture, RpcError, RpcResult};
use tracing::warn;

use super::failover::invoke_one;
use super::{Cluster, ClusterBase, StrategyInvoker};
use crate::{ClusterContext, Directory};

/// Calls every routed provider in turn. Any failure (error or business exception)
/// fails the call with the last failure; the loop stops early once
/// `size x broadcast.fail.percent / 100` failures happened before (0 = stop at the
/// first failure, 100 = call everyone). Success returns the last result.
#[derive(Debug, Clone, Copy, Default)]
pub struct BroadcastCluster;

impl Cluster for BroadcastCluster {
    fn join(&self, directory: Arc<dyn Directory>, ctx: &ClusterContext) -> BoxInvoker {
        StrategyInvoker::join("BroadcastClusterInvoker", directory, ctx, call)
    }
}

/// The strategy: one call over the shared base.
fn call(base: Arc<ClusterBase>, inv: Invocation) -> InvokeFuture {
    Box::pin(async move {
        let invokers = base.list(&inv)?;
        let mut percent = base.url().param::<BroadcastFailPercent>();
        if !(0..=100).contains(&percent) {
            warn!(percent, "broadcast.fail.percent must be 0-100, using 100");
            percent = BroadcastFailPercent::DEFAULT;
        }
        let threshold = invokers.len() as i64 * percent / 100;
        let mut fail_index: i64 = 0;
        let mut error: Option<RpcError> = None;
        let mut result: Option<RpcResult> = None;
        for invoker in invokers.iter() {
            let failure = match invoke_one(invoker, &inv).await {
                Ok(r) => {
                    let f = r.exception().map(|e| RpcError::from_biz(e.clone()));
                    result = Some(r);
                    f
                }
                Err(e) => Some(e),
            };
            if let Some(e) = failure {
                warn!(provider = %invoker.url().address(), error = %e, "broadcast invoke failed");
                error = Some(e);
                if fail_index == threshold {
                    break;
                }
                fail_index += 1;
            }
        }
        match error {
            Some(e) => Err(e),
            None => result.ok_or_else(|| base.no_provider(&inv)),
        }
    })
}
