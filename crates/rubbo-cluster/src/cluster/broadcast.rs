//! `broadcast` (Java's `BroadcastClusterInvoker`).

use std::fmt;
use std::sync::Arc;

use rubbo_common::{BoxInvoker, Invocation, InvokeFuture, Invoker, RpcError, RpcResult, Url};
use tracing::warn;

use super::failover::invoke_one;
use super::{Cluster, ClusterBase};
use crate::{ClusterContext, Directory};

/// The option: percentage of failures (0-100, default 100) after which broadcast stops.
pub const BROADCAST_FAIL_PERCENT_KEY: &str = "broadcast.fail.percent";

/// Calls every routed provider in turn. Any failure (error or business exception)
/// fails the call with the last failure; the loop stops early once
/// `size x broadcast.fail.percent / 100` failures happened before (0 = stop at the
/// first failure, 100 = call everyone). Success returns the last result.
#[derive(Debug, Clone, Copy, Default)]
pub struct BroadcastCluster;

impl Cluster for BroadcastCluster {
    fn join(&self, directory: Arc<dyn Directory>, ctx: &ClusterContext) -> BoxInvoker {
        Arc::new(BroadcastInvoker {
            base: Arc::new(ClusterBase::new(directory, ctx)),
        })
    }
}

struct BroadcastInvoker {
    base: Arc<ClusterBase>,
}

impl fmt::Debug for BroadcastInvoker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BroadcastClusterInvoker")
            .field("base", &self.base)
            .finish()
    }
}

impl Invoker for BroadcastInvoker {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let base = self.base.clone();
        Box::pin(async move {
            let invokers = base.list(&inv)?;
            let mut percent = base.url().get_int(BROADCAST_FAIL_PERCENT_KEY, 100);
            if !(0..=100).contains(&percent) {
                warn!(percent, "broadcast.fail.percent must be 0-100, using 100");
                percent = 100;
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
