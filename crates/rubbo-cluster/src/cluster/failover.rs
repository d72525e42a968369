//! `failover` and `failfast` (Java's `FailoverClusterInvoker`, `FailfastClusterInvoker`).

use std::fmt;
use std::sync::Arc;

use rubbo_common::keys::{RETRIES_KEY, Retries};
use rubbo_common::{
    BoxInvoker, Invocation, InvokeFuture, Invoker, RpcError, RpcResult, Url, Value,
};
use tracing::{debug, warn};

use super::{Cluster, ClusterBase};
use crate::{ClusterContext, Directory};

/// Retries other providers on retryable errors (network, timeout, limit exceeded) up
/// to `retries` times (default 2; method level honoured; an invocation attachment
/// `retries` overrides once). Each try re-routes and reselects, avoiding the providers
/// already tried. Business exceptions and other errors are returned at once.
#[derive(Debug, Clone, Copy, Default)]
pub struct FailoverCluster;

/// One attempt; the error is returned.
#[derive(Debug, Clone, Copy, Default)]
pub struct FailfastCluster;

impl Cluster for FailoverCluster {
    fn join(&self, directory: Arc<dyn Directory>, ctx: &ClusterContext) -> BoxInvoker {
        Arc::new(FailoverInvoker {
            retries: uniform_retries(directory.url()),
            base: Arc::new(ClusterBase::new(directory, ctx)),
            failfast: false,
        })
    }
}

impl Cluster for FailfastCluster {
    fn join(&self, directory: Arc<dyn Directory>, ctx: &ClusterContext) -> BoxInvoker {
        Arc::new(FailoverInvoker {
            retries: uniform_retries(directory.url()),
            base: Arc::new(ClusterBase::new(directory, ctx)),
            failfast: true,
        })
    }
}

struct FailoverInvoker {
    base: Arc<ClusterBase>,
    failfast: bool,
    /// `retries` when no method sets its own (read once, not per call).
    retries: Option<i64>,
}

/// The consumer URL's `retries` if it is the same for every method.
fn uniform_retries(url: &Url) -> Option<i64> {
    (!url.has_method_params()).then(|| url.param::<Retries>())
}

impl fmt::Debug for FailoverInvoker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(if self.failfast {
            "FailfastClusterInvoker"
        } else {
            "FailoverClusterInvoker"
        })
        .field("base", &self.base)
        .finish()
    }
}

/// Attempts for `inv`: `retries + 1` (attachment `retries` first, then the consumer
/// URL's method-level value), at least 1.
fn invoke_times(url: &Url, inv: &Invocation, uniform: Option<i64>) -> usize {
    let from_attachment = inv.attachments().get(RETRIES_KEY).and_then(|v| match v {
        Value::String(s) => s.trim().parse::<i64>().ok(),
        other => other.as_i64(),
    });
    let retries = from_attachment
        .or(uniform)
        .unwrap_or_else(|| url.method_param::<Retries>(inv.method()));
    (retries + 1).max(1) as usize
}

pub(crate) async fn invoke_one(
    invoker: &BoxInvoker,
    inv: &Invocation,
) -> Result<RpcResult, RpcError> {
    let mut attempt = inv.clone();
    attempt.set_target(invoker.url().clone());
    invoker.invoke(attempt).await
}

async fn failover(
    base: Arc<ClusterBase>,
    inv: Invocation,
    retries: Option<i64>,
) -> Result<RpcResult, RpcError> {
    let mut invokers = base.list(&inv)?;
    let lb = base.load_balance(&invokers, &inv)?;
    let len = invoke_times(base.url(), &inv, retries);
    let mut tried: Vec<BoxInvoker> = Vec::with_capacity(len);
    let mut failed: Vec<String> = Vec::new();
    let mut last: Option<RpcError> = None;
    for i in 0..len {
        if i > 0 {
            invokers = base.list(&inv)?;
        }
        let Some(invoker) = base.select(&*lb, &inv, &invokers, &tried) else {
            return Err(base.no_provider(&inv));
        };
        tried.push(invoker.clone());
        match invoke_one(&invoker, &inv).await {
            Ok(result) => {
                if let Some(e) = &last {
                    warn!(
                        method = inv.method(),
                        service = %base.url().service_key(),
                        attempt = i + 1,
                        failed = ?failed,
                        last_error = %e,
                        "failover succeeded after earlier failures"
                    );
                }
                return Ok(result);
            }
            // A streaming call whose messages went out is not sent again.
            Err(e) if !e.is_retryable() || inv.arguments().stream_started() => return Err(e),
            Err(e) => {
                debug!(provider = %invoker.url().address(), attempt = i + 1, error = %e, "failover attempt failed");
                failed.push(invoker.url().address());
                last = Some(e);
            }
        }
    }
    let last = last.unwrap_or_else(|| base.no_provider(&inv));
    Err(RpcError::new(
        last.kind(),
        format!(
            "Failed to invoke the method {} in the service {}. Tried {} times of the providers {:?} ({}/{}) on the consumer {}. Last error is: {}",
            inv.method(),
            inv.interface(),
            len,
            failed,
            failed.len(),
            invokers.len(),
            base.url().host().unwrap_or(""),
            last.message()
        ),
    )
    .with_source(last))
}

async fn failfast(base: Arc<ClusterBase>, inv: Invocation) -> Result<RpcResult, RpcError> {
    let invokers = base.list(&inv)?;
    let lb = base.load_balance(&invokers, &inv)?;
    let invoker = base
        .select(&*lb, &inv, &invokers, &[])
        .ok_or_else(|| base.no_provider(&inv))?;
    invoke_one(&invoker, &inv).await
}

impl Invoker for FailoverInvoker {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let base = self.base.clone();
        if self.failfast {
            Box::pin(failfast(base, inv))
        } else {
            Box::pin(failover(base, inv, self.retries))
        }
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
