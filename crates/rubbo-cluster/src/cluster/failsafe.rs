//! `failsafe` (Java's `FailsafeClusterInvoker`).

use std::fmt;
use std::sync::Arc;

use rubbo_common::{BoxInvoker, Invocation, InvokeFuture, Invoker, RpcResult, Url};
use tracing::error;

use super::failover::invoke_one;
use super::{Cluster, ClusterBase};
use crate::{ClusterContext, Directory};

/// One attempt; an error is logged and an empty (`null`) result returned.
#[derive(Debug, Clone, Copy, Default)]
pub struct FailsafeCluster;

impl Cluster for FailsafeCluster {
    fn join(&self, directory: Arc<dyn Directory>, ctx: &ClusterContext) -> BoxInvoker {
        Arc::new(FailsafeInvoker {
            base: Arc::new(ClusterBase::new(directory, ctx)),
        })
    }
}

struct FailsafeInvoker {
    base: Arc<ClusterBase>,
}

impl fmt::Debug for FailsafeInvoker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FailsafeClusterInvoker")
            .field("base", &self.base)
            .finish()
    }
}

impl Invoker for FailsafeInvoker {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let base = self.base.clone();
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
