//! The QoS port of a [`Rubbo`] application ([`rubbo_qos`]): `Rubbo` is the
//! [`QosHost`], and the server starts with the application when asked.
//!
//! # Off unless asked
//!
//! Java starts QoS on 22222 by default. Rubbo starts it only when asked: with
//! [`RubboBuilder::qos_port`] or [`RubboBuilder::qos_enable`], or with
//! `dubbo.application.qos-port` / `qos-enable=true` in the configuration (then
//! `qos-enable` defaults to true, as in Java). A library may run several `Rubbo`
//! applications in one process (tests, a provider beside a consumer), where one
//! fixed default port would go to the first and log a failure for each of the others,
//! and an operations port nobody configured should not open. A port already taken is
//! logged and the application goes on, as Java does, unless `qos-check=true`.
//! Unlike Java, an unset `qos-host` binds 127.0.0.1, not every interface: set
//! `qos-host=0.0.0.0` for probes from outside (the permission checks still apply).
//!
//! (This file is the `bootstrap::qos` module, so it reads the application's private
//! parts without widening them.)

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use parking_lot::Mutex;
use rubbo_common::{BoxInvoker, RpcError, Side, Url, keys};
use rubbo_config::ApplicationConfig;
use rubbo_qos::{
    ConfigSection, ConsumerRegistry, ConsumerService, LocalService, LogLevelSwitch, MethodCount,
    MethodSignature, ProviderService, Qos, QosConfig, QosError, QosHost, QosServer, Registration,
    RegistryScope, RouterState, ServerInfo,
};

use crate::codegen::ServiceDescriptor;
use tracing::{info, warn};

use super::{Inner, Rubbo, RubboBuilder};
use crate::registry_protocol::config_err;

/// `dubbo.application.*` attributes and the `qos.*` keys they set.
const ATTRIBUTES: &[(&str, &str)] = &[
    ("qos-enable", keys::QOS_ENABLE_KEY),
    ("qos-check", keys::QOS_CHECK_KEY),
    ("qos-host", keys::QOS_HOST_KEY),
    ("qos-port", keys::QOS_PORT_KEY),
    ("qos-accept-foreign-ip", keys::ACCEPT_FOREIGN_IP_KEY),
    (
        "qos-accept-foreign-ip-whitelist",
        keys::ACCEPT_FOREIGN_IP_WHITELIST_KEY,
    ),
    (
        "qos-anonymous-access-permission-level",
        keys::ANONYMOUS_ACCESS_PERMISSION_LEVEL_KEY,
    ),
    (
        "qos-anonymous-allow-commands",
        keys::ANONYMOUS_ACCESS_ALLOW_COMMANDS_KEY,
    ),
];

/// The builder's QoS settings: `qos.*` parameters, and the log level switch.
#[derive(Debug, Clone, Default)]
pub(crate) struct QosSettings {
    params: Vec<(String, String)>,
    log_levels: Option<LogLevels>,
}

/// The switch `switchLogLevel` goes through.
#[derive(Clone)]
struct LogLevels(Arc<dyn LogLevelSwitch>);

impl std::fmt::Debug for LogLevels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogLevelSwitch")
    }
}

impl QosSettings {
    fn set(&mut self, key: &str, value: String) {
        self.params.retain(|(k, _)| k != key);
        self.params.push((key.to_owned(), value));
    }

    /// The settings as a URL, read through `rubbo_common::keys`.
    fn url(&self) -> Url {
        Url::new("qos", "", 0).with_params(self.params.iter().map(|(k, v)| (k, v)))
    }

    /// Asked for: `qos.enable` says so, or a port was given (nothing configured: off,
    /// and decided without building the settings' URL).
    fn wanted(&self) -> bool {
        if self.params.is_empty() {
            return false;
        }
        let url = self.url();
        match url.get_param(keys::QOS_ENABLE_KEY) {
            Some(_) => url.param::<keys::QosEnable>(),
            None => url.get_param(keys::QOS_PORT_KEY).is_some(),
        }
    }

    /// Takes the `qos-*` attributes of `dubbo.application`.
    pub(crate) fn apply(&mut self, app: &ApplicationConfig) {
        for (attr, key) in ATTRIBUTES {
            if let Some(v) = app.attributes.get(*attr) {
                self.set(key, v.clone());
            }
        }
    }
}

impl RubboBuilder {
    /// Starts the QoS server on `port` (0 picks a free one, see
    /// [`Rubbo::qos_address`]) when the application is built, inside a tokio runtime.
    ///
    /// Unlike Java (on by default, port 22222), Rubbo's QoS is off unless asked here,
    /// with [`qos_enable`](Self::qos_enable), or with `dubbo.application.qos-port` /
    /// `qos-enable` in the [configuration](Self::config): several applications may
    /// share a process, and a port nobody configured should not open. A port already
    /// taken is logged and the application goes on (Java's behaviour) unless
    /// `qos.check=true`. An unset `qos.host` binds 127.0.0.1 (Java binds every
    /// interface): set `qos.host=0.0.0.0` for probes from outside.
    pub fn qos_port(mut self, port: u16) -> Self {
        self.qos.set(keys::QOS_PORT_KEY, port.to_string());
        self
    }

    /// Turns the QoS server on (on Java's port 22222 unless
    /// [`qos_port`](Self::qos_port) says otherwise) or off.
    pub fn qos_enable(mut self, enable: bool) -> Self {
        self.qos.set(keys::QOS_ENABLE_KEY, enable.to_string());
        self
    }

    /// Lets the QoS command `switchLogLevel` change the log level through `levels`:
    /// the `tracing_subscriber::reload` handle of the application's filter (a
    /// `LevelFilter` or an `EnvFilter`). Without one the command answers that it
    /// cannot.
    ///
    /// ```no_run
    /// use tracing_subscriber::{filter::LevelFilter, prelude::*, reload};
    /// # async fn demo() -> Result<(), rubbo::RpcError> {
    /// let (filter, handle) = reload::Layer::new(LevelFilter::INFO);
    /// tracing_subscriber::registry().with(filter).with(tracing_subscriber::fmt::layer()).init();
    /// let app = rubbo::Rubbo::builder().qos_port(22222).qos_log_levels(handle).build()?;
    /// # Ok(()) }
    /// ```
    pub fn qos_log_levels(mut self, levels: impl LogLevelSwitch) -> Self {
        self.qos.log_levels = Some(LogLevels(Arc::new(levels)));
        self
    }

    /// A `qos.*` setting by Java's key (`qos.host`, `qos.accept.foreign.ip`,
    /// `qos.accept.foreign.ip.whitelist`, `qos.anonymous.access.permission.level`,
    /// `qos.anonymous.access.allow.commands`, `qos.check`).
    pub fn qos_param(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.qos.set(&key.into(), value.into());
        self
    }
}

/// The application's QoS side: the server, and what the probes read.
#[derive(Debug, Default)]
pub(crate) struct QosState {
    server: Mutex<Option<QosServer>>,
    /// Exports under way.
    exporting: AtomicUsize,
    /// A service was exported or a reference made.
    started: AtomicBool,
    /// The exported services `invoke` and `count` reach.
    local: Mutex<Vec<Local>>,
}

/// An exported service: what `invoke` and `count` show of it, and the service's
/// invoker (without the provider filters, as Java's `invoke` calls the service
/// instance).
#[derive(Debug, Clone)]
struct Local {
    service: LocalService,
    url: Url,
    invoker: BoxInvoker,
}

/// Counts an export under way for the readiness probe while alive.
#[derive(Debug)]
pub(crate) struct Exporting<'a>(&'a QosState);

impl Drop for Exporting<'_> {
    fn drop(&mut self) {
        self.0.exporting.fetch_sub(1, Ordering::SeqCst);
    }
}

impl QosState {
    /// Marks an export under way until the guard drops.
    pub(crate) fn exporting(&self) -> Exporting<'_> {
        self.exporting.fetch_add(1, Ordering::SeqCst);
        Exporting(self)
    }

    /// The application started: a service was exported or a reference made.
    pub(crate) fn mark_started(&self) {
        self.started.store(true, Ordering::SeqCst);
    }

    /// Notes an exported service for `invoke` and `count`.
    pub(crate) fn add_local(&self, descriptor: &ServiceDescriptor, invoker: BoxInvoker) {
        let url = invoker.url().clone();
        let service = LocalService {
            service_key: url.service_key(),
            interface: descriptor.interface.to_owned(),
            methods: descriptor
                .methods
                .iter()
                .filter(|m| m.stream.is_none())
                .map(|m| MethodSignature {
                    name: m.name.to_owned(),
                    parameter_types: rubbo_common::descriptor::split_names(m.parameter_types)
                        .unwrap_or_default(),
                })
                .collect(),
        };
        let mut local = self.local.lock();
        local.retain(|l| l.service.service_key != service.service_key);
        local.push(Local {
            service,
            url,
            invoker,
        });
    }

    /// Stops the QoS server (a session running a command finishes it first).
    pub(crate) fn close(&self) {
        self.local.lock().clear();
        if let Some(s) = self.server.lock().take() {
            s.close();
        }
    }
}

/// Starts the QoS server of `rubbo` if asked: binds at once (so
/// [`Rubbo::qos_address`] is known), serves on the current tokio runtime.
pub(crate) fn start(rubbo: &Rubbo, settings: &QosSettings) -> Result<(), RpcError> {
    if !settings.wanted() {
        return Ok(());
    }
    let config = QosConfig::from_url(&settings.url());
    let host = config
        .host
        .clone()
        .unwrap_or_else(|| "127.0.0.1".to_owned());
    let bound = std::net::TcpListener::bind((host.as_str(), config.port))
        .and_then(|l| l.set_nonblocking(true).map(|()| l));
    let listener = match bound {
        Ok(l) => l,
        Err(e) if config.check => {
            return Err(config_err(format!(
                "qos server can not bind {host}:{}: {e}",
                config.port
            )));
        }
        Err(e) => {
            warn!(host, port = config.port, error = %e, "qos server not started: can not bind");
            return Ok(());
        }
    };
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| config_err("the QoS server needs a tokio runtime: build inside one"))?;
    let _entered = runtime.enter();
    let listener = tokio::net::TcpListener::from_std(listener)
        .map_err(|e| config_err(format!("qos listener: {e}")))?;
    let host: Arc<dyn QosHost> = Arc::new(WeakHost(Arc::downgrade(&rubbo.inner)));
    let mut qos = Qos::new(host, config);
    if let Some(levels) = &settings.log_levels {
        qos = qos.with_log_levels(levels.0.clone());
    }
    let server = QosServer::from_listener(listener, qos).map_err(|e| config_err(e.to_string()))?;
    info!(application = %rubbo.application(), addr = %server.local_addr(), "qos server started");
    *rubbo.inner.qos.server.lock() = Some(server);
    Ok(())
}

impl Rubbo {
    /// The address the QoS server is bound to; `None` when it is not running.
    pub fn qos_address(&self) -> Option<std::net::SocketAddr> {
        self.inner
            .qos
            .server
            .lock()
            .as_ref()
            .map(QosServer::local_addr)
    }
}

/// The host the server holds: the application, without keeping it alive.
#[derive(Debug)]
struct WeakHost(Weak<Inner>);

impl WeakHost {
    fn get(&self) -> Option<Rubbo> {
        self.0.upgrade().map(|inner| Rubbo { inner })
    }
}

fn gone() -> QosError {
    QosError::command("the application is shut down")
}

impl QosHost for WeakHost {
    fn application(&self) -> String {
        self.get()
            .map(|r| QosHost::application(&r))
            .unwrap_or_default()
    }
    fn providers(&self) -> Vec<ProviderService> {
        self.get().map(|r| r.providers()).unwrap_or_default()
    }
    fn consumers(&self) -> Vec<ConsumerService> {
        self.get().map(|r| r.consumers()).unwrap_or_default()
    }
    fn set_registered<'a>(
        &'a self,
        keys: &'a [String],
        scope: RegistryScope,
        registered: bool,
    ) -> BoxFuture<'a, Result<(), QosError>> {
        Box::pin(async move {
            let r = self.get().ok_or_else(gone)?;
            r.set_registered(keys, scope, registered).await
        })
    }
    fn servers(&self) -> Vec<ServerInfo> {
        self.get().map(|r| r.servers()).unwrap_or_default()
    }
    fn started(&self) -> bool {
        self.get().is_some_and(|r| QosHost::started(&r))
    }
    fn deployed(&self) -> bool {
        self.get().is_some_and(|r| r.deployed())
    }
    fn live(&self) -> bool {
        self.get().is_some()
    }
    fn config(&self) -> Vec<ConfigSection> {
        self.get().map(|r| QosHost::config(&r)).unwrap_or_default()
    }
    fn version(&self) -> String {
        version()
    }
    fn metrics(&self) -> Option<String> {
        self.get().and_then(|r| QosHost::metrics(&r))
    }
    fn has_metrics(&self) -> bool {
        self.get().is_some_and(|r| QosHost::has_metrics(&r))
    }
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(r) = self.get() {
                r.shutdown().await;
            }
        })
    }
    fn local_services(&self) -> Vec<LocalService> {
        self.get().map(|r| r.local_services()).unwrap_or_default()
    }
    fn method_count(&self, service_key: &str, method: &str) -> Option<MethodCount> {
        self.get()?.method_count(service_key, method)
    }
    fn invoke<'a>(
        &'a self,
        service_key: &'a str,
        method: &'a str,
        parameter_types: &'a [String],
        args: Vec<serde_json::Value>,
    ) -> BoxFuture<'a, Result<serde_json::Value, QosError>> {
        Box::pin(async move {
            let r = self.get().ok_or_else(gone)?;
            QosHost::invoke(&r, service_key, method, parameter_types, args).await
        })
    }
    fn router_states(&self) -> Vec<RouterState> {
        self.get().map(|r| r.router_states()).unwrap_or_default()
    }
    fn set_router_recording(&self, service_keys: &[String], enabled: bool) {
        if let Some(r) = self.get() {
            r.set_router_recording(service_keys, enabled);
        }
    }
    fn recent_routings(&self) -> Vec<String> {
        self.get().map(|r| r.recent_routings()).unwrap_or_default()
    }
}

fn version() -> String {
    format!("rubbo-{}", env!("CARGO_PKG_VERSION"))
}

/// Interface-level unless the registry is Java's service-discovery registry.
fn application_level(registry: &Url) -> bool {
    registry.protocol() == Some("service-discovery-registry")
}

/// The registry type `ls` shows: the `registry` parameter of a service-discovery
/// registry, else the scheme.
fn registry_type(registry: &Url) -> String {
    if application_level(registry) {
        registry.str_param::<keys::RegistryType>().to_owned()
    } else {
        registry.protocol().unwrap_or_default().to_owned()
    }
}

fn provider_service(url: &Url, registrations: Vec<Registration>) -> ProviderService {
    ProviderService::new(
        url.service_interface().unwrap_or_default(),
        url.group(),
        url.version(),
        registrations,
    )
}

/// The exported services (`ls`, `online`, `ready`): every exporter's service, with
/// the registrations of that service.
impl QosHost for Rubbo {
    fn application(&self) -> String {
        Rubbo::application(self).to_owned()
    }

    fn providers(&self) -> Vec<ProviderService> {
        let registrations = self.registry_protocol().registrations();
        let mut out: Vec<ProviderService> = Vec::new();
        for e in self.inner.exporters.lock().iter() {
            let url = e.url();
            let key = url.service_key();
            if out.iter().any(|p| p.service_key == key) {
                continue;
            }
            let regs = registrations
                .iter()
                .filter(|r| r.provider().service_key() == key)
                .map(|r| Registration {
                    registry: registry_type(r.registry_url()),
                    application_level: application_level(r.registry_url()),
                    registered: r.is_registered(),
                })
                .collect();
            out.push(provider_service(&url, regs));
        }
        out
    }

    fn consumers(&self) -> Vec<ConsumerService> {
        let mut out: Vec<ConsumerService> = Vec::new();
        for r in self.registry_protocol().references() {
            let key = r.consumer.service_key();
            let urls = |pick: fn(bool) -> bool| {
                r.providers
                    .iter()
                    .filter(|(_, ok)| pick(*ok))
                    .map(|(u, _)| u.to_full_string())
                    .collect::<Vec<_>>()
            };
            let view = ConsumerRegistry {
                registry_url: r.registry.to_full_string(),
                registry: registry_type(&r.registry),
                application_level: application_level(&r.registry),
                all: urls(|_| true),
                valid: urls(|ok| ok),
                disabled: urls(|ok| !ok),
            };
            match out.iter_mut().find(|c| c.service_key == key) {
                Some(c) => c.registries.push(view),
                None => out.push(ConsumerService {
                    service_key: key,
                    registries: vec![view],
                }),
            }
        }
        out
    }

    fn set_registered<'a>(
        &'a self,
        keys: &'a [String],
        scope: RegistryScope,
        registered: bool,
    ) -> BoxFuture<'a, Result<(), QosError>> {
        Box::pin(async move {
            let targets: Vec<_> = self
                .registry_protocol()
                .registrations()
                .into_iter()
                .filter(|r| keys.contains(&r.provider().service_key()))
                .filter(|r| scope.includes(application_level(r.registry_url())))
                .collect();
            let results =
                futures::future::join_all(targets.iter().map(|r| r.set_registered(registered)))
                    .await;
            let failed: Vec<String> = results
                .into_iter()
                .filter_map(Result::err)
                .map(|e| e.to_string())
                .collect();
            if failed.is_empty() {
                Ok(())
            } else {
                Err(QosError::command(failed.join("; ")))
            }
        })
    }

    fn servers(&self) -> Vec<ServerInfo> {
        let mut out: Vec<ServerInfo> = Vec::new();
        for e in self.inner.exporters.lock().iter() {
            let url = e.url();
            let s = ServerInfo {
                protocol: url.protocol().unwrap_or_default().to_owned(),
                address: url.address(),
                port: url.port(),
            };
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }

    fn started(&self) -> bool {
        self.inner.qos.started.load(Ordering::SeqCst)
    }

    fn deployed(&self) -> bool {
        QosHost::started(self) && self.inner.qos.exporting.load(Ordering::SeqCst) == 0
    }

    fn config(&self) -> Vec<ConfigSection> {
        let i = &self.inner;
        let section = |kind: &str, id: Option<String>, attrs: Vec<(&str, String)>| ConfigSection {
            kind: kind.to_owned(),
            id,
            attributes: attrs
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect::<BTreeMap<_, _>>(),
        };
        let mut out = vec![section(
            "ApplicationConfig",
            None,
            vec![("name", i.application.clone())],
        )];
        for (name, port) in &i.exports {
            out.push(section(
                "ProtocolConfig",
                Some(name.clone()),
                vec![
                    ("name", name.clone()),
                    ("host", i.host.clone()),
                    ("port", port.to_string()),
                ],
            ));
        }
        for r in &i.registries {
            out.push(section(
                "RegistryConfig",
                Some(r.address()),
                vec![("address", r.to_full_string())],
            ));
        }
        for p in QosHost::providers(self) {
            out.push(section(
                "ServiceConfig",
                Some(p.service_key.clone()),
                vec![("interface", p.display_key.clone())],
            ));
        }
        for c in QosHost::consumers(self) {
            out.push(section(
                "ReferenceConfig",
                Some(c.service_key.clone()),
                vec![("interface", c.service_key.clone())],
            ));
        }
        out
    }

    fn version(&self) -> String {
        version()
    }

    fn metrics(&self) -> Option<String> {
        self.inner
            .metrics
            .as_ref()
            .map(rubbo_metrics::Metrics::encode)
    }
    fn has_metrics(&self) -> bool {
        self.inner.metrics.is_some()
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(Rubbo::shutdown(self))
    }

    fn local_services(&self) -> Vec<LocalService> {
        self.inner
            .qos
            .local
            .lock()
            .iter()
            .map(|l| l.service.clone())
            .collect()
    }

    /// The provider-side statistics the metrics keep (none with metrics off).
    fn method_count(&self, service_key: &str, method: &str) -> Option<MethodCount> {
        let metrics = self.inner.metrics.as_ref()?;
        let url = self
            .inner
            .qos
            .local
            .lock()
            .iter()
            .find(|l| l.service.service_key == service_key)?
            .url
            .clone();
        let stats = metrics.method(
            Side::Provider,
            url.service_interface().unwrap_or_default(),
            url.group().unwrap_or_default(),
            url.version().unwrap_or_default(),
            method,
        );
        let snap = stats.snapshot();
        let succeeded = snap.counter(rubbo_metrics::names::REQUESTS_SUCCEED);
        let failed = snap.counter(rubbo_metrics::names::REQUESTS_FAILED);
        let (_, _, max, sum, count) = snap.rt.unwrap_or_default();
        Some(MethodCount {
            total: succeeded + failed,
            succeeded,
            failed,
            active: snap.processing,
            average_ms: sum / count.max(1),
            max_ms: max,
        })
    }

    /// Through the generic client (`$invoke` behind the `generic` filter), on the
    /// service itself.
    fn invoke<'a>(
        &'a self,
        service_key: &'a str,
        method: &'a str,
        parameter_types: &'a [String],
        args: Vec<serde_json::Value>,
    ) -> BoxFuture<'a, Result<serde_json::Value, QosError>> {
        Box::pin(async move {
            let invoker = self
                .inner
                .qos
                .local
                .lock()
                .iter()
                .find(|l| l.service.service_key == service_key)
                .map(|l| l.invoker.clone())
                .ok_or_else(|| QosError::command(format!("no service {service_key}")))?;
            let generic = crate::builtin_filters()
                .get("generic")
                .map_err(|e| QosError::command(e.to_string()))?
                .layer(invoker);
            let client = crate::GenericClient::new(generic);
            let types: Vec<&str> = parameter_types.iter().map(String::as_str).collect();
            let values = args.iter().map(rubbo_hessian2::json_to_value).collect();
            let v = client
                .invoke(method, &types, values)
                .await
                .map_err(|e| QosError::command(e.to_string()))?;
            Ok(rubbo_hessian2::value_to_json(&v))
        })
    }

    fn router_states(&self) -> Vec<RouterState> {
        self.registry_protocol()
            .references()
            .into_iter()
            .map(|r| RouterState {
                service_key: r.consumer.service_key(),
                all: r.providers.len(),
                valid: r.providers.iter().filter(|(_, ok)| *ok).count(),
                routers: r.chain.router_names(),
                recording: r.chain.recorder().is_enabled(),
            })
            .collect()
    }

    fn set_router_recording(&self, service_keys: &[String], enabled: bool) {
        for r in self.registry_protocol().references() {
            if service_keys.contains(&r.consumer.service_key()) {
                r.chain.recorder().set_enabled(enabled);
            }
        }
    }

    fn recent_routings(&self) -> Vec<String> {
        self.registry_protocol()
            .references()
            .iter()
            .flat_map(|r| r.chain.recorder().recent())
            .collect()
    }
}
