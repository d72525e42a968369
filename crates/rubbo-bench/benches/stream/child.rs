//! One cell round: the pair's server and client, each in a fresh child process of this
//! binary (so each has its own peak RSS, `VmHWM`, and its own CPU time), and the line
//! protocol between them and the parent.
//!
//! - The server child prints `port N` once it serves, and exits when its stdin closes.
//! - The client child connects, runs a small warm-up stream, prints `warm`, waits for
//!   `go`, runs the measured stream and prints `result ...` (see `client.rs`).
//!
//! The parent reads the server's CPU time (`/proc/PID/task/*/schedstat`) just before
//! `go` and just after `result`, and its `VmRSS` once it serves and its `VmHWM` after
//! the stream. Every wait is bounded: each child bounds its own, and a child that
//! fails exits, which closes its stdout.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail, ensure};

use crate::client::say;
use crate::proc::{self, Rss};
use crate::{Config, Impl, Pair, ROLE, Workload};

/// What one round of one pair measured.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    /// Messages the client received (chat: echoed notes; download: chunks).
    pub(crate) messages: u64,
    /// Payload bytes the client received (note bodies, chunk data).
    pub(crate) bytes: u64,
    /// Client wall time from the start of the call to the last message checked.
    pub(crate) elapsed: Duration,
    pub(crate) server_cpu: Duration,
    pub(crate) client_cpu: Duration,
    /// The server's RSS once it served, before any call, and its peak; its anonymous
    /// and file-backed parts as read at the end of the stream.
    pub(crate) server_rss: Rss,
    /// The client's RSS at its start, and its peak.
    pub(crate) client_rss: Rss,
}

const MIB: f64 = 1024.0 * 1024.0;

impl Sample {
    pub(crate) fn rate(&self) -> f64 {
        self.messages as f64 / self.elapsed.as_secs_f64()
    }

    pub(crate) fn mib_per_sec(&self) -> f64 {
        self.bytes as f64 / MIB / self.elapsed.as_secs_f64()
    }

    /// Server CPU per message, in µs.
    pub(crate) fn server_us(&self) -> f64 {
        self.server_cpu.as_secs_f64() * 1e6 / self.messages as f64
    }

    /// Client CPU per message, in µs.
    pub(crate) fn client_us(&self) -> f64 {
        self.client_cpu.as_secs_f64() * 1e6 / self.messages as f64
    }
}

impl std::fmt::Display for Sample {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>10.0} msg/s {:>8.1} MiB/s  server {:.3} µs/msg  client {:.3} µs/msg  \
             server RSS {:.1} -> peak {:.1} MiB (end: anon {:.1} file {:.1})  \
             client RSS {:.1} -> peak {:.1} MiB  ({} msgs in {:.2?})",
            self.rate(),
            self.mib_per_sec(),
            self.server_us(),
            self.client_us(),
            self.server_rss.now as f64 / MIB,
            self.server_rss.peak as f64 / MIB,
            self.server_rss.anon as f64 / MIB,
            self.server_rss.file as f64 / MIB,
            self.client_rss.now as f64 / MIB,
            self.client_rss.peak as f64 / MIB,
            self.messages,
            self.elapsed,
        )
    }
}

/// A child process, killed and reaped if dropped before it exits on its own.
struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    what: &'static str,
}

impl Proc {
    fn spawn(what: &'static str, envs: &[(&str, String)]) -> anyhow::Result<Self> {
        let exe = std::env::current_exe().context("this bench's path")?;
        let mut child = Command::new(exe)
            .envs(envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting the {what} child"))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().context("child stdout")?);
        Ok(Proc {
            child,
            stdin,
            stdout,
            what,
        })
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }

    /// The next line, which must start with `word`; the rest of it.
    fn expect(&mut self, word: &str) -> anyhow::Result<String> {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line)?;
        ensure!(n > 0, "the {} child exited before saying {word}", self.what);
        match line.trim_end().strip_prefix(word) {
            Some(rest) => Ok(rest.trim().to_owned()),
            None => bail!("the {} child said {line:?}, not {word}", self.what),
        }
    }

    fn send(&mut self, line: &str) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().context("stdin closed")?;
        writeln!(stdin, "{line}")?;
        stdin.flush()?;
        Ok(())
    }

    /// Closes stdin and waits (bounded) for the child to exit.
    fn finish(mut self) {
        self.stdin = None;
        for _ in 0..100 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // Drop kills it.
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One round of `pair` on `workload`, each side in a fresh child process.
pub(crate) fn run_pair(pair: Pair, workload: Workload) -> anyhow::Result<Sample> {
    let mut server = Proc::spawn(
        "server",
        &[
            (ROLE, "server".into()),
            ("RUBBO_STREAM_BENCH_IMPL", pair.server.name().into()),
        ],
    )?;
    let port: u16 = server
        .expect("port")?
        .parse()
        .context("the server's port")?;
    let server_pid = server.pid();
    let ready = proc::rss(&server_pid)?;
    let mut client = Proc::spawn(
        "client",
        &[
            (ROLE, "client".into()),
            ("RUBBO_STREAM_BENCH_IMPL", pair.client.name().into()),
            ("RUBBO_STREAM_BENCH_WORKLOAD", workload.name().into()),
            ("RUBBO_STREAM_BENCH_PORT", port.to_string()),
        ],
    )?;
    client.expect("warm")?;
    let cpu0 = proc::cpu(&server_pid)?;
    client.send("go")?;
    let result = client.expect("result")?;
    let server_cpu = proc::cpu(&server_pid)?.saturating_sub(cpu0);
    let end = proc::rss(&server_pid)?;
    client.finish();
    server.finish();
    let f: Vec<u64> = result
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .with_context(|| format!("the client's result {result:?}"))?;
    let [messages, bytes, elapsed, cpu, rss_start, rss_peak] = f[..] else {
        bail!("the client's result {result:?} has not 6 fields");
    };
    ensure!(messages > 0 && elapsed > 0, "an empty stream: {result:?}");
    Ok(Sample {
        messages,
        bytes,
        elapsed: Duration::from_nanos(elapsed),
        server_cpu,
        client_cpu: Duration::from_nanos(cpu),
        server_rss: Rss {
            now: ready.now,
            ..end
        },
        client_rss: Rss {
            now: rss_start,
            peak: rss_peak,
            ..Rss::default()
        },
    })
}

/// The server child: serves on a free port, says `port N`, and serves until its stdin
/// closes.
pub(crate) fn server_main(config: &Config) -> anyhow::Result<()> {
    let which: Impl = crate::env("RUBBO_STREAM_BENCH_IMPL", Impl::Rubbo)?;
    let runtime = crate::runtime("st-server", config.server_threads)?;
    runtime.block_on(async {
        // The server lives (in `_serving`) until the process ends.
        let (port, _serving) = tokio::time::timeout(Duration::from_secs(30), async {
            anyhow::Ok(match which {
                Impl::Rubbo => {
                    let server = crate::triple::serve().await?;
                    (
                        server.port,
                        Box::new(server) as Box<dyn std::any::Any + Send>,
                    )
                }
                Impl::Tonic => {
                    let server = crate::grpc::serve()?;
                    (
                        server.addr.port(),
                        Box::new(server) as Box<dyn std::any::Any + Send>,
                    )
                }
            })
        })
        .await
        .context("starting the server timed out")??;
        say(&format!("port {port}"))?;
        // Until the parent closes stdin (or exits); a line changes nothing.
        tokio::task::spawn_blocking(|| {
            let mut sink = String::new();
            while std::io::stdin()
                .lock()
                .read_line(&mut sink)
                .is_ok_and(|n| n > 0)
            {
                sink.clear();
            }
        })
        .await?;
        anyhow::Ok(())
    })?;
    std::process::exit(0);
}
