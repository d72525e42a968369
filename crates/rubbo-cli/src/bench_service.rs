//! `rubbo bench-server`: a Rubbo provider of `org.rubbo.bench.EchoService:1.0.0`
//! (`String echo(String)`, `User echoUser(User)` with the interop contract's `User`),
//! the service `bench/java` serves from Java Dubbo, so that
//! load tools (`rubbo bench`, the Java client) can be pointed at either server.

use std::process::ExitCode;
use std::sync::Arc;

use std::collections::HashMap;

use anyhow::{Context, Result};
use rubbo::{BigDecimal, Date, JavaType, RpcError, Rubbo};
use serde::{Deserialize, Serialize};

/// `org.rubbo.interop.Gender` of the interop contract (`shared/interop/CONTRACT.md`).
#[derive(Serialize, Deserialize, JavaType, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename = "org.rubbo.interop.Gender")]
#[allow(clippy::upper_case_acronyms)]
pub(crate) enum Gender {
    MALE,
    FEMALE,
}

/// `org.rubbo.interop.Address` of the interop contract.
#[derive(Serialize, Deserialize, JavaType, Debug, Clone, PartialEq, Default)]
#[serde(rename = "org.rubbo.interop.Address", default)]
pub(crate) struct Address {
    city: Option<String>,
    street: Option<String>,
    zip: i32,
}

/// `org.rubbo.interop.User` of the interop contract: the bench's POJO payload.
#[derive(Serialize, Deserialize, JavaType, Debug, Clone, PartialEq, Default)]
#[serde(rename = "org.rubbo.interop.User", rename_all = "camelCase", default)]
pub(crate) struct User {
    id: i64,
    name: Option<String>,
    age: i32,
    gender: Option<Gender>,
    address: Option<Address>,
    tags: Option<Vec<String>>,
    props: Option<HashMap<String, String>>,
    created_at: Option<Date>,
    balance: Option<BigDecimal>,
}

/// `org.rubbo.bench.EchoService` version `1.0.0`.
#[rubbo::service(interface = "org.rubbo.bench.EchoService", version = "1.0.0")]
pub(crate) trait EchoService {
    /// `String echo(String s)`.
    async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError>;
    /// `org.rubbo.interop.User echoUser(org.rubbo.interop.User u)`.
    async fn echo_user(&self, u: Option<User>) -> Result<Option<User>, RpcError>;
}

#[derive(Debug)]
struct Echo;

impl EchoService for Echo {
    async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError> {
        Ok(s)
    }

    async fn echo_user(&self, u: Option<User>) -> Result<Option<User>, RpcError> {
        Ok(u)
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
