//! `Rubbo`: the programmatic bootstrap. An application name, registry address(es), a
//! protocol and port, then services to export and references to create.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # #[rubbo::service(interface = "org.example.Greeter", version = "1.0.0")]
//! # pub trait Greeter { async fn hello(&self, name: String) -> Result<String, rubbo::RpcError>; }
//! # struct Impl;
//! # impl Greeter for Impl { async fn hello(&self, n: String) -> Result<String, rubbo::RpcError> { Ok(n) } }
//! # async fn run() -> Result<(), rubbo::RpcError> {
//! use rubbo::Rubbo;
//!
//! // Provider
//! let provider = Rubbo::builder()
//!     .application("greeter-provider")
//!     .registry("zookeeper://127.0.0.1:2181")
//!     .port(20880)
//!     .build()?;
//! provider.export(GreeterServer::new(Arc::new(Impl))).await?;
//!
//! // Consumer
//! let consumer = Rubbo::builder()
//!     .application("greeter-consumer")
//!     .registry("zookeeper://127.0.0.1:2181")
//!     .build()?;
//! let greeter = GreeterClient::new(consumer.refer(&GreeterClient::SERVICE).await?);
//! println!("{}", greeter.hello("world".into()).await?);
//! # provider.shutdown().await;
//! # Ok(()) }
//! ```

use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use rubbo_cluster::ClusterContext;
use rubbo_common::filter::{Stage, build_chain};
use rubbo_common::keys;
use rubbo_common::{
    BoxInvoker, Exporter, ExtensionTable, Filter, FilteredProtocol, Protocol, RpcError, Url,
};
use rubbo_protocol_dubbo::DubboProtocol;
use rubbo_protocol_triple::{TRIPLE, TripleProtocol};
use rubbo_registry::{DynamicConfigurationFactory, RegistryFactory, SharedDynamicConfiguration};
use tracing::{info, warn};

use crate::codegen::{Dispatch, ServerInvoker, ServiceDescriptor};
use crate::config_center::{ConfigCenter, Source};
use crate::registry_protocol::{RegistryProtocol, config_err};

mod app_discovery;
mod config;
mod lazy;
pub(crate) use config::config_center_url;
// The QoS side lives in src/qos.rs; as a child module it reads `Inner` as is.
#[path = "qos.rs"]
mod qos;
// Metrics and tracing live in src/observe.rs, beside the QoS side.
#[path = "observe.rs"]
mod observe;

/// The registry factories built in: `memory`, `dubbo` (the dev registry, see
/// [`crate::dev_registry`]), and `zookeeper` with the feature.
pub fn registry_factories() -> ExtensionTable<dyn RegistryFactory> {
    registry_factories_on(&Sessions::default())
}

/// ZooKeeper sessions shared by the registries and the config center of one
/// application (nothing without the `zookeeper` feature).
#[derive(Debug, Clone, Default)]
pub(crate) struct Sessions {
    #[cfg(feature = "zookeeper")]
    zookeeper: rubbo_registry_zookeeper::ZookeeperSessions,
}

/// [`registry_factories`], with ZooKeeper registries on `sessions`.
fn registry_factories_on(_sessions: &Sessions) -> ExtensionTable<dyn RegistryFactory> {
    #[cfg(feature = "zookeeper")]
    let t = {
        let mut t = rubbo_registry::registry_factories();
        rubbo_registry_zookeeper::register_factory_with(&mut t, _sessions.zookeeper.clone());
        t
    };
    #[cfg(not(feature = "zookeeper"))]
    let mut t = rubbo_registry::registry_factories();
    #[cfg(feature = "zookeeper")]
    let mut t = t;
    t.register(
        "dubbo",
        Arc::new(crate::dev_registry::DevRegistryFactory::default()),
    );
    // Application level only: at interface level it registers and finds nothing.
    #[cfg(feature = "kubernetes")]
    rubbo_registry_kubernetes::register_factory(&mut t);
    t
}

/// The config center factories built in: `zookeeper` with the feature.
pub fn config_center_factories() -> ExtensionTable<dyn DynamicConfigurationFactory> {
    config_center_factories_on(&Sessions::default())
}

fn config_center_factories_on(
    _sessions: &Sessions,
) -> ExtensionTable<dyn DynamicConfigurationFactory> {
    #[allow(unused_mut)]
    let mut t: ExtensionTable<dyn DynamicConfigurationFactory> =
        ExtensionTable::new("config center", "zookeeper");
    #[cfg(feature = "zookeeper")]
    rubbo_registry_zookeeper::register_config_center_factory(&mut t, _sessions.zookeeper.clone());
    t
}

/// The protocols built in: `dubbo` and `tri`. Each is made when first used (an
/// application serving only one of them never makes the other).
pub fn protocols() -> ExtensionTable<dyn Protocol> {
    let mut t: ExtensionTable<dyn Protocol> =
        ExtensionTable::new("protocol", keys::defaults::PROTOCOL);
    t.register(
        keys::defaults::PROTOCOL,
        Arc::new(lazy::LazyProtocol::new(keys::defaults::PROTOCOL, || {
            Arc::new(DubboProtocol::new())
        })),
    );
    t.register(
        TRIPLE,
        Arc::new(lazy::LazyProtocol::new(TRIPLE, || {
            Arc::new(TripleProtocol::new())
        })),
    );
    t
}

/// With no config center configured, the first registry whose protocol has one
/// (ZooKeeper) serves as the config center, unless it says `use-as-config-center=false`:
/// Java's `useRegistryAsConfigCenterIfNecessary`, which is how rules that Dubbo Admin
/// writes next to the registrations reach applications that configured only a
/// registry. Its `group` is the config center's namespace and group, as in Java; it
/// shares the registry's session, and never fails a reference the registry serves
/// (`check=false`: rules apply once it is reachable).
fn registry_as_config_center(registries: &[Url], sessions: &Sessions) -> ConfigCenter {
    if registries.is_empty() {
        return ConfigCenter::default();
    }
    let table = config_center_factories_on(sessions);
    match registry_config_center_url(registries, &table) {
        Some(url) => ConfigCenter::new(Source::Url(url, Arc::new(table))),
        None => ConfigCenter::default(),
    }
}

/// The config center URL that the first registry able to serve as one gives (see
/// [`registry_as_config_center`]), or `None`.
pub(crate) fn registry_config_center_url(
    registries: &[Url],
    table: &ExtensionTable<dyn DynamicConfigurationFactory>,
) -> Option<Url> {
    for r in registries {
        let r = rubbo_registry::resolve_registry_url(r);
        if r.get_param(keys::USE_AS_CONFIG_CENTER_KEY)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
        {
            continue;
        }
        let Some(protocol) = r.protocol().filter(|p| table.contains(p)) else {
            continue;
        };
        let mut url = r.with_param(keys::CHECK_KEY, "false");
        if let Some(group) = r.get_param(keys::GROUP_KEY).map(str::to_owned) {
            url = url.with_param(keys::NAMESPACE_KEY, group);
        }
        info!(registry = %r.address(), protocol, "the registry serves as config center too");
        return Some(url);
    }
    None
}

/// Builds a [`Rubbo`]. See [`Rubbo::builder`].
#[derive(Debug, Clone)]
pub struct RubboBuilder {
    application: String,
    registries: Vec<String>,
    host: String,
    port: u16,
    /// The protocols services are exported on, with their ports; empty: `dubbo` on
    /// `port`.
    exports: Vec<(String, u16)>,
    params: Vec<(String, String)>,
    registry_factories: Option<Arc<ExtensionTable<dyn RegistryFactory>>>,
    protocols: Vec<(String, Arc<dyn Protocol>)>,
    filters: Vec<(String, Arc<dyn Filter>)>,
    /// URL parameters by scope, from [`config`](Self::config).
    scoped: config::ScopedParams,
    /// The config center address, from [`config_center`](Self::config_center).
    config_center: Option<String>,
    /// A config center instance, from [`dynamic_configuration`](Self::dynamic_configuration).
    dynamic_configuration: Option<SharedDynamicConfiguration>,
    qos: qos::QosSettings,
    app_discovery: app_discovery::Settings,
    observe: observe::ObserveSettings,
}

impl RubboBuilder {
    /// The application name (`application=`), used in registrations and `remote.application`.
    pub fn application(mut self, name: impl Into<String>) -> Self {
        self.application = name.into();
        self
    }

    /// Adds a registry (`zookeeper://127.0.0.1:2181`, `memory://local`). `N/A` is
    /// ignored. With none, services are only exported and references need a direct URL.
    pub fn registry(mut self, address: impl Into<String>) -> Self {
        let a = address.into();
        if !a.is_empty() && !a.eq_ignore_ascii_case("N/A") {
            self.registries.push(a);
        }
        self
    }

    /// The host to bind and advertise (default `127.0.0.1`).
    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.host = host.into();
        self
    }

    /// The dubbo protocol port (default 20880; 0 picks a free one), used when no
    /// [`protocol`](Self::protocol) is configured.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Exports every service on protocol `name` (a name of the protocol table:
    /// `dubbo`, or one added with [`protocol_extension`](Self::protocol_extension)) at
    /// `port` (0 picks a free one). Call once per protocol: a service is exported on
    /// each. With none, services are exported on `dubbo` at [`port`](Self::port).
    pub fn protocol(mut self, name: impl Into<String>, port: u16) -> Self {
        self.exports.push((name.into(), port));
        self
    }

    /// Adds (or replaces) a protocol implementation under `name`, for
    /// [`protocol`](Self::protocol) and for referring `name://` providers.
    pub fn protocol_extension(
        mut self,
        name: impl Into<String>,
        protocol: Arc<dyn Protocol>,
    ) -> Self {
        self.protocols.push((name.into(), protocol));
        self
    }

    /// Adds (or replaces) a filter under `name`. It runs where its
    /// [`Activate`](rubbo_common::filter::Activate) says, or where named in
    /// `service.filter` / `reference.filter` (see [`rubbo_common::filter`]).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # #[rubbo::service(interface = "org.example.Greeter", version = "1.0.0")]
    /// # pub trait Greeter { async fn hello(&self, name: String) -> Result<String, rubbo::RpcError>; }
    /// # struct Impl;
    /// # impl Greeter for Impl { async fn hello(&self, n: String) -> Result<String, rubbo::RpcError> { Ok(n) } }
    /// use rubbo::filter::Activate;
    /// use rubbo::{filter_fn, BoxInvoker, Invocation, Rubbo};
    /// use std::sync::atomic::{AtomicU64, Ordering};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// // Counts every call this application serves, whatever the protocol.
    /// let served = Arc::new(AtomicU64::new(0));
    /// let count = served.clone();
    /// let counter = filter_fn(move |inv: Invocation, next: BoxInvoker| {
    ///     count.fetch_add(1, Ordering::Relaxed);
    ///     next.invoke(inv)
    /// })
    /// .with_activate(Activate::provider(0));
    /// let app = Rubbo::builder().application("demo").port(0).filter("count", counter).build()?;
    /// let url = app.export(GreeterServer::new(Arc::new(Impl))).await?;
    ///
    /// let address = format!("dubbo://{}", url.address());
    /// let greeter = GreeterClient::new(app.refer_url(&GreeterClient::SERVICE, &address).await?);
    /// for name in ["a", "b", "c"] {
    ///     greeter.hello(name.into()).await?;
    /// }
    /// assert_eq!(served.load(Ordering::Relaxed), 3);
    /// app.shutdown().await;
    /// # Ok::<(), rubbo::RpcError>(()) }).unwrap();
    /// ```
    pub fn filter(mut self, name: impl Into<String>, filter: impl Filter) -> Self {
        self.filters.push((name.into(), Arc::new(filter)));
        self
    }

    /// A parameter for every exported service and reference (`timeout`, `retries`,
    /// `loadbalance`, `cluster`, `check`, `weight`...).
    pub fn param(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.params.push((key.into(), value.into()));
        self
    }

    /// Replaces the registry factories (to add your own registry type, or to share
    /// one `memory://` registry between several applications in one process).
    pub fn registry_factories(mut self, t: Arc<ExtensionTable<dyn RegistryFactory>>) -> Self {
        self.registry_factories = Some(t);
        self
    }

    /// The config center (`zookeeper://127.0.0.1:2181?namespace=dubbo&timeout=3000`):
    /// live governance rules (override, condition and tag routes, as Dubbo Admin
    /// writes them) are read from it, beside the registry's, and applied while calls
    /// go on. It is connected at the first reference through a registry. URL
    /// parameters: `namespace`, `group`, `timeout`, `check` (default true: an
    /// unreachable config center fails that reference; `false`: references start and
    /// the rules apply once it is reachable), `dubbo.config-center.root-path` /
    /// `base-path`. On the same ZooKeeper as a registry it shares its session.
    pub fn config_center(mut self, address: impl Into<String>) -> Self {
        let a = address.into();
        if !a.is_empty() && !a.eq_ignore_ascii_case("N/A") {
            self.config_center = Some(a);
        }
        self
    }

    /// Uses `cc` as the config center (an in-memory one in tests, or your own
    /// implementation); it wins over [`config_center`](Self::config_center).
    pub fn dynamic_configuration(mut self, cc: SharedDynamicConfiguration) -> Self {
        self.dynamic_configuration = Some(cc);
        self
    }

    /// Validates the configuration.
    pub fn build(self) -> Result<Rubbo, RpcError> {
        if self.application.is_empty() {
            return Err(config_err("an application name is required"));
        }
        let registries = self
            .registries
            .iter()
            .map(|r| {
                Url::parse(r).map_err(|e| config_err(format!("bad registry address {r}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let sessions = Sessions::default();
        // The registry factories are made here only to check the registries' names;
        // with no registry, when the registry protocol is first needed.
        let factories = match (&self.registry_factories, registries.is_empty()) {
            (Some(t), _) => Some(t.clone()),
            (None, false) => Some(Arc::new(registry_factories_on(&sessions))),
            (None, true) => None,
        };
        let config_center = match (&self.dynamic_configuration, &self.config_center) {
            (Some(cc), _) => ConfigCenter::new(Source::Instance(cc.clone())),
            (None, Some(address)) => {
                let url = Url::parse(address)
                    .map_err(|e| config_err(format!("bad config center address {address}: {e}")))?;
                let table = config_center_factories_on(&sessions);
                table
                    .get(url.protocol().unwrap_or("zookeeper"))
                    .map_err(|e| config_err(e.to_string()))?;
                ConfigCenter::new(Source::Url(url, Arc::new(table)))
            }
            (None, None) => registry_as_config_center(&registries, &sessions),
        };
        if let Some(factories) = &factories {
            for r in &registries {
                let name = rubbo_registry::resolve_registry_url(r);
                let name = name.protocol().unwrap_or_default();
                factories.get(name).map_err(|e| config_err(e.to_string()))?;
            }
        }
        let mut filters = rubbo_filter::builtin_filters();
        // Nothing configured (the default): no metrics, no tracing, no exporter, and
        // none of their code run.
        let (metrics, otlp) = if self.observe.is_empty() {
            (None, None)
        } else {
            let metrics = self
                .observe
                .install(&mut filters, &self.application, &self.host);
            (metrics, self.observe.start_otlp(&self.application)?)
        };
        for (name, f) in self.filters {
            filters.register(name, f);
        }
        let filters = Arc::new(filters);
        let mut raw = protocols();
        for (name, p) in self.protocols {
            raw.register(name, p);
        }
        let exports = if self.exports.is_empty() {
            vec![(keys::defaults::PROTOCOL.to_owned(), self.port)]
        } else {
            self.exports
        };
        for (name, _) in &exports {
            raw.get(name).map_err(|e| config_err(e.to_string()))?;
        }
        let mut protocols = raw.clone();
        let fs = filters.clone();
        protocols.add_wrapper(move |p| Arc::new(FilteredProtocol::new(p, fs.clone())));
        let protocols = Arc::new(protocols);
        let config_center = config_center
            .for_application(&self.application)
            .with_metrics(metrics.clone());
        let app_discovery =
            app_discovery::AppDiscovery::new(self.app_discovery, &sessions, config_center.clone())?;
        if let Some(p) = app_discovery.metadata_service_protocol() {
            raw.get(p).map_err(|e| {
                config_err(format!(
                    "dubbo.application.{}={p}: {e}",
                    keys::METADATA_SERVICE_PROTOCOL_KEY
                ))
            })?;
        }
        let rubbo = Rubbo {
            inner: Arc::new(Inner {
                application: self.application,
                registries,
                host: self.host,
                exports,
                params: self.params,
                scoped: self.scoped,
                raw_protocols: raw,
                protocols,
                filters,
                registry_factories: factories,
                sessions,
                config_center,
                registry_protocol: OnceLock::new(),
                cluster: OnceLock::new(),
                exporters: Mutex::new(Vec::new()),
                references: Mutex::new(Vec::new()),
                qos: qos::QosState::default(),
                app_discovery,
                metrics,
                otlp,
            }),
        };
        qos::start(&rubbo, &self.qos)?;
        Ok(rubbo)
    }
}

/// A Rubbo application: exports services and refers remote ones. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Rubbo {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    application: String,
    registries: Vec<Url>,
    host: String,
    /// The protocols services are exported on, with their ports.
    exports: Vec<(String, u16)>,
    params: Vec<(String, String)>,
    /// URL parameters by scope, from the configuration.
    scoped: config::ScopedParams,
    /// The protocols as registered, to stop them.
    raw_protocols: ExtensionTable<dyn Protocol>,
    /// The protocols with their filter chains, to export and refer with.
    protocols: Arc<ExtensionTable<dyn Protocol>>,
    filters: Arc<ExtensionTable<dyn Filter>>,
    /// The registry factories, once made (see [`Rubbo::registry_protocol`]).
    registry_factories: Option<Arc<ExtensionTable<dyn RegistryFactory>>>,
    sessions: Sessions,
    config_center: ConfigCenter,
    /// Made when first needed (an export or reference through a registry, QoS): an
    /// application that exports and refers only directly never runs its code.
    registry_protocol: OnceLock<RegistryProtocol>,
    /// Made when first needed (a reference, or [`Rubbo::cluster`]).
    cluster: OnceLock<ClusterContext>,
    exporters: Mutex<Vec<Arc<dyn Exporter>>>,
    references: Mutex<Vec<BoxInvoker>>,
    qos: qos::QosState,
    app_discovery: app_discovery::AppDiscovery,
    /// The metrics, when on.
    metrics: Option<rubbo_metrics::Metrics>,
    /// The OTLP span exporter, when configured; flushed at shutdown.
    #[cfg(feature = "otlp")]
    otlp: Option<crate::otlp::OtlpTracing>,
    #[cfg(not(feature = "otlp"))]
    #[allow(dead_code)]
    otlp: Option<()>,
}

fn now_ms() -> String {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
        .to_string()
}

impl Rubbo {
    /// A builder with defaults: host `127.0.0.1`, port 20880, no registry.
    pub fn builder() -> RubboBuilder {
        RubboBuilder {
            application: String::new(),
            registries: Vec::new(),
            host: "127.0.0.1".to_owned(),
            port: keys::defaults::DUBBO_PORT,
            exports: Vec::new(),
            params: Vec::new(),
            registry_factories: None,
            protocols: Vec::new(),
            filters: Vec::new(),
            scoped: config::ScopedParams::default(),
            config_center: None,
            dynamic_configuration: None,
            qos: qos::QosSettings::default(),
            app_discovery: app_discovery::Settings::default(),
            observe: observe::ObserveSettings::default(),
        }
    }

    /// The application name.
    pub fn application(&self) -> &str {
        &self.inner.application
    }

    /// The cluster context (statistics, balancers, strategies, mocks).
    pub fn cluster(&self) -> &ClusterContext {
        self.inner.cluster.get_or_init(ClusterContext::default)
    }

    /// The registry protocol (exports and references through registries), made on
    /// first use with the registry factories, the cluster context and the config
    /// center.
    pub(crate) fn registry_protocol(&self) -> &RegistryProtocol {
        let i = &self.inner;
        i.registry_protocol.get_or_init(|| {
            let factories = i
                .registry_factories
                .clone()
                .unwrap_or_else(|| Arc::new(registry_factories_on(&i.sessions)));
            RegistryProtocol::new(i.protocols.clone(), factories, self.cluster().clone())
                .with_config_center(i.config_center.clone())
                .with_metrics(i.metrics.clone())
        })
    }

    /// The provider URL a service is exported under on the first configured protocol
    /// (before the port is bound).
    pub fn provider_url(&self, service: &ServiceDescriptor) -> Result<Url, RpcError> {
        let (protocol, port) = &self.inner.exports[0];
        self.provider_url_on(service, protocol, *port)
    }

    fn provider_url_on(
        &self,
        service: &ServiceDescriptor,
        protocol: &str,
        port: u16,
    ) -> Result<Url, RpcError> {
        let i = &self.inner;
        let mut methods: Vec<&str> = service.methods.iter().map(|m| m.name).collect();
        methods.sort_unstable();
        methods.dedup();
        let mut url = Url::parse(&format!(
            "{protocol}://{}:{port}/{}",
            i.host, service.interface
        ))
        .map_err(|e| config_err(e.to_string()))?
        .with_params([
            (keys::APPLICATION_KEY, i.application.as_str()),
            (keys::INTERFACE_KEY, service.interface),
            (keys::SIDE_KEY, keys::PROVIDER_SIDE),
            (keys::METHODS_KEY, &methods.join(",")),
            (keys::DUBBO_VERSION_KEY, keys::defaults::DUBBO_VERSION),
            (keys::DYNAMIC_KEY, "true"),
            (keys::GENERIC_KEY, "false"),
            (keys::DEPRECATED_KEY, "false"),
            (keys::PREFER_SERIALIZATION_KEY, "hessian2"),
            (keys::PID_KEY, &std::process::id().to_string()),
            (keys::TIMESTAMP_KEY, &now_ms()),
            (keys::RUBBO_VERSION_KEY, env!("CARGO_PKG_VERSION")),
        ])
        .with_params(i.scoped.provider())
        .with_params(i.params.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .with_params(i.scoped.service(service.interface));
        if !service.version.is_empty() {
            url = url.with_param(keys::VERSION_KEY, service.version);
        }
        if !service.group.is_empty() {
            url = url.with_param(keys::GROUP_KEY, service.group);
        }
        let idl = service.idl_methods();
        if !idl.is_empty() {
            url = url.with_param(keys::IDL_METHODS_KEY, &idl);
        }
        let streams = service.stream_methods();
        if !streams.is_empty() {
            url = url.with_param(keys::STREAM_METHODS_KEY, &streams);
        }
        Ok(url)
    }

    /// Exports a service (a generated `XServer`) on every configured protocol and
    /// registers it in every registry. Returns the URL it is reachable at on the first
    /// protocol.
    pub async fn export<D: Dispatch>(&self, service: D) -> Result<Url, RpcError> {
        let i = &self.inner;
        let _exporting = i.qos.exporting();
        let service_invoker = Arc::new(ServerInvoker::new(service, Url::new("local", &i.host, 0)));
        let mut exported = Vec::new();
        let mut reachable = None;
        for (protocol, port) in &i.exports {
            let descriptor = service_invoker.get_ref().service();
            let url = self.provider_url_on(descriptor, protocol, *port)?;
            if !descriptor.file_descriptor_set.is_empty() {
                if let Ok(p) = i.protocols.get(protocol) {
                    p.describe(descriptor.interface, descriptor.file_descriptor_set);
                }
            }
            let invoker: BoxInvoker = Arc::new(Rebased::new(
                service_invoker.clone() as BoxInvoker,
                url.clone(),
            ));
            let first = self.export_on(invoker, url).await?;
            reachable.get_or_insert_with(|| first.url());
            exported.extend(std::iter::once(first));
        }
        let reachable = reachable.ok_or_else(|| config_err("no protocol to export on"))?;
        let urls: Vec<Url> = exported.iter().map(|e| e.url()).collect();
        i.qos.add_local(
            service_invoker.get_ref().service(),
            Arc::new(Rebased::new(
                service_invoker.clone() as BoxInvoker,
                reachable.clone(),
            )),
        );
        i.app_discovery.exported(self, &urls).await?;
        info!(service = %reachable.service_key(), addr = %reachable.address(), "service exported");
        i.qos.mark_started();
        Ok(reachable)
    }

    /// Exports `invoker` (reporting the provider URL `url`) on its protocol, and
    /// registers it in every registry; the exporters are kept for shutdown. Returns
    /// the first exporter (the one bound to the port).
    async fn export_on(
        &self,
        invoker: BoxInvoker,
        url: Url,
    ) -> Result<Arc<dyn Exporter>, RpcError> {
        let i = &self.inner;
        let mut exported: Vec<Arc<dyn Exporter>> = Vec::new();
        if i.registries.is_empty() || !i.app_discovery.registers_interfaces() {
            let name = url.protocol().unwrap_or(keys::defaults::PROTOCOL);
            let protocol = i
                .protocols
                .get(name)
                .map_err(|e| config_err(e.to_string()))?;
            exported.push(Arc::from(protocol.export(invoker).await?));
        } else {
            // The first registry's export binds the server; the others register it.
            let mut bound: Option<Url> = None;
            for r in &i.registries {
                let exporter: Arc<dyn Exporter> = match &bound {
                    None => {
                        let reg = self
                            .registry_url(r)
                            .with_param_encoded(keys::EXPORT_KEY, &url.to_full_string());
                        let e: Arc<dyn Exporter> = Arc::from(
                            self.registry_protocol()
                                .export(Arc::new(Rebased::new(invoker.clone(), reg)))
                                .await?,
                        );
                        bound = Some(e.url());
                        e
                    }
                    Some(b) => Arc::from(
                        self.registry_protocol()
                            .register_only(&self.registry_url(r), invoker.clone(), b.clone())
                            .await?,
                    ),
                };
                exported.push(exporter);
            }
        }
        let first = exported
            .first()
            .cloned()
            .ok_or_else(|| config_err("nothing exported"))?;
        // The server's execution bound in the metrics, as Java's thread pool of that
        // port (shared by the services the server serves).
        if let (Some(metrics), Some(pool)) = (&i.metrics, first.executions()) {
            let port = first.url().port();
            metrics.thread_pool(
                rubbo_metrics::names::thread_pool::server_pool_name(port),
                pool,
            );
        }
        i.exporters.lock().extend(exported);
        Ok(first)
    }

    fn registry_url(&self, registry: &Url) -> Url {
        let protocol = registry.protocol().unwrap_or("zookeeper");
        let base = if protocol == keys::protocols::REGISTRY {
            registry.clone()
        } else {
            registry
                .with_protocol(keys::protocols::REGISTRY)
                .with_param(keys::REGISTRY_KEY, protocol)
        };
        base.with_path("org.apache.dubbo.registry.RegistryService")
            .with_param(keys::APPLICATION_KEY, &self.inner.application)
    }

    /// The parameters of a reference to `target`: the same for a generated client's
    /// service and for a generic reference, which has no `methods` and `generic=true`
    /// instead (as Java's `ReferenceConfig` builds them).
    fn consumer_params(&self, target: &ReferTarget<'_>) -> Vec<(String, String)> {
        let i = &self.inner;
        let mut p: Vec<(String, String)> = vec![
            (keys::APPLICATION_KEY.into(), i.application.clone()),
            (keys::INTERFACE_KEY.into(), target.interface.into()),
            (keys::SIDE_KEY.into(), keys::CONSUMER_SIDE.into()),
        ];
        match target.methods {
            Some(service) => {
                let mut methods: Vec<&str> = service.methods.iter().map(|m| m.name).collect();
                methods.sort_unstable();
                methods.dedup();
                p.push((keys::METHODS_KEY.into(), methods.join(",")));
            }
            None => p.push((keys::GENERIC_KEY.into(), "true".into())),
        }
        p.extend([
            (
                keys::DUBBO_VERSION_KEY.into(),
                keys::defaults::DUBBO_VERSION.into(),
            ),
            (keys::PID_KEY.into(), std::process::id().to_string()),
            (keys::TIMESTAMP_KEY.into(), now_ms()),
            (keys::REGISTER_IP_KEY.into(), i.host.clone()),
        ]);
        if !target.version.is_empty() {
            p.push((keys::VERSION_KEY.into(), target.version.into()));
        }
        if !target.group.is_empty() {
            p.push((keys::GROUP_KEY.into(), target.group.into()));
        }
        config::set_params(&mut p, i.scoped.consumer());
        config::set_params(
            &mut p,
            i.params.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        );
        config::set_params(&mut p, i.scoped.reference(target.interface));
        p
    }

    /// An invoker for `service` through the registries (a cluster over the providers
    /// they announce). Wrap it in the generated client: `XClient::new(invoker)`.
    pub async fn refer(&self, service: &'static ServiceDescriptor) -> Result<BoxInvoker, RpcError> {
        self.refer_target(&ReferTarget::service(service)).await
    }

    /// [`refer`](Self::refer) for a service or a generic reference.
    pub(crate) async fn refer_target(
        &self,
        target: &ReferTarget<'_>,
    ) -> Result<BoxInvoker, RpcError> {
        let i = &self.inner;
        let params = self.consumer_params(target);
        // By the migration step: interface level, application level, or both.
        let invoker = i.app_discovery.refer(self, &params).await?;
        let invoker = self.cluster_chain(invoker)?;
        i.references.lock().push(invoker.clone());
        i.qos.mark_started();
        Ok(invoker)
    }

    /// An interface-level reference with the `refer=` parameters `query`, through
    /// every registry (the first one with an available provider serves), with the
    /// directory of each.
    pub(crate) async fn refer_interface_level(
        &self,
        query: &str,
    ) -> Result<(BoxInvoker, Vec<Arc<dyn rubbo_cluster::Directory>>), RpcError> {
        let i = &self.inner;
        let interface = Url::parse(&format!("?{query}"))
            .ok()
            .and_then(|u| u.get_param(keys::INTERFACE_KEY).map(str::to_owned))
            .unwrap_or_default();
        if i.registries.is_empty() {
            return Err(config_err(format!(
                "no registry configured to find {interface}: add .registry(..) or use refer_url"
            )));
        }
        let mut invokers = Vec::new();
        let mut directories = Vec::new();
        for r in &i.registries {
            let reg = self
                .registry_url(r)
                .with_param_encoded(keys::REFER_KEY, query);
            let (invoker, directory) = self.registry_protocol().refer_via(reg, None).await?;
            invokers.push(invoker);
            directories.push(directory);
        }
        let invoker = if invokers.len() == 1 {
            invokers.remove(0)
        } else {
            // Several registries: the first one with an available provider serves.
            let consumer = Url::parse(&format!("consumer://{}/{interface}", i.host))
                .map_err(|e| config_err(e.to_string()))?
                .with_param(keys::CLUSTER_KEY, "available");
            let dir = self.cluster().static_directory(consumer, invokers);
            self.cluster()
                .join(dir)
                .map_err(|e| config_err(e.to_string()))?
        };
        Ok((invoker, directories))
    }

    /// `invoker` (a cluster) inside the cluster-stage consumer filters.
    fn cluster_chain(&self, invoker: BoxInvoker) -> Result<BoxInvoker, RpcError> {
        build_chain(invoker, &self.inner.filters, Stage::Cluster)
            .map_err(|e| config_err(e.to_string()))
    }

    /// The filter table: the built-ins and the builder's.
    pub fn filters(&self) -> &Arc<ExtensionTable<dyn Filter>> {
        &self.inner.filters
    }

    /// The protocol table, each protocol inside its filter chains.
    pub fn protocols(&self) -> &Arc<ExtensionTable<dyn Protocol>> {
        &self.inner.protocols
    }

    /// An invoker for `service` at a fixed provider address (`dubbo://host:port`),
    /// bypassing registries (Java's `url=` on a reference). Several addresses may be
    /// given separated by `;`: they form a static cluster.
    pub async fn refer_url(
        &self,
        service: &'static ServiceDescriptor,
        address: &str,
    ) -> Result<BoxInvoker, RpcError> {
        self.refer_url_target(&ReferTarget::service(service), address)
            .await
    }

    /// [`refer_url`](Self::refer_url) for a service or a generic reference.
    pub(crate) async fn refer_url_target(
        &self,
        target: &ReferTarget<'_>,
        address: &str,
    ) -> Result<BoxInvoker, RpcError> {
        let i = &self.inner;
        let params = self.consumer_params(target);
        let mut invokers = Vec::new();
        for a in rubbo_cluster::directory::parse_url_list(address)
            .map_err(|e| config_err(format!("bad address {address}: {e}")))?
        {
            let url = a
                .with_path(target.interface)
                .with_params(params.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            let name = url.protocol().unwrap_or(keys::defaults::PROTOCOL);
            let protocol = i
                .protocols
                .get(name)
                .map_err(|e| config_err(e.to_string()))?;
            invokers.push(protocol.refer(url).await?);
        }
        let consumer = Url::parse(&format!("consumer://{}/{}", i.host, target.interface))
            .map_err(|e| config_err(e.to_string()))?
            .with_params(params.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let dir = self.cluster().static_directory(consumer, invokers);
        let invoker = self
            .cluster()
            .join(dir)
            .map_err(|e| config_err(e.to_string()))?;
        let invoker = self.cluster_chain(invoker)?;
        i.references.lock().push(invoker.clone());
        i.qos.mark_started();
        Ok(invoker)
    }

    /// Crashes this application's servers: every connection drops at once and nothing
    /// is unregistered, as when the process dies. For tests and demos of fault
    /// tolerance; use [`shutdown`](Self::shutdown) to stop cleanly.
    pub fn abort(&self) {
        self.inner.exporters.lock().clear();
        for name in self.inner.raw_protocols.names() {
            if let Ok(p) = self.inner.raw_protocols.get(&name) {
                p.abort();
            }
        }
    }

    /// Graceful shutdown: unregister every service first (its registry node is gone at
    /// once), let calls in flight finish (bounded), close servers, drop references.
    pub async fn shutdown(&self) {
        self.inner.app_discovery.shutdown().await;
        // Java's order (`DefaultApplicationDeployer.preDestroy`, then `destroy`): out
        // of every registry first, then each server's graceful stop (the readonly
        // event to every consumer, the calls in flight finished), and only then the
        // exporters go. A call that a consumer sent before it saw the unregistration
        // is still served, not answered "service not found" (which a consumer's
        // failover does not retry).
        let registrations = self
            .inner
            .registry_protocol
            .get()
            .map(RegistryProtocol::registrations)
            .unwrap_or_default();
        for r in futures::future::join_all(registrations.iter().map(|r| r.set_registered(false)))
            .await
            .into_iter()
            .filter_map(Result::err)
        {
            warn!(error = %r, "unregister at shutdown failed");
        }
        let raw = &self.inner.raw_protocols;
        let stops = raw.names().into_iter().filter_map(|n| raw.get(&n).ok());
        futures::future::join_all(stops.map(|p| p.destroy())).await;
        let exporters: Vec<Arc<dyn Exporter>> = self.inner.exporters.lock().drain(..).collect();
        futures::future::join_all(exporters.iter().map(|e| e.unexport())).await;
        for r in self.inner.references.lock().drain(..) {
            r.destroy();
        }
        // Waits (bounded) for every subscription to leave its registry.
        if let Some(p) = self.inner.registry_protocol.get() {
            p.destroy().await;
        }
        self.inner.qos.close();
        // Last, so that the spans of the calls finished above go out too.
        #[cfg(feature = "otlp")]
        if let Some(otlp) = &self.inner.otlp {
            otlp.shutdown().await;
        }
    }
}

/// What a reference points at: a generated client's service, or (with no
/// descriptor) an interface called generically.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReferTarget<'a> {
    pub(crate) interface: &'a str,
    /// `""` when unset.
    pub(crate) version: &'a str,
    /// `""` when unset.
    pub(crate) group: &'a str,
    /// The service's methods; `None` for a generic reference.
    pub(crate) methods: Option<&'static ServiceDescriptor>,
}

impl<'a> ReferTarget<'a> {
    fn service(service: &'static ServiceDescriptor) -> Self {
        ReferTarget {
            interface: service.interface,
            version: service.version,
            group: service.group,
            methods: Some(service),
        }
    }
}

/// The service invoker presented under the registry URL that carries it.
#[derive(Debug)]
struct Rebased {
    inner: BoxInvoker,
    url: Url,
}

impl Rebased {
    fn new(inner: BoxInvoker, url: Url) -> Self {
        Rebased { inner, url }
    }
}

impl rubbo_common::Invoker for Rebased {
    fn invoke(&self, invocation: rubbo_common::Invocation) -> rubbo_common::InvokeFuture {
        self.inner.invoke(invocation)
    }
    fn url(&self) -> &Url {
        &self.url
    }
}

#[cfg(all(test, feature = "zookeeper"))]
mod tests {
    use super::*;

    fn center_of(registries: &[&str]) -> String {
        let urls: Vec<Url> = registries
            .iter()
            .map(|r| Url::parse(r).expect("a registry URL"))
            .collect();
        format!(
            "{:?}",
            registry_as_config_center(&urls, &Sessions::default())
        )
    }

    #[test]
    fn a_zookeeper_registry_serves_as_config_center_unless_told_not_to() {
        let zk = center_of(&["zookeeper://127.0.0.1:2181"]);
        assert!(zk.contains("127.0.0.1:2181"), "{zk}");
        let wrapped = center_of(&["registry://127.0.0.1:2182?registry=zookeeper"]);
        assert!(wrapped.contains("127.0.0.1:2182"), "{wrapped}");
        let off = center_of(&["zookeeper://127.0.0.1:2181?use-as-config-center=false"]);
        assert!(off.contains("none"), "{off}");
        // The development registry has no config center: none.
        let dev = center_of(&["dubbo://127.0.0.1:9090"]);
        assert!(dev.contains("none"), "{dev}");
        // The first registry that can serves.
        let second = center_of(&["dubbo://127.0.0.1:9090", "zookeeper://127.0.0.1:2183"]);
        assert!(second.contains("127.0.0.1:2183"), "{second}");
    }
}
