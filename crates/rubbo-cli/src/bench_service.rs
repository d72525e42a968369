//! `rubbo bench-server`: a Rubbo provider of `org.rubbo.bench.EchoService:1.0.0`
//! (`String echo(String)`), the service `bench/java` serves from Java Dubbo, so that
//! load tools (`rubbo bench`, the Java client) can be pointed at either server.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use rubbo::{RpcError, Rubbo};

/// `org.rubbo.bench.EchoService` version `1.0.0`.
#[rubbo::service(interface = "org.rubbo.bench.EchoService", version = "1.0.0")]
pub(crate) trait EchoService {
    /// `String echo(String s)`.
    async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError>;
}

#[derive(Debug)]
struct Echo;

impl EchoService for Echo {
    async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError> {
        Ok(s)
    }
}

/// Serves the echo service over `protocol` on `host:port` (0: a free port), prints
/// `READY <protocol> <port>` on stdout, and runs until Ctrl-C or SIGTERM.
pub(crate) fn run(protocol: &str, host: &str, port: u16, threads: usize) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let rubbo = Rubbo::builder()
            .application("rubbo-bench-server")
            .host(host)
            .protocol(protocol, port)
            .build()
            .context("cannot build the provider")?;
        let url = rubbo
            .export(EchoServiceServer::new(Arc::new(Echo)))
            .await
            .with_context(|| format!("cannot serve {protocol} on {host}:{port}"))?;
        crate::input::emit(&format!("READY {protocol} {}", url.port()))?;
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        rubbo.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}
