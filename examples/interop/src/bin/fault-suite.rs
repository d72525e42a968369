//! The fault suite (issue #16): a consumer at a steady load against three providers
//! found through a real ZooKeeper, while one fault happens, with the figures a user
//! relies on: calls made, succeeded, failed, duplicated (executions counted on the
//! providers), and the p99 and maximum latency.
//!
//! ```text
//! fault-suite run --zk-script scripts/zookeeper.sh --work /tmp/faults [--java interop/java/run-java.sh]
//! fault-suite provider --registry zookeeper://127.0.0.1:2181 --port 0 --exec-log FILE [--delay-ms N]
//! ```
//!
//! `run` starts its own ZooKeeper (through `scripts/zookeeper.sh`, so it can stop and
//! restart it) and its providers (this binary's `provider` mode, as processes it can
//! SIGKILL), prints `PASS faults/<scenario>/<check>` or `FAIL ...` lines, one `RESULT`
//! line per scenario (the README's table), and `N passed, N failed` (exit 1 on any
//! failure). Scenarios:
//!
//! - `kill`: a provider is killed with SIGKILL (no unregister): failover loses 0 calls;
//! - `silent`: a provider's network goes silent (a TCP proxy this process owns stops
//!   forwarding without closing): calls in flight to it time out and are retried
//!   elsewhere, no call waits past one timeout plus a normal call, and the consumer's
//!   heartbeat finds the dead connection (it reconnects);
//! - `slow-leastactive`, `slow-shortestresponse`: one provider takes 2 s a call; the load
//!   balancer moves traffic away (under 5% of calls reach it);
//! - `zk-restart`: ZooKeeper is stopped for 10 s and restarted under load: 0 failed
//!   calls, and every provider is registered again afterwards;
//! - `zk-down-start`: a consumer started while ZooKeeper is down serves from the
//!   registry cache file;
//! - `graceful`: a provider is stopped gracefully (SIGTERM: unregister, drain) and
//!   started again under load: 0 failed calls;
//! - `java-kill` (with `--java`): one of the three providers is Java Dubbo 3.3.6 and is
//!   killed with SIGKILL: 0 failed calls (executions are counted on the Rust providers).
//!
//! Every load loop is bounded in time and count; every wait has a bound. Loopback only.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use interop::checks::Report;
use interop::harness::eventually;
use interop::{InteropProvider, InteropService, InteropServiceClient, InteropServiceServer};
use rubbo::{RpcError, Rubbo, Url};
use rubbo_registry::Registry as _;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio::sync::watch;

#[derive(Debug, Parser)]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// Runs the scenarios.
    Run(RunArgs),
    /// A provider of InteropService that logs every `echo` it executes.
    Provider(ProviderArgs),
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// `scripts/zookeeper.sh` (starts and stops the suite's own ZooKeeper).
    #[arg(long)]
    zk_script: PathBuf,
    /// A directory for ZooKeeper's data, the logs and the cache files.
    #[arg(long)]
    work: PathBuf,
    /// `interop/java/run-java.sh`: adds the scenario with a Java provider.
    #[arg(long)]
    java: Option<PathBuf>,
    /// Only these scenarios (comma-separated); default all.
    #[arg(long)]
    only: Option<String>,
    /// Calls in flight.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Load duration of each scenario, in seconds.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
}

#[derive(Debug, clap::Args)]
struct ProviderArgs {
    /// The registry.
    #[arg(long)]
    registry: String,
    /// The port (0: any free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Appends the argument of every `echo` executed, one per line, before answering.
    #[arg(long)]
    exec_log: PathBuf,
    /// Each `echo` takes this long.
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
    /// Do not register (the suite registers a proxy's address instead).
    #[arg(long)]
    no_register: bool,
}

// ---------------------------------------------------------------------------------
// Provider mode.

/// InteropService whose `echo` is logged (the suite's execution count) and may be
/// slow; the other methods are the contract's.
#[derive(Debug, Clone)]
struct Logged {
    inner: InteropProvider,
    // The log is written with one write(2) per call, before the answer leaves, so that
    // a SIGKILL loses no execution. Test driver only: a page-cache write of a few
    // bytes under a lock is what makes the count exact.
    log: Arc<Mutex<File>>,
    delay: Duration,
}

impl InteropService for Logged {
    async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError> {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        if let Some(id) = &s {
            let line = format!("{id}\n");
            let mut f = self
                .log
                .lock()
                .map_err(|_| RpcError::network("exec log lock poisoned"))?;
            f.write_all(line.as_bytes())
                .map_err(|e| RpcError::network(format!("exec log: {e}")))?;
        }
        Ok(s)
    }
    async fn echo_int(&self, v: i32) -> Result<i32, RpcError> {
        self.inner.echo_int(v).await
    }
    async fn echo_long(&self, v: i64) -> Result<i64, RpcError> {
        self.inner.echo_long(v).await
    }
    async fn echo_double(&self, v: f64) -> Result<f64, RpcError> {
        self.inner.echo_double(v).await
    }
    async fn echo_bool(&self, v: bool) -> Result<bool, RpcError> {
        self.inner.echo_bool(v).await
    }
    async fn echo_bytes(&self, b: Option<Vec<u8>>) -> Result<Option<Vec<u8>>, RpcError> {
        self.inner.echo_bytes(b).await
    }
    async fn echo_list(
        &self,
        l: Option<Vec<Option<String>>>,
    ) -> Result<Option<Vec<Option<String>>>, RpcError> {
        self.inner.echo_list(l).await
    }
    async fn echo_map(
        &self,
        m: Option<HashMap<String, Option<i32>>>,
    ) -> Result<Option<HashMap<String, Option<i32>>>, RpcError> {
        self.inner.echo_map(m).await
    }
    async fn echo_user(&self, u: Option<interop::User>) -> Result<Option<interop::User>, RpcError> {
        self.inner.echo_user(u).await
    }
    async fn list_users(&self, n: i32) -> Result<Option<Vec<interop::User>>, RpcError> {
        self.inner.list_users(n).await
    }
    async fn ping(&self) -> Result<(), RpcError> {
        self.inner.ping().await
    }
    async fn fail(&self, message: Option<String>) -> Result<Option<String>, RpcError> {
        self.inner.fail(message).await
    }
    async fn attachment(&self, key: Option<String>) -> Result<Option<String>, RpcError> {
        self.inner.attachment(key).await
    }
    async fn slow(&self, millis: i32) -> Result<Option<String>, RpcError> {
        self.inner.slow(millis).await
    }
    async fn whoami(&self) -> Result<Option<String>, RpcError> {
        self.inner.whoami().await
    }
}

async fn provider(args: ProviderArgs) -> Result<()> {
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.exec_log)
        .with_context(|| format!("open {}", args.exec_log.display()))?;
    let mut builder = Rubbo::builder()
        .application("fault-provider")
        .host("127.0.0.1")
        .port(args.port)
        .registry(args.registry.as_str());
    if args.no_register {
        builder = builder.param("register", "false");
    }
    let rubbo = builder.build()?;
    let inner = InteropProvider::default();
    let service = Logged {
        inner: inner.clone(),
        log: Arc::new(Mutex::new(log)),
        delay: Duration::from_millis(args.delay_ms),
    };
    let url = rubbo
        .export(InteropServiceServer::new(Arc::new(service)))
        .await?;
    inner.set_identity("fault-provider", "127.0.0.1", url.port());
    println!("URL {url}");
    println!("READY dubbo {}", url.port());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    rubbo.shutdown().await;
    Ok(())
}

// ---------------------------------------------------------------------------------
// Run mode: processes.

/// A provider process.
struct Proc {
    child: Child,
    port: u16,
    url: Option<Url>,
    log: Option<PathBuf>,
}

impl Proc {
    fn kill9(&mut self) {
        if let Some(pid) = self.child.id() {
            // SIGKILL: no unregister, no goodbye.
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }

    async fn terminate(&mut self) {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
        if tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
    }
}

/// Starts a process and waits (bounded) for its `READY <proto> <port>` line.
async fn spawn_ready(mut cmd: Command, what: &str) -> Result<Proc> {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = cmd.spawn().with_context(|| format!("start {what}"))?;
    let stdout = child.stdout.take().context("stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let mut url = None;
    let port = tokio::time::timeout(Duration::from_secs(90), async {
        while let Some(line) = lines.next_line().await? {
            if let Some(u) = line.strip_prefix("URL ") {
                url = Url::parse(u).ok();
            }
            if let Some(rest) = line.strip_prefix("READY ") {
                let port = rest.rsplit(' ').next().unwrap_or("").parse::<u16>()?;
                return Ok::<u16, anyhow::Error>(port);
            }
        }
        bail!("{what} exited before READY")
    })
    .await
    .with_context(|| format!("{what} not ready within 90 s"))??;
    // Keep draining stdout so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(Proc {
        child,
        port,
        url,
        log: None,
    })
}

async fn start_provider(
    suite: &Suite,
    name: &str,
    port: u16,
    delay_ms: u64,
    no_register: bool,
) -> Result<Proc> {
    let log = suite.dir.join(format!("{name}.exec"));
    let mut cmd = Command::new(&suite.me);
    cmd.arg("provider")
        .arg("--registry")
        .arg(&suite.zk)
        .arg("--port")
        .arg(port.to_string())
        .arg("--exec-log")
        .arg(&log)
        .arg("--delay-ms")
        .arg(delay_ms.to_string());
    if no_register {
        cmd.arg("--no-register");
    }
    let mut p = spawn_ready(cmd, name).await?;
    p.log = Some(log);
    Ok(p)
}

fn zk_script(suite: &Suite, args: &[&str]) -> Result<()> {
    let out = std::process::Command::new(&suite.zk_script)
        .args(args)
        .output()
        .context("run zookeeper.sh")?;
    if !out.status.success() {
        bail!(
            "zookeeper.sh {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// Run mode: the load.

/// What one load run saw.
#[derive(Debug, Default)]
struct Load {
    made: u64,
    ok: u64,
    failed: u64,
    wrong: u64,
    /// Latencies in µs of every call (bounded by the call count bound).
    latencies: Vec<u64>,
    /// The ids of the calls that succeeded.
    ids: Vec<String>,
    errors: HashMap<String, u64>,
}

impl Load {
    fn quantile(&self, q: f64) -> Duration {
        let mut v = self.latencies.clone();
        v.sort_unstable();
        let i = ((v.len() as f64 * q).ceil() as usize).saturating_sub(1);
        Duration::from_micros(v.get(i).copied().unwrap_or(0))
    }
    fn max(&self) -> Duration {
        Duration::from_micros(self.latencies.iter().copied().max().unwrap_or(0))
    }
}

/// How often a condition is polled.
const POLL: Duration = Duration::from_millis(50);

/// The most calls one scenario makes (a bound beside the time bound).
const MAX_CALLS: u64 = 2_000_000;

/// Runs `concurrency` callers for `duration` (and at most [`MAX_CALLS`] calls), each
/// call an `echo` of a unique id that the providers log.
async fn load(
    client: &InteropServiceClient,
    prefix: &str,
    concurrency: usize,
    duration: Duration,
) -> Load {
    let stop = Instant::now() + duration;
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let client = client.clone();
        let next = next.clone();
        let prefix = prefix.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut l = Load::default();
            while Instant::now() < stop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= MAX_CALLS {
                    break;
                }
                let id = format!("{prefix}-{n}");
                let t = Instant::now();
                let r = client.echo(Some(id.clone())).await;
                l.latencies.push(t.elapsed().as_micros() as u64);
                l.made += 1;
                match r {
                    Ok(Some(back)) if back == id => {
                        l.ok += 1;
                        l.ids.push(id);
                    }
                    Ok(_) => l.wrong += 1,
                    Err(e) => {
                        l.failed += 1;
                        *l.errors.entry(format!("{:?}", e.kind())).or_default() += 1;
                        if l.failed <= 3 {
                            eprintln!("fault-suite: call {id} failed: {e}");
                        }
                    }
                }
            }
            l
        }));
    }
    let mut all = Load::default();
    for t in tasks {
        if let Ok(l) = t.await {
            all.made += l.made;
            all.ok += l.ok;
            all.failed += l.failed;
            all.wrong += l.wrong;
            all.latencies.extend(l.latencies);
            all.ids.extend(l.ids);
            for (k, v) in l.errors {
                *all.errors.entry(k).or_default() += v;
            }
        }
    }
    all
}

/// Executions per id over the providers' logs: (ids executed more than once, the
/// executions on each log).
fn executions(logs: &[PathBuf], prefix: &str) -> (u64, Vec<u64>) {
    let mut count: HashMap<String, u32> = HashMap::new();
    let mut per = Vec::new();
    for l in logs {
        let text = std::fs::read_to_string(l).unwrap_or_default();
        let mut n = 0;
        for id in text.lines().filter(|i| i.starts_with(prefix)) {
            *count.entry(id.to_owned()).or_default() += 1;
            n += 1;
        }
        per.push(n);
    }
    let dup = count.values().filter(|&&c| c > 1).count() as u64;
    (dup, per)
}

struct Suite {
    me: PathBuf,
    zk_script: PathBuf,
    dir: PathBuf,
    zk_dir: PathBuf,
    zk_port: u16,
    zk: String,
    concurrency: usize,
    duration: Duration,
    report: Report,
    table: Vec<String>,
}

impl Suite {
    fn consumer(&self, params: &[(&str, &str)], registry: &str) -> Result<Rubbo> {
        // Interface-level discovery: the suite registers the proxied provider's
        // address itself (at interface level), and the faults are those of the
        // connections and the registry, not of the discovery level (cell 10 covers
        // application level and the migration between the two).
        let mut b = Rubbo::builder()
            .application("fault-consumer")
            .registry(registry)
            .param("timeout", "1000")
            .param("retries", "2")
            .param("check", "false")
            .param("migration.step", "FORCE_INTERFACE");
        for (k, v) in params {
            b = b.param(*k, *v);
        }
        Ok(b.build()?)
    }

    fn check(&mut self, scenario: &str, name: &str, ok: bool, detail: String) {
        self.report.record(
            &format!("faults/{scenario}/{name}"),
            if ok { Ok(()) } else { Err(detail) },
        );
    }

    /// Records the load's figures: the RESULT line and the checks every scenario has.
    fn figures(&mut self, scenario: &str, l: &Load, logs: &[PathBuf], expect_zero_failed: bool) {
        let (dup, per) = executions(logs, scenario);
        let line = format!(
            "RESULT {scenario} calls={} ok={} failed={} duplicated={dup} p99_ms={:.1} max_ms={:.1} executions={per:?} errors={:?}",
            l.made,
            l.ok,
            l.failed,
            l.quantile(0.99).as_secs_f64() * 1000.0,
            l.max().as_secs_f64() * 1000.0,
            l.errors
        );
        println!("{line}");
        self.table.push(line);
        self.check(
            scenario,
            "calls-made",
            l.made > 0,
            "no call was made".into(),
        );
        if expect_zero_failed {
            self.check(
                scenario,
                "failed=0",
                l.failed == 0 && l.wrong == 0,
                format!("{} failed, {} wrong answers", l.failed, l.wrong),
            );
        }
        // Every success was executed somewhere (the logs are complete) — only where
        // every provider is a logging Rust one.
        let executed: u64 = per.iter().sum();
        if logs.len() == 3 {
            self.check(
                scenario,
                "every-success-executed",
                executed >= l.ok,
                format!("{} successes but {executed} executions logged", l.ok),
            );
        }
    }
}

async fn three(suite: &Suite, scenario: &str) -> Result<Vec<Proc>> {
    let mut v = Vec::new();
    for i in 0..3 {
        v.push(start_provider(suite, &format!("{scenario}-p{i}"), 0, 0, false).await?);
    }
    Ok(v)
}

async fn stop_all(ps: &mut [Proc]) {
    for p in ps {
        p.terminate().await;
    }
}

fn logs(ps: &[Proc]) -> Vec<PathBuf> {
    ps.iter().filter_map(|p| p.log.clone()).collect()
}

async fn client_of(rubbo: &Rubbo) -> Result<InteropServiceClient> {
    Ok(InteropServiceClient::new(
        rubbo.refer(&InteropServiceClient::SERVICE).await?,
    ))
}

/// Waits (bounded) until `n` distinct providers answer `whoami`.
async fn see_providers(client: &InteropServiceClient, n: usize) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = std::collections::HashSet::new();
    while Instant::now() < deadline {
        if let Ok(Some(w)) = client.whoami().await {
            seen.insert(w);
        }
        if seen.len() >= n {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bail!("only {} of {n} providers answered within 30 s", seen.len())
}

/// Runs the load with `fault` started `at` after the load began.
async fn under_load<F>(
    suite: &Suite,
    client: &InteropServiceClient,
    scenario: &str,
    at: Duration,
    fault: F,
) -> Load
where
    F: std::future::Future<Output = ()>,
{
    let run = load(client, scenario, suite.concurrency, suite.duration);
    let inject = async {
        tokio::time::sleep(at).await;
        fault.await;
    };
    let (l, ()) = tokio::join!(run, inject);
    l
}

async fn kill(suite: &mut Suite) -> Result<()> {
    let mut ps = three(suite, "kill").await?;
    let rubbo = suite.consumer(&[], &suite.zk.clone())?;
    let client = client_of(&rubbo).await?;
    see_providers(&client, 3).await?;
    let victim = &mut ps[0];
    let l = under_load(suite, &client, "kill", Duration::from_secs(3), async {
        victim.kill9();
    })
    .await;
    suite.figures("kill", &l, &logs(&ps), true);
    rubbo.shutdown().await;
    stop_all(&mut ps).await;
    Ok(())
}

async fn graceful(suite: &mut Suite) -> Result<()> {
    let mut ps = three(suite, "graceful").await?;
    let rubbo = suite.consumer(&[], &suite.zk.clone())?;
    let client = client_of(&rubbo).await?;
    see_providers(&client, 3).await?;
    let port = ps[1].port;
    let restarted: Arc<Mutex<Option<Proc>>> = Arc::default();
    let slot = restarted.clone();
    let s: &Suite = suite;
    let victim = &mut ps[1];
    let l = under_load(s, &client, "graceful", Duration::from_secs(3), async {
        victim.terminate().await;
        // Back on the same port, as a deploy does.
        match start_provider(s, "graceful-p1-again", port, 0, false).await {
            Ok(p) => *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(p),
            Err(e) => eprintln!("fault-suite: restart failed: {e:#}"),
        }
    })
    .await;
    let again = restarted.lock().unwrap_or_else(|e| e.into_inner()).take();
    let mut all_logs = logs(&ps);
    suite.check(
        "graceful",
        "restarted",
        again.is_some(),
        "the provider did not start again".into(),
    );
    if let Some(p) = &again {
        all_logs.extend(p.log.clone());
        // The restarted provider receives calls again.
        let ok = eventually(Duration::from_secs(30), POLL, || async {
            client
                .whoami()
                .await
                .ok()
                .flatten()
                .is_some_and(|w| w.ends_with(&format!(":{port}")))
        })
        .await;
        suite.check(
            "graceful",
            "restarted-provider-serves",
            ok,
            format!("no call reached 127.0.0.1:{port} within 30 s"),
        );
    }
    // Four logs (three plus the restart): the every-success check is for three.
    suite.figures("graceful", &l, &all_logs, true);
    rubbo.shutdown().await;
    stop_all(&mut ps).await;
    if let Some(mut p) = again {
        p.terminate().await;
    }
    Ok(())
}

async fn slow(suite: &mut Suite, lb: &str) -> Result<()> {
    let scenario = format!("slow-{lb}");
    let mut ps = Vec::new();
    for i in 0..3 {
        let delay = if i == 2 { 2000 } else { 0 };
        ps.push(start_provider(suite, &format!("{scenario}-p{i}"), 0, delay, false).await?);
    }
    let rubbo = suite.consumer(
        &[("loadbalance", lb), ("timeout", "5000")],
        &suite.zk.clone(),
    )?;
    let client = client_of(&rubbo).await?;
    // whoami is not slow: all three are found.
    see_providers(&client, 3).await?;
    let l = load(&client, &scenario, suite.concurrency, suite.duration).await;
    suite.figures(&scenario, &l, &logs(&ps), true);
    let (_, per) = executions(&logs(&ps), &scenario);
    let total: u64 = per.iter().sum();
    let to_slow = per.get(2).copied().unwrap_or(0);
    suite.check(
        &scenario,
        "traffic-moved-away-from-slow-provider",
        total > 0 && (to_slow as f64) < 0.05 * total as f64,
        format!("{to_slow} of {total} executions on the slow provider"),
    );
    println!("INFO {scenario}: {to_slow} of {total} executions on the 2 s provider");
    rubbo.shutdown().await;
    stop_all(&mut ps).await;
    Ok(())
}

async fn zk_restart(suite: &mut Suite) -> Result<()> {
    let mut ps = three(suite, "zk-restart").await?;
    let rubbo = suite.consumer(&[], &suite.zk.clone())?;
    let client = client_of(&rubbo).await?;
    see_providers(&client, 3).await?;
    let s: &Suite = suite;
    let restart_err: Arc<Mutex<Option<String>>> = Arc::default();
    let e2 = restart_err.clone();
    let l = under_load(
        s,
        &client,
        "zk-restart",
        Duration::from_millis(2000),
        async {
            if let Err(e) = zk_script(s, &["stop", &s.zk_dir.to_string_lossy()]) {
                *e2.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("{e:#}"));
                return;
            }
            // The fault itself: ZooKeeper is away for 10 s.
            tokio::time::sleep(Duration::from_secs(10)).await;
            if let Err(e) = zk_script(
                s,
                &["start", &s.zk_port.to_string(), &s.zk_dir.to_string_lossy()],
            ) {
                *e2.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("{e:#}"));
            }
        },
    )
    .await;
    let err = restart_err.lock().unwrap_or_else(|p| p.into_inner()).take();
    suite.check(
        "zk-restart",
        "zookeeper-stopped-and-started",
        err.is_none(),
        err.unwrap_or_default(),
    );
    suite.figures("zk-restart", &l, &logs(&ps), true);
    // Registrations restored: a fresh session sees all three.
    let ports: Vec<u16> = ps.iter().map(|p| p.port).collect();
    let ok = registered(&suite.zk, &ports, Duration::from_secs(60)).await;
    suite.check(
        "zk-restart",
        "registrations-restored",
        ok,
        format!("not all of {ports:?} registered again within 60 s"),
    );
    rubbo.shutdown().await;
    stop_all(&mut ps).await;
    Ok(())
}

/// Whether every port in `ports` is registered, seen through a fresh session, within
/// `bound`.
async fn registered(zk: &str, ports: &[u16], bound: Duration) -> bool {
    let Ok(url) = Url::parse(zk) else {
        return false;
    };
    let Ok(Ok(reg)) = tokio::time::timeout(
        Duration::from_secs(20),
        rubbo_registry_zookeeper::ZookeeperRegistry::connect(url),
    )
    .await
    else {
        return false;
    };
    let Ok(consumer) = Url::parse(
        "consumer://127.0.0.1/org.rubbo.interop.InteropService?interface=org.rubbo.interop.InteropService&version=1.0.0&side=consumer",
    ) else {
        return false;
    };
    let ok = eventually(bound, POLL, || async {
        let urls = reg
            .lookup(rubbo_registry::subscribe_url(&consumer))
            .await
            .unwrap_or_default();
        ports.iter().all(|p| {
            urls.iter()
                .any(|u| u.protocol() == Some("dubbo") && u.port() == *p)
        })
    })
    .await;
    reg.destroy().await;
    ok
}

async fn zk_down_start(suite: &mut Suite) -> Result<()> {
    let mut ps = three(suite, "zk-down-start").await?;
    let cache = suite.dir.join("consumer-registry.cache");
    let _ = std::fs::remove_file(&cache);
    // `check=false` on the registry: start without it (Java's key), from the cache.
    let registry = format!("{}?check=false&file={}", suite.zk, cache.display());
    // A first consumer learns the providers and writes the cache file.
    {
        let rubbo = suite.consumer(&[], &registry)?;
        let client = client_of(&rubbo).await?;
        see_providers(&client, 3).await?;
        let written = eventually(Duration::from_secs(30), POLL, || async {
            std::fs::read_to_string(&cache).is_ok_and(|t| {
                // Java's properties format escapes ':'.
                ps.iter()
                    .all(|p| t.contains(&format!("127.0.0.1\\:{}", p.port)))
            })
        })
        .await;
        suite.check(
            "zk-down-start",
            "cache-file-written",
            written,
            format!("{} does not list the three providers", cache.display()),
        );
        rubbo.shutdown().await;
    }
    zk_script(suite, &["stop", &suite.zk_dir.to_string_lossy()])?;
    let result = async {
        let rubbo = suite.consumer(&[], &registry)?;
        let client = client_of(&rubbo).await?;
        let l = load(
            &client,
            "zk-down-start",
            suite.concurrency,
            suite.duration / 2,
        )
        .await;
        rubbo.shutdown().await;
        Ok::<Load, anyhow::Error>(l)
    }
    .await;
    zk_script(
        suite,
        &[
            "start",
            &suite.zk_port.to_string(),
            &suite.zk_dir.to_string_lossy(),
        ],
    )?;
    let l = result?;
    suite.figures("zk-down-start", &l, &logs(&ps), true);
    stop_all(&mut ps).await;
    Ok(())
}

/// A TCP proxy that can go silent: it stops forwarding in both directions but keeps
/// every connection open, and keeps accepting new ones that it never forwards.
struct Proxy {
    port: u16,
    silent: watch::Sender<bool>,
    accepted_while_silent: Arc<AtomicUsize>,
    /// Bytes forwarded (both ways) so far.
    forwarded: Arc<AtomicU64>,
}

async fn proxy(upstream: u16) -> Result<Proxy> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let (silent, rx) = watch::channel(false);
    let accepted_while_silent = Arc::new(AtomicUsize::new(0));
    let counter = accepted_while_silent.clone();
    let forwarded = Arc::new(AtomicU64::new(0));
    let bytes = forwarded.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((down, _)) = listener.accept().await {
            if *rx.borrow() {
                counter.fetch_add(1, Ordering::SeqCst);
                held.push(down);
                continue;
            }
            let Ok(up) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                continue;
            };
            let (dr, dw) = down.into_split();
            let (ur, uw) = up.into_split();
            tokio::spawn(pipe(dr, uw, rx.clone(), bytes.clone()));
            tokio::spawn(pipe(ur, dw, rx.clone(), bytes.clone()));
        }
    });
    Ok(Proxy {
        port,
        silent,
        accepted_while_silent,
        forwarded,
    })
}

/// Copies `r` to `w` until told to go silent; then holds both ends open, forwarding
/// nothing, until the proxy is dropped.
async fn pipe(
    mut r: tokio::net::tcp::OwnedReadHalf,
    mut w: tokio::net::tcp::OwnedWriteHalf,
    mut silent: watch::Receiver<bool>,
    forwarded: Arc<AtomicU64>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if *silent.borrow() {
            // Hold the sockets until the proxy goes away.
            let _ = silent.wait_for(|s| !*s).await;
            return;
        }
        tokio::select! {
            n = r.read(&mut buf) => match n {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if *silent.borrow() {
                        continue;
                    }
                    if w.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                    forwarded.fetch_add(n as u64, Ordering::Relaxed);
                }
            },
            _ = silent.changed() => {}
        }
    }
}

async fn silent(suite: &mut Suite) -> Result<()> {
    let mut ps = Vec::new();
    for i in 0..3 {
        ps.push(start_provider(suite, &format!("silent-p{i}"), 0, 0, i == 2).await?);
    }
    let px = proxy(ps[2].port).await?;
    // The third provider is reachable only through the proxy: register its URL with
    // the proxy's port (from a session of this process).
    let reg = rubbo_registry_zookeeper::ZookeeperRegistry::connect(Url::parse(&suite.zk)?)
        .await
        .context("connect to ZooKeeper")?;
    let url = ps[2].url.clone().context("the provider printed no URL")?;
    reg.register(url.with_port(px.port))
        .await
        .context("register the proxied provider")?;
    let rubbo = suite.consumer(&[("heartbeat", "1000")], &suite.zk.clone())?;
    let client = client_of(&rubbo).await?;
    see_providers(&client, 3).await?;
    let flag = px.silent.clone();
    let before = Arc::new(AtomicU64::new(0));
    let seen = before.clone();
    let forwarded = px.forwarded.clone();
    let l = under_load(suite, &client, "silent", Duration::from_secs(3), async {
        seen.store(forwarded.load(Ordering::SeqCst), Ordering::SeqCst);
        let _ = flag.send(true);
    })
    .await;
    // The proxied provider was in use before the silence (the path under test).
    let before = before.load(Ordering::SeqCst);
    suite.check(
        "silent",
        "calls-went-through-the-proxy-before-the-silence",
        before > 0,
        "the proxy forwarded nothing: the consumer did not use the proxied address".into(),
    );
    suite.figures("silent", &l, &logs(&ps), true);
    // No call waited past one timeout (1 s, the silent attempt) plus a normal call.
    let max = l.max();
    suite.check(
        "silent",
        "no-call-waits-past-its-timeout",
        max < Duration::from_millis(1900),
        format!("the slowest call took {max:?}"),
    );
    // The heartbeat (1 s, timeout 3 s) found the dead connection: the consumer
    // connected again (to a proxy that still accepts, and still forwards nothing).
    let reconnected = eventually(Duration::from_secs(15), POLL, || async {
        px.accepted_while_silent.load(Ordering::SeqCst) > 0
    })
    .await;
    suite.check(
        "silent",
        "heartbeat-detects-dead-connection",
        reconnected,
        "no reconnection within 15 s of the silence".into(),
    );
    reg.destroy().await;
    rubbo.shutdown().await;
    stop_all(&mut ps).await;
    Ok(())
}

async fn java_kill(suite: &mut Suite, java: &Path) -> Result<()> {
    let mut ps = Vec::new();
    for i in 0..2 {
        ps.push(start_provider(suite, &format!("java-kill-p{i}"), 0, 0, false).await?);
    }
    let jport = free_port()?;
    let mut cmd = Command::new(java);
    cmd.arg("InteropProvider")
        .arg("--port")
        .arg(jport.to_string())
        .arg("--host")
        .arg("127.0.0.1")
        .arg("--registry")
        .arg(&suite.zk)
        .arg("--register-mode")
        .arg("interface");
    let mut j = spawn_ready(cmd, "java provider").await?;
    let rubbo = suite.consumer(&[], &suite.zk.clone())?;
    let client = client_of(&rubbo).await?;
    see_providers(&client, 3).await?;
    let l = under_load(suite, &client, "java-kill", Duration::from_secs(3), async {
        j.kill9();
    })
    .await;
    // Executions are counted on the two Rust providers only.
    suite.figures("java-kill", &l, &logs(&ps), true);
    rubbo.shutdown().await;
    stop_all(&mut ps).await;
    let _ = j.child.wait().await;
    Ok(())
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

async fn run(args: RunArgs) -> Result<ExitCode> {
    std::fs::create_dir_all(&args.work)?;
    let zk_port = free_port()?;
    let zk_dir = args.work.join("zk");
    let mut suite = Suite {
        me: std::env::current_exe()?,
        zk_script: args.zk_script.clone(),
        dir: args.work.clone(),
        zk_dir: zk_dir.clone(),
        zk_port,
        zk: format!("zookeeper://127.0.0.1:{zk_port}"),
        concurrency: args.concurrency,
        duration: Duration::from_secs(args.seconds),
        report: Report {
            passed: 0,
            failed: 0,
        },
        table: Vec::new(),
    };
    zk_script(
        &suite,
        &["start", &zk_port.to_string(), &zk_dir.to_string_lossy()],
    )?;
    let only: Option<Vec<String>> = args
        .only
        .as_ref()
        .map(|o| o.split(',').map(str::to_owned).collect());
    let wants = |s: &str| only.as_ref().is_none_or(|o| o.iter().any(|x| x == s));
    let mut names = vec![
        "kill",
        "silent",
        "slow-leastactive",
        "slow-shortestresponse",
        "zk-restart",
        "zk-down-start",
        "graceful",
    ];
    if args.java.is_some() {
        names.push("java-kill");
    }
    for name in names {
        if !wants(name) {
            continue;
        }
        let bound = Duration::from_secs(args.seconds * 3 + 120);
        let r = tokio::time::timeout(bound, async {
            match name {
                "kill" => kill(&mut suite).await,
                "silent" => silent(&mut suite).await,
                "slow-leastactive" => slow(&mut suite, "leastactive").await,
                "slow-shortestresponse" => slow(&mut suite, "shortestresponse").await,
                "zk-restart" => zk_restart(&mut suite).await,
                "zk-down-start" => zk_down_start(&mut suite).await,
                "graceful" => graceful(&mut suite).await,
                "java-kill" => match &args.java {
                    Some(j) => java_kill(&mut suite, j).await,
                    None => Ok(()),
                },
                _ => Ok(()),
            }
        })
        .await;
        let outcome = match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("{e:#}")),
            Err(_) => Err(format!("did not finish within {bound:?}")),
        };
        if let Err(e) = outcome {
            suite.report.record(&format!("faults/{name}/setup"), Err(e));
        }
    }
    println!("INFO the fault suite's figures:");
    for line in &suite.table {
        println!("INFO   {line}");
    }
    let _ = zk_script(&suite, &["stop", &zk_dir.to_string_lossy()]);
    println!(
        "{} passed, {} failed",
        suite.report.passed, suite.report.failed
    );
    Ok(if suite.report.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[tokio::main]
async fn main() -> Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().mode {
        Mode::Run(a) => run(a).await,
        Mode::Provider(a) => provider(a).await.map(|()| ExitCode::SUCCESS),
    }
}
