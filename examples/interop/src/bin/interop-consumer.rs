//! The contract's consumer: runs every check against a provider and ends with
//! `N passed, N failed` (exit 1 on any failure). Over `tri://` it runs the Greeter's
//! checks (`greeter/...`) too.
//!
//! Run with: `cargo run -p interop --bin interop-consumer -- --url dubbo://127.0.0.1:20880`
//! (or `--registry zookeeper://127.0.0.1:2181`)
//!
//! `--config FILE` (YAML or `.properties`, Java's `dubbo.` keys) and
//! `--set KEY=VALUE` configure it too; the flags are `dubbo.registry.address`
//! (`--registry`), `dubbo.consumer.timeout` (`--timeout`) and
//! `dubbo.application.name` (`interop-consumer`). An explicit flag beats `--set`,
//! which beats the environment, which beats the files, which beat the flags'
//! defaults. Without `--url`, a registry must be configured somewhere.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser};
use interop::greeter::proto::GreeterClient;
use interop::{InteropService, InteropServiceClient, StreamServiceClient};
use rubbo::config::Config;
use rubbo::{Rubbo, Url};

/// Calls org.rubbo.interop.InteropService:1.0.0 with the contract's checks.
#[derive(Debug, Parser)]
struct Args {
    /// The provider, e.g. dubbo://127.0.0.1:20880 or tri://127.0.0.1:50051 (direct mode); required unless a
    /// registry is given (`--registry`, or `dubbo.registry.address` configured).
    #[arg(long)]
    url: Option<String>,
    /// A registry to find providers in (e.g. zookeeper://127.0.0.1:2181).
    #[arg(long)]
    registry: Option<String>,
    /// With a registry: call only providers on this protocol (the reference's
    /// `protocol`); `tri` also runs the Triple variant of the checks.
    #[arg(long)]
    protocol: Option<String>,
    /// Fail unless `whoami` answers this (checks which provider was reached).
    #[arg(long)]
    expect_whoami: Option<String>,
    /// Call timeout in ms.
    #[arg(long, default_value_t = 3000)]
    timeout: u64,
    /// Calls made at once by the `concurrent.N` check.
    #[arg(long, default_value_t = interop::checks::BURST)]
    burst: usize,
    /// Bound on the whole run in ms.
    #[arg(long, default_value_t = 180_000)]
    deadline: u64,
    /// A configuration file (Java's `dubbo.` keys, .yml/.yaml or .properties); repeatable.
    #[arg(long = "config", value_name = "FILE")]
    config: Vec<PathBuf>,
    /// A Java property, e.g. `--set dubbo.consumer.timeout=5000`; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

/// The configuration: files, environment, `--set`, then the flags (explicit ones as
/// code, the others as defaults), with the config center's externalized
/// configuration (`dubbo.properties`) laid in at Java's precedence.
async fn config(args: &Args, explicit: impl Fn(&str) -> bool) -> Result<Config> {
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
        .default_value("dubbo.application.name", "interop-consumer");
    let timeout = args.timeout.to_string();
    loader = if explicit("timeout") {
        loader.code("dubbo.consumer.timeout", timeout)
    } else {
        loader.default_value("dubbo.consumer.timeout", timeout)
    };
    if let Some(r) = &args.registry {
        loader = loader.code("dubbo.registry.address", r.as_str());
    }
    rubbo::load_config(loader)
        .await
        .context("cannot load the configuration")
}

#[tokio::main]
async fn main() -> Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let matches = Args::command().get_matches();
    let args = Args::from_arg_matches(&matches)?;
    let config = config(&args, |id| {
        matches.value_source(id) == Some(ValueSource::CommandLine)
    })
    .await?;
    if args.url.is_none() && config.registries().iter().all(|r| r.urls().is_empty()) {
        Args::command()
            .bin_name("interop-consumer")
            .error(
                clap::error::ErrorKind::MissingRequiredArgument,
                "--url is required unless a registry is given (--registry, or dubbo.registry.address)",
            )
            .exit();
    }
    let timeout = config
        .consumer()
        .params
        .get("timeout")
        .and_then(|t| t.parse::<u64>().ok())
        .unwrap_or(args.timeout);
    let mut builder = Rubbo::builder()
        .config(&config)
        .param("timeout", timeout.to_string())
        .param("check.timeout", "20000");
    if let Some(p) = &args.protocol {
        builder = builder.param("protocol", p);
    }
    let rubbo = builder.build().context("bad configuration")?;
    // Over Triple: a tri:// URL, or (through a registry) `--protocol tri`.
    let triple = args.url.as_deref().is_some_and(|u| u.starts_with("tri://"))
        || args.protocol.as_deref() == Some("tri");
    let run = async {
        let invoker = match &args.url {
            Some(url) => {
                let base = match Url::parse(url) {
                    Ok(u) if matches!(u.protocol(), Some("dubbo" | "tri")) => u,
                    _ => {
                        println!(
                            "FAIL connect: --url must be dubbo://host:port or tri://host:port, got {url}"
                        );
                        return interop::checks::Report {
                            passed: 0,
                            failed: 1,
                        };
                    }
                };
                rubbo
                    .refer_url(
                        &InteropServiceClient::SERVICE,
                        &format!(
                            "{}://{}",
                            base.protocol().unwrap_or("dubbo"),
                            base.address()
                        ),
                    )
                    .await
            }
            None => rubbo.refer(&InteropServiceClient::SERVICE).await,
        };
        let invoker = match invoker {
            Ok(i) => i,
            Err(e) => {
                println!("FAIL connect: {e}");
                return interop::checks::Report {
                    passed: 0,
                    failed: 1,
                };
            }
        };
        let client = InteropServiceClient::new(invoker);
        let mut report = interop::checks::run_all_over(
            &client,
            Duration::from_millis(timeout),
            triple,
            args.burst,
        )
        .await;
        if let (true, Some(url)) = (triple, &args.url) {
            let address = Url::parse(url).map(|u| u.address()).unwrap_or_default();
            match rubbo
                .refer_url(&GreeterClient::SERVICE, &format!("tri://{address}"))
                .await
            {
                Ok(i) => {
                    let greeter = GreeterClient::new(i);
                    interop::checks::greeter(&greeter, &mut report).await;
                    interop::checks::greeter_streams(&greeter, &mut report).await;
                }
                Err(e) => report.record("greeter/connect", Err(e.to_string())),
            }
            match rubbo
                .refer_url(&StreamServiceClient::SERVICE, &format!("tri://{address}"))
                .await
            {
                Ok(i) => {
                    interop::checks::stream_service(&StreamServiceClient::new(i), &mut report).await
                }
                Err(e) => report.record("streams/connect", Err(e.to_string())),
            }
        }
        if let Some(want) = &args.expect_whoami {
            report.record(
                "whoami.expected",
                match client.whoami().await {
                    Ok(Some(w)) if &w == want => Ok(()),
                    other => Err(format!("got {other:?}, want {want}")),
                },
            );
        }
        report
    };
    let report = match tokio::time::timeout(Duration::from_millis(args.deadline), run).await {
        Ok(r) => r,
        Err(_) => {
            println!(
                "FAIL deadline: the run did not finish within {} ms",
                args.deadline
            );
            interop::checks::Report {
                passed: 0,
                failed: 1,
            }
        }
    };
    rubbo.shutdown().await;
    println!("{} passed, {} failed", report.passed, report.failed);
    Ok(if report.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
