//! `DubboProtocol`: the `dubbo` extension of [`Protocol`].

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use rubbo_common::executor::{Executions, ExecutorBound};
use rubbo_common::keys::{self, Connections};
use rubbo_common::{BoxFuture, BoxInvoker, Exporter, Protocol, RpcError, Serialization, Url};
use rubbo_remoting::{
    ClientConfig, ConnectionPool, Dispatch, Server, ServerConfig, TlsAcceptor, TlsConnector,
    tls_client_key,
};
use rubbo_serialization::Serializations;
use tracing::info;

use crate::codec;
use crate::invoker::DubboInvoker;
use rubbo_common::exporters::{
    Bound, Exported, ExporterMap, Servers, exporter_key, remove_exported,
};

use crate::server::DubboHandler;

/// The dubbo protocol: exports services on `dubbo://host:port` servers (several
/// services share one server per address) and refers providers over shared,
/// multiplexed connections.
///
/// ```no_run
/// use rubbo_common::{Protocol, Url};
/// use rubbo_protocol_dubbo::DubboProtocol;
///
/// # async fn f(service: rubbo_common::BoxInvoker) -> Result<(), rubbo_common::RpcError> {
/// let protocol = DubboProtocol::new();
/// let exporter = protocol.export(service).await?; // serves service.url()
/// let invoker = protocol
///     .refer(Url::parse("dubbo://127.0.0.1:20880/org.rubbo.interop.InteropService?version=1.0.0").unwrap())
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct DubboProtocol {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    servers: Servers<Server>,
    pools: Mutex<HashMap<String, ConnectionPool>>,
    /// The serializations a consumer URL may name (`serialization=`).
    serializations: Serializations,
}

impl DubboProtocol {
    /// A protocol with no servers and no connections yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A protocol whose references pick their serialization (the URL key
    /// `serialization`, default `hessian2`) from `serializations` instead of the
    /// built-ins. The dubbo body layout is Hessian 2, so only a serialization named
    /// `hessian2` can be used on this protocol; naming another one fails at refer time.
    pub fn with_serializations(serializations: Serializations) -> Self {
        DubboProtocol {
            inner: Arc::new(Inner {
                serializations,
                ..Inner::default()
            }),
        }
    }

    /// The serialization a reference to `url` sends in: the one its `serialization`
    /// key names, which must be known and usable by the dubbo body codec.
    fn serialization_for(&self, url: &Url) -> Result<&'static dyn Serialization, RpcError> {
        let table = &self.inner.serializations;
        let ser = table.select(url).map_err(|e| {
            RpcError::serialization(format!("cannot refer {}: {e}", url.address())).with_source(e)
        })?;
        if !codec::supports(ser) {
            let usable: Vec<String> = table
                .names()
                .into_iter()
                .filter(|n| table.get(n).is_ok_and(codec::supports))
                .collect();
            return Err(RpcError::serialization(format!(
                "cannot refer {}: the dubbo protocol cannot send serialization \"{}\" (usable: {})",
                url.address(),
                ser.name(),
                usable.join(", ")
            )));
        }
        Ok(ser)
    }

    /// The local address of the server exported for `host:port` (to learn an
    /// ephemeral port after exporting on port 0).
    pub fn server_addr(&self, bind: &str) -> Option<std::net::SocketAddr> {
        self.inner
            .servers
            .lock()
            .get(bind)
            .map(|e| e.server.local_addr())
    }

    /// The addresses of every running server.
    pub fn server_addrs(&self) -> Vec<std::net::SocketAddr> {
        self.inner
            .servers
            .lock()
            .values()
            .map(|e| e.server.local_addr())
            .collect()
    }

    fn client_config(url: &Url) -> Result<ClientConfig, RpcError> {
        let tls = TlsConnector::from_url(url, &[]).map_err(|e| tls_err(url, e))?;
        Ok(ClientConfig::default()
            .with_connect_timeout(url.param::<keys::ConnectTimeout>())
            .with_heartbeat(url.param::<keys::Heartbeat>())
            .with_payload(url.param::<keys::Payload>())
            .with_max_pending(url.param::<keys::MaxPending>())
            .with_tls(tls))
    }

    fn server_config(url: &Url) -> Result<ServerConfig, RpcError> {
        let dispatch: Dispatch = url.str_param::<keys::Dispatcher>().parse().map_err(
            |e: rubbo_remoting::RemotingError| {
                RpcError::new(rubbo_common::ErrorKind::Unknown, e.to_string())
            },
        )?;
        // `threadpool`, `threads` and `queues` bound the calls the server runs at once
        // (Java's 200 by default); see `rubbo_common::executor`. `dispatch=direct` runs
        // calls on the connection's reader, as Java's DirectChannelHandler runs them on
        // the I/O thread with no pool: no bound there (a reader waiting for a slot would
        // stop reading, heartbeats included).
        let executor = ExecutorBound::from_url(url)?.filter(|_| dispatch != Dispatch::Direct);
        let mut c = ServerConfig::default()
            .with_heartbeat(url.param::<keys::Heartbeat>())
            .with_dispatch(dispatch)
            .with_executor(executor)
            .with_tls(TlsAcceptor::from_url(url, &[]).map_err(|e| tls_err(url, e))?);
        c.payload = url.param::<keys::Payload>();
        c.shutdown_timeout = url.param::<keys::ShutdownTimeout>();
        Ok(c)
    }

    /// Connection pools are per client configuration, so invokers with the same
    /// settings share connections.
    fn pool_for(&self, url: &Url) -> Result<ConnectionPool, RpcError> {
        let key = format!(
            "{:?}|{:?}|{}|{}|{}",
            url.param::<keys::ConnectTimeout>(),
            url.param::<keys::Heartbeat>(),
            url.param::<keys::Payload>(),
            url.param::<keys::MaxPending>(),
            tls_client_key(url)
        );
        let mut pools = self.inner.pools.lock();
        if let Some(pool) = pools.get(&key) {
            return Ok(pool.clone());
        }
        let pool = ConnectionPool::new(Self::client_config(url)?);
        pools.insert(key, pool.clone());
        Ok(pool)
    }
}

/// A TLS setting of `url` that cannot be used (a missing or bad PEM file...).
fn tls_err(url: &Url, e: rubbo_remoting::TlsError) -> RpcError {
    RpcError::new(
        rubbo_common::ErrorKind::Unknown,
        format!("TLS for {}: {e}", url.address()),
    )
    .with_source(e)
}

impl Protocol for DubboProtocol {
    fn default_port(&self) -> u16 {
        keys::defaults::DUBBO_PORT
    }

    fn export(
        &self,
        invoker: BoxInvoker,
    ) -> BoxFuture<'static, Result<Box<dyn Exporter>, RpcError>> {
        let this = self.clone();
        Box::pin(async move {
            let url = invoker.url().clone();
            let host = url.host().unwrap_or("0.0.0.0").to_owned();
            let bind = format!("{}:{}", host, url.port());
            let key = exporter_key(
                url.group(),
                url.path()
                    .or_else(|| url.service_interface())
                    .unwrap_or_default(),
                url.version(),
            );
            let existing = this.inner.servers.lock().get(&bind).cloned();
            let entry = match existing {
                Some(e) => e,
                None => {
                    let exporters = ExporterMap::default();
                    let handler = DubboHandler {
                        exporters: exporters.clone(),
                        payload: url.param::<keys::Payload>(),
                    };
                    let config = Self::server_config(&url)?;
                    let addr = if host.contains(':') {
                        format!("[{host}]:{}", url.port())
                    } else {
                        bind.clone()
                    };
                    let server =
                        Server::bind(addr.as_str(), config, handler)
                            .await
                            .map_err(|e| {
                                RpcError::network(format!("cannot export on {bind}: {e}"))
                                    .with_source(e)
                            })?;
                    let entry = Bound {
                        server: Arc::new(server),
                        exporters,
                    };
                    this.inner
                        .servers
                        .lock()
                        .insert(bind.clone(), entry.clone());
                    entry
                }
            };
            let path = url
                .path()
                .or_else(|| url.service_interface())
                .unwrap_or_default();
            entry.exporters.write().insert(
                key.clone(),
                path,
                Arc::new(Exported::new(invoker.clone())),
            );
            info!(service = %key, addr = %entry.server.local_addr(), "exported");
            // The URL reported (and registered) names no local key files.
            let url = url
                .with_port(entry.server.local_addr().port())
                .without_params(keys::SSL_SERVER_KEYS);
            Ok(Box::new(DubboExporter {
                protocol: this,
                bind,
                key,
                invoker,
                url,
                executions: entry.server.executions(),
            }) as Box<dyn Exporter>)
        })
    }

    fn refer(&self, url: Url) -> BoxFuture<'static, Result<BoxInvoker, RpcError>> {
        let serialization = match self.serialization_for(&url) {
            Ok(s) => s,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let pool = match self.pool_for(&url) {
            Ok(p) => p,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        Box::pin(async move {
            let addr = url.address();
            let connections = url.param::<Connections>() as usize;
            let clients = pool
                .get(&addr, connections)
                .await
                .map_err(crate::status::error_for_remoting)?;
            Ok(Arc::new(DubboInvoker::new(
                url,
                clients,
                connections > 0,
                serialization,
            )) as BoxInvoker)
        })
    }

    /// Drops every server and its connections at once, without the readonly event,
    /// without draining and without unregistering anything: what a crash looks like
    /// to consumers. Use [`Protocol::destroy`] to stop cleanly.
    fn abort(&self) {
        for (_, e) in self.inner.servers.lock().drain() {
            e.server.abort();
        }
    }

    fn destroy(&self) -> BoxFuture<'static, ()> {
        let servers: Vec<Bound<Server>> =
            self.inner.servers.lock().drain().map(|(_, e)| e).collect();
        Box::pin(async move {
            for e in servers {
                e.server.shutdown().await;
            }
        })
    }
}

/// The handle of one exported service; unexporting the last service of a server
/// shuts the server down gracefully.
#[derive(Debug)]
struct DubboExporter {
    protocol: DubboProtocol,
    bind: String,
    key: String,
    invoker: BoxInvoker,
    url: Url,
    executions: Option<Arc<Executions>>,
}

impl Exporter for DubboExporter {
    fn invoker(&self) -> &BoxInvoker {
        &self.invoker
    }

    fn url(&self) -> Url {
        self.url.clone()
    }

    fn executions(&self) -> Option<Arc<Executions>> {
        self.executions.clone()
    }

    fn unexport(&self) -> BoxFuture<'static, ()> {
        let protocol = self.protocol.clone();
        let bind = self.bind.clone();
        let key = self.key.clone();
        Box::pin(async move {
            let shut = remove_exported(&protocol.inner.servers, &bind, &key);
            info!(service = %key, "unexported");
            if let Some(server) = shut {
                server.shutdown().await;
            }
        })
    }
}
