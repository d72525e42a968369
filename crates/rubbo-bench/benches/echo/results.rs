//! `RUBBO_BENCH_OUT=DIR`: the run's files for the chart and the record. `echo.jsonl`
//! has one JSON line per cell run (every round, every system and Triple pair, errors
//! included); `echo.md` the tables printed on stdout, under the run's settings and
//! load averages. `cargo run -p bench-chart -- --echo DIR/echo.jsonl DIR/echo.svg`
//! draws the chart.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};

use crate::load::Measured;
use crate::report::System;
use crate::tri_report::Pair;

/// `RUBBO_BENCH_OUT`, a relative path taken from the workspace root (not the crate's
/// directory, where `cargo bench` runs the bench).
pub(crate) fn out_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("RUBBO_BENCH_OUT").filter(|d| !d.is_empty())?;
    let dir = PathBuf::from(dir);
    Some(if dir.is_absolute() {
        dir
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(dir)
    })
}

fn us(d: Option<Duration>) -> Value {
    d.map_or(Value::Null, |d| json!(d.as_secs_f64() * 1e6))
}

fn payload(size: usize) -> String {
    if size >= 1024 && size % 1024 == 0 {
        format!("{} KiB", size / 1024)
    } else {
        format!("{size} B")
    }
}

/// One cell run's line. `split` says whether the server's and the client's CPU were
/// measured apart (then with the processes or threads they cover).
#[allow(clippy::too_many_arguments)]
fn line(
    section: &str,
    system: &str,
    client: &str,
    server: &str,
    size: usize,
    inflight: usize,
    round: usize,
    result: &anyhow::Result<Measured>,
    cpu_of: &str,
    split: Option<(&str, &str)>,
) -> Value {
    let mut v = json!({
        "section": section, "system": system, "client": client, "server": server,
        "payload": payload(size), "size": size, "inflight": inflight, "round": round,
    });
    match result {
        Err(e) => v["error"] = json!(format!("{e:#}")),
        Ok(m) => {
            v["calls"] = json!(m.requests);
            v["calls_per_s"] = json!(m.throughput());
            v["p50_us"] = us(Some(m.p50()));
            v["p99_us"] = us(Some(m.p99()));
            v["cpu_us_per_call"] = us(m.cpu_per_call());
            v["cpu_of"] = json!(cpu_of);
            if let Some((server_of, client_of)) = split {
                v["server_cpu_us_per_call"] = us(m.server_cpu_per_call());
                v["server_cpu_of"] = json!(server_of);
                v["client_cpu_us_per_call"] = us(m.client_cpu_per_call());
                v["client_cpu_of"] = json!(client_of);
            }
        }
    }
    v
}

/// A dubbo-section cell run (the in-process systems and the Java cells).
pub(crate) fn dubbo(
    system: System,
    size: usize,
    inflight: usize,
    round: usize,
    result: &anyhow::Result<Measured>,
) -> Value {
    let (client, server) = match system {
        System::RubboJava => ("rubbo", "java"),
        System::JavaRubbo => ("java", "rubbo"),
        System::JavaJava => ("java", "java"),
        other => (other.name(), other.name()),
    };
    let (cpu_of, split) = if system.is_java() {
        ("server + client", Some(system.cpu_covers()))
    } else {
        ("bench process (client and server)", None)
    };
    line(
        "dubbo",
        system.name(),
        client,
        server,
        size,
        inflight,
        round,
        result,
        cpu_of,
        split,
    )
}

/// A Triple cell run: the client and the server each on their own runtime.
pub(crate) fn triple(
    pair: Pair,
    size: usize,
    inflight: usize,
    round: usize,
    result: &anyhow::Result<Measured>,
) -> Value {
    let name = pair.to_string();
    let (client, server) = name.split_once('-').unwrap_or((&name, &name));
    let cpu_of = if pair.is_java() || pair.is_h2load() {
        "server + client"
    } else {
        "bench process (client and server)"
    };
    let mut v = line(
        "triple",
        &name,
        client,
        server,
        size,
        inflight,
        round,
        result,
        cpu_of,
        Some(pair.cpu_covers()),
    );
    // h2load reports a mean and a max per request, not percentiles.
    match v.as_object_mut() {
        Some(o) if pair.is_h2load() => {
            for (from, to) in [("p50_us", "latency_mean_us"), ("p99_us", "latency_max_us")] {
                if let Some(x) = o.remove(from) {
                    o.insert(to.into(), x);
                }
            }
        }
        _ => {}
    }
    v
}

/// Writes `echo.jsonl` and `echo.md` into `dir`.
pub(crate) fn write(
    dir: &Path,
    records: &[Value],
    tables: &str,
    load_before: &str,
    load_after: &str,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut jsonl = String::new();
    for r in records {
        let _ = writeln!(jsonl, "{r}");
    }
    let jsonl_path = dir.join("echo.jsonl");
    std::fs::write(&jsonl_path, jsonl)
        .with_context(|| format!("cannot write {}", jsonl_path.display()))?;
    let knobs: Vec<String> = std::env::vars()
        .filter(|(k, _)| k.starts_with("RUBBO_BENCH_") && k != "RUBBO_BENCH_OUT")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let md = format!(
        "# Echo bench\n\n\
         `{}cargo bench -p rubbo-bench --bench echo` with `RUBBO_BENCH_OUT` set; {} CPUs; \
         load average (1, 5, 15 min) before: {load_before}; after: {load_after}. Anything \
         well above 0 means other work shared the cores: read every figure as that.\n\n\
         {tables}\n![req/s and CPU per call per cell](echo.svg)\n\n\
         The chart is drawn from `echo.jsonl` (every round of every cell) by \
         `cargo run -p bench-chart -- --echo bench/results/echo.jsonl bench/results/echo.svg`.\n",
        knobs.iter().map(|k| format!("{k} ")).collect::<String>(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    let md_path = dir.join("echo.md");
    std::fs::write(&md_path, md).with_context(|| format!("cannot write {}", md_path.display()))?;
    eprintln!("wrote {} and {}", md_path.display(), jsonl_path.display());
    Ok(())
}
