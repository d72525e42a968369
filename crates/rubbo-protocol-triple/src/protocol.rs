//! `TripleProtocol`: the `tri` extension of [`Protocol`].

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use rubbo_common::keys;
use rubbo_common::{BoxFuture, BoxInvoker, Exporter, Protocol, RpcError, Url};
use rubbo_remoting::{TlsAcceptor, TlsConnector, tls_client_key};
use tracing::info;

use crate::channel::Channel;
use crate::config::H2Settings;
use crate::health;
use crate::invoker::TripleInvoker;
use crate::schemas::Schemas;
use crate::server::{Handler, Server};
use rubbo_common::executor::{Executions, ExecutorBound};
use rubbo_common::exporters::{
    Bound, Exported, ExporterMap, Servers, exporter_key, remove_exported,
};

/// The protocol's name in the protocol table and in URLs.
pub const TRIPLE: &str = "tri";

/// The Triple protocol: exports services on HTTP/2 servers (several services share
/// one server per address) and refers providers over one shared, multiplexed HTTP/2
/// connection per address.
///
/// ```no_run
/// use rubbo_common::{Protocol, Url};
/// use rubbo_protocol_triple::TripleProtocol;
///
/// # async fn f(service: rubbo_common::BoxInvoker) -> Result<(), rubbo_common::RpcError> {
/// let protocol = TripleProtocol::new();
/// let exporter = protocol.export(service).await?; // serves service.url()
/// let invoker = protocol
///     .refer(Url::parse("tri://127.0.0.1:50051/org.rubbo.interop.InteropService?version=1.0.0").unwrap())
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct TripleProtocol {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    servers: Servers<Server>,
    /// The schemas of the IDL services described to it, and the built-in ones.
    schemas: Schemas,
    /// The connection of each address and settings, while an invoker uses it.
    channels: Mutex<HashMap<String, Weak<Channel>>>,
}

impl TripleProtocol {
    /// A protocol with no servers and no connections yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The addresses of every running server (to learn an ephemeral port).
    pub fn server_addrs(&self) -> Vec<std::net::SocketAddr> {
        self.inner
            .servers
            .lock()
            .values()
            .map(|e| e.server.local_addr())
            .collect()
    }

    fn channel_for(&self, url: &Url) -> Result<Arc<Channel>, RpcError> {
        let addr = url.address();
        let settings = H2Settings::from_url(url);
        let connect_timeout = url.param::<keys::ConnectTimeout>();
        let tls_key = tls_client_key(url);
        let max_pending = url.param::<keys::MaxPending>();
        let key = format!("{addr}|{settings:?}|{connect_timeout:?}|{tls_key}|{max_pending}");
        let mut channels = self.inner.channels.lock();
        channels.retain(|_, c| c.strong_count() > 0);
        if let Some(c) = channels.get(&key).and_then(Weak::upgrade) {
            return Ok(c);
        }
        let tls = TlsConnector::from_url(url, ALPN).map_err(|e| tls_err(url, e))?;
        let c = Arc::new(Channel::new(
            addr,
            settings,
            connect_timeout,
            tls,
            max_pending,
        ));
        channels.insert(key, Arc::downgrade(&c));
        Ok(c)
    }
}

/// What Triple offers in the TLS handshake: HTTP/2 (as Java's `SslContexts` does).
const ALPN: &[&[u8]] = &[b"h2"];

/// A TLS setting of `url` that cannot be used (a missing or bad PEM file...).
fn tls_err(url: &Url, e: rubbo_remoting::TlsError) -> RpcError {
    RpcError::new(
        rubbo_common::ErrorKind::Unknown,
        format!("TLS for {}: {e}", url.address()),
    )
    .with_source(e)
}

impl Protocol for TripleProtocol {
    fn default_port(&self) -> u16 {
        keys::defaults::TRIPLE_PORT
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
            let path = url
                .path()
                .or_else(|| url.service_interface())
                .unwrap_or_default()
                .to_owned();
            let key = exporter_key(url.group(), &path, url.version());
            let existing = this.inner.servers.lock().get(&bind).cloned();
            let entry = match existing {
                Some(e) => e,
                None => {
                    let exporters = ExporterMap::default();
                    let handler = Handler {
                        exporters: exporters.clone(),
                        payload: url.param::<keys::Payload>(),
                        executions: ExecutorBound::from_url(&url)?.map(Executions::new),
                        compressor: crate::compress::Encoding::configured(
                            url.get_param(crate::compress::COMPRESSOR_KEY),
                        )
                        .map_err(|e| {
                            RpcError::new(rubbo_common::ErrorKind::Unknown, e.to_string())
                        })?,
                        schemas: this.inner.schemas.clone(),
                        health: Arc::default(),
                        transport: crate::config::Transport::from_url(&url),
                    };
                    let addr = if host.contains(':') {
                        format!("[{host}]:{}", url.port())
                    } else {
                        bind.clone()
                    };
                    let tls = TlsAcceptor::from_url(&url, ALPN).map_err(|e| tls_err(&url, e))?;
                    let server = Server::bind(
                        &addr,
                        H2Settings::from_url(&url),
                        handler,
                        url.param::<keys::ShutdownTimeout>(),
                        tls,
                    )
                    .await
                    .map_err(|e| {
                        RpcError::network(format!("cannot export on {bind}: {e}")).with_source(e)
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
            let exported = Arc::new(Exported::new(invoker.clone()));
            let interface = exported.interface.clone();
            entry.exporters.write().insert(key.clone(), &path, exported);
            // As Java's `setServiceStatus`: by service key and by interface (and path).
            entry
                .server
                .health()
                .set([key.as_str(), &path, &interface], health::SERVING);
            info!(service = %key, addr = %entry.server.local_addr(), "exported on triple");
            // The URL reported (and registered) names no local key files.
            let url = url
                .with_port(entry.server.local_addr().port())
                .without_params(keys::SSL_SERVER_KEYS);
            Ok(Box::new(TripleExporter {
                protocol: this,
                bind,
                key,
                invoker,
                url,
                executions: entry.server.executions(),
            }) as Box<dyn Exporter>)
        })
    }

    fn describe(&self, service: &str, file_descriptor_set: &'static [u8]) {
        self.inner.schemas.add(service, file_descriptor_set);
    }

    fn refer(&self, url: Url) -> BoxFuture<'static, Result<BoxInvoker, RpcError>> {
        let channel = match self.channel_for(&url) {
            Ok(c) => c,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        Box::pin(async move {
            // Connect now, so a reference to a provider that is not there fails at once.
            let compressor = crate::compress::Encoding::configured(
                url.get_param(crate::compress::COMPRESSOR_KEY),
            )
            .map_err(|e| RpcError::new(rubbo_common::ErrorKind::Unknown, e.to_string()))?;
            channel.sender().await?;
            Ok(Arc::new(TripleInvoker::new(url, channel, compressor)) as BoxInvoker)
        })
    }

    fn abort(&self) {
        for (_, e) in self.inner.servers.lock().drain() {
            e.server.abort();
        }
        for (_, c) in self.inner.channels.lock().drain() {
            if let Some(c) = c.upgrade() {
                c.close();
            }
        }
    }

    fn destroy(&self) -> BoxFuture<'static, ()> {
        let servers: Vec<Bound<Server>> =
            self.inner.servers.lock().drain().map(|(_, e)| e).collect();
        let channels: Vec<Weak<Channel>> =
            self.inner.channels.lock().drain().map(|(_, c)| c).collect();
        Box::pin(async move {
            for c in channels.iter().filter_map(Weak::upgrade) {
                c.close();
            }
            for e in servers {
                e.server.shutdown().await;
            }
        })
    }
}

/// The handle of one exported service; unexporting the last service of a server
/// shuts the server down gracefully.
#[derive(Debug)]
struct TripleExporter {
    protocol: TripleProtocol,
    bind: String,
    key: String,
    invoker: BoxInvoker,
    url: Url,
    executions: Option<Arc<Executions>>,
}

impl Exporter for TripleExporter {
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
        let path = self
            .invoker
            .url()
            .path()
            .or_else(|| self.invoker.url().service_interface())
            .unwrap_or_default()
            .to_owned();
        let interface = self
            .invoker
            .url()
            .service_interface()
            .unwrap_or_default()
            .to_owned();
        Box::pin(async move {
            let bound = protocol.inner.servers.lock().get(&bind).cloned();
            let shut = remove_exported(&protocol.inner.servers, &bind, &key);
            // NOT_SERVING for the key, and for the path and interface unless another
            // version or group is still served there (Java keeps one status per name).
            if let Some(b) = bound {
                let map = b.exporters.read();
                let still_served = |name: &str| map.services().any(|e| &*e.interface == name);
                let mut names = vec![key.as_str()];
                for n in [path.as_str(), interface.as_str()] {
                    if !still_served(n) && !names.contains(&n) {
                        names.push(n);
                    }
                }
                b.server.health().set(names, health::NOT_SERVING);
                drop(map);
            }
            info!(service = %key, "unexported from triple");
            if let Some(server) = shut {
                server.shutdown().await;
            }
        })
    }
}
