//! [`QosHost`]: what the commands need from the application.

use std::collections::BTreeMap;

use futures::future::BoxFuture;

use crate::QosError;

/// One registration of a provider in one registry (Java's `RegisterStatedURL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// The registry's type, as `ls` shows it (`zookeeper`, `memory`, `nacos`).
    pub registry: String,
    /// Whether the registry is application-level (service discovery): `-A`, else `-I`.
    pub application_level: bool,
    /// Whether the provider URL is registered there now.
    pub registered: bool,
}

/// An exported service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderService {
    /// `group/interface:version` (Java's `ServiceMetadata.getServiceKey`).
    pub service_key: String,
    /// `interface:version` (Java's `getDisplayServiceKey`).
    pub display_key: String,
    /// Its registrations, one per registry (empty when exported without a registry).
    pub registrations: Vec<Registration>,
}

impl ProviderService {
    /// A service of `interface` with optional group and version, and its registrations.
    pub fn new(
        interface: &str,
        group: Option<&str>,
        version: Option<&str>,
        registrations: Vec<Registration>,
    ) -> Self {
        let group = group.filter(|g| !g.is_empty());
        let version = version.filter(|v| !v.is_empty());
        let display_key = match version {
            Some(v) => format!("{interface}:{v}"),
            None => interface.to_owned(),
        };
        ProviderService {
            service_key: match group {
                Some(g) => format!("{g}/{display_key}"),
                None => display_key.clone(),
            },
            display_key,
            registrations,
        }
    }
}

/// A reference's view of one registry: the providers it lists.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerRegistry {
    /// The registry URL, as `getAddress` prints it.
    pub registry_url: String,
    /// The registry's type (`zookeeper`...), as `ls` shows it.
    pub registry: String,
    /// Whether the registry is application-level (service discovery).
    pub application_level: bool,
    /// Every provider URL the directory holds.
    pub all: Vec<String>,
    /// The available ones.
    pub valid: Vec<String>,
    /// The unavailable ones.
    pub disabled: Vec<String>,
}

/// A reference (Java's `ConsumerModel`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerService {
    /// `group/interface:version`.
    pub service_key: String,
    /// Its registries; empty for a reference to fixed addresses.
    pub registries: Vec<ConsumerRegistry>,
}

/// A protocol server (for `ps`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// The protocol (`dubbo`, `tri`).
    pub protocol: String,
    /// `host:port`.
    pub address: String,
    /// The port.
    pub port: u16,
}

/// A part of the running configuration (for `getConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSection {
    /// Java's class name: `ApplicationConfig`, `ProtocolConfig`, `RegistryConfig`,
    /// `ServiceConfig`, `ReferenceConfig`...
    pub kind: String,
    /// The id (the protocol name, the service key...); `None` for the single ones.
    pub id: Option<String>,
    /// Its attributes.
    pub attributes: BTreeMap<String, String>,
}

/// A method of an exported service, as `invoke` picks one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodSignature {
    /// The method name.
    pub name: String,
    /// The Java parameter type names (`java.lang.String`, `int`, `org.x.User`...).
    pub parameter_types: Vec<String>,
}

/// An exported service and its methods (for `invoke` and `count`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalService {
    /// `group/interface:version`.
    pub service_key: String,
    /// The Java interface name.
    pub interface: String,
    /// Its methods, in declaration order.
    pub methods: Vec<MethodSignature>,
}

impl LocalService {
    /// Whether `name` names this service as Java's `count` and `invoke` accept one:
    /// the service key, the interface, or its simple name (ignoring case, as
    /// `invoke` does).
    pub fn is_named(&self, name: &str) -> bool {
        let simple = self.interface.rsplit('.').next().unwrap_or_default();
        [self.service_key.as_str(), self.interface.as_str(), simple]
            .iter()
            .any(|n| n.eq_ignore_ascii_case(name))
    }
}

/// One method's provider-side call statistics (for `count`): the calls that ended,
/// how many failed, how many are in flight, and their response times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MethodCount {
    /// Calls that ended.
    pub total: u64,
    /// Calls that ended with a value.
    pub succeeded: u64,
    /// Calls that failed, whatever the reason.
    pub failed: u64,
    /// Calls in flight.
    pub active: i64,
    /// Average response time, in ms.
    pub average_ms: u64,
    /// Longest response time, in ms.
    pub max_ms: u64,
}

/// One reference's router chain (for `getRouterSnapshot`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterState {
    /// `group/interface:version` of the reference.
    pub service_key: String,
    /// Providers its directory lists.
    pub all: usize,
    /// The available ones.
    pub valid: usize,
    /// The routers, in the order they run.
    pub routers: Vec<String>,
    /// Whether its routings are being recorded.
    pub recording: bool,
}

/// Which registries `online`/`offline` act on (Java's `Online`, `OnlineApp`,
/// `OnlineInterface`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistryScope {
    /// Every registry.
    All,
    /// Application-level (service-discovery) registries only.
    Application,
    /// Interface-level registries only.
    Interface,
}

impl RegistryScope {
    /// Whether a registration in a registry of this level is in scope.
    pub fn includes(self, application_level: bool) -> bool {
        match self {
            RegistryScope::All => true,
            RegistryScope::Application => application_level,
            RegistryScope::Interface => !application_level,
        }
    }
}

/// What the QoS commands need from the application: its services with their registry
/// state, taking them in and out of the registries, its probes, configuration and
/// addresses, and shutting it down. The commands hold no state of their own, so they
/// are tested against a fake host.
///
/// ```
/// use futures::future::BoxFuture;
/// use rubbo_qos::{ConfigSection, ConsumerService, ProviderService, QosError, QosHost,
///     RegistryScope, ServerInfo};
///
/// /// An application with no service that is always ready.
/// #[derive(Debug)]
/// struct Empty;
///
/// impl QosHost for Empty {
///     fn application(&self) -> String { "empty".into() }
///     fn providers(&self) -> Vec<ProviderService> { Vec::new() }
///     fn consumers(&self) -> Vec<ConsumerService> { Vec::new() }
///     fn set_registered<'a>(&'a self, _: &'a [String], _: RegistryScope, _: bool)
///         -> BoxFuture<'a, Result<(), QosError>> { Box::pin(async { Ok(()) }) }
///     fn servers(&self) -> Vec<ServerInfo> { Vec::new() }
///     fn started(&self) -> bool { true }
///     fn deployed(&self) -> bool { true }
///     fn config(&self) -> Vec<ConfigSection> { Vec::new() }
///     fn version(&self) -> String { "0.1.0".into() }
///     fn shutdown(&self) -> BoxFuture<'_, ()> { Box::pin(async {}) }
/// }
///
/// fn _object_safe(_: std::sync::Arc<dyn QosHost>) {}
/// ```
pub trait QosHost: Send + Sync + std::fmt::Debug + 'static {
    /// The application name.
    fn application(&self) -> String;

    /// The exported services, each with its registrations.
    fn providers(&self) -> Vec<ProviderService>;

    /// The references.
    fn consumers(&self) -> Vec<ConsumerService>;

    /// Registers (`true`) or unregisters (`false`) the services with these service
    /// keys in the registries in `scope`, leaving their servers running; a
    /// registration already in that state is left alone.
    fn set_registered<'a>(
        &'a self,
        service_keys: &'a [String],
        scope: RegistryScope,
        registered: bool,
    ) -> BoxFuture<'a, Result<(), QosError>>;

    /// The protocol servers.
    fn servers(&self) -> Vec<ServerInfo>;

    /// The peers connected to the server on `port` (`remote -> local`), or `None`
    /// when the application cannot list them.
    fn connections(&self, port: u16) -> Option<Vec<(String, String)>> {
        let _ = port;
        None
    }

    /// Startup probe: the application has started (Java's `DeployerStartupProbe`).
    fn started(&self) -> bool;

    /// Half of the readiness probe: deploying is complete, no export is under way
    /// (Java's `DeployerReadinessProbe`). The other half, some service online, the
    /// `ready` command works out from [`providers`](Self::providers).
    fn deployed(&self) -> bool;

    /// Liveness probe; Java has no built-in liveness check, so true by default.
    fn live(&self) -> bool {
        true
    }

    /// The running configuration.
    fn config(&self) -> Vec<ConfigSection>;

    /// The metrics in the Prometheus text format (what `metrics` and `GET /metrics`
    /// answer), or `None` when metrics are off: then, as in Java without the
    /// Prometheus module, there is no `metrics` command.
    fn metrics(&self) -> Option<String> {
        None
    }

    /// Whether metrics are on (whether there is a `metrics` command), without encoding
    /// them; hosts whose [`metrics`](Self::metrics) encodes should answer it directly.
    fn has_metrics(&self) -> bool {
        self.metrics().is_some()
    }

    /// The framework version `version` prints.
    fn version(&self) -> String;

    /// The exported services with their methods (`invoke`, `count`); none by
    /// default.
    fn local_services(&self) -> Vec<LocalService> {
        Vec::new()
    }

    /// The provider-side statistics of `method` of the service `service_key`, or
    /// `None` when the application keeps none (metrics off): what `count` shows.
    fn method_count(&self, service_key: &str, method: &str) -> Option<MethodCount> {
        let _ = (service_key, method);
        None
    }

    /// Calls `method` (with these Java parameter types) of the exported service
    /// `service_key` with JSON arguments, as `invoke` does: the result as JSON, or
    /// the failure (a business exception included) as an error.
    fn invoke<'a>(
        &'a self,
        service_key: &'a str,
        method: &'a str,
        parameter_types: &'a [String],
        args: Vec<serde_json::Value>,
    ) -> BoxFuture<'a, Result<serde_json::Value, QosError>> {
        let _ = (service_key, method, parameter_types, args);
        Box::pin(async { Err(QosError::command("this application cannot invoke")) })
    }

    /// The router chains of the references (`getRouterSnapshot`).
    fn router_states(&self) -> Vec<RouterState> {
        Vec::new()
    }

    /// Starts or stops recording the routings of the references with these service
    /// keys (`enableRouterSnapshot`, `disableRouterSnapshot`).
    fn set_router_recording(&self, service_keys: &[String], enabled: bool) {
        let _ = (service_keys, enabled);
    }

    /// The recorded routings of every reference (`getRecentRouterSnapshot`).
    fn recent_routings(&self) -> Vec<String> {
        Vec::new()
    }

    /// Shuts the application down (unregister, drain, close).
    fn shutdown(&self) -> BoxFuture<'_, ()>;
}
