//! The Triple cells: which client calls which server, and their two tables
//! (servers under one client, clients against one server) with the goals.

use std::fmt::Write;
use std::str::FromStr;
use std::time::Duration;

use crate::Config;
use crate::load::Measured;

/// One Triple pairing: a client calling a server, on their own runtimes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pair {
    /// The plain HTTP/2 client calling Rubbo's Triple server.
    H2Rubbo,
    /// The plain HTTP/2 client calling tonic's server.
    H2Tonic,
    /// `h2load` (nghttp2, another process) calling Rubbo's Triple server.
    H2loadRubbo,
    /// `h2load` calling tonic's server.
    H2loadTonic,
    /// Rubbo's Triple client calling tonic's server.
    RubboTonic,
    /// tonic's client calling tonic's server.
    TonicTonic,
    /// Rubbo's wrapper-mode Triple client calling the Java Dubbo provider JVM.
    RubboJava,
    /// The Java Dubbo client JVM calling Rubbo's wrapper-mode Triple server.
    JavaRubbo,
    /// The Java Dubbo client JVM calling the Java Dubbo provider JVM.
    JavaJava,
}

const PAIRS: [Pair; 9] = [
    Pair::H2Rubbo,
    Pair::H2Tonic,
    Pair::H2loadRubbo,
    Pair::H2loadTonic,
    Pair::RubboTonic,
    Pair::TonicTonic,
    Pair::RubboJava,
    Pair::JavaRubbo,
    Pair::JavaJava,
];

impl Pair {
    fn name(self) -> &'static str {
        match self {
            Pair::H2Rubbo => "h2-rubbo",
            Pair::H2Tonic => "h2-tonic",
            Pair::H2loadRubbo => "h2load-rubbo",
            Pair::H2loadTonic => "h2load-tonic",
            Pair::RubboTonic => "rubbo-tonic",
            Pair::TonicTonic => "tonic-tonic",
            Pair::RubboJava => "rubbo-java",
            Pair::JavaRubbo => "java-rubbo",
            Pair::JavaJava => "java-java",
        }
    }

    /// A Java cell (needs the JVMs).
    pub(crate) fn is_java(self) -> bool {
        matches!(self, Pair::RubboJava | Pair::JavaRubbo | Pair::JavaJava)
    }

    /// An `h2load` cell (needs `h2load` installed).
    pub(crate) fn is_h2load(self) -> bool {
        matches!(self, Pair::H2loadRubbo | Pair::H2loadTonic)
    }

    /// Which process or threads each CPU figure covers: (server, client).
    pub(crate) fn cpu_covers(self) -> (&'static str, &'static str) {
        match self {
            Pair::H2loadRubbo | Pair::H2loadTonic => ("server runtime threads", "h2load process"),
            Pair::RubboJava => ("provider JVM", "client runtime threads"),
            Pair::JavaRubbo => ("server runtime threads", "client JVM"),
            Pair::JavaJava => ("provider JVM", "client JVM"),
            _ => ("server runtime threads", "client runtime threads"),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Pair::RubboJava => "Rubbo → Java Dubbo",
            Pair::JavaRubbo => "Java client → Rubbo",
            Pair::JavaJava => "Java client → Java Dubbo",
            other => other.name(),
        }
    }

    fn index(self) -> usize {
        PAIRS.iter().position(|p| *p == self).unwrap_or(0)
    }
}

impl FromStr for Pair {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        PAIRS.into_iter().find(|p| p.name() == s).ok_or_else(|| {
            let known: Vec<&str> = PAIRS.iter().map(|p| p.name()).collect();
            format!("unknown Triple pair {s:?}; known: {}", known.join(", "))
        })
    }
}

impl std::fmt::Display for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// Every round of every pair at one payload size and in-flight level.
#[derive(Debug)]
pub(crate) struct TriRow {
    size: usize,
    inflight: usize,
    /// Per pair, each round's result (rounds in order, `None` for a failed round).
    rounds: [Vec<Option<Measured>>; 9],
    errors: Vec<String>,
}

/// Which side's CPU a table reports.
#[derive(Clone, Copy)]
enum Side {
    Server,
    Client,
}

fn side_cpu(m: &Measured, side: Side) -> Option<Duration> {
    match side {
        Side::Server => m.server_cpu_per_call(),
        Side::Client => m.client_cpu_per_call(),
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

impl TriRow {
    pub(crate) fn new(size: usize, inflight: usize) -> Self {
        TriRow {
            size,
            inflight,
            rounds: Default::default(),
            errors: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, pair: Pair, result: anyhow::Result<Measured>) {
        let slot = &mut self.rounds[pair.index()];
        match result {
            Ok(m) => slot.push(Some(m)),
            Err(e) => {
                self.errors.push(format!(
                    "- {pair} {} x{} round {}: {e:#}",
                    size(self.size),
                    self.inflight,
                    slot.len() + 1
                ));
                slot.push(None);
            }
        }
    }

    fn of(&self, pair: Pair) -> impl Iterator<Item = &Measured> {
        self.rounds[pair.index()].iter().flatten()
    }

    /// The median over rounds of `f` for `pair`.
    fn median(&self, pair: Pair, f: impl Fn(&Measured) -> Option<f64>) -> Option<f64> {
        median(self.of(pair).filter_map(f).collect())
    }

    /// Per round, `f` of `a` over `f` of `b` (the two ran back to back): the median
    /// and the range.
    fn ratios(
        &self,
        a: Pair,
        b: Pair,
        f: impl Fn(&Measured) -> Option<f64>,
    ) -> Option<(f64, f64, f64)> {
        let per_round: Vec<f64> = self.rounds[a.index()]
            .iter()
            .zip(&self.rounds[b.index()])
            .filter_map(|(x, y)| Some(f(x.as_ref()?)? / f(y.as_ref()?)?))
            .filter(|r| r.is_finite())
            .collect();
        let lo = per_round.iter().copied().reduce(f64::min)?;
        let hi = per_round.iter().copied().reduce(f64::max)?;
        Some((median(per_round)?, lo, hi))
    }

    fn cells(&self, pair: Pair, side: Side) -> [String; 4] {
        if self.of(pair).next().is_none() {
            let first = if self.rounds[pair.index()].is_empty() {
                "-"
            } else {
                "error"
            };
            return [first.into(), "-".into(), "-".into(), "-".into()];
        }
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        [
            self.median(pair, |m| Some(m.throughput()))
                .map_or_else(|| "-".into(), rate),
            self.median(pair, |m| Some(us(m.p50())))
                .map_or_else(|| "-".into(), |v| format!("{v:.1}")),
            self.median(pair, |m| Some(us(m.p99())))
                .map_or_else(|| "-".into(), |v| format!("{v:.1}")),
            self.median(pair, |m| side_cpu(m, side).map(us))
                .map_or_else(|| "-".into(), |v| format!("{v:.2}")),
        ]
    }
}

fn rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.2} M", r / 1e6)
    } else {
        format!("{:.1} k", r / 1e3)
    }
}

fn size(bytes: usize) -> String {
    if bytes >= 1024 && bytes % 1024 == 0 {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} B")
    }
}

fn ratio(r: Option<(f64, f64, f64)>) -> String {
    r.map_or_else(
        || "-".into(),
        |(m, lo, hi)| format!("{m:.2}x ({lo:.2}-{hi:.2})"),
    )
}

fn throughput(m: &Measured) -> Option<f64> {
    Some(m.throughput())
}

/// Renders the two Triple tables and the goals (reported, not asserted).
pub(crate) fn render(rows: &[TriRow], config: &Config) -> String {
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\nTriple unary echo over one HTTP/2 connection on 127.0.0.1; server and client on \
         their own tokio runtimes ({} and {} worker threads: `{}*` and `{}*`); {:.1} s \
         measured per cell after {:.1} s warm-up, {} round(s), the pairs taking turns; \
         figures are medians over rounds, ratios the median of each round's ratio (the \
         two ran back to back) with their range; latency p50/p99 and CPU time per call \
         in µs.\n",
        config.server_threads,
        config.client_threads,
        crate::cpu::SERVER_THREADS,
        crate::cpu::CLIENT_THREADS,
        config.limits.measure.as_secs_f64(),
        config.limits.warmup.as_secs_f64(),
        config.rounds,
    );
    let tables = [
        (
            "Servers, both called by the same plain HTTP/2 client (`h2`): Rubbo's Triple \
             server (IDL echo generated by rubbo-build, through the bootstrap) and tonic's; \
             CPU is the server runtime's.",
            Pair::H2Rubbo,
            Pair::H2Tonic,
            Side::Server,
            "server",
            "the `h2` client",
        ),
        (
            "Servers, both called by `h2load` (nghttp2 1.x, C, its own process: `-c 1 -t 1 \
             -m IN_FLIGHT`, a timing-based warm-up run, then the measured run of `-n` \
             requests sized from the warm-up's rate; every request checked 2xx; latency is \
             h2load's mean and max per request, not percentiles): the same two servers on the same server runtime; \
             server CPU is the server runtime's, h2load's from `/proc/PID/stat` (one \
             clock tick resolution), to show it is not the bottleneck.",
            Pair::H2loadRubbo,
            Pair::H2loadTonic,
            Side::Server,
            "server",
            "`h2load`",
        ),
        (
            "Clients, both calling tonic's server: Rubbo's Triple client (generated, \
             through the bootstrap's `refer_url`) and tonic's; CPU is the client runtime's.",
            Pair::RubboTonic,
            Pair::TonicTonic,
            Side::Client,
            "client",
            "tonic's server",
        ),
    ];
    let mut goals = String::new();
    for (title, rubbo, tonic, side, what, by) in tables {
        let h2load = rubbo.is_h2load();
        if !rows
            .iter()
            .any(|r| r.of(rubbo).next().is_some() || r.of(tonic).next().is_some())
        {
            continue;
        }
        let (extra, extra_align, lat) = match h2load {
            true => (" h2load CPU/call |", "---:|", "mean | max"),
            false => ("", "", "p50 | p99"),
        };
        let _ = writeln!(
            out,
            "{title}\n\n| payload | in flight | {rubbo} req/s | {lat} | {what} CPU/call \
             |{extra} {tonic} req/s | {lat} | {what} CPU/call |{extra} rubbo/tonic req/s | \
             rubbo/tonic {what} CPU/call |\n|---|---:|---:|---:|---:|---:|{extra_align}---:|---:|\
             ---:|---:|{extra_align}---:|---:|"
        );
        for row in rows {
            let mut line = format!("| {} | {} |", size(row.size), row.inflight);
            for pair in [rubbo, tonic] {
                for c in row.cells(pair, side) {
                    let _ = write!(line, " {c} |");
                }
                if h2load {
                    let _ = write!(line, " {} |", row.cells(pair, Side::Client)[3]);
                }
            }
            let cpu = |m: &Measured| side_cpu(m, side).map(|d| d.as_secs_f64());
            let rps = row.ratios(rubbo, tonic, throughput);
            let cpu_ratio = row.ratios(rubbo, tonic, cpu);
            let _ = writeln!(line, " {} | {} |", ratio(rps), ratio(cpu_ratio));
            if row.inflight == 256 {
                let at = format!("{} x256, {what}s under {by}", size(row.size));
                let verdict = |met: bool| if met { "met" } else { "MISSED" };
                if let Some((r, ..)) = rps {
                    let _ = writeln!(
                        goals,
                        "- {at}: rubbo >= 1.5x tonic req/s: {r:.2}x ({})",
                        verdict(r >= 1.5)
                    );
                }
                if let Some((r, ..)) = cpu_ratio {
                    let _ = writeln!(
                        goals,
                        "- {at}: rubbo <= 0.7x tonic CPU/call: {r:.2}x ({})",
                        verdict(r <= 0.7)
                    );
                }
            }
            out.push_str(&line);
        }
        out.push('\n');
    }
    if !goals.is_empty() {
        let _ = writeln!(out, "Triple goals (reported, not asserted):\n\n{goals}");
    }
    render_java(&mut out, rows, config);
    let errors: Vec<&String> = rows.iter().flat_map(|r| &r.errors).collect();
    if !errors.is_empty() {
        let _ = writeln!(out, "Triple errors:\n");
        for e in errors {
            let _ = writeln!(out, "{e}");
        }
    }
    out
}

/// The Java cells on Triple: per pair, req/s, latencies, and server and client CPU per
/// call, each naming what it covers; then the ratios that compare like with like.
fn render_java(out: &mut String, rows: &[TriRow], config: &Config) {
    let pairs = [Pair::RubboJava, Pair::JavaRubbo, Pair::JavaJava];
    if !rows
        .iter()
        .any(|r| pairs.iter().any(|p| r.of(*p).next().is_some()))
    {
        return;
    }
    let _ = writeln!(
        out,
        "Java cells on Triple: Rubbo beside Java Dubbo 3.3.6, `tri://` in wrapper mode \
         (`org.rubbo.bench.EchoService`, `String echo(String)`, Hessian 2 inside), one \
         HTTP/2 connection. `bench/java`'s `BenchProvider` and async `BenchClient` (one \
         JVM each, `-Xmx512m`, started once and put under {:.0} s of load first so that \
         their JITs are warm); Rubbo's server and client are `#[rubbo::service]` code \
         through the bootstrap, on the server and client runtimes above. Medians over \
         rounds; CPU per call in µs over the measured window: the JVMs' from \
         `/proc/PID/stat`, Rubbo's side from its runtime's threads \
         (`/proc/self/task/*/schedstat`). The Java client measures its own req/s and \
         latency.\n\n\
         | payload | in flight | client → server | req/s | p50 | p99 | server CPU/call \
         | server CPU of | client CPU/call | client CPU of |\n\
         |---|---:|---|---:|---:|---:|---:|---|---:|---|",
        config.java_prewarm.as_secs_f64(),
    );
    for row in rows {
        for pair in pairs {
            if row.rounds[pair.index()].is_empty() {
                continue;
            }
            let [rps, p50, p99, server] = row.cells(pair, Side::Server);
            let client = row.cells(pair, Side::Client)[3].clone();
            let (server_of, client_of) = pair.cpu_covers();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {rps} | {p50} | {p99} | {server} | {server_of} | {client} \
                 | {client_of} |",
                size(row.size),
                row.inflight,
                pair.label(),
            );
        }
    }
    let _ = writeln!(
        out,
        "\nJava cells on Triple, ratios (median of the rounds' ratios, range):\n\n\
         | payload | in flight | servers under the Java client: Rubbo/Java req/s \
         | Rubbo/Java server CPU/call | clients against Java Dubbo: Rubbo/Java client \
         CPU/call |\n|---|---:|---:|---:|---:|"
    );
    let cpu = |side| move |m: &Measured| side_cpu(m, side).map(|d| d.as_secs_f64());
    for row in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            size(row.size),
            row.inflight,
            ratio(row.ratios(Pair::JavaRubbo, Pair::JavaJava, throughput)),
            ratio(row.ratios(Pair::JavaRubbo, Pair::JavaJava, cpu(Side::Server))),
            ratio(row.ratios(Pair::RubboJava, Pair::JavaJava, cpu(Side::Client))),
        );
    }
    out.push('\n');
}
