//! The contract's provider. Prints `READY <protocol> <port>` when serving; stops
//! gracefully on Ctrl-C / SIGTERM.
//!
//! Run with: `cargo run -p interop --bin interop-provider -- --port 20880 [--protocol tri] [--registry zookeeper://127.0.0.1:2181]`

use anyhow::{Context, Result};
use clap::Parser;

/// Serves org.rubbo.interop.InteropService:1.0.0 over dubbo:// or tri://.
#[derive(Debug, Parser)]
struct Args {
    /// The protocol: `dubbo` or `tri` (Triple, wrapper mode).
    #[arg(long, default_value = "dubbo")]
    protocol: String,
    /// Port (0 = any free port).
    #[arg(long, default_value_t = 20880)]
    port: u16,
    /// Host to bind and advertise.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Application name.
    #[arg(long, default_value = "interop-provider")]
    application: String,
    /// A registry to register in (e.g. zookeeper://127.0.0.1:2181); repeatable.
    #[arg(long)]
    registry: Vec<String>,
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
    let handle = interop::serve_on(
        &args.protocol,
        &args.application,
        &args.host,
        args.port,
        &args.registry,
    )
    .await
    .with_context(|| {
        format!(
            "cannot serve {} on {}:{}",
            args.protocol, args.host, args.port
        )
    })?;
    println!("READY {} {}", args.protocol, handle.addr.port());
    shutdown_signal().await;
    eprintln!("shutting down");
    handle.shutdown().await;
    Ok(())
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
