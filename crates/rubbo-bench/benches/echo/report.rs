//! The markdown table and the goal checks.

use std::fmt::Write;
use std::str::FromStr;
use std::time::Duration;

use crate::Config;
use crate::load::Measured;

/// The systems under test: three in this process, and the Java cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum System {
    Raw,
    Tonic,
    Rubbo,
    /// This bench's Rubbo client calling the Java Dubbo provider JVM.
    RubboJava,
    /// The Java Dubbo client JVM calling the Rubbo provider in this process.
    JavaRubbo,
    /// The Java Dubbo client JVM calling the Java Dubbo provider JVM.
    JavaJava,
}

pub(crate) const SYSTEMS: [System; 6] = [
    System::Raw,
    System::Tonic,
    System::Rubbo,
    System::RubboJava,
    System::JavaRubbo,
    System::JavaJava,
];

impl System {
    pub(crate) fn name(self) -> &'static str {
        match self {
            System::Raw => "raw",
            System::Tonic => "tonic",
            System::Rubbo => "rubbo",
            System::RubboJava => "rubbo-java",
            System::JavaRubbo => "java-rubbo",
            System::JavaJava => "java-java",
        }
    }

    /// A Java cell (needs the JVMs).
    pub(crate) fn is_java(self) -> bool {
        matches!(
            self,
            System::RubboJava | System::JavaRubbo | System::JavaJava
        )
    }

    fn index(self) -> usize {
        SYSTEMS.iter().position(|s| *s == self).unwrap_or(0)
    }

    /// Who calls whom, for the Java table.
    fn label(self) -> &'static str {
        match self {
            System::Raw => "raw",
            System::Tonic => "tonic",
            System::Rubbo => "Rubbo → Rubbo (the `rubbo` cell: one process)",
            System::RubboJava => "Rubbo → Java Dubbo",
            System::JavaRubbo => "Java client → Rubbo",
            System::JavaJava => "Java client → Java Dubbo",
        }
    }

    /// Which process each CPU figure covers: (server, client).
    pub(crate) fn cpu_covers(self) -> (&'static str, &'static str) {
        match self {
            System::RubboJava => ("provider JVM", "bench process (Rubbo client)"),
            System::JavaRubbo => ("bench process (Rubbo server)", "client JVM"),
            System::JavaJava => ("provider JVM", "client JVM"),
            _ => ("bench process", "bench process"),
        }
    }
}

impl FromStr for System {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        SYSTEMS.into_iter().find(|x| x.name() == s).ok_or_else(|| {
            let known: Vec<&str> = SYSTEMS.iter().map(|s| s.name()).collect();
            format!("unknown system {s:?}; known: {}", known.join(", "))
        })
    }
}

impl std::fmt::Display for System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// One payload size and in-flight level, with each system's result.
#[derive(Debug)]
pub(crate) struct Row {
    size: usize,
    inflight: usize,
    /// Per system (by [`SYSTEMS`] order), the kept result.
    results: [Option<anyhow::Result<Measured>>; 6],
}

impl Row {
    pub(crate) fn new(size: usize, inflight: usize) -> Self {
        Row {
            size,
            inflight,
            results: Default::default(),
        }
    }

    /// Keeps `result` if it is the first for `system` or beats the kept one.
    pub(crate) fn offer(&mut self, system: System, result: anyhow::Result<Measured>) {
        let slot = &mut self.results[system.index()];
        let better = match (&*slot, &result) {
            (None, _) | (Some(Err(_)), _) => true,
            (Some(Ok(kept)), Ok(new)) => new.throughput() > kept.throughput(),
            (Some(Ok(_)), Err(_)) => false,
        };
        if better {
            *slot = Some(result);
        }
    }

    fn get(&self, system: System) -> Option<&Measured> {
        self.results[system.index()]
            .as_ref()
            .and_then(|r| r.as_ref().ok())
    }

    fn cells(&self, system: System) -> [String; 4] {
        match &self.results[system.index()] {
            None => ["-".into(), "-".into(), "-".into(), "-".into()],
            Some(Err(_)) => ["error".into(), "-".into(), "-".into(), "-".into()],
            Some(Ok(m)) => [
                rate(m.throughput()),
                micros(m.p50()),
                micros(m.p99()),
                m.cpu_per_call().map_or_else(|| "-".into(), micros),
            ],
        }
    }

    fn ratio(&self, of: System, to: System, f: impl Fn(&Measured) -> f64) -> Option<f64> {
        Some(f(self.get(of)?) / f(self.get(to)?)).filter(|r| r.is_finite())
    }
}

fn rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.2} M", r / 1e6)
    } else {
        format!("{:.1} k", r / 1e3)
    }
}

fn micros(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "-".into(), |r| format!("{r:.2}x"))
}

fn size(bytes: usize) -> String {
    if bytes >= 1024 && bytes % 1024 == 0 {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} B")
    }
}

fn throughput(m: &Measured) -> f64 {
    m.throughput()
}

fn cpu(m: &Measured) -> f64 {
    m.cpu_per_call().map_or(f64::NAN, |d| d.as_secs_f64())
}

fn p50(m: &Measured) -> f64 {
    m.p50().as_secs_f64()
}

/// Renders the table of the in-process systems with the goals from the issue
/// (reported, not asserted), then the Java cells' table, then the errors.
pub(crate) fn render(rows: &[Row], config: &Config, loadavg: &str) -> String {
    let mut out = String::new();
    let local: Vec<System> = config
        .systems
        .iter()
        .copied()
        .filter(|s| !s.is_java())
        .collect();
    if !local.is_empty() {
        render_local(&mut out, rows, config, loadavg, &local);
    }
    if config.systems.iter().any(|s| s.is_java()) {
        render_java(&mut out, rows, config);
    }
    let errors: Vec<String> = rows
        .iter()
        .flat_map(|row| {
            SYSTEMS
                .into_iter()
                .zip(&row.results)
                .filter_map(move |(s, r)| match r {
                    Some(Err(e)) => {
                        Some(format!("- {s} {} x{}: {e:#}", size(row.size), row.inflight))
                    }
                    _ => None,
                })
        })
        .collect();
    if !errors.is_empty() {
        let _ = writeln!(out, "\nErrors:\n\n{}", errors.join("\n"));
    }
    out
}

fn render_local(
    out: &mut String,
    rows: &[Row],
    config: &Config,
    loadavg: &str,
    systems: &[System],
) {
    let _ = writeln!(
        out,
        "Echo over one connection on 127.0.0.1; client and server in one process on one \
         tokio runtime with {} worker threads; {:.1} s measured per cell after {:.1} s \
         warm-up, best of {} round(s); raw writers coalescing: {}; latency p50/p99 and process CPU time per call (client + server) in µs; load average at the end: \
         {loadavg}.\n",
        config.threads,
        config.limits.measure.as_secs_f64(),
        config.limits.warmup.as_secs_f64(),
        config.rounds,
        if config.raw_coalesce { "yes" } else { "no" },
    );
    let mut header = String::from("| payload | in flight |");
    let mut rule = String::from("|---|---:|");
    for s in systems {
        let _ = write!(header, " {s} req/s | {s} p50 | {s} p99 | {s} CPU/call |");
        rule.push_str("---:|---:|---:|---:|");
    }
    header.push_str(
        " rubbo/raw req/s | rubbo/tonic req/s | rubbo/raw p50 | rubbo/raw CPU/call | rubbo/tonic CPU/call |",
    );
    rule.push_str("---:|---:|---:|---:|---:|");
    let _ = writeln!(out, "{header}\n{rule}");
    for row in rows {
        let mut line = format!("| {} | {} |", size(row.size), row.inflight);
        for &s in systems {
            for c in row.cells(s) {
                let _ = write!(line, " {c} |");
            }
        }
        let _ = write!(
            line,
            " {} | {} | {} | {} | {} |",
            ratio(row.ratio(System::Rubbo, System::Raw, throughput)),
            ratio(row.ratio(System::Rubbo, System::Tonic, throughput)),
            ratio(row.ratio(System::Rubbo, System::Raw, p50)),
            ratio(row.ratio(System::Rubbo, System::Raw, cpu)),
            ratio(row.ratio(System::Rubbo, System::Tonic, cpu)),
        );
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out, "\nGoals (reported, not asserted):\n");
    for row in rows {
        let at = format!("{} x{}", size(row.size), row.inflight);
        let mut goal = |name: &str, value: Option<f64>, show: String, met: bool| {
            if value.is_some() {
                let verdict = if met { "met" } else { "MISSED" };
                let _ = writeln!(out, "- {at}: {name}: {show} ({verdict})");
            }
        };
        if row.inflight == 256 {
            let r = row.ratio(System::Rubbo, System::Raw, throughput);
            goal(
                "rubbo >= 40% of raw req/s",
                r,
                format!("{:.0}%", r.unwrap_or(0.0) * 100.0),
                r.is_some_and(|r| r >= 0.4),
            );
            let r = row.ratio(System::Rubbo, System::Tonic, throughput);
            goal(
                "rubbo >= 5x tonic req/s",
                r,
                ratio(r),
                r.is_some_and(|r| r >= 5.0),
            );
        }
        if row.inflight == 1 {
            let r = row.ratio(System::Rubbo, System::Raw, p50);
            goal(
                "rubbo p50 within 1.5x of raw",
                r,
                ratio(r),
                r.is_some_and(|r| r <= 1.5),
            );
        }
        if row.inflight == 32 {
            let p99 = row.get(System::Rubbo).map(|m| m.p99());
            goal(
                "rubbo p99 under 1 ms",
                p99.map(|d| d.as_secs_f64()),
                p99.map_or_else(String::new, |d| format!("{} µs", micros(d))),
                p99.is_some_and(|d| d < Duration::from_millis(1)),
            );
        }
    }
}

/// The Java cells beside the `rubbo` cell: per cell, who calls whom, req/s,
/// latencies, and CPU per call of the server and of the client, each naming the
/// process it covers; then the ratios that compare like with like.
fn render_java(out: &mut String, rows: &[Row], config: &Config) {
    let order = [
        System::Rubbo,
        System::RubboJava,
        System::JavaRubbo,
        System::JavaJava,
    ];
    let shown: Vec<System> = order
        .into_iter()
        .filter(|s| config.systems.contains(s))
        .collect();
    let _ = writeln!(
        out,
        "\nJava cells: Rubbo beside Java Dubbo 3.3.6 on the dubbo protocol (Hessian 2), one \
         connection on 127.0.0.1. `bench/java`'s `BenchProvider` and async `BenchClient`, \
         one JVM each (`-Xmx512m`, default JIT and GC), started once and put under {:.0} s \
         of load before the first cell so that their JITs are warm; the Rubbo client is \
         this bench's (the `rubbo` cell's client and load loop), the Rubbo server the \
         `rubbo` cell's server code, here on this process's runtime. Same payloads, \
         in-flight levels and windows as above, taking turns with those cells in each \
         round; best of {} round(s). Latency and CPU time per call in µs; CPU over the \
         measured window, per process: the provider and client JVMs from \
         `/proc/PID/stat`, this bench process from `/proc/self/task/*/schedstat` (it \
         holds only the Rubbo side of the cell meanwhile); total is server + client (the \
         `rubbo` cell's is its one process, client and server together). The Java \
         client measures its own req/s and latency.\n",
        config.java_prewarm.as_secs_f64(),
        config.rounds,
    );
    let _ = writeln!(
        out,
        "| payload | in flight | client → server | req/s | p50 | p99 | server CPU/call \
         | server CPU of | client CPU/call | client CPU of | total CPU/call |\n\
         |---|---:|---|---:|---:|---:|---:|---|---:|---|---:|"
    );
    let us = |d: Option<Duration>| d.map_or_else(|| "-".into(), micros);
    for row in rows {
        for &s in &shown {
            let (server_of, client_of) = s.cpu_covers();
            let [rps, p50, p99, total] = row.cells(s);
            let m = row.get(s).filter(|_| s.is_java());
            let _ = writeln!(
                out,
                "| {} | {} | {} | {rps} | {p50} | {p99} | {} | {} | {} | {} | {total} |",
                size(row.size),
                row.inflight,
                s.label(),
                us(m.and_then(Measured::server_cpu_per_call)),
                if s.is_java() { server_of } else { "-" },
                us(m.and_then(Measured::client_cpu_per_call)),
                if s.is_java() { client_of } else { "-" },
            );
        }
    }
    let _ = writeln!(
        out,
        "\nJava cells, ratios (same run):\n\n\
         | payload | in flight | servers under the Java client: Rubbo/Java req/s \
         | Rubbo/Java server CPU/call | servers under the Rubbo client: Rubbo/Java req/s \
         | clients against Java Dubbo: Rubbo/Java client CPU/call |\n\
         |---|---:|---:|---:|---:|---:|"
    );
    let server_cpu = |m: &Measured| {
        m.server_cpu_per_call()
            .map_or(f64::NAN, |d| d.as_secs_f64())
    };
    let client_cpu = |m: &Measured| {
        m.client_cpu_per_call()
            .map_or(f64::NAN, |d| d.as_secs_f64())
    };
    for row in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            size(row.size),
            row.inflight,
            ratio(row.ratio(System::JavaRubbo, System::JavaJava, throughput)),
            ratio(row.ratio(System::JavaRubbo, System::JavaJava, server_cpu)),
            ratio(row.ratio(System::Rubbo, System::RubboJava, throughput)),
            ratio(row.ratio(System::RubboJava, System::JavaJava, client_cpu)),
        );
    }
}
