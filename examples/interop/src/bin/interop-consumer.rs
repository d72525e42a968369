//! The contract's consumer: runs every check against a provider and ends with
//! `N passed, N failed` (exit 1 on any failure).
//!
//! Run with: `cargo run -p interop --bin interop-consumer -- --url dubbo://127.0.0.1:20880`

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Parser;
use interop::InteropServiceClient;
use rubbo::{DubboProtocol, Protocol, Url};

/// Calls org.rubbo.interop.InteropService:1.0.0 with the contract's checks.
#[derive(Debug, Parser)]
struct Args {
    /// The provider, e.g. dubbo://127.0.0.1:20880.
    #[arg(long)]
    url: String,
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
    let base = Url::parse(&args.url).with_context(|| format!("bad --url {}", args.url))?;
    if base.protocol() != Some("dubbo") {
        bail!("--url must be dubbo://host:port");
    }
    let url = base
        .with_path(InteropServiceClient::INTERFACE)
        .with_params([
            ("interface", InteropServiceClient::INTERFACE),
            ("version", InteropServiceClient::VERSION),
            ("application", "interop-consumer"),
            ("side", "consumer"),
            ("timeout", &args.timeout.to_string()),
        ]);
    let run = async {
        let invoker = match DubboProtocol::new().refer(url.clone()).await {
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
        interop::checks::run_all(&client, Duration::from_millis(args.timeout)).await
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
    println!("{} passed, {} failed", report.passed, report.failed);
    Ok(if report.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
