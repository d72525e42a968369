//! The tables: per workload, every pair's medians over rounds, then the ratios of the
//! pairs that differ in one side (servers under the same client, clients against the
//! same server) as the median of per-round ratios with their range, and the issue's
//! goals (reported, not asserted).

use std::fmt::Write;

use crate::child::Sample;
use crate::{Config, Impl, Pair, Workload};

/// Every round of every pair on one workload.
pub(crate) struct Cell {
    workload: Workload,
    rounds: Vec<(Pair, Vec<Option<Sample>>)>,
    errors: Vec<String>,
}

impl Cell {
    pub(crate) fn new(workload: Workload) -> Self {
        Cell {
            workload,
            rounds: Vec::new(),
            errors: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, pair: Pair, result: anyhow::Result<Sample>) {
        let at = match self.rounds.iter().position(|(p, _)| *p == pair) {
            Some(i) => i,
            None => {
                self.rounds.push((pair, Vec::new()));
                self.rounds.len() - 1
            }
        };
        let slot = &mut self.rounds[at].1;
        match result {
            Ok(s) => slot.push(Some(s)),
            Err(e) => {
                self.errors.push(format!(
                    "- {pair} {} round {}: {e:#}",
                    self.workload.name(),
                    slot.len() + 1
                ));
                slot.push(None);
            }
        }
    }

    fn of(&self, pair: Pair) -> Option<&[Option<Sample>]> {
        self.rounds
            .iter()
            .find(|(p, _)| *p == pair)
            .map(|(_, r)| &r[..])
    }

    fn median(&self, pair: Pair, f: impl Fn(&Sample) -> f64) -> Option<f64> {
        median(self.of(pair)?.iter().flatten().map(f).collect())
    }

    /// Per round, `f(a) / f(b)` (the two ran back to back): median, low, high.
    fn ratios(&self, a: Pair, b: Pair, f: impl Fn(&Sample) -> f64) -> Option<(f64, f64, f64)> {
        let per_round: Vec<f64> = self
            .of(a)?
            .iter()
            .zip(self.of(b)?)
            .filter_map(|(x, y)| Some(f(x.as_ref()?) / f(y.as_ref()?)))
            .filter(|r| r.is_finite())
            .collect();
        let lo = per_round.iter().copied().reduce(f64::min)?;
        let hi = per_round.iter().copied().reduce(f64::max)?;
        Some((median(per_round)?, lo, hi))
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

const MIB: f64 = 1024.0 * 1024.0;

fn rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.2} M", r / 1e6)
    } else {
        format!("{:.1} k", r / 1e3)
    }
}

fn ratio(r: Option<(f64, f64, f64)>) -> String {
    r.map_or_else(
        || "-".into(),
        |(m, lo, hi)| format!("{m:.2}x ({lo:.2}-{hi:.2})"),
    )
}

fn size(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes % (1 << 30) == 0 {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes % (1 << 10) == 0 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

fn describe(workload: Workload, config: &Config) -> String {
    match workload {
        Workload::Chat => format!(
            "**Bidirectional** (`Chat`): {} notes of {} body each way, each echoed",
            config.messages,
            size(config.message_bytes as u64)
        ),
        Workload::Download => format!(
            "**Server stream** (`Download`): {} in messages of {}",
            size(config.bytes),
            size(u64::from(config.chunk))
        ),
    }
}

/// One figure of a sample.
type Metric = fn(&Sample) -> f64;

/// Which side two pairs compare, the other side being the same implementation.
#[derive(Clone, Copy)]
enum Side {
    Server,
    Client,
}

/// `(rubbo pair, tonic pair, side)` for every comparison the configured pairs allow.
fn comparisons(pairs: &[Pair]) -> Vec<(Pair, Pair, Side)> {
    let mut out = Vec::new();
    for &p in pairs {
        if p.server == Impl::Rubbo {
            let b = Pair {
                server: Impl::Tonic,
                ..p
            };
            if pairs.contains(&b) {
                out.push((p, b, Side::Server));
            }
        }
        if p.client == Impl::Rubbo {
            let b = Pair {
                client: Impl::Tonic,
                ..p
            };
            if pairs.contains(&b) {
                out.push((p, b, Side::Client));
            }
        }
    }
    out
}

/// Renders every workload's table, the ratios and the goals.
pub(crate) fn render(cells: &[Cell], config: &Config, load_start: &str, load_end: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nTriple streams over one HTTP/2 connection on 127.0.0.1, each pair `client-server` \
         in two fresh child processes (server runtime {} worker thread(s), client runtime \
         {}); {} round(s), the pairs taking turns{}. Figures are medians over rounds: \
         messages/s and MiB/s as the client received them (start of the call to the last \
         message checked; MiB/s counts note bodies or chunk data), CPU per message of each \
         process over the measured stream (µs), each process's peak RSS (`VmHWM`, MiB) \
         and, in parentheses, its growth over its RSS when it started (server: serving, \
         before any call; client: at process start); the server's RSS at the end of the \
         stream split into anonymous (heap, stacks) and file-backed (code and read-only \
         data of the executable and libraries: `RssAnon` / `RssFile`, MiB). Load average (1, 5, 15 min) at the \
         start: {load_start}; at the end: {load_end}.\n",
        config.server_threads,
        config.client_threads,
        config.rounds,
        if config.smoke { "; SMOKE run" } else { "" },
    );
    let mut goals = String::new();
    for cell in cells {
        let _ = writeln!(
            out,
            "{}.\n\n| pair | msg/s | MiB/s | server CPU/msg | client CPU/msg | server peak RSS | \
             client peak RSS | server RSS at end: anon / file |\n|---|---:|---:|---:|---:|---:|---:|---:|",
            describe(cell.workload, config)
        );
        for &(pair, _) in &cell.rounds {
            let m = |f: &dyn Fn(&Sample) -> f64| cell.median(pair, f);
            let Some(rps) = m(&|s| s.rate()) else {
                let _ = writeln!(out, "| {pair} | error | - | - | - | - | - | - |");
                continue;
            };
            let mib = |f: &dyn Fn(&Sample) -> f64| m(f).unwrap_or(f64::NAN) / MIB;
            let _ = writeln!(
                out,
                "| {pair} | {} | {:.1} | {:.3} | {:.3} | {:.1} (+{:.1}) | {:.1} (+{:.1}) | {:.1} / {:.1} |",
                rate(rps),
                m(&|s| s.mib_per_sec()).unwrap_or(f64::NAN),
                m(&|s| s.server_us()).unwrap_or(f64::NAN),
                m(&|s| s.client_us()).unwrap_or(f64::NAN),
                mib(&|s| s.server_rss.peak as f64),
                mib(&|s| s.server_rss.peak.saturating_sub(s.server_rss.now) as f64),
                mib(&|s| s.client_rss.peak as f64),
                mib(&|s| s.client_rss.peak.saturating_sub(s.client_rss.now) as f64),
                mib(&|s| s.server_rss.anon as f64),
                mib(&|s| s.server_rss.file as f64),
            );
        }
        let comps = comparisons(&config.pairs);
        if !comps.is_empty() {
            let _ = writeln!(
                out,
                "\n| rubbo / tonic | msg/s | CPU/msg (that side) | peak RSS (that side) | RSS growth (that side) |\n|---|---:|---:|---:|---:|"
            );
        }
        for (a, b, side) in comps {
            let (cpu, peak, growth): (Metric, Metric, Metric) = match side {
                Side::Server => (
                    |s| s.server_us(),
                    |s| s.server_rss.peak as f64,
                    |s| s.server_rss.peak.saturating_sub(s.server_rss.now) as f64,
                ),
                Side::Client => (
                    |s| s.client_us(),
                    |s| s.client_rss.peak as f64,
                    |s| s.client_rss.peak.saturating_sub(s.client_rss.now) as f64,
                ),
            };
            let what = match side {
                Side::Server => format!("servers under {}'s client ({a} / {b})", a.client.name()),
                Side::Client => format!("clients against {}'s server ({a} / {b})", a.server.name()),
            };
            let rps = cell.ratios(a, b, |s| s.rate());
            let mem = cell.ratios(a, b, peak);
            let _ = writeln!(
                out,
                "| {what} | {} | {} | {} | {} |",
                ratio(rps),
                ratio(cell.ratios(a, b, cpu)),
                ratio(mem),
                ratio(cell.ratios(a, b, growth)),
            );
            let verdict = |met: bool| if met { "met" } else { "MISSED" };
            if let (Some((r, ..)), Some((m, ..))) = (rps, mem) {
                let _ = writeln!(
                    goals,
                    "- {}, {what}: msg/s {r:.2}x tonic (goal >= 1.2x: {}), peak RSS {m:.2}x \
                     tonic (goal < 1x: {})",
                    cell.workload.name(),
                    verdict(r >= 1.2),
                    verdict(m < 1.0),
                );
            }
        }
        out.push('\n');
    }
    if !goals.is_empty() {
        let _ = writeln!(
            out,
            "Goals of issue #13 (>= 1.2x tonic's messages/s with lower peak memory; \
             reported, not asserted):\n\n{goals}"
        );
    }
    let errors: Vec<&String> = cells.iter().flat_map(|c| &c.errors).collect();
    if !errors.is_empty() {
        let _ = writeln!(out, "Errors:\n");
        for e in errors {
            let _ = writeln!(out, "{e}");
        }
    }
    out
}
