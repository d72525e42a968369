//! `forking` (Java's `ForkingClusterInvoker`).

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rubbo_common::keys::{Forks, Timeout};
use rubbo_common::{BoxInvoker, Invocation, InvokeFuture, RpcError};

use super::failover::invoke_one;
use super::{Cluster, ClusterBase, StrategyInvoker};
use crate::{ClusterContext, Directory};

/// Calls `forks` (default 2; all when `forks` <= 0 or >= the provider count)
/// distinct providers in parallel; the first success wins and the other calls are
/// cancelled (their futures dropped). Fails with the last error when all fail, or a
/// timeout after `timeout` (default 1000 ms).
#[derive(Debug, Clone, Copy, Default)]
pub struct ForkingCluster;

impl Cluster for ForkingCluster {
    fn join(&self, directory: Arc<dyn Directory>, ctx: &ClusterContext) -> BoxInvoker {
        StrategyInvoker::join("ForkingClusterInvoker", directory, ctx, call)
    }
}

/// The strategy: one call over the shared base.
fn call(base: Arc<ClusterBase>, inv: Invocation) -> InvokeFuture {
    Box::pin(async move {
        let invokers = base.list(&inv)?;
        let lb = base.load_balance(&invokers, &inv)?;
        // A stream can be sent once: a streaming call goes to one provider.
        let forks = if inv.arguments().as_stream().is_some() {
            1
        } else {
            base.url().param::<Forks>()
        };
        let timeout = base.url().param::<Timeout>();
        let selected: Vec<BoxInvoker> = if forks <= 0 || forks as usize >= invokers.len() {
            invokers.to_vec()
        } else {
            let mut selected: Vec<BoxInvoker> = Vec::with_capacity(forks as usize);
            // Bounded: select avoids already-chosen providers, so this converges;
            // the bound only guards against a misbehaving balancer.
            for _ in 0..forks as usize * 8 {
                if selected.len() >= forks as usize {
                    break;
                }
                if let Some(i) = base.select(&*lb, &inv, &invokers, &selected) {
                    if !selected.iter().any(|s| Arc::ptr_eq(s, &i)) {
                        selected.push(i);
                    }
                }
            }
            selected
        };
        let mut calls: FuturesUnordered<_> = selected.iter().map(|i| invoke_one(i, &inv)).collect();
        let race = async {
            let mut last: Option<RpcError> = None;
            while let Some(r) = calls.next().await {
                match r {
                    Ok(result) => return Ok(result),
                    Err(e) => last = Some(e),
                }
            }
            Err(last.unwrap_or_else(|| base.no_provider(&inv)))
        };
        match tokio::time::timeout(timeout, race).await {
            Ok(r) => r,
            Err(_) => Err(RpcError::timeout(format!(
                "Failed to forking invoke provider {:?}, but no luck to perform the invocation. Last error is: timeout after {} ms",
                selected
                    .iter()
                    .map(|i| i.url().address())
                    .collect::<Vec<_>>(),
                timeout.as_millis()
            ))),
        }
    })
}
