//! The markdown table and the goal checks.

use std::fmt::Write;
use std::str::FromStr;
use std::time::Duration;

use crate::Config;
use crate::load::Measured;

/// The three systems under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum System {
    Raw,
    Tonic,
    Rubbo,
}

impl FromStr for System {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "raw" => Ok(System::Raw),
            "tonic" => Ok(System::Tonic),
            "rubbo" => Ok(System::Rubbo),
            other => Err(format!(
                "unknown system {other:?}; known: raw, tonic, rubbo"
            )),
        }
    }
}

impl std::fmt::Display for System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            System::Raw => "raw",
            System::Tonic => "tonic",
            System::Rubbo => "rubbo",
        })
    }
}

/// One payload size and in-flight level, with each system's result.
#[derive(Debug)]
pub(crate) struct Row {
    size: usize,
    inflight: usize,
    raw: Option<anyhow::Result<Measured>>,
    tonic: Option<anyhow::Result<Measured>>,
    rubbo: Option<anyhow::Result<Measured>>,
}

impl Row {
    pub(crate) fn new(size: usize, inflight: usize) -> Self {
        Row {
            size,
            inflight,
            raw: None,
            tonic: None,
            rubbo: None,
        }
    }

    /// Keeps `result` if it is the first for `system` or beats the kept one.
    pub(crate) fn offer(&mut self, system: System, result: anyhow::Result<Measured>) {
        let slot = self.slot(system);
        let better = match (&*slot, &result) {
            (None, _) | (Some(Err(_)), _) => true,
            (Some(Ok(kept)), Ok(new)) => new.throughput() > kept.throughput(),
            (Some(Ok(_)), Err(_)) => false,
        };
        if better {
            *slot = Some(result);
        }
    }

    fn slot(&mut self, system: System) -> &mut Option<anyhow::Result<Measured>> {
        match system {
            System::Raw => &mut self.raw,
            System::Tonic => &mut self.tonic,
            System::Rubbo => &mut self.rubbo,
        }
    }

    fn get(&self, system: System) -> Option<&Measured> {
        match system {
            System::Raw => &self.raw,
            System::Tonic => &self.tonic,
            System::Rubbo => &self.rubbo,
        }
        .as_ref()
        .and_then(|r| r.as_ref().ok())
    }

    fn cells(&self, system: System) -> [String; 4] {
        let slot = match system {
            System::Raw => &self.raw,
            System::Tonic => &self.tonic,
            System::Rubbo => &self.rubbo,
        };
        match slot {
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

/// Renders the table, then the goals from the issue (reported, not asserted).
pub(crate) fn render(rows: &[Row], config: &Config, loadavg: &str) -> String {
    let systems = &config.systems;
    let mut out = String::new();
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
    let errors: Vec<String> = rows
        .iter()
        .flat_map(|row| {
            [
                (System::Raw, &row.raw),
                (System::Tonic, &row.tonic),
                (System::Rubbo, &row.rubbo),
            ]
            .into_iter()
            .filter_map(move |(s, r)| match r {
                Some(Err(e)) => Some(format!("- {s} {} x{}: {e:#}", size(row.size), row.inflight)),
                _ => None,
            })
        })
        .collect();
    if !errors.is_empty() {
        let _ = writeln!(out, "\nErrors:\n\n{}", errors.join("\n"));
    }
    out
}
