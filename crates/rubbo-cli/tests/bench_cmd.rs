//! `rubbo bench` against Rubbo providers on 127.0.0.1 that count the calls they get,
//! over dubbo and Triple.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rubbo::filter::Activate;
use rubbo::{BoxInvoker, Invocation, RpcError, Rubbo, filter_fn};

const PAYLOAD_LEN: usize = 4096;

/// `org.rubbo.bench.BenchService`: what the bench calls.
#[rubbo::service(interface = "org.rubbo.bench.BenchService", version = "1.0.0")]
pub trait BenchService {
    /// `String echo(String s)`.
    async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError>;
    /// `String fail(String s)`: always throws.
    async fn fail(&self, s: Option<String>) -> Result<Option<String>, RpcError>;
}

/// Counts calls, and calls whose argument was not the expected payload.
#[derive(Debug, Default)]
struct Counting {
    echo: AtomicU64,
    fail: AtomicU64,
    bad_argument: AtomicU64,
    /// `$invoke` calls, as they arrived (before the generic filter).
    generic: AtomicU64,
}

#[derive(Debug, Clone, Default)]
struct Provider(Arc<Counting>);

impl BenchService for Provider {
    async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError> {
        self.0.echo.fetch_add(1, Ordering::SeqCst);
        if s.as_deref() != Some(payload().as_str()) {
            self.0.bad_argument.fetch_add(1, Ordering::SeqCst);
        }
        Ok(s)
    }
    async fn fail(&self, s: Option<String>) -> Result<Option<String>, RpcError> {
        self.0.fail.fetch_add(1, Ordering::SeqCst);
        Err(RpcError::biz("org.rubbo.bench.BenchException", s))
    }
}

fn payload() -> String {
    "x".repeat(PAYLOAD_LEN)
}

/// A provider over `protocol` on 127.0.0.1, its counts and its service URL.
async fn serve(protocol: &str) -> (Rubbo, Arc<Counting>, String) {
    let provider = Provider::default();
    let counts = provider.0.clone();
    let seen = counts.clone();
    // Outside the generic filter (-20000): sees `$invoke` before it becomes the method.
    let generic = filter_fn(move |inv: Invocation, next: BoxInvoker| {
        if inv.method() == "$invoke" {
            seen.generic.fetch_add(1, Ordering::SeqCst);
        }
        next.invoke(inv)
    })
    .with_activate(Activate::provider(-30_000));
    let rubbo = Rubbo::builder()
        .application("bench-test")
        .host("127.0.0.1")
        .protocol(protocol, 0)
        .filter("count-generic", generic)
        .build()
        .unwrap();
    let url = rubbo
        .export(BenchServiceServer::new(Arc::new(provider)))
        .await
        .unwrap();
    let target = format!(
        "{protocol}://127.0.0.1:{}/org.rubbo.bench.BenchService?version=1.0.0",
        url.port()
    );
    (rubbo, counts, target)
}

/// Runs `rubbo bench ARGS` off the runtime: exit code, stdout, stderr.
async fn bench(args: Vec<String>) -> (i32, String, String) {
    tokio::task::spawn_blocking(move || {
        let out = Command::new(env!("CARGO_BIN_EXE_rubbo"))
            .arg("bench")
            .args(&args)
            .output()
            .expect("run rubbo bench");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .unwrap()
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// `-n N` makes exactly N calls, each with the payload intact, and the report adds up.
async fn exact_count(protocol: &str, extra: &[&str]) {
    let (rubbo, counts, target) = serve(protocol).await;
    let arg = serde_json::to_string(&payload()).unwrap();
    let mut a = args(&[&target, "echo", &arg, "-n", "500", "-c", "16", "--json"]);
    a.extend(args(&["--loopback-only"]));
    a.extend(args(extra));
    let (code, out, err) = bench(a).await;
    assert_eq!(code, 0, "{err}{out}");
    let report = json(&out);
    assert_eq!(report["calls"], 500, "{report}");
    assert_eq!(report["ok"], 500, "{report}");
    assert_eq!(report["failed"], 0, "{report}");
    assert_eq!(report["mode"], "closed");
    assert_eq!(
        counts.echo.load(Ordering::SeqCst),
        500,
        "the provider's count"
    );
    assert_eq!(counts.bad_argument.load(Ordering::SeqCst), 0);
    let generic = if extra.contains(&"--typed") { 0 } else { 500 };
    assert_eq!(
        counts.generic.load(Ordering::SeqCst),
        generic,
        "$invoke calls: none with --typed, else all"
    );
    let lat = &report["latency"];
    let (p50, p99, max) = (
        lat["p50_us"].as_f64().unwrap(),
        lat["p99_us"].as_f64().unwrap(),
        lat["max_us"].as_f64().unwrap(),
    );
    assert!(p50 > 0.0 && p50 <= p99 && p99 <= max, "{lat}");
    assert!(report["calls_per_s"].as_f64().unwrap() > 0.0);
    rubbo.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dubbo_n_calls_make_exactly_n_calls() {
    exact_count("dubbo", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn triple_n_calls_make_exactly_n_calls_over_two_connections() {
    exact_count("tri", &["--connections", "2", "--threads", "2"]).await;
}

/// Every failed call is counted under its kind: a business exception, and a method
/// the provider does not have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_calls_reach_the_method_itself_over_dubbo_and_triple() {
    exact_count("dubbo", &["--typed"]).await;
    exact_count("tri", &["--typed", "--types", "java.lang.String"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_counted_by_kind() {
    for protocol in ["dubbo", "tri"] {
        let (rubbo, counts, target) = serve(protocol).await;
        let (code, out, err) = bench(args(&[
            &target, "fail", "\"boom\"", "-n", "50", "-c", "4", "--json",
        ]))
        .await;
        assert_eq!(code, 1, "failed calls exit 1: {err}");
        let report = json(&out);
        assert_eq!(report["calls"], 50, "{protocol}: {report}");
        assert_eq!(report["ok"], 0, "{protocol}: {report}");
        assert_eq!(report["errors"]["biz"], 50, "{protocol}: {report}");
        assert_eq!(counts.fail.load(Ordering::SeqCst), 50);

        let (code, out, _) = bench(args(&[
            &target,
            "noSuchMethod",
            "-n",
            "20",
            "-c",
            "2",
            "--json",
        ]))
        .await;
        assert_eq!(code, 1);
        let report = json(&out);
        assert_eq!(report["failed"], 20, "{protocol}: {report}");
        let errors = report["errors"].as_object().unwrap();
        assert_eq!(errors.len(), 1, "one kind: {report}");
        assert_eq!(errors.values().next().unwrap(), 20, "{protocol}: {report}");
        assert_eq!(errors["method_not_found"], 20, "{protocol}: {report}");
        assert!(
            report["latency"]["p50_us"].is_null(),
            "no latency without an answer"
        );
        rubbo.shutdown().await;
    }
}

/// A timed run with a warmup: the report counts the measured calls, the provider those
/// plus the warmup's; the human summary shows the percentiles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_run_reports_what_the_provider_served() {
    let (rubbo, counts, target) = serve("dubbo").await;
    let arg = serde_json::to_string(&payload()).unwrap();
    let (code, out, err) = bench(args(&[
        &target, "echo", &arg, "-d", "300ms", "--warmup", "100ms", "-c", "4", "--json",
    ]))
    .await;
    assert_eq!(code, 0, "{err}");
    let report = json(&out);
    let calls = report["calls"].as_u64().unwrap();
    assert!(calls > 0, "{report}");
    let warmup = report["warmup_calls"].as_u64().unwrap();
    assert!(warmup > 0, "{report}");
    assert_eq!(
        counts.echo.load(Ordering::SeqCst),
        calls + warmup,
        "the provider served the measured calls and the warmup's: {report}"
    );
    assert!(report["cpu_s"].as_f64().is_some(), "{report}");
    assert_eq!(counts.bad_argument.load(Ordering::SeqCst), 0);

    let (code, out, err) = bench(args(&[&target, "echo", &arg, "-n", "20"])).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("20 ok, 0 failed"), "{out}");
    assert!(
        out.contains("p50") && out.contains("p999") && out.contains("max"),
        "{out}"
    );
    assert!(
        err.is_empty(),
        "no progress line when stderr is not a terminal: {err}"
    );
    rubbo.shutdown().await;
}

/// Open loop: `-n` calls are scheduled; each is made or counted as missed, and the
/// provider served exactly those made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_schedules_n_calls_and_counts_the_missed() {
    let (rubbo, counts, target) = serve("tri").await;
    let arg = serde_json::to_string(&payload()).unwrap();
    let (code, out, err) = bench(args(&[
        &target, "echo", &arg, "--rate", "2000", "-n", "200", "-c", "2", "--json",
    ]))
    .await;
    assert_eq!(code, 0, "{err}");
    let report = json(&out);
    assert_eq!(report["mode"], "open");
    let calls = report["calls"].as_u64().unwrap();
    let missed = report["missed"].as_u64().unwrap();
    assert_eq!(calls + missed, 200, "{report}");
    assert!(calls > 0, "{report}");
    assert_eq!(counts.echo.load(Ordering::SeqCst), calls);
    rubbo.shutdown().await;
}

/// `--loopback-only` refuses another host before connecting; bad bounds are refused
/// by the parser.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_only_refuses_other_hosts_and_bounds_are_checked() {
    let (code, out, err) = bench(args(&[
        "dubbo://10.0.0.1:20880/org.rubbo.bench.BenchService",
        "echo",
        "\"x\"",
        "-n",
        "1",
        "--loopback-only",
    ]))
    .await;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("loopback") && err.contains("10.0.0.1"),
        "{err}"
    );
    assert!(err.contains("nothing was sent"), "{err}");
    assert!(out.is_empty());

    for bad in [
        &["-n", "0"][..],
        &["-c", "0"],
        &["-d", "2h"],
        &["--rate", "0"],
        &["-n", "5", "-d", "1s"],
    ] {
        let mut a = args(&["dubbo://127.0.0.1:1/x.Y", "echo"]);
        a.extend(args(bad));
        let (code, _, err) = bench(a).await;
        assert_eq!(code, 2, "{bad:?} is refused: {err}");
    }
}
