//! A load driver for discovery tests: calls `whoami` of InteropService without pause
//! from a few tasks, and prints one line per window of calls:
//!
//! ```text
//! W <unix ms> ok=<n> fail=<n> <whoami>=<n> ...
//! ```
//!
//! then `TOTAL ok=<n> fail=<n>` when it stops: at `--stop-file` (it exists), SIGTERM,
//! or `--deadline`. A failed call's error is printed as `E <unix ms> <error>`. It
//! prints `READY` after the first successful call.
//!
//! Run with: `interop-load --registry kubernetes://... --set dubbo.consumer.provided-by=greeter`
//!
//! `--config FILE` and `--set KEY=VALUE` configure it as they do `interop-consumer`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use clap::Parser;
use interop::{InteropService, InteropServiceClient};
use rubbo::Rubbo;
use rubbo::config::Config;

/// Calls org.rubbo.interop.InteropService:1.0.0 `whoami` in a loop and counts answers.
#[derive(Debug, Parser)]
struct Args {
    /// The registry (e.g. kubernetes://127.0.0.1:6443?...).
    #[arg(long)]
    registry: Option<String>,
    /// Concurrent callers.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Window length in ms.
    #[arg(long, default_value_t = 100)]
    window: u64,
    /// Call timeout in ms.
    #[arg(long, default_value_t = 3000)]
    timeout: u64,
    /// Bound on the whole run in ms.
    #[arg(long, default_value_t = 600_000)]
    deadline: u64,
    /// Stops once this file exists.
    #[arg(long)]
    stop_file: Option<PathBuf>,
    /// A configuration file (Java's `dubbo.` keys); repeatable.
    #[arg(long = "config", value_name = "FILE")]
    config: Vec<PathBuf>,
    /// A Java property, e.g. `--set dubbo.consumer.provided-by=greeter`; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

/// The counts of the current window: answers by `whoami`, and failures.
#[derive(Debug, Default)]
struct Window {
    ok: BTreeMap<String, u64>,
    fail: u64,
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

fn config(args: &Args) -> Result<Config> {
    let mut loader = Config::loader();
    for f in &args.config {
        loader = loader
            .file(f)
            .with_context(|| format!("--config {}", f.display()))?;
    }
    for s in &args.set {
        loader = loader.set_arg(s)?;
    }
    let mut loader = loader
        .process_env()
        .default_value("dubbo.application.name", "interop-load")
        .default_value("dubbo.consumer.timeout", args.timeout.to_string());
    if let Some(r) = &args.registry {
        loader = loader.code("dubbo.registry.address", r.as_str());
    }
    Ok(loader.load()?)
}

fn flush(window: &std::sync::Mutex<Window>, totals: &mut (u64, u64)) {
    let w = match window.lock() {
        Ok(mut w) => std::mem::take(&mut *w),
        Err(_) => return,
    };
    let ok: u64 = w.ok.values().sum();
    totals.0 += ok;
    totals.1 += w.fail;
    let by: Vec<String> = w.ok.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "W {} ok={ok} fail={} {}",
        now_ms(),
        w.fail,
        by.join(" ")
    );
    let _ = out.flush();
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let config = config(&args)?;
    let rubbo = Rubbo::builder()
        .config(&config)
        .build()
        .context("bad configuration")?;
    let started = Instant::now();
    let deadline = Duration::from_millis(args.deadline);
    let client = Arc::new(InteropServiceClient::new(
        rubbo
            .refer(&InteropServiceClient::SERVICE)
            .await
            .context("refer InteropService")?,
    ));
    // The first answer, bounded by the deadline.
    loop {
        if client.whoami().await.is_ok() {
            break;
        }
        if started.elapsed() > deadline {
            anyhow::bail!("no provider answered within {deadline:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("READY");
    let stop = Arc::new(AtomicBool::new(false));
    let window = Arc::new(std::sync::Mutex::new(Window::default()));
    let mut callers = Vec::new();
    for _ in 0..args.concurrency.max(1) {
        let (client, stop, window) = (client.clone(), stop.clone(), window.clone());
        callers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let r = client.whoami().await;
                let Ok(mut w) = window.lock() else { return };
                match r {
                    Ok(who) => *w.ok.entry(who.unwrap_or_default()).or_insert(0) += 1,
                    Err(e) => {
                        w.fail += 1;
                        println!("E {} {e}", now_ms());
                    }
                }
            }
        }));
    }
    let mut totals = (0u64, 0u64);
    let mut tick = tokio::time::interval(Duration::from_millis(args.window.max(10)));
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = term.recv() => break,
        }
        flush(&window, &mut totals);
        let stop_file = args.stop_file.as_ref().is_some_and(|f| f.exists());
        if stop_file || started.elapsed() > deadline {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for c in callers {
        let _ = c.await;
    }
    flush(&window, &mut totals);
    println!("TOTAL ok={} fail={}", totals.0, totals.1);
    rubbo.shutdown().await;
    Ok(())
}
