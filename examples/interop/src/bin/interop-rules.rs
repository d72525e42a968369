//! Governance rules written by Java into a real ZooKeeper, seen by a Rust consumer
//! (interop cell 9): a service-scope override rule changes its timeout, a condition
//! route moves it away from one provider, the provider application's tag route sends
//! calls carrying `dubbo.tag` to the tagged provider only, and deleting each rule
//! restores the behaviour. The rules are written by Java Dubbo's own
//! `DynamicConfiguration` (`run-java.sh RuleWriter`), so their path and bytes are Java's.
//!
//! With `--compare-java ADDR --compare-rust ADDR` it instead compares the URLs a Java
//! and a Rust provider (configured by the same application.yml) registered in the
//! registry: it lists the keys that differ and checks that the keys a consumer relies
//! on are equal. `--label externalized --expect weight=55` names the checks and also
//! requires both URLs to carry the given values (the externalized `dubbo.properties`
//! check of cell 9).
//!
//! Run with: `interop-rules --registry zookeeper://127.0.0.1:2181 --rule-writer
//! interop/java/run-java.sh --avoid 127.0.0.1:20880 --keep 127.0.0.1:20881`, with two
//! InteropService providers registered there; prints `PASS name` / `FAIL name: detail`
//! and `N passed, N failed` (exit 1 on any failure).

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;
use interop::checks::Report;
use interop::harness::{eventually, java_rule};
use interop::{InteropService, InteropServiceClient};
use rubbo::{ErrorKind, Rubbo, Url};

/// How often a condition is polled.
const POLL: Duration = Duration::from_millis(100);

/// The rule keys of InteropService:1.0.0 (no group), in group `dubbo`.
const CONFIGURATORS: &str = "org.rubbo.interop.InteropService:1.0.0:.configurators";
const CONDITION_ROUTER: &str = "org.rubbo.interop.InteropService:1.0.0:.condition-router";

/// Checks Java-written rules against a Rust consumer.
#[derive(Debug, Parser)]
struct Args {
    /// The registry (a ZooKeeper, which serves as config center too).
    #[arg(long)]
    registry: String,
    /// `run-java.sh` of the Java interop harness (runs `RuleWriter`).
    #[arg(long)]
    rule_writer: PathBuf,
    /// The provider the condition route must move traffic away from (host:port).
    #[arg(long)]
    avoid: String,
    /// The other provider (host:port).
    #[arg(long)]
    keep: String,
    /// The consumer's own call timeout in ms.
    #[arg(long, default_value_t = 3000)]
    timeout: u64,
    /// Bound on each wait for a rule to take effect, in ms.
    #[arg(long, default_value_t = 30_000)]
    wait: u64,
    /// The providers' application (whose `{app}.tag-router` is their tag route).
    #[arg(long, default_value = "interop-provider")]
    provider_app: String,
    /// Compare mode: the Java provider's address (host:port) in the registry.
    #[arg(long, requires = "compare_rust")]
    compare_java: Option<String>,
    /// Compare mode: the Rust provider's address (host:port) in the registry.
    #[arg(long, requires = "compare_java")]
    compare_rust: Option<String>,
    /// Compare mode: the prefix of the check names.
    #[arg(long, default_value = "same-yaml")]
    label: String,
    /// Compare mode: `KEY=VALUE` both registered URLs must carry (repeatable), e.g.
    /// values that came from the config center's `dubbo.properties`.
    #[arg(long = "expect", value_name = "KEY=VALUE")]
    expect: Vec<String>,
}

/// The providers (`host:port`) `calls` whoami calls reached; `None` if one failed.
async fn reached(client: &InteropServiceClient, calls: usize) -> Option<HashSet<String>> {
    let mut s = HashSet::new();
    for _ in 0..calls {
        let who = client.whoami().await.ok()??;
        s.insert(who.rsplit('@').next().unwrap_or("").to_owned());
    }
    Some(s)
}

/// Whether `slow(millis)` times out now (`None`: another error).
async fn times_out(client: &InteropServiceClient, millis: i32) -> Option<bool> {
    match client.slow(millis).await {
        Ok(_) => Some(false),
        Err(e) if e.kind() == ErrorKind::Timeout => Some(true),
        Err(_) => None,
    }
}

async fn run(args: &Args, rubbo: &Rubbo, zk: &str, report: &mut Report) -> Result<()> {
    let client = InteropServiceClient::new(
        rubbo
            .refer(&InteropServiceClient::SERVICE)
            .await
            .context("refer")?,
    );
    let wait = Duration::from_millis(args.wait);
    let both: HashSet<String> = [args.avoid.clone(), args.keep.clone()].into();
    let ok = eventually(wait, POLL, || async {
        reached(&client, 20).await.as_ref() == Some(&both)
    })
    .await;
    report.record(
        "both-rust-providers-called",
        ok.then_some(())
            .ok_or_else(|| format!("never reached both {both:?}")),
    );
    if !ok {
        return Ok(());
    }

    // Override rule, service scope: the consumer's timeout drops below a slow call's.
    let slow = 800;
    report.record(
        "timeout/own-timeout-first",
        match times_out(&client, slow).await {
            Some(false) => Ok(()),
            other => Err(format!(
                "slow({slow}) with timeout {}: {other:?}",
                args.timeout
            )),
        },
    );
    let rule = "configVersion: v3.0\nscope: service\nkey: org.rubbo.interop.InteropService:1.0.0\nenabled: true\nconfigs:\n  - side: consumer\n    addresses: [0.0.0.0]\n    parameters:\n      timeout: 200\n";
    match java_rule(&args.rule_writer, zk, CONFIGURATORS, None, Some(rule)).await {
        Ok(()) => {
            let applied = eventually(wait, POLL, || async {
                times_out(&client, slow).await == Some(true)
            })
            .await;
            report.record(
                "timeout/rule-applies",
                applied
                    .then_some(())
                    .ok_or_else(|| format!("slow({slow}) never timed out under timeout: 200")),
            );
        }
        Err(e) => report.record("timeout/rule-applies", Err(e)),
    }
    match java_rule(&args.rule_writer, zk, CONFIGURATORS, None, None).await {
        Ok(()) => {
            let back = eventually(wait, POLL, || async {
                times_out(&client, slow).await == Some(false)
            })
            .await;
            report.record(
                "timeout/withdrawn",
                back.then_some(())
                    .ok_or_else(|| format!("slow({slow}) still fails after the rule was deleted")),
            );
        }
        Err(e) => report.record("timeout/withdrawn", Err(e)),
    }

    // Condition route, service scope: away from one provider, and back.
    let port = args.avoid.rsplit(':').next().unwrap_or("");
    let route = format!(
        "configVersion: v3.0\nscope: service\nkey: org.rubbo.interop.InteropService:1.0.0\nforce: false\nenabled: true\nconditions:\n  - => port != {port}\n"
    );
    let only_keep: HashSet<String> = [args.keep.clone()].into();
    match java_rule(&args.rule_writer, zk, CONDITION_ROUTER, None, Some(&route)).await {
        Ok(()) => {
            let moved = eventually(wait, POLL, || async {
                reached(&client, 10).await.as_ref() == Some(&only_keep)
            })
            .await
                && reached(&client, 40).await.as_ref() == Some(&only_keep);
            report.record(
                "condition-route/moves-away",
                moved
                    .then_some(())
                    .ok_or_else(|| format!("calls still reach {}", args.avoid)),
            );
        }
        Err(e) => report.record("condition-route/moves-away", Err(e)),
    }
    match java_rule(&args.rule_writer, zk, CONDITION_ROUTER, None, None).await {
        Ok(()) => {
            let back = eventually(wait, POLL, || async {
                reached(&client, 20).await.as_ref() == Some(&both)
            })
            .await;
            report.record(
                "condition-route/withdrawn",
                back.then_some(())
                    .ok_or_else(|| format!("never reached {} again", args.avoid)),
            );
        }
        Err(e) => report.record("condition-route/withdrawn", Err(e)),
    }

    // Tag route of the provider application (Java's TagStateRouter): the `keep`
    // provider is in tag `gray`; calls with attachment dubbo.tag=gray go only there,
    // calls without a tag only to the untagged provider; deleting the rule restores.
    let tag_key = format!("{}.tag-router", args.provider_app);
    let tag_rule = format!(
        "configVersion: v3.0\nforce: false\nenabled: true\nruntime: true\nkey: {}\ntags:\n  - name: gray\n    addresses: [\"{}\"]\n",
        args.provider_app, args.keep
    );
    let tagged = client.clone().with_attachment("dubbo.tag", "gray");
    let only_avoid: HashSet<String> = [args.avoid.clone()].into();
    match java_rule(&args.rule_writer, zk, &tag_key, None, Some(&tag_rule)).await {
        Ok(()) => {
            let routed = eventually(wait, POLL, || async {
                reached(&tagged, 10).await.as_ref() == Some(&only_keep)
            })
            .await
                && reached(&tagged, 40).await.as_ref() == Some(&only_keep);
            report.record(
                "tag-route/tagged-calls-to-the-tagged-provider",
                routed
                    .then_some(())
                    .ok_or_else(|| format!("dubbo.tag=gray calls still reach {}", args.avoid)),
            );
            let untagged = reached(&client, 40).await;
            report.record(
                "tag-route/untagged-calls-to-the-untagged-provider",
                (untagged.as_ref() == Some(&only_avoid))
                    .then_some(())
                    .ok_or_else(|| format!("untagged calls reached {untagged:?}")),
            );
        }
        Err(e) => report.record("tag-route/tagged-calls-to-the-tagged-provider", Err(e)),
    }
    match java_rule(&args.rule_writer, zk, &tag_key, None, None).await {
        Ok(()) => {
            let back = eventually(wait, POLL, || async {
                reached(&tagged, 20).await.as_ref() == Some(&both)
                    && reached(&client, 20).await.as_ref() == Some(&both)
            })
            .await;
            report.record(
                "tag-route/withdrawn",
                back.then_some(())
                    .ok_or_else(|| "calls never reached both providers again".to_owned()),
            );
        }
        Err(e) => report.record("tag-route/withdrawn", Err(e)),
    }
    Ok(())
}

/// The keys a consumer reads from a provider URL, which the same configuration must
/// give equal values on both sides (the service's identity, the defaults the
/// configuration sets, and what the consumer's cluster reads).
const RELIED_ON: &[&str] = &[
    "application",
    "interface",
    "version",
    "side",
    "methods",
    "timeout",
    "retries",
    "loadbalance",
    "weight",
    "cluster",
    "serialization",
    "deprecated",
    "dynamic",
];

/// Compare mode: the registered URLs of the Java and the Rust provider.
async fn compare(args: &Args, java: &str, rust: &str, report: &mut Report) -> Result<()> {
    let registry_url = Url::parse(&args.registry).context("--registry")?;
    let registry = rubbo_registry_zookeeper::ZookeeperRegistry::connect(registry_url)
        .await
        .context("connect to the registry")?;
    let consumer = Url::parse(
        "consumer://127.0.0.1/org.rubbo.interop.InteropService?interface=org.rubbo.interop.InteropService&version=1.0.0&side=consumer",
    )?;
    let wait = Duration::from_millis(args.wait);
    let deadline = Instant::now() + wait;
    let found = loop {
        let urls =
            rubbo_registry::Registry::lookup(&registry, rubbo_registry::subscribe_url(&consumer))
                .await
                .unwrap_or_default();
        let by = |addr: &str| {
            urls.iter()
                .find(|u| u.protocol() == Some("dubbo") && u.address() == addr)
                .cloned()
        };
        if let (Some(j), Some(r)) = (by(java), by(rust)) {
            break Some((j, r));
        }
        if Instant::now() >= deadline {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let Some((j, r)) = found else {
        report.record(
            &format!("{}/both-registered", args.label),
            Err(format!("{java} and {rust} not both registered")),
        );
        return Ok(());
    };
    report.record(&format!("{}/both-registered", args.label), Ok(()));
    let keys = |u: &Url| -> std::collections::BTreeSet<String> {
        u.params().iter().map(|(k, _)| k.to_string()).collect()
    };
    let (jk, rk) = (keys(&j), keys(&r));
    let only_java: Vec<&String> = jk.difference(&rk).collect();
    let only_rust: Vec<&String> = rk.difference(&jk).collect();
    println!("INFO {} keys only in Java's URL: {only_java:?}", args.label);
    println!("INFO {} keys only in Rust's URL: {only_rust:?}", args.label);
    let mut differing = Vec::new();
    for k in jk.intersection(&rk) {
        if j.get_param(k) != r.get_param(k) {
            differing.push(format!(
                "{k}: java={:?} rust={:?}",
                j.get_param(k),
                r.get_param(k)
            ));
        }
    }
    println!("INFO {} values that differ: {differing:?}", args.label);
    let mut bad = Vec::new();
    for k in RELIED_ON {
        let (a, b) = (j.get_param(k), r.get_param(k));
        let methods = |v: Option<&str>| -> Vec<String> {
            let mut m: Vec<String> = v
                .unwrap_or("")
                .split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            m.sort_unstable();
            m
        };
        let same = if *k == "methods" {
            methods(a) == methods(b)
        } else {
            a == b
        };
        if !same {
            bad.push(format!("{k}: java={a:?} rust={b:?}"));
        }
    }
    report.record(
        &format!("{}/keys-consumers-rely-on-equal", args.label),
        bad.is_empty().then_some(()).ok_or_else(|| bad.join("; ")),
    );
    // The values the YAML set reached both registrations (same-yaml mode; with
    // `--expect` the expected values are checked instead).
    if args.expect.is_empty() {
        let from_yaml = ["timeout", "weight", "retries", "loadbalance", "application"];
        let missing: Vec<&str> = from_yaml
            .iter()
            .copied()
            .filter(|k| j.get_param(k).is_none())
            .collect();
        report.record(
            &format!("{}/yaml-values-registered", args.label),
            missing
                .is_empty()
                .then_some(())
                .ok_or_else(|| format!("not registered: {missing:?}")),
        );
    }
    for e in &args.expect {
        let (k, v) = e.split_once('=').unwrap_or((e.as_str(), ""));
        let (a, b) = (j.get_param(k), r.get_param(k));
        report.record(
            &format!("{}/both-registered-{k}={v}", args.label),
            (a == Some(v) && b == Some(v))
                .then_some(())
                .ok_or_else(|| format!("java={a:?} rust={b:?}")),
        );
    }
    rubbo_registry::Registry::destroy(&registry).await;
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
        .application("interop-rules-consumer")
        .registry(&args.registry)
        .param("timeout", args.timeout.to_string())
        .param("retries", "0")
        .param("check", "false")
        .build()
        .context("bad configuration")?;
    let mut report = Report {
        passed: 0,
        failed: 0,
    };
    let deadline = Duration::from_secs(300);
    let work = async {
        match (&args.compare_java, &args.compare_rust) {
            (Some(j), Some(r)) => compare(&args, j, r, &mut report).await,
            _ => run(&args, &rubbo, &zk, &mut report).await,
        }
    };
    let outcome = tokio::time::timeout(deadline, work).await;
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => report.record("setup", Err(format!("{e:#}"))),
        Err(_) => report.record("deadline", Err("the run did not finish in 300 s".into())),
    }
    rubbo.shutdown().await;
    println!("{} passed, {} failed", report.passed, report.failed);
    Ok(if report.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
