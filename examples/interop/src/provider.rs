//! The contract's provider behaviour, and `serve()` to run it on a port.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rubbo::config::Config;
use rubbo::{RpcError, Rubbo, Url, context};

use crate::contract::{InteropService, InteropServiceServer, User, contract_user};
use crate::greeter::GreeterProvider;
use crate::greeter::proto::GreeterServer;
use crate::stream_service::{StreamProvider, StreamServiceServer};

/// The provider: every method behaves as the contract's table says.
#[derive(Debug, Clone, Default)]
pub struct InteropProvider {
    id: Arc<std::sync::OnceLock<String>>,
}

impl InteropProvider {
    /// A provider whose `whoami` answers `<application>@<host>:<port>`.
    pub fn new(application: &str, host: &str, port: u16) -> Self {
        let p = InteropProvider::default();
        p.set_identity(application, host, port);
        p
    }

    /// Sets the `whoami` answer once the bound port is known (first call wins).
    pub fn set_identity(&self, application: &str, host: &str, port: u16) {
        let _ = self.id.set(format!("{application}@{host}:{port}"));
    }
}

impl InteropService for InteropProvider {
    async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError> {
        Ok(s)
    }
    async fn echo_int(&self, v: i32) -> Result<i32, RpcError> {
        Ok(v)
    }
    async fn echo_long(&self, v: i64) -> Result<i64, RpcError> {
        Ok(v)
    }
    async fn echo_double(&self, v: f64) -> Result<f64, RpcError> {
        Ok(v)
    }
    async fn echo_bool(&self, v: bool) -> Result<bool, RpcError> {
        Ok(v)
    }
    async fn echo_bytes(&self, b: Option<Vec<u8>>) -> Result<Option<Vec<u8>>, RpcError> {
        Ok(b)
    }
    async fn echo_list(
        &self,
        l: Option<Vec<Option<String>>>,
    ) -> Result<Option<Vec<Option<String>>>, RpcError> {
        Ok(l)
    }
    async fn echo_map(
        &self,
        m: Option<HashMap<String, Option<i32>>>,
    ) -> Result<Option<HashMap<String, Option<i32>>>, RpcError> {
        Ok(m)
    }
    async fn echo_user(&self, u: Option<User>) -> Result<Option<User>, RpcError> {
        Ok(u)
    }
    async fn list_users(&self, n: i32) -> Result<Option<Vec<User>>, RpcError> {
        Ok(Some((0..n.max(0)).map(contract_user).collect()))
    }
    async fn ping(&self) -> Result<(), RpcError> {
        Ok(())
    }
    async fn fail(&self, message: Option<String>) -> Result<Option<String>, RpcError> {
        Err(RpcError::biz("org.rubbo.interop.InteropException", message))
    }
    async fn attachment(&self, key: Option<String>) -> Result<Option<String>, RpcError> {
        Ok(key.and_then(|k| context::attachment_str(&k)))
    }
    async fn slow(&self, millis: i32) -> Result<Option<String>, RpcError> {
        tokio::time::sleep(Duration::from_millis(u64::try_from(millis).unwrap_or(0))).await;
        Ok(Some("done".to_owned()))
    }
    async fn whoami(&self) -> Result<Option<String>, RpcError> {
        Ok(self.id.get().cloned())
    }
}

/// A running provider.
#[derive(Debug)]
pub struct ProviderHandle {
    /// The application serving it.
    pub rubbo: Rubbo,
    /// The address it listens on.
    pub addr: std::net::SocketAddr,
    /// The provider URL (what the registries carry).
    pub url: Url,
}

impl ProviderHandle {
    /// Graceful stop: unregister, finish in-flight calls, close.
    pub async fn shutdown(self) {
        self.rubbo.shutdown().await;
    }
}

/// Serves the contract over dubbo on `host:port` (port 0 picks a free one) under
/// `application`, registered in `registries` (none: direct calls only).
pub async fn serve(
    application: &str,
    host: &str,
    port: u16,
    registries: &[String],
) -> Result<ProviderHandle, RpcError> {
    serve_on("dubbo", application, host, port, registries).await
}

/// Serves the contract over `protocol` (`dubbo`, `tri`) on `host:port`, as
/// [`serve`] does; over `tri`, the Greeter too.
pub async fn serve_on(
    protocol: &str,
    application: &str,
    host: &str,
    port: u16,
    registries: &[String],
) -> Result<ProviderHandle, RpcError> {
    let mut builder = Rubbo::builder()
        .application(application)
        .host(host)
        .protocol(protocol, port);
    for r in registries {
        builder = builder.registry(r.as_str());
    }
    let rubbo = builder.build()?;
    let provider = InteropProvider::default();
    let url = rubbo
        .export(InteropServiceServer::new(Arc::new(provider.clone())))
        .await?;
    export_greeter(&rubbo, &url).await?;
    let addr: std::net::SocketAddr = format!("{}:{}", host, url.port())
        .parse()
        .map_err(|e| RpcError::network(format!("bad address {host}:{}: {e}", url.port())))?;
    provider.set_identity(application, host, addr.port());
    Ok(ProviderHandle { rubbo, addr, url })
}

/// Serves the contract as `config` says (Java's property tree: application name,
/// registries, protocol host and port, provider and service parameters; see
/// `RubboBuilder::config`). The host defaults to 127.0.0.1. Over `tri`, the Greeter
/// is served beside InteropService.
pub async fn serve_config(config: &Config) -> Result<ProviderHandle, RpcError> {
    let rubbo = Rubbo::from_config(config)?;
    let provider = InteropProvider::default();
    let url = rubbo
        .export(InteropServiceServer::new(Arc::new(provider.clone())))
        .await?;
    export_greeter(&rubbo, &url).await?;
    let host = url.host().unwrap_or("127.0.0.1").to_owned();
    let addr: std::net::SocketAddr = format!("{host}:{}", url.port())
        .parse()
        .map_err(|e| RpcError::network(format!("bad address {host}:{}: {e}", url.port())))?;
    provider.set_identity(rubbo.application(), &host, addr.port());
    Ok(ProviderHandle { rubbo, addr, url })
}

/// Exports the Greeter and the wrapper-mode StreamService beside InteropService when
/// `url` (the first protocol's) is Triple: streams and protobuf have no dubbo form.
async fn export_greeter(rubbo: &Rubbo, url: &Url) -> Result<(), RpcError> {
    if url.protocol() == Some("tri") {
        rubbo
            .export(GreeterServer::new(Arc::new(GreeterProvider)))
            .await?;
        rubbo
            .export(StreamServiceServer::new(Arc::new(StreamProvider)))
            .await?;
    }
    Ok(())
}
