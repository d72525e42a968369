//! gRPC's interop test service over Rubbo's Triple, both ways.
//!
//! Run with: `cargo run -p interop --bin interop-grpc -- server --port 50051`
//! (prints `READY grpc 50051`; stops on Ctrl-C / SIGTERM), or
//! `cargo run -p interop --bin interop-grpc -- client --port 50051 --test_case empty_unary,large_unary`
//! (prints `PASS grpc-client/<case>` or `FAIL grpc-client/<case>: <detail>` per case,
//! then `N passed, N failed`; exit 1 on any failure).
//!
//! The client also takes grpc-go's interop client flags with one dash
//! (`-server_host=127.0.0.1 -server_port=P -use_tls=false -test_case=CASE`), so that
//! `interop/grpc-go/run-cases.sh --server` can run it as `$INTEROP_CLIENT`.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Parser, Subcommand};
use interop::grpc_testing;
use interop::harness::shutdown_signal;
use rubbo::Rubbo;

/// grpc.testing.TestService over Triple: serve it, or run the interop cases.
#[derive(Debug, Parser)]
struct Args {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// Serves grpc.testing.TestService (unary and streaming methods).
    Server {
        /// Port (0 = any free port).
        #[arg(long, default_value_t = 50051)]
        port: u16,
        /// Host to bind.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
    },
    /// Runs interop cases against a grpc.testing.TestService on 127.0.0.1.
    Client {
        /// The server's port.
        #[arg(long, alias = "server_port")]
        port: u16,
        /// The server's host: only 127.0.0.1 is used.
        #[arg(long, alias = "server_host", default_value = "127.0.0.1")]
        host: String,
        /// TLS is not supported: only `false`.
        #[arg(long = "use_tls", default_value_t = false, action = clap::ArgAction::Set)]
        use_tls: bool,
        /// The cases, comma-separated (default: all of them).
        #[arg(long = "test_case", alias = "test-case", value_delimiter = ',')]
        test_case: Vec<String>,
    },
}

/// grpc-go's one-dash flags (`-server_port=1`) as clap's two-dash ones.
fn normalized_args() -> Vec<String> {
    std::env::args()
        .enumerate()
        .map(|(i, a)| {
            let one_dash = a.starts_with('-') && !a.starts_with("--") && a.len() > 2;
            if i > 0 && one_dash {
                format!("-{a}")
            } else {
                a
            }
        })
        .collect()
}

#[tokio::main]
async fn main() -> Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Args::parse_from(normalized_args()).mode {
        Mode::Server { port, host } => {
            let (rubbo, port) = grpc_testing::serve(&host, port).await?;
            println!("READY grpc {port}");
            shutdown_signal().await;
            eprintln!("shutting down");
            rubbo.shutdown().await;
            Ok(ExitCode::SUCCESS)
        }
        Mode::Client {
            port,
            host,
            use_tls,
            test_case,
        } => {
            if use_tls {
                bail!("-use_tls=true is not supported");
            }
            if host != "127.0.0.1" && host != "localhost" {
                bail!("only 127.0.0.1 is called, not {host}");
            }
            let cases: Vec<String> = if test_case.is_empty() {
                grpc_testing::CASES
                    .iter()
                    .map(|c| (*c).to_owned())
                    .collect()
            } else {
                test_case
            };
            let rubbo = Rubbo::builder().application("interop-grpc").build()?;
            let (mut passed, mut failed) = (0, 0);
            for case in &cases {
                match grpc_testing::run_case(&rubbo, port, case).await {
                    Ok(()) => {
                        println!("PASS grpc-client/{case}");
                        passed += 1;
                    }
                    Err(e) => {
                        println!("FAIL grpc-client/{case}: {}", e.replace('\n', " "));
                        failed += 1;
                    }
                }
            }
            println!("{passed} passed, {failed} failed");
            rubbo.shutdown().await;
            Ok(if failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}
