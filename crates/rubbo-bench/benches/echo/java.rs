//! The Java cells: Rubbo beside Java Dubbo 3.3.6, with `bench/java`'s provider
//! (`BenchProvider`) and async client (`BenchClient`), the programs `bench/java/run`
//! uses (built by the same Maven project, not copied). For each protocol:
//!
//! - `rubbo-java`: Rubbo's client calling a Java provider JVM (dubbo: this bench's
//!   client and load loop, [`crate::dubbo::Client`]; Triple: the wrapper-mode client).
//! - `java-rubbo`: the Java client JVM calling a Rubbo provider in this process (dubbo:
//!   the `rubbo` cell's server, [`crate::dubbo::serve`]; Triple: the wrapper-mode
//!   server on the Triple cells' server runtime) on 127.0.0.1.
//! - `java-java`: the Java client JVM calling the Java provider JVM.
//!
//! A protocol's JVMs start once, before its cells, loopback-pinned (`LoopbackBind`, as
//! `bench/java/run`), each client JVM connected to its server, and are put under load
//! before the first cell (`RUBBO_BENCH_JAVA_PREWARM_SECS`) so that their JITs have
//! compiled the call paths. Each is killed after the protocol's cells (and on drop).
//! The Java client runs a cell on command (one stdin line) and answers one JSON line;
//! it measures its own calls/s, p50/p99 and process CPU time over its measured window.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::load::{Limits, Measured};

/// How long a JVM may take to print `READY` (a loaded machine starts a JVM slowly).
const READY_WITHIN: Duration = Duration::from_secs(120);
/// How much of a JVM's stderr is kept, for the error when it fails.
const STDERR_TAIL: usize = 4000;

/// `bench/java`, the Maven project of the Java programs.
fn bench_java_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/java");
    dir.canonicalize().unwrap_or(dir)
}

/// Whether the Java cells run, from `RUBBO_BENCH_JAVA`: `1` builds `bench/java` with
/// Maven (offline first, as `bench/java/run`) and runs them; `0` skips them; unset runs
/// them when `bench/java` is already built. `Ok(Err(reason))` is a skip.
pub(crate) async fn locate() -> anyhow::Result<Result<JavaCommand, String>> {
    let wanted = std::env::var("RUBBO_BENCH_JAVA").ok();
    let dir = bench_java_dir();
    let classpath = dir.join("target/classpath.txt");
    match wanted.as_deref().map(str::trim) {
        Some("0") | Some("") => return Ok(Err("RUBBO_BENCH_JAVA=0".into())),
        Some("1") => maven_package(&dir).await?,
        Some(other) => bail!("RUBBO_BENCH_JAVA={other}: expected 1 or 0"),
        None if !classpath.exists() => {
            return Ok(Err(format!(
                "{} is not built; RUBBO_BENCH_JAVA=1 builds it (Java 17 and Maven) and runs them",
                dir.display()
            )));
        }
        None => {}
    }
    let cp = std::fs::read_to_string(&classpath)
        .with_context(|| format!("cannot read {}", classpath.display()))?;
    let classes = dir.join("target/classes");
    Ok(Ok(JavaCommand {
        ticks_per_s: clock_ticks().await,
        args: vec![
            "-Xmx512m".into(),
            "-Djava.net.preferIPv4Stack=true".into(),
            "-cp".into(),
            format!("{}:{}", classes.display(), cp.trim()),
        ],
    }))
}

/// `mvn -B -q -o package` in `dir`, then online if offline fails (the first time),
/// each bounded.
async fn maven_package(dir: &Path) -> anyhow::Result<()> {
    eprintln!("java: mvn package in {}", dir.display());
    for (args, within) in [
        (&["-B", "-q", "-o", "package"][..], 600),
        (&["-B", "-q", "package"][..], 1200),
    ] {
        let mut mvn = Command::new("mvn");
        mvn.args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let status = tokio::time::timeout(Duration::from_secs(within), mvn.status())
            .await
            .context("mvn package timed out")?
            .context("cannot run mvn (is Maven installed?)")?;
        if status.success() {
            return Ok(());
        }
    }
    bail!(
        "mvn package failed in {}: run it there to see why",
        dir.display()
    )
}

/// The `java` command line up to the main class.
#[derive(Clone, Debug)]
pub(crate) struct JavaCommand {
    args: Vec<String>,
    /// The unit of `/proc/PID/stat`'s CPU times.
    ticks_per_s: f64,
}

/// User + system CPU time of a live process, from `/proc/PID/stat` (in clock ticks of
/// `ticks_per_s`).
pub(crate) fn process_cpu(pid: u32, ticks_per_s: f64) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields count from the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_secs_f64(
        (utime + stime) as f64 / ticks_per_s,
    ))
}

/// `sysconf(_SC_CLK_TCK)`, the unit of `/proc/PID/stat`'s times, from `getconf CLK_TCK`
/// (this crate forbids `unsafe`); Linux's 100 when that fails.
pub(crate) async fn clock_ticks() -> f64 {
    let out = Command::new("getconf")
        .arg("CLK_TCK")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(Duration::from_secs(10), out).await {
        Ok(Ok(o)) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse()
            .ok()
            .filter(|t: &f64| *t > 0.0)
            .unwrap_or(100.0),
        _ => 100.0,
    }
}

/// A running JVM: its stdin, its stdout's lines, the tail of its stderr.
struct Jvm {
    what: &'static str,
    child: Child,
    pid: u32,
    ticks_per_s: f64,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Jvm {
    /// Starts `main` with `args` and waits (bounded) for its `READY` line.
    async fn start(
        java: &JavaCommand,
        what: &'static str,
        main: &str,
        args: &[String],
    ) -> anyhow::Result<Self> {
        let mut child = Command::new("java")
            .args(&java.args)
            .arg(main)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("cannot start java (is Java 17 installed?)")?;
        let pid = child.id().context("the JVM exited at once")?;
        let stdin = child.stdin.take().context("no stdin")?;
        let lines = BufReader::new(child.stdout.take().context("no stdout")?).lines();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        // Drains stderr (a full pipe would stall the JVM), keeping its tail.
        let mut pipe = child.stderr.take().context("no stderr")?;
        let tail = Arc::clone(&stderr);
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf).await {
                let mut t = tail.lock();
                t.extend_from_slice(&buf[..n]);
                let excess = t.len().saturating_sub(STDERR_TAIL);
                t.drain(..excess);
            }
        });
        let mut jvm = Jvm {
            what,
            child,
            pid,
            ticks_per_s: java.ticks_per_s,
            stdin,
            lines,
            stderr,
        };
        jvm.line("READY ", Instant::now() + READY_WITHIN)
            .await
            .with_context(|| format!("the {what} did not start"))?;
        Ok(jvm)
    }

    /// The next stdout line starting with `prefix` (others are skipped), by `deadline`.
    async fn line(&mut self, prefix: &str, deadline: Instant) -> anyhow::Result<String> {
        loop {
            let next = tokio::time::timeout_at(deadline.into(), self.lines.next_line()).await;
            match next {
                Ok(Ok(Some(line))) if line.starts_with(prefix) => return Ok(line),
                Ok(Ok(Some(_))) => {}
                Ok(Ok(None)) | Ok(Err(_)) => bail!("{} exited: {}", self.what, self.tail()),
                Err(_) => bail!("{} did not answer in time: {}", self.what, self.tail()),
            }
        }
    }

    fn tail(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock())
            .trim()
            .to_owned()
    }

    fn cpu(&self) -> Option<Duration> {
        process_cpu(self.pid, self.ticks_per_s)
    }

    /// Reads this JVM's CPU time from anywhere (it holds no borrow).
    fn cpu_reader(&self) -> Box<dyn Fn() -> Option<Duration> + Send + Sync> {
        let (pid, ticks) = (self.pid, self.ticks_per_s);
        Box::new(move || process_cpu(pid, ticks))
    }

    /// Kills the JVM (a graceful Dubbo shutdown takes seconds and is not measured).
    async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(15), self.child.wait()).await;
    }
}

/// A free port on 127.0.0.1 for the Java provider (it needs a number up front).
fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// A Java `BenchClient` JVM connected to one server, running cells on command.
struct JavaClient(Jvm);

/// What the Java client reported for one run.
struct ClientReport {
    calls: u64,
    elapsed: Duration,
    cpu: Duration,
    p50: Duration,
    p99: Duration,
}

impl JavaClient {
    async fn start(
        java: &JavaCommand,
        what: &'static str,
        protocol: &str,
        port: u16,
    ) -> anyhow::Result<Self> {
        let url = format!("{protocol}://127.0.0.1:{port}");
        Ok(JavaClient(
            Jvm::start(
                java,
                what,
                "org.rubbo.bench.BenchClient",
                &["--url".into(), url],
            )
            .await?,
        ))
    }

    /// Sends one cell's command; [`JavaClient::report`] reads its answer.
    async fn send(
        &mut self,
        size: usize,
        inflight: usize,
        warmup: Duration,
        measure: Duration,
    ) -> anyhow::Result<()> {
        let command = format!(
            "run {size} {inflight} {} {}\n",
            warmup.as_millis(),
            measure.as_millis().max(1)
        );
        self.0
            .stdin
            .write_all(command.as_bytes())
            .await
            .with_context(|| format!("{} closed its input: {}", self.0.what, self.0.tail()))?;
        Ok(self.0.stdin.flush().await?)
    }

    /// The answer to the last command, by `deadline`; an error if a call failed.
    async fn report(&mut self, deadline: Instant) -> anyhow::Result<ClientReport> {
        let line = self.0.line("{", deadline).await?;
        let v: Value = serde_json::from_str(&line)
            .with_context(|| format!("the Java client answered {line:?}"))?;
        let num = |v: &Value| v.as_f64().with_context(|| format!("no number in {line}"));
        let failed = num(&v["failed"])?;
        ensure!(
            failed == 0.0,
            "{failed} Java client calls failed: {}",
            self.0.tail()
        );
        ensure!(
            v["ended"].as_bool() == Some(true),
            "the Java client's calls did not end"
        );
        let us = |v: &Value| num(v).map(|us| Duration::from_secs_f64(us.max(0.0) / 1e6));
        Ok(ClientReport {
            calls: num(&v["calls"])? as u64,
            elapsed: Duration::from_secs_f64(num(&v["elapsed_s"])?.max(1e-9)),
            cpu: Duration::from_secs_f64(num(&v["cpu_s"])?.max(0.0)),
            p50: us(&v["latency"]["p50_us"])?,
            p99: us(&v["latency"]["p99_us"])?,
        })
    }

    /// Load before the cells, each size at 32 in flight for its share of `total`.
    async fn prewarm(&mut self, sizes: &[usize], total: Duration) -> anyhow::Result<()> {
        let each = total / sizes.len().max(1) as u32;
        for &size in sizes {
            self.send(size, 32, Duration::ZERO, each).await?;
            self.report(Instant::now() + each + Duration::from_secs(60))
                .await
                .with_context(|| format!("prewarm of the {}", self.0.what))?;
        }
        Ok(())
    }

    /// One cell: the Java client's calls/s and latencies, its own CPU time (its
    /// measured window) and the server's over the same window (`server_cpu` read when
    /// the client's warm-up ends and when its answer arrives).
    async fn cell(
        &mut self,
        size: usize,
        inflight: usize,
        limits: Limits,
        server_cpu: impl Fn() -> Option<Duration>,
    ) -> anyhow::Result<Measured> {
        let start = Instant::now();
        self.send(size, inflight, limits.warmup, limits.measure)
            .await?;
        tokio::time::sleep_until((start + limits.warmup).into()).await;
        let server_start = server_cpu();
        let report = self
            .report(start + limits.warmup + limits.measure + Duration::from_secs(60))
            .await?;
        let server = server_cpu()
            .zip(server_start)
            .map(|(end, start)| end.saturating_sub(start));
        ensure!(report.calls > 0, "no Java client call completed");
        Ok(Measured {
            requests: report.calls,
            elapsed: report.elapsed,
            p50: report.p50,
            p99: report.p99,
            cpu: server.map(|s| s + report.cpu),
            server_cpu: server,
            client_cpu: Some(report.cpu),
        })
    }
}

/// Which protocol a [`JavaSide`] speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// `dubbo://` (Hessian 2): the Rubbo side is the `rubbo` cell's server and client.
    Dubbo,
    /// `tri://` in wrapper mode (Java's `EchoService` interface, Hessian 2 inside): the
    /// Rubbo side is `#[rubbo::service]` code through the bootstrap, the server on the
    /// Triple cells' server runtime and the client on their client runtime.
    Triple,
}

impl Protocol {
    fn scheme(self) -> &'static str {
        match self {
            Protocol::Dubbo => "dubbo",
            Protocol::Triple => "tri",
        }
    }
}

/// The Rubbo provider the Java client calls.
enum RubboServer {
    Dubbo(crate::dubbo::Server),
    Triple(wrapper::Server),
}

/// The JVMs and the long-lived Rubbo provider of the Java cells of one protocol.
pub(crate) struct JavaSide {
    protocol: Protocol,
    provider: Jvm,
    provider_port: u16,
    /// The Java client connected to the Java provider.
    to_java: JavaClient,
    /// The Rubbo provider the other Java client calls.
    rubbo: RubboServer,
    /// Where the Rubbo provider runs (its runtime); the Triple client runs on `client`.
    server_rt: tokio::runtime::Handle,
    client_rt: tokio::runtime::Handle,
    /// The Java client connected to `rubbo`.
    to_rubbo: JavaClient,
}

impl JavaSide {
    /// Starts the Java provider, the Rubbo provider (on `server_rt`) and the two Java
    /// clients, then prewarms both clients (and so both servers) for `prewarm` in all.
    /// Triple's Rubbo client runs on `client_rt`; dubbo's on the caller's runtime.
    pub(crate) async fn start(
        java: &JavaCommand,
        protocol: Protocol,
        sizes: &[usize],
        prewarm: Duration,
        server_rt: tokio::runtime::Handle,
        client_rt: tokio::runtime::Handle,
    ) -> anyhow::Result<Self> {
        let scheme = protocol.scheme();
        let port = free_port()?;
        let provider = Jvm::start(
            java,
            "Java provider",
            "org.rubbo.bench.BenchProvider",
            &[
                "--protocol".into(),
                scheme.into(),
                "--port".into(),
                port.to_string(),
            ],
        )
        .await?;
        let (rubbo, rubbo_port) = match protocol {
            Protocol::Dubbo => {
                let s = crate::dubbo::serve().await.context("Rubbo provider")?;
                let port = s.addr.port();
                (RubboServer::Dubbo(s), port)
            }
            Protocol::Triple => {
                let s = server_rt
                    .spawn(wrapper::serve())
                    .await?
                    .context("Rubbo Triple provider")?;
                let port = s.port;
                (RubboServer::Triple(s), port)
            }
        };
        let (to_java, to_rubbo) = tokio::try_join!(
            JavaClient::start(java, "Java client of the Java provider", scheme, port),
            JavaClient::start(
                java,
                "Java client of the Rubbo provider",
                scheme,
                rubbo_port
            ),
        )?;
        let mut side = JavaSide {
            protocol,
            provider,
            provider_port: port,
            to_java,
            rubbo,
            server_rt,
            client_rt,
            to_rubbo,
        };
        eprintln!(
            "java: {scheme} JVMs ready (provider pid {}), prewarming for {prewarm:?}",
            side.provider.pid
        );
        let (a, b) = tokio::join!(
            side.to_java.prewarm(sizes, prewarm),
            side.to_rubbo.prewarm(sizes, prewarm),
        );
        match a.and(b) {
            Ok(()) => Ok(side),
            Err(e) => {
                side.stop().await;
                Err(e)
            }
        }
    }

    /// `rubbo-java`: Rubbo's client against the Java provider: dubbo's is this bench's
    /// (the `rubbo` cell's client and load loop; client CPU: this process), Triple's the
    /// wrapper-mode client on the client runtime (client CPU: its threads). Server CPU
    /// is the provider JVM's.
    pub(crate) async fn rubbo_java(
        &self,
        text: &'static str,
        inflight: usize,
        limits: Limits,
    ) -> anyhow::Result<Measured> {
        let port = self.provider_port;
        let peer = |client| crate::load::PeerCpu {
            server: self.provider.cpu_reader(),
            client,
        };
        match self.protocol {
            Protocol::Dubbo => {
                let addr = ([127, 0, 0, 1], port).into();
                let client = crate::dubbo::Client::connect(addr, text)
                    .await
                    .context("rubbo consumer")?;
                let result = async {
                    crate::warm_check(&client).await?;
                    let peer = peer(crate::cpu::process_cpu as fn() -> _);
                    crate::load::run_with_peer(&client, inflight, limits, Some(peer)).await
                }
                .await;
                client.close().await;
                result
            }
            Protocol::Triple => {
                let peer = peer(|| crate::cpu::named_cpu(crate::cpu::CLIENT_THREADS));
                self.client_rt
                    .spawn(async move {
                        let client = wrapper::Client::connect(port, text.to_owned()).await?;
                        let result = async {
                            crate::warm_check(&client).await?;
                            crate::load::run_with_peer(&client, inflight, limits, Some(peer)).await
                        }
                        .await;
                        client.close().await;
                        result
                    })
                    .await
                    .context("the client task panicked")?
            }
        }
    }

    /// The Rubbo provider's CPU time: this process's for dubbo (nothing else runs in
    /// it meanwhile), the server runtime's threads for Triple.
    fn rubbo_server_cpu(&self) -> fn() -> Option<Duration> {
        match self.protocol {
            Protocol::Dubbo => crate::cpu::process_cpu,
            Protocol::Triple => || crate::cpu::named_cpu(crate::cpu::SERVER_THREADS),
        }
    }

    /// `java-rubbo`: the Java client against the Rubbo provider; client CPU is the
    /// JVM's.
    pub(crate) async fn java_rubbo(
        &mut self,
        size: usize,
        inflight: usize,
        limits: Limits,
    ) -> anyhow::Result<Measured> {
        let server_cpu = self.rubbo_server_cpu();
        self.to_rubbo.cell(size, inflight, limits, server_cpu).await
    }

    /// `java-java`: the Java client against the Java provider; server CPU is the
    /// provider JVM's, client CPU the client JVM's.
    pub(crate) async fn java_java(
        &mut self,
        size: usize,
        inflight: usize,
        limits: Limits,
    ) -> anyhow::Result<Measured> {
        let provider = &self.provider;
        self.to_java
            .cell(size, inflight, limits, || provider.cpu())
            .await
    }

    /// Kills the JVMs and stops the Rubbo provider.
    pub(crate) async fn stop(self) {
        self.to_java.0.stop().await;
        self.to_rubbo.0.stop().await;
        self.provider.stop().await;
        match self.rubbo {
            RubboServer::Dubbo(s) => s.stop().await,
            RubboServer::Triple(s) => {
                let _ = self.server_rt.spawn(s.stop()).await;
            }
        }
    }
}

/// Rubbo over Triple in wrapper mode: `org.rubbo.bench.EchoService:1.0.0` as Java
/// declares it (`String echo(String)`), through the bootstrap, as the Java programs
/// call and serve it.
mod wrapper {
    use std::sync::Arc;

    use anyhow::ensure;
    use rubbo::{RpcError, Rubbo};

    /// `org.rubbo.bench.EchoService` version `1.0.0`, its `echo` method.
    #[rubbo::service(interface = "org.rubbo.bench.EchoService", version = "1.0.0")]
    pub(crate) trait EchoService {
        /// `String echo(String s)`.
        async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError>;
    }

    #[derive(Debug)]
    struct Echo;

    impl EchoService for Echo {
        async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError> {
            Ok(s)
        }
    }

    pub(crate) use crate::triple::Server;

    /// Exports the echo on a free port (call it on the server's runtime), as the Triple
    /// cells' server is set up.
    pub(crate) async fn serve() -> anyhow::Result<Server> {
        crate::triple::serve_service(EchoServiceServer::new(Arc::new(Echo))).await
    }

    /// The generated client on one connection (the bootstrap's `refer_url`); cheap to
    /// clone.
    #[derive(Clone)]
    pub(crate) struct Client {
        rubbo: Rubbo,
        inner: EchoServiceClient,
        payload: String,
    }

    impl Client {
        /// Connects (call it on the client's runtime).
        pub(crate) async fn connect(port: u16, payload: String) -> anyhow::Result<Self> {
            let (rubbo, invoker) = crate::triple::refer(&EchoServiceClient::SERVICE, port).await?;
            Ok(Client {
                rubbo,
                inner: EchoServiceClient::new(invoker),
                payload,
            })
        }

        pub(crate) async fn close(self) {
            self.rubbo.shutdown().await;
        }
    }

    impl crate::load::EchoClient for Client {
        async fn echo(&self) -> anyhow::Result<()> {
            let reply = self.inner.echo(Some(self.payload.clone())).await?;
            ensure!(
                reply.as_deref() == Some(self.payload.as_str()),
                "the Triple echo returned another string"
            );
            Ok(())
        }
    }
}
