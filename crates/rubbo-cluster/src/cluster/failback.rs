//! `failback` (Java's `FailbackClusterInvoker`).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rubbo_common::keys::{FailbackRetries, FailbackTasks};
use rubbo_common::{BoxInvoker, Invocation, InvokeFuture, Invoker, RpcResult, Url};
use tracing::{debug, error};

use super::failover::invoke_one;
use super::{Cluster, ClusterBase};
use crate::{ClusterContext, Directory};

/// On failure, logs, returns an empty (`null`) result and retries in the background
/// every 5 s on another provider, up to `retries` times (default 3; 0 or less means 3).
/// At most `failbacktasks` (100) calls wait for a retry; more are dropped with an error
/// log. Retries need a tokio runtime. Business exceptions are returned, not retried.
#[derive(Debug, Clone, Copy)]
pub struct FailbackCluster {
    period: Duration,
}

impl Default for FailbackCluster {
    fn default() -> Self {
        FailbackCluster {
            period: Duration::from_secs(5),
        }
    }
}

impl FailbackCluster {
    /// A strategy retrying every `period` instead of 5 s.
    pub fn with_period(period: Duration) -> Self {
        FailbackCluster { period }
    }
}

impl Cluster for FailbackCluster {
    fn join(&self, directory: Arc<dyn Directory>, ctx: &ClusterContext) -> BoxInvoker {
        let url = directory.url().clone();
        let retries = match url.param::<FailbackRetries>() {
            r if r <= 0 => FailbackRetries::DEFAULT,
            r => r,
        } as usize;
        let tasks = match url.param::<FailbackTasks>() {
            t if t <= 0 => FailbackTasks::DEFAULT,
            t => t,
        } as usize;
        Arc::new(FailbackInvoker {
            base: Arc::new(ClusterBase::new(directory, ctx)),
            period: self.period,
            retries,
            tasks,
            pending: Arc::new(AtomicUsize::new(0)),
        })
    }
}

struct FailbackInvoker {
    base: Arc<ClusterBase>,
    period: Duration,
    retries: usize,
    tasks: usize,
    pending: Arc<AtomicUsize>,
}

impl fmt::Debug for FailbackInvoker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FailbackClusterInvoker")
            .field("base", &self.base)
            .field("pending", &self.pending.load(Ordering::Relaxed))
            .finish()
    }
}

struct Retry {
    base: Arc<ClusterBase>,
    inv: Invocation,
    last: Option<BoxInvoker>,
    period: Duration,
    retries: usize,
    pending: Arc<AtomicUsize>,
}

impl Retry {
    async fn run(mut self) {
        let mut times = 0;
        loop {
            tokio::time::sleep(self.period).await;
            let attempt = async {
                let invokers = self.base.list(&self.inv)?;
                let lb = self.base.load_balance(&invokers, &self.inv)?;
                let avoid: Vec<BoxInvoker> = self.last.iter().cloned().collect();
                let invoker = self
                    .base
                    .select(&*lb, &self.inv, &invokers, &avoid)
                    .ok_or_else(|| self.base.no_provider(&self.inv))?;
                self.last = Some(invoker.clone());
                invoke_one(&invoker, &self.inv).await
            };
            match attempt.await {
                Ok(_) => {
                    debug!(method = self.inv.method(), "failback retry succeeded");
                    break;
                }
                Err(e) => {
                    times += 1;
                    error!(method = self.inv.method(), attempt = times, error = %e, "failback retry failed");
                    if times >= self.retries {
                        error!(
                            method = self.inv.method(),
                            retries = self.retries,
                            "failback retry times exceed threshold, giving up"
                        );
                        break;
                    }
                }
            }
        }
        self.pending.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Invoker for FailbackInvoker {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let base = self.base.clone();
        let (period, retries, tasks, pending) =
            (self.period, self.retries, self.tasks, self.pending.clone());
        Box::pin(async move {
            let mut last: Option<BoxInvoker> = None;
            let attempt = async {
                let invokers = base.list(&inv)?;
                let lb = base.load_balance(&invokers, &inv)?;
                let invoker = base
                    .select(&*lb, &inv, &invokers, &[])
                    .ok_or_else(|| base.no_provider(&inv))?;
                last = Some(invoker.clone());
                invoke_one(&invoker, &inv).await
            };
            match attempt.await {
                Ok(r) => Ok(r),
                // A streaming call is not retried in the background: its caller reads
                // the reply stream now, so it gets the error (an empty result would be
                // an empty stream that looks like success).
                Err(e) if e.is_biz() || inv.arguments().as_stream().is_some() => Err(e),
                Err(e) => {
                    error!(method = inv.method(), service = %base.url().service_key(), error = %e, "failback to invoke, wait for retry in background");
                    let handle = tokio::runtime::Handle::try_current();
                    if pending.fetch_add(1, Ordering::AcqRel) >= tasks {
                        pending.fetch_sub(1, Ordering::AcqRel);
                        error!(
                            method = inv.method(),
                            tasks, "failback retry queue is full, call dropped"
                        );
                    } else if let Ok(handle) = handle {
                        let retry = Retry {
                            base,
                            inv,
                            last,
                            period,
                            retries,
                            pending,
                        };
                        handle.spawn(retry.run());
                    } else {
                        pending.fetch_sub(1, Ordering::AcqRel);
                        error!(
                            method = inv.method(),
                            "no tokio runtime, failback retry dropped"
                        );
                    }
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
