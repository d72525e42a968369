//! The `h2load-*` Triple cells' client: `h2load` (nghttp2's HTTP/2 load generator,
//! in C) in its own process, one connection (`-c 1 -t 1`), `-m IN_FLIGHT` streams,
//! POSTing the gRPC-framed `EchoRequest` with `content-type: application/grpc` and
//! `te: trailers`. It costs less CPU per call than the `h2` client on a tokio
//! runtime, so that the servers, not the client, set the req/s.
//!
//! Each cell: one call with the `h2` client first (checks the reply's bytes and
//! `grpc-status: 0`, which h2load does not read), then a timing-based warm-up run
//! (`-D`, also the rate estimate), then the measured run of `-n` requests (the
//! warm-up's rate times the measured window, at most `RUBBO_BENCH_MAX_REQUESTS`).
//! Every request of the measured run must succeed with a 2xx. Latency: h2load's mean
//! and max per request (`time for request`); its `--log-file` (per-request rows, for
//! percentiles) is not used: it raised h2load's CPU per call by about half. The server's CPU is its runtime's threads' from h2load's start to its
//! exit; h2load's own is read from `/proc/PID/stat` once it has exited, before it is
//! reaped. h2load is killed on every exit path (`kill_on_drop`), every wait bounded.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use bytes::Bytes;
use tokio::io::AsyncReadExt;
use tokio::process::Command;

use crate::load::{Limits, Measured};

/// The echo's `:path`, the same for tonic's server and Rubbo's.
const PATH: &str = "/rubbo.bench.echo.Echo/Echo";

/// The shortest warm-up run: it also estimates the rate the measured run is sized by.
const MIN_WARMUP: Duration = Duration::from_millis(200);

/// An installed `h2load`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct H2load {
    /// The unit of `/proc/PID/stat`'s CPU times.
    ticks_per_s: f64,
}

/// `Err(why)` when `h2load --version` does not run.
pub(crate) async fn locate() -> Result<H2load, String> {
    let out = Command::new("h2load")
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(Duration::from_secs(10), out).await {
        Ok(Ok(o)) if o.status.success() => Ok(H2load {
            ticks_per_s: crate::java::clock_ticks().await,
        }),
        Ok(Ok(o)) => Err(format!("`h2load --version` exited with {}", o.status)),
        Ok(Err(e)) => Err(format!(
            "h2load not found ({e}; Debian: apt-get install nghttp2-client)"
        )),
        Err(_) => Err("`h2load --version` did not answer within 10 s".into()),
    }
}

/// How long an h2load run goes on.
#[derive(Clone, Copy)]
enum Amount {
    /// Timing-based (`-D`).
    For(Duration),
    /// `-n` requests.
    Requests(u64),
}

/// What one h2load run printed and cost.
struct Run {
    summary: Summary,
    /// h2load's CPU time, user + system.
    h2load_cpu: Option<Duration>,
    /// The server runtime's threads' CPU time while h2load ran.
    server_cpu: Option<Duration>,
}

/// The figures of h2load's summary.
#[derive(Debug, Default, PartialEq)]
struct Summary {
    req_per_s: f64,
    total: u64,
    done: u64,
    succeeded: u64,
    failed: u64,
    errored: u64,
    timeout: u64,
    status_2xx: u64,
    latency_mean: Duration,
    latency_max: Duration,
}

/// Removes the file on drop.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl H2load {
    /// One cell: h2load loading the server at `addr` with `framed` (the gRPC-framed
    /// request) at `inflight` streams on one connection. Call it on the client runtime
    /// after a checked first call.
    pub(crate) async fn run(
        self,
        addr: SocketAddr,
        framed: &Bytes,
        inflight: usize,
        limits: Limits,
    ) -> anyhow::Result<Measured> {
        let dir = std::env::temp_dir();
        let tag = format!("rubbo-h2load-{}-{}", std::process::id(), framed.len());
        let data = TempFile(dir.join(format!("{tag}.bin")));
        std::fs::write(&data.0, framed)
            .with_context(|| format!("cannot write {}", data.0.display()))?;
        let warmup = limits.warmup.max(MIN_WARMUP);
        let warm = self
            .once(addr, &data.0, inflight, Amount::For(warmup))
            .await
            .context("h2load warm-up run")?;
        ensure!(
            warm.summary.succeeded > 0 && warm.summary.req_per_s > 0.0,
            "h2load warm-up: no request succeeded ({:?})",
            warm.summary
        );
        let n = ((warm.summary.req_per_s * limits.measure.as_secs_f64()) as u64)
            .clamp(inflight as u64, limits.max_requests.max(inflight as u64));
        let run = self
            .once(addr, &data.0, inflight, Amount::Requests(n))
            .await
            .context("h2load measured run")?;
        let s = &run.summary;
        ensure!(
            s.total == n
                && s.done == n
                && s.succeeded == n
                && s.status_2xx == n
                && s.failed == 0
                && s.errored == 0
                && s.timeout == 0,
            "h2load: not every request succeeded with 2xx: {s:?} (wanted {n})"
        );
        let cpu = run.server_cpu.zip(run.h2load_cpu).map(|(s, c)| s + c);
        Ok(Measured {
            requests: n,
            elapsed: Duration::from_secs_f64(n as f64 / s.req_per_s),
            // h2load gives no percentiles: its mean and max (see `results` and the
            // report, which name them so for these cells).
            p50: s.latency_mean,
            p99: s.latency_max,
            cpu,
            server_cpu: run.server_cpu,
            client_cpu: run.h2load_cpu,
        })
    }

    /// One h2load process, waited for (bounded) and read.
    async fn once(
        self,
        addr: SocketAddr,
        data: &Path,
        inflight: usize,
        amount: Amount,
    ) -> anyhow::Result<Run> {
        let mut cmd = Command::new("h2load");
        cmd.args(["-c", "1", "-t", "1", "-m", &inflight.to_string()])
            .arg("-d")
            .arg(data)
            .args(["-H", "content-type: application/grpc", "-H", "te: trailers"]);
        let bound = match amount {
            Amount::For(d) => {
                cmd.args(["-D", &format!("{}ms", d.as_millis().max(1))]);
                d * 2 + Duration::from_secs(20)
            }
            Amount::Requests(n) => {
                cmd.args(["-n", &n.to_string()]);
                // Sized from the warm-up's rate: allow for a much slower run.
                Duration::from_secs(60)
            }
        };
        cmd.arg(format!("http://{addr}{PATH}"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let server_start = crate::cpu::named_cpu(crate::cpu::SERVER_THREADS);
        let mut child = cmd.spawn().context("cannot start h2load")?;
        let pid = child.id().context("h2load has no pid")?;
        let mut stdout = child.stdout.take().context("h2load stdout")?;
        let mut stderr = child.stderr.take().context("h2load stderr")?;
        let out = tokio::spawn(async move {
            let mut s = String::new();
            let _ = stdout.read_to_string(&mut s).await;
            s
        });
        let err = tokio::spawn(async move {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s).await;
            s
        });
        // Until h2load has exited: its CPU time is read while it is a zombie (not yet
        // reaped, which `wait` would do).
        let deadline = Instant::now() + bound;
        let h2load_cpu = loop {
            if exited(pid) {
                break crate::java::process_cpu(pid, self.ticks_per_s);
            }
            if Instant::now() >= deadline {
                let _ = child.start_kill();
                bail!("h2load did not finish within {bound:?}");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let server_end = crate::cpu::named_cpu(crate::cpu::SERVER_THREADS);
        let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .context("h2load exited but could not be reaped")??;
        let read = |task: tokio::task::JoinHandle<String>| async move {
            tokio::time::timeout(Duration::from_secs(5), task)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default()
        };
        let (out, err) = (read(out).await, read(err).await);
        ensure!(
            status.success(),
            "h2load exited with {status}: {}{}",
            tail(&out),
            tail(&err)
        );
        let summary = parse(&out).with_context(|| format!("h2load printed: {}", tail(&out)))?;
        Ok(Run {
            summary,
            h2load_cpu,
            server_cpu: server_end
                .zip(server_start)
                .map(|(e, s)| e.saturating_sub(s)),
        })
    }
}

/// Whether the process has exited (a zombie, or gone).
fn exited(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    matches!(state, Some("Z" | "X") | None)
}

fn tail(s: &str) -> &str {
    let mut start = s.len().saturating_sub(1500);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// The first number in `text` before `unit`, e.g. `number_before("5 2xx, 0 3xx", "2xx")`.
fn number_before<T: std::str::FromStr>(text: &str, unit: &str) -> Option<T> {
    text.split(',').find_map(|part| {
        let mut words = part.split_whitespace();
        let n = words.next()?;
        (words.next()? == unit).then(|| n.parse().ok())?
    })
}

/// h2load's summary lines: `finished in 1.00s, 84036.00 req/s, 4.09MB/s`,
/// `requests: N total, N started, N done, N succeeded, 0 failed, 0 errored, 0 timeout`,
/// `status codes: N 2xx, 0 3xx, 0 4xx, 0 5xx`,
/// `time for request:  172us  13.76ms  1.82ms  1.20ms  74.27%` (min, max, mean, sd).
fn parse(out: &str) -> anyhow::Result<Summary> {
    let line = |prefix: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .with_context(|| format!("no `{prefix}` line"))
    };
    let finished = line("finished in ")?;
    let requests = line("requests: ")?;
    let codes = line("status codes: ")?;
    let times: Vec<&str> = line("time for request:")?.split_whitespace().collect();
    let time = |i: usize| {
        times
            .get(i)
            .and_then(|t| duration(t))
            .context("`time for request` figures")
    };
    let req_per_s = finished
        .split(',')
        .find_map(|p| p.trim().strip_suffix(" req/s")?.parse().ok())
        .context("no req/s")?;
    let n = |text: &str, unit: &str| number_before(text, unit).with_context(|| unit.to_owned());
    Ok(Summary {
        req_per_s,
        total: n(requests, "total")?,
        done: n(requests, "done")?,
        succeeded: n(requests, "succeeded")?,
        failed: n(requests, "failed")?,
        errored: n(requests, "errored")?,
        timeout: n(requests, "timeout")?,
        status_2xx: n(codes, "2xx")?,
        latency_max: time(1)?,
        latency_mean: time(2)?,
    })
}

/// h2load's `172us`, `13.76ms`, `1.02s`.
fn duration(text: &str) -> Option<Duration> {
    let (number, scale) = if let Some(n) = text.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else {
        (text.strip_suffix('s')?, 1.0)
    };
    let v: f64 = number.parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| Duration::from_secs_f64(v * scale))
}
