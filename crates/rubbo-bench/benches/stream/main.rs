//! Streaming benchmark: Rubbo's Triple streams beside tonic's, in one run. A
//! bidirectional stream of small messages (`Chat`, each echoed) and a server stream of
//! one large download in big messages (`Download`), each pair's server and client in
//! fresh child processes of this binary, so that each side's CPU time and peak RSS are
//! its own.
//!
//! Run with `cargo bench -p rubbo-bench --bench stream` (see the crate README for the
//! `RUBBO_STREAM_BENCH_*` knobs; `RUBBO_STREAM_BENCH_SMOKE=1` is a run of seconds).
//! Prints markdown tables on stdout, one progress line per cell and round on stderr.
#![forbid(unsafe_code)]

mod child;
mod client;
mod grpc;
mod proc;
mod report;
#[path = "../common/settings.rs"]
mod settings;
mod triple;

use std::str::FromStr;
use std::time::Duration;

use crate::report::Cell;
use crate::settings::{env, env_list};

/// The environment variable that makes this binary a child: `server` or `client`.
const ROLE: &str = "RUBBO_STREAM_BENCH_ROLE";

/// Settings from the environment (children inherit them); defaults give the issue's
/// full run: 1,000,000 messages and 1 GiB.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    /// Messages of the bidirectional stream.
    pub(crate) messages: u64,
    /// Body bytes of each of its messages.
    pub(crate) message_bytes: usize,
    /// Bytes of the server stream.
    pub(crate) bytes: u64,
    /// Bytes per message of the server stream.
    pub(crate) chunk: u32,
    pub(crate) rounds: usize,
    pub(crate) pairs: Vec<Pair>,
    pub(crate) workloads: Vec<Workload>,
    pub(crate) server_threads: usize,
    pub(crate) client_threads: usize,
    /// Bound on one measured stream (and on each child's waits).
    pub(crate) timeout: Duration,
    pub(crate) smoke: bool,
}

impl Config {
    pub(crate) fn from_env() -> anyhow::Result<Self> {
        let smoke = env::<u8>("RUBBO_STREAM_BENCH_SMOKE", 0)? != 0;
        let (messages, bytes, rounds) = if smoke {
            (5_000, 8 << 20, 2)
        } else {
            (1_000_000, 1 << 30, 3)
        };
        let config = Config {
            messages: env("RUBBO_STREAM_BENCH_MESSAGES", messages)?,
            message_bytes: env("RUBBO_STREAM_BENCH_MESSAGE_BYTES", 16)?,
            bytes: env("RUBBO_STREAM_BENCH_BYTES", bytes)?,
            chunk: env("RUBBO_STREAM_BENCH_CHUNK", 64 << 10)?,
            rounds: env::<usize>("RUBBO_STREAM_BENCH_ROUNDS", rounds)?.clamp(1, 20),
            pairs: env_list(
                "RUBBO_STREAM_BENCH_PAIRS",
                "tonic-rubbo,tonic-tonic,rubbo-tonic",
            )?,
            workloads: env_list("RUBBO_STREAM_BENCH_WORKLOADS", "chat,download")?,
            server_threads: env::<usize>("RUBBO_STREAM_BENCH_SERVER_THREADS", 1)?.max(1),
            client_threads: env::<usize>("RUBBO_STREAM_BENCH_CLIENT_THREADS", 1)?.max(1),
            timeout: Duration::from_secs_f64(env("RUBBO_STREAM_BENCH_TIMEOUT_SECS", 300.0)?),
            smoke,
        };
        anyhow::ensure!(
            (1..=100_000_000).contains(&config.messages)
                && config.message_bytes <= 1 << 20
                && (1..=64 << 30).contains(&config.bytes)
                && (1..=4 << 20).contains(&config.chunk)
                && config.timeout > Duration::ZERO
                && config.timeout <= Duration::from_secs(3600),
            "RUBBO_STREAM_BENCH_MESSAGES must be in 1..=1e8, _MESSAGE_BYTES at most 1 MiB, \
             _BYTES in 1..=64 GiB, _CHUNK in 1..=4 MiB, _TIMEOUT_SECS in (0, 3600]"
        );
        Ok(config)
    }
}

/// Which implementation a side runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Impl {
    Rubbo,
    Tonic,
}

impl Impl {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Impl::Rubbo => "rubbo",
            Impl::Tonic => "tonic",
        }
    }
}

impl FromStr for Impl {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "rubbo" => Ok(Impl::Rubbo),
            "tonic" => Ok(Impl::Tonic),
            _ => Err(format!("unknown implementation {s:?}; known: rubbo, tonic")),
        }
    }
}

/// A client calling a server, `client-server` (`tonic-rubbo`: tonic's client calling
/// Rubbo's server).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pair {
    pub(crate) client: Impl,
    pub(crate) server: Impl,
}

impl FromStr for Pair {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (c, sv) = s
            .split_once('-')
            .ok_or_else(|| format!("a pair is client-server, e.g. tonic-rubbo, not {s:?}"))?;
        Ok(Pair {
            client: c.parse()?,
            server: sv.parse()?,
        })
    }
}

impl std::fmt::Display for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(&format!("{}-{}", self.client.name(), self.server.name()))
    }
}

/// What one stream does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Workload {
    /// Bidirectional: `messages` small messages out, each echoed back.
    Chat,
    /// Server streaming: `bytes` in messages of `chunk` bytes.
    Download,
}

impl Workload {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Workload::Chat => "chat",
            Workload::Download => "download",
        }
    }
}

impl FromStr for Workload {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "chat" => Ok(Workload::Chat),
            "download" => Ok(Workload::Download),
            _ => Err(format!("unknown workload {s:?}; known: chat, download")),
        }
    }
}

fn main() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    match std::env::var(ROLE).as_deref() {
        Ok("server") => return child::server_main(&config),
        Ok("client") => return client::client_main(&config),
        Ok(other) => anyhow::bail!("{ROLE}={other}: want server or client"),
        Err(_) => {}
    }
    let load_start = proc::loadavg();
    let mut cells = Vec::new();
    for &workload in &config.workloads {
        let mut cell = Cell::new(workload);
        // Rounds interleave the pairs so that they share the machine's conditions.
        for round in 1..=config.rounds {
            for &pair in &config.pairs {
                let result = child::run_pair(pair, workload);
                match &result {
                    Ok(s) => eprintln!("{pair:>11} {:<8} round {round}: {s}", workload.name()),
                    Err(e) => eprintln!(
                        "{pair:>11} {:<8} round {round}: error: {e:#}",
                        workload.name()
                    ),
                }
                cell.push(pair, result);
            }
        }
        cells.push(cell);
    }
    let load_end = proc::loadavg();
    print!(
        "{}",
        report::render(&cells, &config, &load_start, &load_end)
    );
    Ok(())
}

/// A multi-threaded runtime whose worker threads are named `name`.
pub(crate) fn runtime(name: &str, threads: usize) -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name(name)
        .enable_all()
        .build()?)
}
