//! The dynamic migration rule written by Java into a real ZooKeeper, followed by a
//! Rust consumer (interop cell 10): the consumer starts on the default
//! `APPLICATION_FIRST`; a provider registered only at interface level (`--iface`)
//! and one registered only as an application instance (`--instance`) tell by
//! `whoami` which discovery a call took. Java Dubbo's own `DynamicConfiguration`
//! (`run-java.sh RuleWriter --group DUBBO_SERVICEDISCOVERY_MIGRATION`) publishes
//! `{consumer app}.migration` rules moving it FORCE_INTERFACE -> FORCE_APPLICATION ->
//! APPLICATION_FIRST (proportion 50) -> FORCE_INTERFACE (force) and deletes the rule,
//! while 32 calls are in flight; no call may fail.
//!
//! With `--spread a,b,c,d` it checks a mixed fleet instead: calls on the default step
//! reach every one of those providers of one application.
//!
//! Run with: `interop-migration --registry zookeeper://127.0.0.1:2181 --rule-writer
//! interop/java/run-java.sh --iface 127.0.0.1:20880 --instance 127.0.0.1:20881`;
//! prints `PASS name` / `FAIL name: detail` and `N passed, N failed` (exit 1 on any
//! failure).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;
use interop::checks::Report;
use interop::harness::java_rule;
use interop::{InteropService, InteropServiceClient};
use rubbo::{Rubbo, Url};

/// Java's config center group of migration rules.
const GROUP: &str = "DUBBO_SERVICEDISCOVERY_MIGRATION";
/// The consumer application (the rule key is `{APP}.migration`).
const APP: &str = "interop-migration-consumer";

/// Checks Java-written migration rules against a Rust consumer.
#[derive(Debug, Parser)]
struct Args {
    /// The registry (a ZooKeeper, which serves as config center too).
    #[arg(long)]
    registry: String,
    /// `run-java.sh` of the Java interop harness (runs `RuleWriter`).
    #[arg(long)]
    rule_writer: PathBuf,
    /// The provider registered at interface level only (host:port).
    #[arg(long)]
    iface: String,
    /// The provider registered as an application instance only (host:port).
    #[arg(long, default_value = "")]
    instance: String,
    /// Mixed-fleet mode instead: on the default step, calls must reach every one of
    /// these providers (host:port, comma-separated) of one application.
    #[arg(long, value_delimiter = ',')]
    spread: Vec<String>,
}

/// Mixed fleet: whoami over the default step reaches every provider of `--spread`.
async fn spread(args: &Args, rubbo: &Rubbo, report: &mut Report) -> Result<()> {
    let client = InteropServiceClient::new(
        rubbo
            .refer(&InteropServiceClient::SERVICE)
            .await
            .context("refer")?,
    );
    let want: std::collections::BTreeSet<String> = args.spread.iter().cloned().collect();
    let mut got = std::collections::BTreeSet::new();
    let mut failed = 0usize;
    let deadline = Instant::now() + Duration::from_secs(60);
    while got != want && Instant::now() < deadline {
        for _ in 0..50 {
            match client.whoami().await {
                Ok(w) => {
                    got.insert(
                        w.unwrap_or_default()
                            .rsplit('@')
                            .next()
                            .unwrap_or("")
                            .to_owned(),
                    );
                }
                Err(_) => failed += 1,
            }
        }
        if got != want {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    report.record(
        "mixed-fleet-calls-reach-every-provider",
        if got == want && failed == 0 {
            Ok(())
        } else {
            Err(format!("reached {got:?} of {want:?}, {failed} failed"))
        },
    );
    Ok(())
}

/// What the calls in flight saw: answers (provider address) per phase, failures.
#[derive(Debug, Default)]
struct Seen {
    phase: AtomicUsize,
    answers: parking_lot::Mutex<HashMap<(usize, String), usize>>,
    failed: AtomicUsize,
    first_error: parking_lot::Mutex<Option<String>>,
}

impl Seen {
    fn count(&self, phase: usize, who: &str) -> usize {
        self.answers
            .lock()
            .get(&(phase, who.to_owned()))
            .copied()
            .unwrap_or(0)
    }
}

/// Polls until `phase` has seen `n` answers from each of `want` (bounded).
async fn reached(
    seen: &Seen,
    phase: usize,
    want: &[&str],
    n: usize,
    within: Duration,
) -> Result<(), String> {
    let deadline = Instant::now() + within;
    loop {
        if want.iter().all(|w| seen.count(phase, w) >= n) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let got: Vec<String> = want
                .iter()
                .map(|w| format!("{w}: {}", seen.count(phase, w)))
                .collect();
            return Err(format!("after {within:?}: {}", got.join(", ")));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn run(args: &Args, rubbo: &Rubbo, zk: &str, report: &mut Report) -> Result<()> {
    // Start clean: no rule from an earlier run.
    let _ = java_rule(
        &args.rule_writer,
        zk,
        &format!("{APP}.migration"),
        Some(GROUP),
        None,
    )
    .await;
    let client = Arc::new(InteropServiceClient::new(
        rubbo
            .refer(&InteropServiceClient::SERVICE)
            .await
            .context("refer")?,
    ));
    let who = |w: Option<String>| {
        w.unwrap_or_default()
            .rsplit('@')
            .next()
            .unwrap_or("")
            .to_owned()
    };
    // The default step, APPLICATION_FIRST, with an instance address: application level.
    let first = client.whoami().await.map(who).map_err(|e| e.to_string());
    report.record(
        "default-application-first-takes-the-instance",
        match first {
            Ok(a) if a == args.instance => Ok(()),
            Ok(a) => Err(format!("reached {a}, not {}", args.instance)),
            Err(e) => Err(e),
        },
    );

    let seen = Arc::new(Seen::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let (client, seen, stop) = (client.clone(), seen.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..1_000_000 {
                if stop.load(Ordering::Acquire) {
                    break;
                }
                let phase = seen.phase.load(Ordering::Acquire);
                match client.whoami().await {
                    Ok(w) => {
                        let w = w.unwrap_or_default();
                        let addr = w.rsplit('@').next().unwrap_or("").to_owned();
                        *seen.answers.lock().entry((phase, addr)).or_insert(0) += 1;
                    }
                    Err(e) => {
                        seen.failed.fetch_add(1, Ordering::AcqRel);
                        seen.first_error.lock().get_or_insert_with(|| e.to_string());
                    }
                }
            }
        }));
    }
    let (iface, inst) = (args.iface.as_str(), args.instance.as_str());
    let phases: [(&str, Option<&str>, Vec<&str>); 5] = [
        (
            "force-interface",
            Some("key: interop-migration-consumer\nstep: FORCE_INTERFACE\n"),
            vec![iface],
        ),
        (
            "force-application",
            Some("key: interop-migration-consumer\nstep: FORCE_APPLICATION\n"),
            vec![inst],
        ),
        (
            "application-first-proportion-50",
            Some("key: interop-migration-consumer\nstep: APPLICATION_FIRST\nproportion: 50\n"),
            vec![iface, inst],
        ),
        (
            "forced-interface",
            Some("key: interop-migration-consumer\nstep: FORCE_INTERFACE\nforce: true\n"),
            vec![iface],
        ),
        // Deleted: the initial step (APPLICATION_FIRST) again.
        ("rule-deleted", None, vec![inst]),
    ];
    for (i, (name, rule, want)) in phases.into_iter().enumerate() {
        let outcome = match java_rule(
            &args.rule_writer,
            zk,
            &format!("{APP}.migration"),
            Some(GROUP),
            rule,
        )
        .await
        {
            Ok(()) => {
                seen.phase.store(i + 1, Ordering::Release);
                reached(&seen, i + 1, &want, 50, Duration::from_secs(30)).await
            }
            Err(e) => Err(e),
        };
        report.record(&format!("rule/{name}"), outcome);
    }
    stop.store(true, Ordering::Release);
    for t in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(30), t).await;
    }
    let failed = seen.failed.load(Ordering::Acquire);
    report.record(
        "no-failed-call-while-switching",
        if failed == 0 {
            Ok(())
        } else {
            Err(format!(
                "{failed} failed; first: {:?}",
                seen.first_error.lock()
            ))
        },
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let registry = Url::parse(&args.registry).context("--registry")?;
    let zk = registry.address();
    let rubbo = Rubbo::builder()
        .application(APP)
        .registry(&args.registry)
        .param("timeout", "3000")
        .build()
        .context("bad configuration")?;
    let mut report = Report {
        passed: 0,
        failed: 0,
    };
    let work = async {
        if args.spread.is_empty() {
            run(&args, &rubbo, &zk, &mut report).await
        } else {
            spread(&args, &rubbo, &mut report).await
        }
    };
    match tokio::time::timeout(Duration::from_secs(400), work).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => report.record("setup", Err(format!("{e:#}"))),
        Err(_) => report.record("deadline", Err("the run did not finish in 400 s".into())),
    }
    rubbo.shutdown().await;
    println!("{} passed, {} failed", report.passed, report.failed);
    Ok(if report.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
