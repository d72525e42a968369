//! `rubbo bench URL METHOD [JSON args…]`: a load generator for `dubbo://` and
//! `tri://` providers (what `ghz` and `h2load` are for gRPC and HTTP/2), calling
//! through the same generic path as `rubbo invoke` (`$invoke`), or with `--typed` the
//! method itself, as a consumer of the Java interface does, its arguments encoded in
//! Hessian 2 once for every call. Closed loop by default (`-c`
//! calls in flight), open loop with `--rate`; bounded in calls and in time; a
//! progress line on a terminal, then a summary with an HDR histogram and the errors
//! by kind, or one JSON object with `--json`.

use std::io::IsTerminal;
use std::net::ToSocketAddrs;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::BytesMut;
use hdrhistogram::Histogram;
use rubbo::GenericClient;
use rubbo::config::Config;
use rubbo_common::descriptor::name_to_desc;
use rubbo_common::keys::GENERIC_KEY;
use rubbo_common::{Arguments, Encoded, Invocation, Url, Value, generic_arguments};
use rubbo_hessian2::Encoder;
use rubbo_serialization::HESSIAN2;
use serde::ser::{Serialize, SerializeTuple, Serializer};
use serde_json::json;

use crate::bench_load::{self, Bound, KINDS, Load, Stats, kind_name};
use crate::invoke_cmd::{self, CallArgs};

/// The run's length when neither `-d` nor `-n` is given.
pub(crate) const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// The longest a `-n` run may take: it stops there, and says so.
pub(crate) const CALLS_TIME_LIMIT: Duration = Duration::from_secs(600);
/// The longest `-d` and `--warmup` accepted.
const MAX_DURATION: Duration = Duration::from_secs(3600);
/// How often the progress line is redrawn.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// What to run, from the command line.
#[derive(Debug)]
pub(crate) struct BenchArgs<'a> {
    pub(crate) target: &'a str,
    pub(crate) method: &'a str,
    pub(crate) args: &'a [String],
    pub(crate) types: Option<&'a str>,
    /// Call `method` itself with the declared types, not `$invoke`.
    pub(crate) typed: bool,
    pub(crate) concurrency: usize,
    pub(crate) connections: usize,
    pub(crate) duration: Option<Duration>,
    pub(crate) calls: Option<u64>,
    pub(crate) rate: Option<f64>,
    pub(crate) warmup: Duration,
    pub(crate) threads: usize,
    pub(crate) json: bool,
    pub(crate) loopback_only: bool,
}

/// `10s`, `500ms`, `2m`, `1.5s`, or plain seconds.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("bad duration {s:?}: expected e.g. 10s, 500ms, 2m"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" => v,
        "m" => v * 60.0,
        _ => return Err(format!("bad duration unit in {s:?}: use ms, s or m")),
    };
    let d = Duration::try_from_secs_f64(secs).map_err(|e| format!("bad duration {s:?}: {e}"))?;
    if d > MAX_DURATION {
        return Err(format!("{s} is longer than the limit of 1 hour"));
    }
    Ok(d)
}

/// The generic call's three arguments (method, parameter types, arguments), built
/// once and serialized as consecutive values: every call shares them.
struct GenericArgs(Vec<Value>);

impl Serialize for GenericArgs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(self.0.len())?;
        for v in &self.0 {
            t.serialize_element(v)?;
        }
        t.end()
    }
}

/// The call of `method` itself on the service `url` names (interface, version,
/// group), as a Java consumer of the interface makes it: the parameter descriptor of
/// the declared types, and the arguments in Hessian 2, encoded here once; every call
/// sends these bytes as they are.
fn typed_invocation(url: &Url, method: &str, call: &CallArgs) -> Result<Invocation> {
    let interface = url
        .service_interface()
        .context("the URL names no interface (dubbo://host:port/<interface>)")?;
    let desc: String = call.types.iter().map(|t| name_to_desc(t)).collect();
    let mut bytes = BytesMut::new();
    let mut enc = Encoder::new(&mut bytes);
    for v in &call.values {
        enc.write_value(v).context("cannot encode the arguments")?;
    }
    let mut inv = Invocation::new(interface, method)
        .with_parameter_types(desc)
        .with_arguments(Arguments::Encoded {
            count: call.values.len(),
            encoded: Encoded::new(&HESSIAN2, bytes.freeze()),
        });
    if let Some(v) = url.version().filter(|v| !v.is_empty()) {
        inv = inv.with_version(v);
    }
    if let Some(g) = url.group().filter(|g| !g.is_empty()) {
        inv = inv.with_group(g);
    }
    Ok(inv)
}

/// Fails unless every address `target`'s host stands for is a loopback address;
/// resolves the name only (nothing is sent to the target).
fn check_loopback(target: &str) -> Result<()> {
    let url = Url::parse(target).with_context(|| format!("malformed URL \"{target}\""))?;
    let host = url.host().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<_> = (host, url.port())
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {host:?}"))?
        .collect();
    if addrs.is_empty() || addrs.iter().any(|a| !a.ip().is_loopback()) {
        bail!(
            "--loopback-only: {host} is not a loopback address ({}); nothing was sent",
            addrs
                .iter()
                .map(|a| a.ip().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

pub(crate) fn run(a: &BenchArgs<'_>, config: &Config) -> Result<ExitCode> {
    if a.loopback_only {
        check_loopback(a.target)?;
    }
    let call = CallArgs::parse(a.args, a.types)?;
    let runtime = if a.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(a.threads)
            .enable_all()
            .build()?
    };
    runtime.block_on(bench(a, call, config))
}

async fn bench(a: &BenchArgs<'_>, call: CallArgs, config: &Config) -> Result<ExitCode> {
    let mut invokers = Vec::with_capacity(a.connections);
    for _ in 0..a.connections {
        invokers.push(if a.typed {
            invoke_cmd::refer(a.target, config, false).await?
        } else {
            invoke_cmd::connect(a.target, config).await?.into_inner()
        });
    }
    let template = if a.typed {
        typed_invocation(invokers[0].url(), a.method, &call)?
    } else {
        let types: Vec<&str> = call.types.iter().map(String::as_str).collect();
        GenericClient::new(invokers[0].clone())
            .invocation_of(a.method, &types, Vec::new())
            .with_arguments(Arguments::typed(
                3,
                GenericArgs(generic_arguments(a.method, &types, call.values)),
            ))
            // What the generic filter would add to every call, added once.
            .with_attachment(GENERIC_KEY, "true")
    };
    let load = Arc::new(Load {
        invokers: invokers.clone(),
        template,
        concurrency: a.concurrency,
        rate: a.rate,
        shards: a.threads.max(1),
    });
    let interrupted = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut warmup_calls = 0;
    if !a.warmup.is_zero() {
        let stats = Arc::new(Stats::new(load.shards)?);
        let bound = Bound {
            deadline: Instant::now() + a.warmup,
            calls: None,
        };
        phase(&load, &stats, bound, None, &interrupted).await;
        warmup_calls = stats.done();
    }
    let stats = Arc::new(Stats::new(load.shards)?);
    let cpu_before = process_cpu();
    let started = Instant::now();
    let (bound, limit) = match (a.calls, a.duration) {
        (Some(n), _) => (started + CALLS_TIME_LIMIT, Some(n)),
        (None, d) => (started + d.unwrap_or(DEFAULT_DURATION), None),
    };
    let bound = Bound {
        deadline: bound,
        calls: limit,
    };
    let progress = std::io::stderr().is_terminal().then_some(started);
    if !interrupted.load(Ordering::Relaxed) {
        phase(&load, &stats, bound, progress, &interrupted).await;
    }
    let elapsed = started.elapsed();
    let cpu = cpu_before
        .zip(process_cpu())
        .map(|(b, a)| a.saturating_sub(b));
    for i in invokers {
        i.destroy();
    }
    let mut latencies = Histogram::new_with_bounds(1, 60_000_000_000, 3)?;
    stats.merge_into(&mut latencies);
    let report = Report {
        a,
        stats: &stats,
        latencies: &latencies,
        elapsed,
        cpu,
        warmup_calls,
        time_limited: limit.is_some_and(|n| scheduled(&stats) < n),
        interrupted: interrupted.load(Ordering::Relaxed),
    };
    if a.json {
        crate::input::emit(&serde_json::to_string(&report.json())?)?;
    } else {
        crate::input::emit(&report.text())?;
    }
    Ok(
        if stats.failed() > 0 || report.time_limited || report.interrupted {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// The CPU time (user + system) of this process so far, from `/proc/self/stat`
/// (Linux; `None` elsewhere), in clock ticks of 10 ms (`USER_HZ` is 100 on Linux).
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 here (from 1).
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// Calls made or missed: what a `-n` bound counts.
fn scheduled(stats: &Stats) -> u64 {
    stats.done() + stats.missed.load(Ordering::Relaxed)
}

/// Runs a phase, with the progress line on stderr when `progress` (the start) is
/// given, until its bound or Ctrl-C.
async fn phase(
    load: &Arc<Load>,
    stats: &Arc<Stats>,
    bound: Bound,
    progress: Option<Instant>,
    interrupted: &std::sync::atomic::AtomicBool,
) {
    let run = bench_load::run_phase(load, stats, bound);
    tokio::pin!(run);
    let mut ticks = tokio::time::interval(PROGRESS_EVERY);
    ticks.tick().await;
    let mut merged = progress.and_then(|_| Histogram::new_with_bounds(1, 60_000_000_000, 3).ok());
    let mut ctrl_c = std::pin::pin!(tokio::signal::ctrl_c());
    loop {
        tokio::select! {
            () = &mut run => break,
            _ = &mut ctrl_c, if !interrupted.load(Ordering::Relaxed) => {
                interrupted.store(true, Ordering::Relaxed);
                stats.stop.store(true, Ordering::Relaxed);
            }
            _ = ticks.tick(), if progress.is_some() => {
                if let (Some(start), Some(h)) = (progress, merged.as_mut()) {
                    stats.merge_into(h);
                    let secs = start.elapsed().as_secs_f64();
                    eprint!(
                        "\r{secs:6.1} s  {} calls  {:.0}/s  {} errors  p99 {}   ",
                        stats.done(),
                        stats.done() as f64 / secs.max(1e-9),
                        stats.failed(),
                        fmt_ns(h.value_at_quantile(0.99)),
                    );
                }
            }
        }
    }
    if progress.is_some() {
        eprintln!();
    }
}

/// A latency for people: `850 µs`, `12.3 ms`.
fn fmt_ns(ns: u64) -> String {
    let us = ns as f64 / 1000.0;
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 1_000_000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1_000_000.0)
    }
}

/// The numbers of a finished run.
struct Report<'a> {
    a: &'a BenchArgs<'a>,
    stats: &'a Stats,
    latencies: &'a Histogram<u64>,
    elapsed: Duration,
    /// The CPU time this process used while measuring (Linux only).
    cpu: Option<Duration>,
    /// Calls made in the warmup, not reported otherwise.
    warmup_calls: u64,
    /// A `-n` run stopped by [`CALLS_TIME_LIMIT`] before its count.
    time_limited: bool,
    interrupted: bool,
}

/// The percentiles reported, with their JSON names.
const QUANTILES: [(&str, f64); 4] = [("p50", 0.50), ("p90", 0.90), ("p99", 0.99), ("p999", 0.999)];

impl Report<'_> {
    fn errors(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        (0..KINDS)
            .map(|i| (kind_name(i), self.stats.errors[i].load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
    }

    fn rate(&self) -> f64 {
        self.stats.done() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    fn mode(&self) -> &'static str {
        if self.a.rate.is_some() {
            "open"
        } else {
            "closed"
        }
    }

    fn json(&self) -> serde_json::Value {
        let h = self.latencies;
        // No successful call, no latencies: nulls rather than zeros.
        let us = |ns: f64| (!h.is_empty()).then_some(ns / 1e3);
        let mut latency = serde_json::Map::new();
        for (name, q) in QUANTILES {
            latency.insert(
                format!("{name}_us"),
                json!(us(h.value_at_quantile(q) as f64)),
            );
        }
        latency.insert("max_us".into(), json!(us(h.max() as f64)));
        latency.insert("mean_us".into(), json!(us(h.mean())));
        let errors: serde_json::Map<String, serde_json::Value> = self
            .errors()
            .map(|(k, n)| (k.to_owned(), json!(n)))
            .collect();
        json!({
            "target": self.a.target,
            "method": self.a.method,
            "mode": self.mode(),
            "concurrency": self.a.concurrency,
            "connections": self.a.connections,
            "rate": self.a.rate,
            "calls": self.stats.done(),
            "ok": self.stats.ok.load(Ordering::Relaxed),
            "failed": self.stats.failed(),
            "errors": errors,
            "missed": self.stats.missed.load(Ordering::Relaxed),
            "elapsed_s": self.elapsed.as_secs_f64(),
            "cpu_s": self.cpu.map(|c| c.as_secs_f64()),
            "warmup_calls": self.warmup_calls,
            "calls_per_s": self.rate(),
            "latency": latency,
            "time_limited": self.time_limited,
            "interrupted": self.interrupted,
        })
    }

    fn text(&self) -> String {
        let h = self.latencies;
        let a = self.a;
        let mut out = format!(
            "{} {}: {} loop, {} in flight, {} connection{}{}\n",
            a.target,
            a.method,
            self.mode(),
            a.concurrency,
            a.connections,
            if a.connections == 1 { "" } else { "s" },
            a.rate.map(|r| format!(", {r} calls/s")).unwrap_or_default(),
        );
        out += &format!(
            "  calls    {} ({} ok, {} failed) in {:.2} s: {:.1} calls/s\n",
            self.stats.done(),
            self.stats.ok.load(Ordering::Relaxed),
            self.stats.failed(),
            self.elapsed.as_secs_f64(),
            self.rate(),
        );
        if !h.is_empty() {
            out += "  latency ";
            for (name, q) in QUANTILES {
                out += &format!(" {name} {}", fmt_ns(h.value_at_quantile(q)));
            }
            out += &format!(" max {}\n", fmt_ns(h.max()));
        }
        let missed = self.stats.missed.load(Ordering::Relaxed);
        if missed > 0 {
            out += &format!("  missed   {missed} calls could not start on time\n");
        }
        for (kind, n) in self.errors() {
            out += &format!("  errors   {kind}: {n}\n");
        }
        if self.time_limited {
            out += &format!(
                "  stopped by the time limit of {} s before the count\n",
                CALLS_TIME_LIMIT.as_secs()
            );
        }
        if self.interrupted {
            out += "  interrupted\n";
        }
        out.trim_end().to_owned()
    }
}
