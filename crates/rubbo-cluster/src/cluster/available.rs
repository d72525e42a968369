//! `available` (Java's `AvailableClusterInvoker`).

use std::fmt;
use std::sync::Arc;

use rubbo_common::{BoxInvoker, Invocation, InvokeFuture, Invoker, RpcError, Url};

use super::failover::invoke_one;
use super::{Cluster, ClusterBase};
use crate::{ClusterContext, Directory};

/// Calls the first available provider of the routed list (no balancing).
#[derive(Debug, Clone, Copy, Default)]
pub struct AvailableCluster;

impl Cluster for AvailableCluster {
    fn join(&self, directory: Arc<dyn Directory>, ctx: &ClusterContext) -> BoxInvoker {
        Arc::new(AvailableInvoker {
            base: Arc::new(ClusterBase::new(directory, ctx)),
        })
    }
}

struct AvailableInvoker {
    base: Arc<ClusterBase>,
}

impl fmt::Debug for AvailableInvoker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AvailableClusterInvoker")
            .field("base", &self.base)
            .finish()
    }
}

impl Invoker for AvailableInvoker {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let base = self.base.clone();
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
