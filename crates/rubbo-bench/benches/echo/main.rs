//! Echo benchmark: Rubbo's `dubbo://` beside a raw tokio TCP echo and a tonic unary
//! echo, same payloads, same load generator, same runtime, in one run; then Rubbo's
//! Triple server and client beside tonic's (servers and clients on their own runtimes,
//! so each side's CPU time is measured apart).
//!
//! Run with `cargo bench -p rubbo-bench --bench echo` (see the crate README for the
//! `RUBBO_BENCH_*` knobs). Prints a markdown table on stdout, progress on stderr.
#![forbid(unsafe_code)]

mod cpu;
mod dubbo;
mod grpc;
mod h2;
mod h2load;
mod java;
mod load;
mod raw;
mod report;
mod results;
#[path = "../common/settings.rs"]
mod settings;
mod tri_report;
mod triple;

use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;

use crate::load::{EchoClient, Limits, Measured};
use crate::report::{Row, System};
use crate::settings::{env, env_list};
use crate::tri_report::{Pair, TriRow};

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
    /// The Triple cells' pairings.
    triple: Vec<Pair>,
    /// Worker threads of the Triple cells' server runtime.
    server_threads: usize,
    /// Worker threads of the Triple cells' client runtime.
    client_threads: usize,
    /// Load put on the Java cells' JVMs before their first cell.
    java_prewarm: Duration,
}

impl Config {
    fn from_env() -> anyhow::Result<Self> {
        let secs: f64 = env("RUBBO_BENCH_SECS", 1.0)?;
        let warmup: f64 = env("RUBBO_BENCH_WARMUP_SECS", (secs / 4.0).min(0.5))?;
        let java_prewarm: f64 = env("RUBBO_BENCH_JAVA_PREWARM_SECS", 6.0)?;
        anyhow::ensure!(
            secs > 0.0 && secs <= 600.0 && (0.0..=60.0).contains(&warmup),
            "RUBBO_BENCH_SECS must be in (0, 600] and RUBBO_BENCH_WARMUP_SECS in [0, 60]"
        );
        anyhow::ensure!(
            (0.1..=120.0).contains(&java_prewarm),
            "RUBBO_BENCH_JAVA_PREWARM_SECS must be in [0.1, 120]"
        );
        Ok(Config {
            limits: Limits {
                warmup: Duration::from_secs_f64(warmup),
                measure: Duration::from_secs_f64(secs),
                max_requests: env("RUBBO_BENCH_MAX_REQUESTS", 20_000_000)?,
            },
            sizes: env_list("RUBBO_BENCH_SIZES", "16,4096")?,
            inflight: env_list("RUBBO_BENCH_INFLIGHT", "1,32,256")?,
            systems: env_list(
                "RUBBO_BENCH_SYSTEMS",
                "raw,tonic,rubbo,rubbo-java,java-rubbo,java-java",
            )?,
            threads: env("RUBBO_BENCH_THREADS", 2)?,
            rounds: env::<usize>("RUBBO_BENCH_ROUNDS", 3)?.clamp(1, 20),
            raw_coalesce: env::<u8>("RUBBO_BENCH_RAW_COALESCE", 1)? != 0,
            triple: env_list(
                "RUBBO_BENCH_TRIPLE",
                "h2-rubbo,h2-tonic,h2load-rubbo,h2load-tonic,rubbo-tonic,tonic-tonic,rubbo-java,java-rubbo,java-java",
            )?,
            server_threads: env::<usize>("RUBBO_BENCH_SERVER_THREADS", 1)?.max(1),
            client_threads: env::<usize>("RUBBO_BENCH_CLIENT_THREADS", 1)?.max(1),
            java_prewarm: Duration::from_secs_f64(java_prewarm),
        })
    }
}

fn main() -> anyhow::Result<()> {
    let mut config = Config::from_env()?;
    let out_dir = results::out_dir();
    let load_before = loadavg();
    // Server and client share one multi-threaded runtime (same for all three systems).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.threads)
        .enable_all()
        .build()?;
    // The Triple cells' server and client, each on its own runtime with named threads,
    // so that each side's CPU time can be read apart.
    let sides = Sides {
        server: named_runtime(cpu::SERVER_THREADS, config.server_threads)?,
        client: named_runtime(cpu::CLIENT_THREADS, config.client_threads)?,
    };
    // The Java cells run when bench/java is built (or RUBBO_BENCH_JAVA=1 builds it).
    let wants_java =
        config.systems.iter().any(|s| s.is_java()) || config.triple.iter().any(|p| p.is_java());
    let java = match wants_java {
        true => runtime.block_on(java::locate())?,
        false => Err(String::new()),
    };
    let java = match java {
        Ok(command) => Some(command),
        Err(why) => {
            if wants_java {
                eprintln!("Java cells skipped: {why}");
            }
            config.systems.retain(|s| !s.is_java());
            config.triple.retain(|p| !p.is_java());
            None
        }
    };
    // The `h2load-*` cells run when h2load is installed.
    let h2load = match config.triple.iter().any(|p| p.is_h2load()) {
        true => match runtime.block_on(h2load::locate()) {
            Ok(h2load) => Some(h2load),
            Err(why) => {
                eprintln!("h2load cells skipped: {why}");
                config.triple.retain(|p| !p.is_h2load());
                None
            }
        },
        false => None,
    };
    let mut records = Vec::new();
    let rows = runtime.block_on(run_all(&config, java.as_ref(), &mut records))?;
    let tri_rows = runtime.block_on(run_triple(
        &config,
        &sides,
        java.as_ref(),
        h2load,
        &mut records,
    ))?;
    let load = loadavg();
    let mut md = String::new();
    if !config.systems.is_empty() {
        md.push_str(&report::render(&rows, &config, &load));
    }
    md.push_str(&tri_report::render(&tri_rows, &config));
    print!("{md}");
    if let Some(dir) = out_dir {
        results::write(&dir, &records, &md, &load_before, &load)?;
    }
    Ok(())
}

/// The 1, 5 and 15 minute load averages.
fn loadavg() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Starts the Java cells' JVMs of `protocol` (`None` when no Java cell of it runs).
async fn start_java(
    config: &Config,
    java: Option<&java::JavaCommand>,
    protocol: java::Protocol,
    server_rt: tokio::runtime::Handle,
    client_rt: tokio::runtime::Handle,
) -> anyhow::Result<Option<java::JavaSide>> {
    let wanted = match protocol {
        java::Protocol::Dubbo => config.systems.iter().any(|s| s.is_java()),
        java::Protocol::Triple => config.triple.iter().any(|p| p.is_java()),
    };
    let Some(java) = java.filter(|_| wanted) else {
        return Ok(None);
    };
    let side = java::JavaSide::start(
        java,
        protocol,
        &config.sizes,
        config.java_prewarm,
        server_rt,
        client_rt,
    )
    .await
    .context("starting the Java cells (RUBBO_BENCH_JAVA=0 skips them)")?;
    Ok(Some(side))
}

fn named_runtime(name: &str, threads: usize) -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name(name)
        .enable_all()
        .build()?)
}

/// The Triple cells' two runtimes.
struct Sides {
    server: tokio::runtime::Runtime,
    client: tokio::runtime::Runtime,
}

async fn run_triple(
    config: &Config,
    sides: &Sides,
    java: Option<&java::JavaCommand>,
    h2load: Option<h2load::H2load>,
    records: &mut Vec<serde_json::Value>,
) -> anyhow::Result<Vec<TriRow>> {
    if config.triple.is_empty() {
        return Ok(Vec::new());
    }
    let mut java = start_java(
        config,
        java,
        java::Protocol::Triple,
        sides.server.handle().clone(),
        sides.client.handle().clone(),
    )
    .await?;
    let rows = triple_cells(config, sides, java.as_mut(), h2load, records).await;
    if let Some(java) = java {
        java.stop().await;
    }
    rows
}

async fn triple_cells(
    config: &Config,
    sides: &Sides,
    mut java: Option<&mut java::JavaSide>,
    h2load: Option<h2load::H2load>,
    records: &mut Vec<serde_json::Value>,
) -> anyhow::Result<Vec<TriRow>> {
    let mut rows = Vec::new();
    for &size in &config.sizes {
        let text: String = (0..size).map(|i| (b'a' + (i % 26) as u8) as char).collect();
        // Leaked once per size, as in `run_all`.
        let leaked: &'static str = Box::leak(text.clone().into_boxed_str());
        for &inflight in &config.inflight {
            let mut row = TriRow::new(size, inflight);
            for round in 1..=config.rounds {
                for &pair in &config.triple {
                    let result = match (pair, java.as_deref_mut()) {
                        (Pair::RubboJava, Some(j)) => {
                            j.rubbo_java(leaked, inflight, config.limits).await
                        }
                        (Pair::JavaRubbo, Some(j)) => {
                            j.java_rubbo(size, inflight, config.limits).await
                        }
                        (Pair::JavaJava, Some(j)) => {
                            j.java_java(size, inflight, config.limits).await
                        }
                        (Pair::RubboJava | Pair::JavaRubbo | Pair::JavaJava, None) => continue,
                        (Pair::H2loadRubbo | Pair::H2loadTonic, _) if h2load.is_none() => {
                            continue;
                        }
                        _ => cell_triple(pair, &text, inflight, config.limits, sides, h2load).await,
                    };
                    match &result {
                        Ok(m) => eprintln!(
                            "{pair:>12} {size:>5} B x{inflight:<3} round {round}: {:>9.0} req/s  {} {:?}  {} {:?}  server cpu/call {:?}  client cpu/call {:?}  ({} calls)",
                            m.throughput(),
                            if pair.is_h2load() { "mean" } else { "p50" },
                            m.p50(),
                            if pair.is_h2load() { "max" } else { "p99" },
                            m.p99(),
                            m.server_cpu_per_call().unwrap_or_default(),
                            m.client_cpu_per_call().unwrap_or_default(),
                            m.requests
                        ),
                        Err(e) => eprintln!(
                            "{pair:>12} {size:>5} B x{inflight:<3} round {round}: error: {e:#}"
                        ),
                    }
                    records.push(results::triple(pair, size, inflight, round, &result));
                    row.push(pair, result);
                }
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The server of a Triple cell, running on the server runtime.
enum TriServer {
    Rubbo(triple::Server),
    Tonic(grpc::Server),
}

/// One Triple cell: the pair's server started on the server runtime, its client
/// connected and the load run on the client runtime, then both stopped.
async fn cell_triple(
    pair: Pair,
    text: &str,
    inflight: usize,
    limits: Limits,
    sides: &Sides,
    h2load: Option<h2load::H2load>,
) -> anyhow::Result<Measured> {
    let rubbo_server = matches!(pair, Pair::H2Rubbo | Pair::H2loadRubbo);
    let server = sides
        .server
        .spawn(async move {
            anyhow::Ok(if rubbo_server {
                TriServer::Rubbo(triple::serve().await.context("Rubbo Triple server")?)
            } else {
                TriServer::Tonic(grpc::serve().context("tonic server")?)
            })
        })
        .await??;
    let addr: std::net::SocketAddr = match &server {
        TriServer::Rubbo(s) => ([127, 0, 0, 1], s.port).into(),
        TriServer::Tonic(s) => s.addr,
    };
    let text = text.to_owned();
    let result = sides
        .client
        .spawn(async move {
            match pair {
                Pair::H2Rubbo | Pair::H2Tonic => {
                    let client = h2::Client::connect(addr, &text).await?;
                    warm_check(&client).await?;
                    load::run(&client, inflight, limits).await
                }
                Pair::H2loadRubbo | Pair::H2loadTonic => {
                    let h2load = h2load.context("h2load is not installed")?;
                    // h2load checks HTTP statuses only: one call with the `h2` client
                    // first checks the reply's bytes and `grpc-status: 0`.
                    let client = h2::Client::connect(addr, &text).await?;
                    warm_check(&client).await?;
                    drop(client);
                    h2load
                        .run(addr, &h2::framed(&text)?, inflight, limits)
                        .await
                }
                Pair::RubboTonic => {
                    let client = triple::Client::connect(addr.port(), text).await?;
                    let result = async {
                        warm_check(&client).await?;
                        load::run(&client, inflight, limits).await
                    }
                    .await;
                    client.close().await;
                    result
                }
                Pair::TonicTonic => {
                    let client = grpc::Client::connect(addr, text).await?;
                    warm_check(&client).await?;
                    load::run(&client, inflight, limits).await
                }
                Pair::RubboJava | Pair::JavaRubbo | Pair::JavaJava => {
                    anyhow::bail!("{pair} is a Java cell, not an in-process pair")
                }
            }
        })
        .await
        .context("the client task panicked")
        .and_then(|r| r);
    let _ = sides
        .server
        .spawn(async move {
            match server {
                TriServer::Rubbo(s) => s.stop().await,
                TriServer::Tonic(s) => drop(s),
            }
        })
        .await;
    result
}

async fn run_all(
    config: &Config,
    java: Option<&java::JavaCommand>,
    records: &mut Vec<serde_json::Value>,
) -> anyhow::Result<Vec<Row>> {
    if config.systems.is_empty() {
        return Ok(Vec::new());
    }
    let here = tokio::runtime::Handle::current();
    let mut java = start_java(config, java, java::Protocol::Dubbo, here.clone(), here).await?;
    let rows = dubbo_cells(config, java.as_mut(), records).await;
    if let Some(java) = java {
        java.stop().await;
    }
    rows
}

async fn dubbo_cells(
    config: &Config,
    mut java: Option<&mut java::JavaSide>,
    records: &mut Vec<serde_json::Value>,
) -> anyhow::Result<Vec<Row>> {
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
                        System::RubboJava | System::JavaRubbo | System::JavaJava => {
                            let Some(java) = java.as_deref_mut() else {
                                continue;
                            };
                            match system {
                                System::RubboJava => {
                                    java.rubbo_java(leaked, inflight, config.limits).await
                                }
                                System::JavaRubbo => {
                                    java.java_rubbo(size, inflight, config.limits).await
                                }
                                _ => java.java_java(size, inflight, config.limits).await,
                            }
                        }
                    };
                    match &result {
                        Ok(m) => eprintln!(
                            "{system:>10} {size:>5} B x{inflight:<3} round {round}: {:>9.0} req/s  p50 {:?}  p99 {:?}  cpu/call {:?}  ({} calls)",
                            m.throughput(),
                            m.p50(),
                            m.p99(),
                            m.cpu_per_call().unwrap_or_default(),
                            m.requests
                        ),
                        Err(e) => eprintln!(
                            "{system:>10} {size:>5} B x{inflight:<3} round {round}: error: {e:#}"
                        ),
                    }
                    records.push(results::dubbo(system, size, inflight, round, &result));
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
