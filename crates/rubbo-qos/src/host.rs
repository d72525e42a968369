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

    /// Shuts the application down (unregister, drain, close).
    fn shutdown(&self) -> BoxFuture<'_, ()>;
}
