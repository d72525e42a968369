//! The contract's provider behaviour, and `serve()` to run it on a port.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rubbo::{DubboProtocol, Exporter, Protocol, RpcError, Url, context};

use crate::contract::{InteropService, InteropServiceServer, User, contract_user};

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
    /// The protocol serving it.
    pub protocol: DubboProtocol,
    /// The exported service.
    pub exporter: Box<dyn Exporter>,
    /// The address it listens on.
    pub addr: std::net::SocketAddr,
    /// The provider URL (what a registry would carry).
    pub url: Url,
}

impl ProviderHandle {
    /// Graceful stop: unexport, finish in-flight calls, close.
    pub async fn shutdown(self) {
        self.exporter.unexport().await;
    }
}

/// Serves the contract on `host:port` (port 0 picks a free one) under `application`.
pub async fn serve(application: &str, host: &str, port: u16) -> Result<ProviderHandle, RpcError> {
    let url = Url::parse(&format!(
        "dubbo://{host}:{port}/org.rubbo.interop.InteropService?application={application}&interface=org.rubbo.interop.InteropService&version=1.0.0&side=provider&methods={}",
        methods()
    ))
    .map_err(|e| RpcError::new(rubbo::ErrorKind::Unknown, e.to_string()))?;
    let protocol = DubboProtocol::new();
    let provider = InteropProvider::default();
    let server = InteropServiceServer::new(Arc::new(provider.clone()));
    let exporter = protocol.export(server.into_invoker(url.clone())).await?;
    let addr = protocol
        .server_addr(&format!("{host}:{port}"))
        .ok_or_else(|| RpcError::network("server did not start"))?;
    provider.set_identity(application, host, addr.port());
    Ok(ProviderHandle {
        protocol,
        exporter,
        addr,
        url: url.with_port(addr.port()),
    })
}

/// The sorted method list a provider URL carries (`methods=`).
fn methods() -> String {
    let mut names: Vec<&str> = crate::contract::InteropServiceClient::METHODS
        .iter()
        .map(|m| m.name)
        .collect();
    names.sort_unstable();
    names.dedup();
    names.join(",")
}
