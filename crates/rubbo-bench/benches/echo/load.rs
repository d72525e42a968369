//! The closed-loop load generator shared by every system and Triple pair: `inflight` tasks, each
//! calling `echo` back to back on one shared client (one connection), each recording
//! its latencies into its own preallocated histogram (no allocation per request).

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hdrhistogram::Histogram;
use tokio::task::JoinSet;

/// One echo call on a shared client; checks that the reply equals the request.
pub(crate) trait EchoClient: Clone + Send + Sync + 'static {
    fn echo(&self) -> impl Future<Output = anyhow::Result<()>> + Send;
}

/// How long and how much each cell runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Unrecorded warm-up before the measured window.
    pub(crate) warmup: Duration,
    /// The measured window.
    pub(crate) measure: Duration,
    /// Hard cap on calls per cell (warm-up included), split evenly over the tasks.
    pub(crate) max_requests: u64,
}

/// What one cell measured.
#[derive(Debug)]
pub(crate) struct Measured {
    /// Calls started inside the measured window (and completed).
    pub(crate) requests: u64,
    /// From the start of the measured window to the last completion.
    pub(crate) elapsed: Duration,
    /// Median latency of a call.
    pub(crate) p50: Duration,
    /// 99th percentile latency of a call.
    pub(crate) p99: Duration,
    /// On-CPU time of everything that served and made the calls over the measured
    /// window: this process (client and server) for the in-process cells; this process
    /// and the JVM(s) for the Java cells.
    pub(crate) cpu: Option<Duration>,
    /// On-CPU time of the server side over the window: the Triple cells' server
    /// runtime threads, or the server's process for a server outside this one.
    pub(crate) server_cpu: Option<Duration>,
    /// On-CPU time of the client side over the window: the Triple cells' client
    /// runtime threads, or this whole process when the server is outside it.
    pub(crate) client_cpu: Option<Duration>,
}

impl Measured {
    pub(crate) fn throughput(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    pub(crate) fn p50(&self) -> Duration {
        self.p50
    }

    /// Process CPU time per call, client and server together.
    pub(crate) fn cpu_per_call(&self) -> Option<Duration> {
        self.per_call(self.cpu)
    }

    /// CPU time per call of the server runtime's threads (Triple cells).
    pub(crate) fn server_cpu_per_call(&self) -> Option<Duration> {
        self.per_call(self.server_cpu)
    }

    /// CPU time per call of the client runtime's threads (Triple cells).
    pub(crate) fn client_cpu_per_call(&self) -> Option<Duration> {
        self.per_call(self.client_cpu)
    }

    fn per_call(&self, cpu: Option<Duration>) -> Option<Duration> {
        Some(cpu? / u32::try_from(self.requests).ok()?)
    }

    pub(crate) fn p99(&self) -> Duration {
        self.p99
    }
}

/// Highest latency the histograms resolve (larger values saturate into the top bucket).
const MAX_LATENCY_NS: u64 = 60_000_000_000;

/// Runs one cell: `inflight` calls outstanding at all times until the window closes or
/// the request cap is reached; the whole cell is bounded by a timeout.
pub(crate) async fn run<C: EchoClient>(
    client: &C,
    inflight: usize,
    limits: Limits,
) -> anyhow::Result<Measured> {
    run_with_peer(client, inflight, limits, None).await
}

/// How to read the CPU time of the two sides when the server is another process.
pub(crate) struct PeerCpu {
    /// The server process's CPU time.
    pub(crate) server: Box<dyn Fn() -> Option<Duration> + Send + Sync>,
    /// The client's CPU time (this process, or its client threads).
    pub(crate) client: fn() -> Option<Duration>,
}

/// [`run`] against a server in another process: `server_cpu` (that process's CPU
/// time) and `client_cpu` (this process's, or the client threads') are read at the
/// start and the end of the measured window; [`Measured::cpu`] is their sum.
pub(crate) async fn run_with_peer<C: EchoClient>(
    client: &C,
    inflight: usize,
    limits: Limits,
    peer: Option<PeerCpu>,
) -> anyhow::Result<Measured> {
    let start = Instant::now();
    let warm_end = start + limits.warmup;
    let end = warm_end + limits.measure;
    let cap = (limits.max_requests / inflight as u64).max(1);
    let mut tasks = JoinSet::new();
    for _ in 0..inflight {
        let client = client.clone();
        let mut latency = Histogram::<u64>::new_with_bounds(1, MAX_LATENCY_NS, 3)?;
        tasks.spawn(async move {
            let mut calls = 0u64;
            let mut recorded = 0u64;
            loop {
                let t0 = Instant::now();
                if t0 >= end || calls >= cap {
                    break;
                }
                calls += 1;
                client.echo().await?;
                if t0 >= warm_end {
                    latency.saturating_record(t0.elapsed().as_nanos() as u64);
                    recorded += 1;
                }
            }
            anyhow::Ok((latency, recorded, Instant::now()))
        });
    }
    let bound = limits.warmup + limits.measure + Duration::from_secs(30);
    let collect = async {
        tokio::time::sleep_until(warm_end.into()).await;
        let cpu_start = crate::cpu::process_cpu();
        let server_start = crate::cpu::named_cpu(crate::cpu::SERVER_THREADS);
        let client_start = crate::cpu::named_cpu(crate::cpu::CLIENT_THREADS);
        let peer_start = peer.as_ref().map(|p| ((p.server)(), (p.client)()));
        let mut total = Histogram::<u64>::new_with_bounds(1, MAX_LATENCY_NS, 3)?;
        let mut requests = 0;
        let mut last = warm_end;
        while let Some(joined) = tasks.join_next().await {
            let (latency, recorded, finished) = joined.context("load task panicked")??;
            total.add(&latency)?;
            requests += recorded;
            last = last.max(finished);
        }
        let since = |end: Option<Duration>, start: Option<Duration>| {
            end.zip(start).map(|(end, start)| end.saturating_sub(start))
        };
        let cpu = since(crate::cpu::process_cpu(), cpu_start);
        let (cpu, server_cpu, client_cpu) = match (&peer, peer_start) {
            // A server in another process.
            (Some(p), Some((server_start, client_start))) => {
                let server = since((p.server)(), server_start);
                let client = since((p.client)(), client_start);
                (server.zip(client).map(|(s, c)| s + c), server, client)
            }
            _ => (
                cpu,
                since(
                    crate::cpu::named_cpu(crate::cpu::SERVER_THREADS),
                    server_start,
                ),
                since(
                    crate::cpu::named_cpu(crate::cpu::CLIENT_THREADS),
                    client_start,
                ),
            ),
        };
        anyhow::Ok(Measured {
            requests,
            elapsed: last - warm_end,
            p50: Duration::from_nanos(total.value_at_quantile(0.50)),
            p99: Duration::from_nanos(total.value_at_quantile(0.99)),
            cpu,
            server_cpu,
            client_cpu,
        })
    };
    let measured = tokio::time::timeout(bound, collect)
        .await
        .with_context(|| format!("cell did not finish within {bound:?}"))??;
    if measured.requests == 0 {
        bail!("no call completed inside the measured window");
    }
    Ok(measured)
}
