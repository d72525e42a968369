//! The middle of the cross-language trace (interop cell 15): a provider of
//! InteropService whose `echo` calls `echo` on a downstream provider (`--downstream`,
//! e.g. a Java one) and answers what it answered; the other methods behave as the
//! contract's provider. Prints `READY <protocol> <port>`; stops gracefully on
//! SIGTERM / Ctrl-C, which exports the spans still queued.
//!
//! Tracing and its OTLP export come from Java's keys, nothing else:
//!
//! ```text
//! interop-trace-relay --port 20881 --downstream dubbo://127.0.0.1:20880 \
//!     --set dubbo.tracing.enabled=true --set dubbo.tracing.sampling.probability=1.0 \
//!     --set dubbo.tracing.tracing-exporter.otlp-config.endpoint=http://127.0.0.1:4317
//! ```
//!
//! With no global subscriber set here, the bootstrap sets one (the OTLP layer and logs
//! to stderr by `RUST_LOG`, default `warn`).

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Parser;
use interop::harness::shutdown_signal;
use interop::{InteropProvider, InteropService, InteropServiceClient, InteropServiceServer, User};
use rubbo::config::Config;
use rubbo::{RpcError, Rubbo};

/// Serves InteropService, relaying `echo` to a downstream provider.
#[derive(Debug, Parser)]
struct Args {
    /// The protocol served and called: `dubbo` or `tri`.
    #[arg(long, default_value = "dubbo")]
    protocol: String,
    /// Port (0 = any free port).
    #[arg(long, default_value_t = 20881)]
    port: u16,
    /// Host to bind and advertise.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// The provider `echo` is relayed to, e.g. dubbo://127.0.0.1:20880.
    #[arg(long)]
    downstream: String,
    /// A Java property, e.g. `--set dubbo.tracing.enabled=true`; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

/// The contract's provider, with `echo` relayed downstream.
#[derive(Debug, Clone)]
struct Relay {
    local: InteropProvider,
    downstream: InteropServiceClient,
}

impl InteropService for Relay {
    async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError> {
        self.downstream.echo(s).await
    }
    async fn echo_int(&self, v: i32) -> Result<i32, RpcError> {
        self.local.echo_int(v).await
    }
    async fn echo_long(&self, v: i64) -> Result<i64, RpcError> {
        self.local.echo_long(v).await
    }
    async fn echo_double(&self, v: f64) -> Result<f64, RpcError> {
        self.local.echo_double(v).await
    }
    async fn echo_bool(&self, v: bool) -> Result<bool, RpcError> {
        self.local.echo_bool(v).await
    }
    async fn echo_bytes(&self, b: Option<Vec<u8>>) -> Result<Option<Vec<u8>>, RpcError> {
        self.local.echo_bytes(b).await
    }
    async fn echo_list(
        &self,
        l: Option<Vec<Option<String>>>,
    ) -> Result<Option<Vec<Option<String>>>, RpcError> {
        self.local.echo_list(l).await
    }
    async fn echo_map(
        &self,
        m: Option<HashMap<String, Option<i32>>>,
    ) -> Result<Option<HashMap<String, Option<i32>>>, RpcError> {
        self.local.echo_map(m).await
    }
    async fn echo_user(&self, u: Option<User>) -> Result<Option<User>, RpcError> {
        self.local.echo_user(u).await
    }
    async fn list_users(&self, n: i32) -> Result<Option<Vec<User>>, RpcError> {
        self.local.list_users(n).await
    }
    async fn ping(&self) -> Result<(), RpcError> {
        self.local.ping().await
    }
    async fn fail(&self, message: Option<String>) -> Result<Option<String>, RpcError> {
        self.local.fail(message).await
    }
    async fn attachment(&self, key: Option<String>) -> Result<Option<String>, RpcError> {
        self.local.attachment(key).await
    }
    async fn slow(&self, millis: i32) -> Result<Option<String>, RpcError> {
        self.local.slow(millis).await
    }
    async fn whoami(&self) -> Result<Option<String>, RpcError> {
        self.local.whoami().await
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let mut loader = Config::loader();
    for s in &args.set {
        loader = loader.set_arg(s)?;
    }
    let config = loader
        .process_env()
        .code("dubbo.application.name", "interop-trace-relay")
        .code("dubbo.protocol.name", args.protocol.clone())
        .code("dubbo.protocol.port", args.port.to_string())
        .code("dubbo.protocol.host", args.host.clone())
        .load()
        .context("cannot load the configuration")?;
    let rubbo = Rubbo::from_config(&config).context("cannot build the application")?;
    let invoker = rubbo
        .refer_url(&InteropServiceClient::SERVICE, &args.downstream)
        .await
        .with_context(|| format!("cannot refer {}", args.downstream))?;
    let relay = Relay {
        local: InteropProvider::new(rubbo.application(), &args.host, args.port),
        downstream: InteropServiceClient::new(invoker),
    };
    let url = rubbo
        .export(InteropServiceServer::new(Arc::new(relay)))
        .await
        .with_context(|| format!("cannot serve on {}:{}", args.host, args.port))?;
    println!("READY {} {}", url.protocol().unwrap_or("dubbo"), url.port());
    shutdown_signal().await;
    eprintln!("shutting down");
    rubbo.shutdown().await;
    Ok(())
}
