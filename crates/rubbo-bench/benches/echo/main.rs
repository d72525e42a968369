//! Echo benchmark: Rubbo's `dubbo://` beside a raw tokio TCP echo and a tonic unary
//! echo, same payloads, same load generator, same runtime, in one run.
//!
//! Run with `cargo bench -p rubbo-bench --bench echo` (see the crate README for the
//! `RUBBO_BENCH_*` knobs). Prints a markdown table on stdout, progress on stderr.
#![forbid(unsafe_code)]

mod cpu;
mod dubbo;
mod grpc;
mod load;
mod raw;
mod report;

use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;

use crate::load::{EchoClient, Limits, Measured};
use crate::report::{Row, System};

/// Settings from the environment; defaults give the full run (about a minute).
#[derive(Debug)]
struct Config {
    limits: Limits,
    sizes: Vec<usize>,
    inflight: Vec<usize>,
    systems: Vec<System>,
    threads: usize,
    rounds: usize,
    /// Raw baseline writers yield once before writing, to coalesce frames.
    raw_coalesce: bool,
}

fn env<T: FromStr>(name: &str, default: T) -> anyhow::Result<T>
where
    T::Err: std::fmt::Display,
{
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .map_err(|e| anyhow::anyhow!("{name}={v}: {e}")),
        Err(_) => Ok(default),
    }
}

fn env_list<T: FromStr>(name: &str, default: &str) -> anyhow::Result<Vec<T>>
where
    T::Err: std::fmt::Display,
{
    let v = std::env::var(name).unwrap_or_else(|_| default.to_owned());
    v.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            s.trim()
                .parse()
                .map_err(|e| anyhow::anyhow!("{name}={v}: {e}"))
        })
        .collect()
}

impl Config {
    fn from_env() -> anyhow::Result<Self> {
        let secs: f64 = env("RUBBO_BENCH_SECS", 1.0)?;
        let warmup: f64 = env("RUBBO_BENCH_WARMUP_SECS", (secs / 4.0).min(0.5))?;
        anyhow::ensure!(
            secs > 0.0 && secs <= 600.0 && (0.0..=60.0).contains(&warmup),
            "RUBBO_BENCH_SECS must be in (0, 600] and RUBBO_BENCH_WARMUP_SECS in [0, 60]"
        );
        Ok(Config {
            limits: Limits {
                warmup: Duration::from_secs_f64(warmup),
                measure: Duration::from_secs_f64(secs),
                max_requests: env("RUBBO_BENCH_MAX_REQUESTS", 20_000_000)?,
            },
            sizes: env_list("RUBBO_BENCH_SIZES", "16,4096")?,
            inflight: env_list("RUBBO_BENCH_INFLIGHT", "1,32,256")?,
            systems: env_list("RUBBO_BENCH_SYSTEMS", "raw,tonic,rubbo")?,
            threads: env("RUBBO_BENCH_THREADS", 2)?,
            rounds: env::<usize>("RUBBO_BENCH_ROUNDS", 3)?.clamp(1, 20),
            raw_coalesce: env::<u8>("RUBBO_BENCH_RAW_COALESCE", 1)? != 0,
        })
    }
}

fn main() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    // Server and client share one multi-threaded runtime (same for all three systems).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.threads)
        .enable_all()
        .build()?;
    let rows = runtime.block_on(run_all(&config))?;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    print!("{}", report::render(&rows, &config, load.trim()));
    Ok(())
}

async fn run_all(config: &Config) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for &size in &config.sizes {
        let text: String = (0..size).map(|i| (b'a' + (i % 26) as u8) as char).collect();
        // Leaked once per size: the typed dubbo argument then needs no copy per call.
        let leaked: &'static str = Box::leak(text.clone().into_boxed_str());
        for &inflight in &config.inflight {
            let mut row = Row::new(size, inflight);
            // Rounds interleave the systems so that they share the machine's conditions;
            // each system keeps its best round (highest throughput).
            for round in 1..=config.rounds {
                for &system in &config.systems {
                    let result = match system {
                        System::Raw => cell_raw(&text, inflight, config).await,
                        System::Tonic => cell_tonic(&text, inflight, config.limits).await,
                        System::Rubbo => cell_rubbo(leaked, inflight, config.limits).await,
                    };
                    match &result {
                        Ok(m) => eprintln!(
                            "{system:>5} {size:>5} B x{inflight:<3} round {round}: {:>9.0} req/s  p50 {:?}  p99 {:?}  cpu/call {:?}  ({} calls)",
                            m.throughput(),
                            m.p50(),
                            m.p99(),
                            m.cpu_per_call().unwrap_or_default(),
                            m.requests
                        ),
                        Err(e) => eprintln!(
                            "{system:>5} {size:>5} B x{inflight:<3} round {round}: error: {e:#}"
                        ),
                    }
                    row.offer(system, result);
                }
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

async fn cell_raw(text: &str, inflight: usize, config: &Config) -> anyhow::Result<Measured> {
    let coalesce = config.raw_coalesce;
    let server = raw::serve(coalesce).await.context("raw server")?;
    let payload = Bytes::copy_from_slice(text.as_bytes());
    let client = raw::Client::connect(server.addr, payload, coalesce)
        .await
        .context("raw client")?;
    warm_check(&client).await?;
    load::run(&client, inflight, config.limits).await
}

async fn cell_tonic(text: &str, inflight: usize, limits: Limits) -> anyhow::Result<Measured> {
    let server = grpc::serve().context("tonic server")?;
    let client = grpc::Client::connect(server.addr, text.to_owned()).await?;
    warm_check(&client).await?;
    load::run(&client, inflight, limits).await
}

async fn cell_rubbo(
    text: &'static str,
    inflight: usize,
    limits: Limits,
) -> anyhow::Result<Measured> {
    let server = dubbo::serve().await.context("rubbo provider")?;
    let client = dubbo::Client::connect(server.addr, text)
        .await
        .context("rubbo consumer")?;
    let result = async {
        warm_check(&client).await?;
        load::run(&client, inflight, limits).await
    }
    .await;
    client.close().await;
    server.stop().await;
    result
}

/// One call first, bounded, so a broken setup fails fast with its own error.
async fn warm_check(client: &impl EchoClient) -> anyhow::Result<()> {
    tokio::time::timeout(Duration::from_secs(10), client.echo())
        .await
        .context("first echo timed out")?
}
