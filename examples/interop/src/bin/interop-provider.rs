//! The contract's provider. Prints `READY <protocol> <port>` when serving; stops
//! gracefully on Ctrl-C / SIGTERM. Over `tri` it serves the Greeter (protobuf) beside
//! InteropService.
//!
//! Run with: `cargo run -p interop --bin interop-provider -- --port 20880 [--protocol tri] [--registry zookeeper://127.0.0.1:2181]`
//!
//! `--config FILE` (YAML or `.properties`, Java's `dubbo.` keys) and
//! `--set KEY=VALUE` configure it too; the flags are `dubbo.protocol.name`, `dubbo.protocol.port`,
//! `dubbo.protocol.host`, `dubbo.application.name` and `dubbo.registry.address`
//! (several `--registry` join as `a|b`). An explicit flag beats `--set`, which beats
//! the environment (`DUBBO_PROTOCOL_PORT`), which beats the files, which beat the
//! flags' defaults.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser};
use interop::harness::shutdown_signal;
use rubbo::config::{Config, ConfigLoader};

/// Serves org.rubbo.interop.InteropService:1.0.0 over dubbo:// or tri://.
#[derive(Debug, Parser)]
struct Args {
    /// The protocol: `dubbo` or `tri` (Triple: InteropService in wrapper mode, Greeter in
    /// IDL mode).
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
    /// A configuration file (Java's `dubbo.` keys, .yml/.yaml or .properties); repeatable.
    #[arg(long = "config", value_name = "FILE")]
    config: Vec<PathBuf>,
    /// A Java property, e.g. `--set dubbo.protocol.port=20881`; repeatable.
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
    let mut loader = loader.process_env();
    let flag = |l: ConfigLoader, id: &str, key: &str, value: String| {
        if explicit(id) {
            l.code(key, value)
        } else {
            l.default_value(key, value)
        }
    };
    loader = flag(
        loader,
        "application",
        "dubbo.application.name",
        args.application.clone(),
    );
    if !args.registry.is_empty() {
        loader = loader.code("dubbo.registry.address", args.registry.join("|"));
    }
    // The port and host defaults only where no protocol is configured, so that a
    // file's `dubbo.protocols.<id>` is not joined by a default `dubbo.protocol`.
    // (A trial load: silent, so that an unknown key is warned about once.)
    let trial = loader.clone();
    let configured =
        tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
            trial.load()
        })?;
    let explicit_addr = explicit("port") || explicit("host");
    if configured.protocols().is_empty() || explicit_addr || explicit("protocol") {
        loader = flag(
            loader,
            "protocol",
            "dubbo.protocol.name",
            args.protocol.clone(),
        );
        loader = flag(loader, "port", "dubbo.protocol.port", args.port.to_string());
        loader = flag(loader, "host", "dubbo.protocol.host", args.host.clone());
    }
    rubbo::load_config(loader)
        .await
        .context("cannot load the configuration")
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let matches = Args::command().get_matches();
    let args = Args::from_arg_matches(&matches)?;
    let explicit = |id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
    let config = config(&args, explicit).await?;
    let handle = interop::serve_config(&config).await.with_context(|| {
        let p = config.protocols().first();
        format!(
            "cannot serve on {}:{}",
            p.and_then(|p| p.host.clone())
                .unwrap_or_else(|| args.host.clone()),
            p.and_then(|p| p.port).unwrap_or(args.port)
        )
    })?;
    println!(
        "READY {} {}",
        handle.url.protocol().unwrap_or("dubbo"),
        handle.addr.port()
    );
    shutdown_signal().await;
    eprintln!("shutting down");
    handle.shutdown().await;
    Ok(())
}
