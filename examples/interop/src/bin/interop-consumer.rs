//! The contract's consumer: runs every check against a provider and ends with
//! `N passed, N failed` (exit 1 on any failure).
//!
//! Run with: `cargo run -p interop --bin interop-consumer -- --url dubbo://127.0.0.1:20880`
//! (or `--registry zookeeper://127.0.0.1:2181`)

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use interop::{InteropService, InteropServiceClient};
use rubbo::{Rubbo, Url};

/// Calls org.rubbo.interop.InteropService:1.0.0 with the contract's checks.
#[derive(Debug, Parser)]
struct Args {
    /// The provider, e.g. dubbo://127.0.0.1:20880 or tri://127.0.0.1:50051 (direct mode).
    #[arg(long, required_unless_present = "registry")]
    url: Option<String>,
    /// A registry to find providers in (e.g. zookeeper://127.0.0.1:2181).
    #[arg(long)]
    registry: Option<String>,
    /// Fail unless `whoami` answers this (checks which provider was reached).
    #[arg(long)]
    expect_whoami: Option<String>,
    /// Call timeout in ms.
    #[arg(long, default_value_t = 3000)]
    timeout: u64,
    /// Bound on the whole run in ms.
    #[arg(long, default_value_t = 180_000)]
    deadline: u64,
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
    let mut builder = Rubbo::builder()
        .application("interop-consumer")
        .param("timeout", args.timeout.to_string())
        .param("check.timeout", "20000");
    if let Some(r) = &args.registry {
        builder = builder.registry(r.as_str());
    }
    let rubbo = builder.build().context("bad configuration")?;
    let triple = args.url.as_deref().is_some_and(|u| u.starts_with("tri://"));
    let run = async {
        let invoker = match (&args.url, &args.registry) {
            (Some(url), _) => {
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
            (None, _) => rubbo.refer(&InteropServiceClient::SERVICE).await,
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
        let mut report =
            interop::checks::run_all_over(&client, Duration::from_millis(args.timeout), triple)
                .await;
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
