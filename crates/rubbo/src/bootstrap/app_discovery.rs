//! Application-level registration, provider side (issue #15): with
//! `dubbo.application.register-mode` `instance` or `all` (Java's default), each export
//! adds its services to the application's MetadataInfo, publishes the interface →
//! application mapping, exports MetadataService (once) and registers or updates the
//! instance in every registry that has an application-level discovery (ZooKeeper);
//! shutdown removes the instance first. With `instance` the services are not
//! registered at interface level.

mod consumer;
mod metadata_service;
mod metadata_service_v2;
mod migration;
#[cfg(test)]
mod provider_url_tests;
#[cfg(test)]
mod scale_tests;
mod small_map;
mod templates;
#[cfg(test)]
mod tests;
mod tracked;
#[cfg(all(test, feature = "zookeeper"))]
mod zk_scale_tests;

use std::sync::Arc;

use parking_lot::Mutex;
use rubbo_common::keys::{self, MetadataType, RegisterMode};
use rubbo_common::{Exporter, RpcError, Url};
use rubbo_metadata::{
    Endpoint, INSTANCE_PARAMS, ServiceDiscovery, ServiceInfo, ServiceInstance, ServiceNameMapping,
    metadata_service_url_params,
};
use tracing::{info, warn};

use super::{Rubbo, RubboBuilder, Sessions};
use crate::codegen::ServiceDescriptor;
use crate::registry_protocol::config_err;
use metadata_service::{MetadataServiceImpl, MetadataServiceServer, Served};
use metadata_service_v2::{MetadataServiceV2Impl, MetadataServiceV2Server};

/// What the builder was told: `register-mode` and `metadata-type`, and discovery
/// backends given in code.
#[derive(Debug, Clone, Default)]
pub(super) struct Settings {
    register_mode: Option<String>,
    metadata_type: Option<String>,
    backends: Vec<Backend>,
    /// The consumer's migration step and threshold, when set.
    migration: Option<String>,
    threshold: Option<String>,
    /// The local migration rule file.
    local_rule: migration::listener::LocalRule,
    /// `dubbo.application.metadata-service-protocol`, when set.
    metadata_service_protocol: Option<String>,
    /// `dubbo.application.metadata-service-port`, when set (0: a free port).
    metadata_service_port: Option<u16>,
    /// `dubbo.application.only-use-metadata-v2`.
    only_use_metadata_v2: bool,
}

/// Java's `dubbo.application.only-use-metadata-v2` (`ApplicationConfig.onlyUseMetadataV2`).
/// A size knob of the scale benches (`APPSCALE_*`): the variable's number, else
/// `default`.
#[cfg(test)]
fn scale_knob(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const ONLY_USE_METADATA_V2_KEY: &str = "only-use-metadata-v2";

/// Java's `dubbo.application.metadata-service-port` (`ApplicationConfig.metadataServicePort`,
/// and the application parameter of the same name).
const METADATA_SERVICE_PORT_KEY: &str = "metadata-service-port";

/// An application parameter (`dubbo.application.parameters.{key}`).
fn app_parameter(key: &str) -> String {
    format!("parameters.{key}")
}

/// A `metadata-service-port` value as Java's `InternalServiceConfigBuilder.port` takes
/// it: `-1` (and 0) a free port, a port number that port. `param`: from the
/// application's parameters, where Java ignores a value under -1.
fn metadata_service_port(value: &str, param: bool) -> Option<u16> {
    let v = value.trim();
    match v.parse::<i64>() {
        Ok(-1 | 0) => Some(0),
        Ok(p) if param && p < -1 => None,
        Ok(p) => match u16::try_from(p) {
            Ok(p) => Some(p),
            Err(_) => {
                warn!(
                    value = v,
                    "invalid dubbo.application.metadata-service-port ignored"
                );
                None
            }
        },
        Err(_) => {
            warn!(
                value = v,
                "invalid dubbo.application.metadata-service-port ignored"
            );
            None
        }
    }
}

/// One application-level registry: its discovery and its mapping (the same object
/// for ZooKeeper).
#[derive(Debug, Clone)]
struct Backend {
    discovery: Arc<dyn ServiceDiscovery>,
    mapping: Arc<dyn ServiceNameMapping>,
    /// Made here from a registry URL (destroyed at shutdown), not given by the
    /// application, which may share it with other `Rubbo`s.
    owned: bool,
    /// The registry's cluster name, the `registry_cluster` label of its metrics.
    cluster: String,
    #[cfg(feature = "zookeeper")]
    report: Option<Arc<rubbo_registry_zookeeper::ZookeeperServiceDiscovery>>,
}

impl RubboBuilder {
    /// Where services are registered (Java's `dubbo.application.register-mode`):
    /// `interface` (interface-level nodes only), `instance` (the application instance
    /// only: `/services/{app}/{host}:{port}`, the mapping, MetadataService), or `all`
    /// (both; the default, as Java's).
    pub fn register_mode(mut self, mode: impl Into<String>) -> Self {
        self.app_discovery.register_mode = Some(mode.into());
        self
    }

    /// How references find providers (Java's `dubbo.application.migration.step`, or
    /// `dubbo.application.service-discovery.migration`): `FORCE_INTERFACE` (the
    /// interface-level nodes), `APPLICATION_FIRST` (the default, as Java's: both, each
    /// call taking the application level while its address count is at least
    /// `migration.threshold` times the interface level's, default 0.0) or
    /// `FORCE_APPLICATION` (the application instances and their MetadataService
    /// only). A reference's `migration.step` parameter wins, and the dynamic rule
    /// (`{app}.migration` in group `DUBBO_SERVICEDISCOVERY_MIGRATION` of the config
    /// center) wins over both and moves references at run time.
    pub fn migration(mut self, step: impl Into<String>) -> Self {
        self.app_discovery.migration = Some(step.into());
        self
    }

    /// On which protocol MetadataService V1 is exported and advertised (Java's
    /// `dubbo.application.metadata-service-protocol`, any protocol of the
    /// application: `dubbo`, `tri`, ...; an unknown one fails `build()`). Unset (the
    /// default), V1 goes on `dubbo` when it is configured, else on the first
    /// service's protocol. As Java's `MetadataServiceVersionUtils.tripleConfigured`,
    /// it also decides MetadataService V2 (always on Triple): `tri` exports V2 (and
    /// the instance advertises it with `meta-v=2.0.0`) even when no service uses
    /// Triple, any other protocol exports no V2 even when services use Triple.
    pub fn metadata_service_protocol(mut self, protocol: impl Into<String>) -> Self {
        let p = protocol.into();
        self.app_discovery.metadata_service_protocol =
            Some(p.trim().to_owned()).filter(|p| !p.is_empty());
        self
    }

    /// The port MetadataService is exported on (Java's
    /// `dubbo.application.metadata-service-port`; 0, or -1 in configuration: a free
    /// port, whose server is shared with the protocol's other exports that asked for
    /// a free port). A consumer calls MetadataService on this port for instances that
    /// advertise no `dubbo.metadata-service.url-params`. Unset (the default),
    /// it shares the server of its protocol's services, or gets a free port when no
    /// service uses that protocol. MetadataService V2 (Triple) takes the same port
    /// when V1 is on Triple too or not exported; V1 on another protocol keeps that
    /// port to itself, and V2 then shares the services' Triple server (Java would
    /// put both on one port unification server).
    pub fn metadata_service_port(mut self, port: u16) -> Self {
        self.app_discovery.metadata_service_port = Some(port);
        self
    }

    /// Exports MetadataService V2 only, no V1, when V2 is exported at all (Java's
    /// `dubbo.application.only-use-metadata-v2`, default `false`): with Triple
    /// configured (see [`metadata_service_protocol`](Self::metadata_service_protocol))
    /// only V2 is served and advertised, so consumers that only speak V1 (Dubbo before
    /// 3.3) cannot read the metadata; without Triple it changes nothing. Consumers
    /// choose by the instance's `meta-v`, as Java's, whatever this says.
    pub fn only_use_metadata_v2(mut self, only: bool) -> Self {
        self.app_discovery.only_use_metadata_v2 = only;
        self
    }

    /// Adds an application-level registry given in code (in tests, a
    /// [`MemoryServiceDiscovery`](rubbo_metadata::MemoryServiceDiscovery)), beside
    /// those of the ZooKeeper registries.
    pub fn service_discovery<D>(mut self, discovery: Arc<D>) -> Self
    where
        D: ServiceDiscovery + ServiceNameMapping,
    {
        self.app_discovery.backends.push(Backend::given(discovery));
        self
    }
}

impl Backend {
    /// A registry given in code: one object discovers and maps, the application
    /// keeps it, cluster `default`, no metadata report.
    fn given<D>(discovery: Arc<D>) -> Backend
    where
        D: ServiceDiscovery + ServiceNameMapping,
    {
        Backend {
            discovery: discovery.clone(),
            mapping: discovery,
            owned: false,
            cluster: "default".to_owned(),
            #[cfg(feature = "zookeeper")]
            report: None,
        }
    }
}

/// Reads `register-mode`, `metadata-type`, `metadata-service-protocol`,
/// `only-use-metadata-v2` and the migration settings of `dubbo.application`, and Java's local migration rule keys.
pub(super) fn apply_config(settings: &mut Settings, config: &rubbo_config::Config) {
    let app = config.application();
    if let Some(m) = app.attributes.get(keys::REGISTER_MODE_KEY) {
        settings.register_mode = Some(m.clone());
    }
    if let Some(m) = app.attributes.get(keys::METADATA_TYPE_KEY) {
        settings.metadata_type = Some(m.clone());
    }
    // Java reads the attribute, else the application parameter of the same name.
    let protocol = app
        .attributes
        .get(keys::METADATA_SERVICE_PROTOCOL_KEY)
        .filter(|p| !p.trim().is_empty())
        .or_else(|| {
            app.attributes
                .get(&app_parameter(keys::METADATA_SERVICE_PROTOCOL_KEY))
        });
    if let Some(p) = protocol {
        settings.metadata_service_protocol = Some(p.trim().to_owned()).filter(|p| !p.is_empty());
    }
    if let Some(p) = app.attributes.get(METADATA_SERVICE_PORT_KEY) {
        settings.metadata_service_port = metadata_service_port(p, false);
    } else if let Some(p) = app
        .attributes
        .get(&app_parameter(METADATA_SERVICE_PORT_KEY))
    {
        settings.metadata_service_port = metadata_service_port(p, true);
    }
    if let Some(v) = app.attributes.get(ONLY_USE_METADATA_V2_KEY) {
        // The schema checked `true` or `false`.
        settings.only_use_metadata_v2 = v.trim().eq_ignore_ascii_case("true");
    }
    for k in [
        migration::SERVICE_DISCOVERY_MIGRATION_KEY,
        migration::MIGRATION_STEP_KEY,
    ] {
        if let Some(m) = app.attributes.get(k) {
            settings.migration = Some(m.clone());
        }
    }
    if let Some(t) = app.attributes.get(migration::MIGRATION_THRESHOLD_KEY) {
        settings.threshold = Some(t.clone());
    }
    let local = &mut settings.local_rule;
    if let Some(v) = config.get(migration::MIGRATION_FILE_ENABLE_KEY) {
        local.enabled = v.trim().eq_ignore_ascii_case("true");
    }
    if let Some(v) = config.get(migration::MIGRATION_FILE_KEY) {
        local.path = Some(v.trim().to_owned());
    }
    if let Some(v) = app.attributes.get(migration::LOCAL_RULE_DELAY_KEY) {
        match v.trim().parse::<u64>() {
            Ok(ms) => local.delay_ms = Some(ms),
            Err(_) => warn!(value = %v, "invalid dubbo.application.migration.delay ignored"),
        }
    }
}

/// The Triple protocol's name.
const TRIPLE: &str = "tri";

/// Java's `MetadataServiceVersionUtils.tripleConfigured`: the MetadataService
/// protocol is `tri` when it is set, else Triple is among the configured protocols.
/// Then MetadataService V2 is exported, and the instance advertises it.
fn triple_configured(rubbo: &Rubbo, metadata_service_protocol: Option<&str>) -> bool {
    match metadata_service_protocol {
        Some(p) => p == TRIPLE,
        None => rubbo.inner.exports.iter().any(|(p, _)| p == TRIPLE),
    }
}

/// Exports one of the application's own services (MetadataService V1 or V2; group =
/// the application, `version` when given) on `protocol`, at the host of `at`, not
/// registered at interface level. The port is the one the protocol's services were
/// configured with, so the service shares their server (`fallback_port` when the
/// protocol has none configured); the URL returned carries the bound port.
async fn export_internal(
    rubbo: &Rubbo,
    at: &Url,
    protocol: &str,
    port: InternalPort,
    descriptor: &'static ServiceDescriptor,
    version: Option<&str>,
    into_invoker: impl FnOnce(Url) -> rubbo_common::BoxInvoker,
) -> Result<Url, RpcError> {
    let port = match port {
        InternalPort::Fixed(port) => port,
        InternalPort::Shared { fallback } => rubbo
            .inner
            .exports
            .iter()
            .find(|(p, _)| p == protocol)
            .map_or(fallback, |(_, port)| *port),
    };
    let mut url = rubbo
        .provider_url_on(descriptor, protocol, port)?
        .with_host(at.host().unwrap_or(&rubbo.inner.host));
    if let Some(v) = version {
        url = url.with_param(keys::VERSION_KEY, v);
    }
    let url = url.with_param(keys::GROUP_KEY, rubbo.application());
    let exporting = rubbo
        .inner
        .protocols
        .get(protocol)
        .map_err(|e| config_err(e.to_string()))?;
    // As `Rubbo::export` does: IDL services describe themselves (reflection, JSON).
    if !descriptor.file_descriptor_set.is_empty() {
        exporting.describe(descriptor.interface, descriptor.file_descriptor_set);
    }
    let exporter: Arc<dyn rubbo_common::Exporter> =
        Arc::from(exporting.export(into_invoker(url.clone())).await?);
    let url = url.with_port(exporter.url().port());
    rubbo.inner.exporters.lock().push(exporter);
    info!(url = %url.address(), group = rubbo.application(), interface = descriptor.interface, "exported");
    Ok(url)
}

/// Sets the metadata a provider's instance carries besides `dubbo.endpoints`: the
/// MetadataInfo's `revision`, the storage type (`remote` or `local`), the
/// `dubbo.metadata-service.url-params` of the MetadataService exported at
/// `metadata_service` (when one is), `meta-v` (that MetadataService's version) and the
/// [`INSTANCE_PARAMS`] of the first service URL (`timestamp`...), as Java's instance
/// customizers do. One place for what a provider writes (the scale bench's instances
/// are made here too).
fn fill_instance_metadata(
    i: &mut ServiceInstance,
    revision: &str,
    remote: bool,
    metadata_service: Option<&Url>,
    metadata_service_version: &str,
    first: &Url,
) {
    i.metadata.insert(
        keys::EXPORTED_SERVICES_REVISION_PROPERTY_NAME.to_owned(),
        revision.to_owned(),
    );
    let storage = if remote { "remote" } else { "local" };
    i.metadata.insert(
        keys::METADATA_STORAGE_TYPE_PROPERTY_NAME.to_owned(),
        storage.to_owned(),
    );
    if let Some(ms) = metadata_service {
        i.metadata.insert(
            keys::METADATA_SERVICE_URL_PARAMS_PROPERTY_NAME.to_owned(),
            metadata_service_url_params(ms),
        );
    }
    i.metadata.insert(
        keys::METADATA_SERVICE_VERSION_NAME.to_owned(),
        metadata_service_version.to_owned(),
    );
    for k in INSTANCE_PARAMS {
        if let Some(v) = first.get_param(k) {
            i.metadata.insert(k.to_owned(), v.to_owned());
        }
    }
}

/// Where an internal service (MetadataService) is exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InternalPort {
    /// On the server of its protocol's services, else on `fallback` (0: a free port).
    Shared { fallback: u16 },
    /// On this port (`metadata-service-port`; 0: a free port).
    Fixed(u16),
}

/// The parsed register mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Interface,
    Instance,
    All,
}

/// The application-level side of one application.
#[derive(Debug)]
pub(super) struct AppDiscovery {
    mode: Mode,
    remote: bool,
    sessions: Sessions,
    served: Arc<Mutex<Served>>,
    state: tokio::sync::Mutex<State>,
    migration: Option<String>,
    /// The application's threshold (Java's default 0.0).
    threshold: f32,
    local_rule: migration::listener::LocalRule,
    /// `dubbo.application.metadata-service-protocol`, when set.
    metadata_service_protocol: Option<String>,
    /// `dubbo.application.metadata-service-port`, when set (0: a free port).
    metadata_service_port: Option<u16>,
    /// `dubbo.application.only-use-metadata-v2`.
    only_use_metadata_v2: bool,
    /// The application-level registry of references, made at the first one.
    consumer: tokio::sync::OnceCell<Arc<consumer::ServiceDiscoveryRegistry>>,
    /// Where the dynamic migration rule is read.
    config_center: crate::config_center::ConfigCenter,
    /// The dynamic migration rule, listened to from the first reference on.
    rules: tokio::sync::OnceCell<Arc<migration::listener::RuleListener>>,
}

#[derive(Debug, Default)]
struct State {
    /// `None` until the first export connects them.
    backends: Option<Vec<Backend>>,
    given: Vec<Backend>,
    /// MetadataService V1, unless only V2 is exported.
    metadata_service: Option<Url>,
    /// MetadataService V2 on Triple, exported (beside V1 unless
    /// `only-use-metadata-v2`) when Triple is configured.
    metadata_service_v2: Option<Url>,
    instance: Option<ServiceInstance>,
    /// The URL the instance takes its host, port and instance parameters from.
    first: Option<Url>,
    endpoints: Vec<Endpoint>,
    closed: bool,
}

impl AppDiscovery {
    /// From the builder's settings; an unknown mode is an error.
    pub(super) fn new(
        settings: Settings,
        sessions: &Sessions,
        config_center: crate::config_center::ConfigCenter,
    ) -> Result<Self, RpcError> {
        let mode = match settings
            .register_mode
            .as_deref()
            .map(str::trim)
            .unwrap_or(<RegisterMode as keys::StrParam>::DEFAULT)
        {
            "interface" => Mode::Interface,
            "instance" => Mode::Instance,
            "all" | "" => Mode::All,
            other => {
                return Err(config_err(format!(
                    "{}={other}: expected interface, instance or all",
                    keys::REGISTER_MODE_KEY
                )));
            }
        };
        let remote = settings
            .metadata_type
            .as_deref()
            .unwrap_or(<MetadataType as keys::StrParam>::DEFAULT)
            .trim()
            .eq_ignore_ascii_case("remote");
        if let Some(step) = &settings.migration {
            migration::Step::parse(step)?;
        }
        let threshold = match settings.threshold.as_deref().map(str::trim) {
            None | Some("") => 0.0,
            Some(t) => t.parse::<f32>().map_err(|_| {
                config_err(format!(
                    "dubbo.application.{}={t}: not a number",
                    migration::MIGRATION_THRESHOLD_KEY
                ))
            })?,
        };
        Ok(AppDiscovery {
            mode,
            remote,
            migration: settings.migration.clone(),
            threshold,
            local_rule: settings.local_rule.clone(),
            metadata_service_protocol: settings.metadata_service_protocol.clone(),
            metadata_service_port: settings.metadata_service_port,
            only_use_metadata_v2: settings.only_use_metadata_v2,
            consumer: tokio::sync::OnceCell::new(),
            config_center,
            rules: tokio::sync::OnceCell::new(),
            sessions: sessions.clone(),
            served: Arc::default(),
            state: tokio::sync::Mutex::new(State {
                given: settings.backends,
                ..State::default()
            }),
        })
    }

    /// The configured `metadata-service-protocol`, checked against the protocols when
    /// the application is built.
    pub(super) fn metadata_service_protocol(&self) -> Option<&str> {
        self.metadata_service_protocol.as_deref()
    }

    /// Which MetadataService versions are exported, as Java's
    /// `MetadataServiceVersionUtils.needExportV1` / `needExportV2`: (V1, V2).
    fn versions(&self, rubbo: &Rubbo) -> (bool, bool) {
        let tri = triple_configured(rubbo, self.metadata_service_protocol.as_deref());
        let only_v2 = self.only_use_metadata_v2 && tri;
        (!only_v2, tri)
    }

    /// Whether services are registered at interface level (`interface` or `all`).
    pub(super) fn registers_interfaces(&self) -> bool {
        self.mode != Mode::Instance
    }

    /// After `urls` (one service on each protocol) were exported: adds them to the
    /// metadata, maps the interface, exports MetadataService once, and registers or
    /// updates the instance.
    pub(super) async fn exported(&self, rubbo: &Rubbo, urls: &[Url]) -> Result<(), RpcError> {
        if self.mode == Mode::Interface || urls.is_empty() {
            return Ok(());
        }
        let app = rubbo.application().to_owned();
        let mut st = self.state.lock().await;
        if st.closed {
            return Ok(());
        }
        let backends = self.backends_of(rubbo, &mut st).await?;
        if backends.is_empty() {
            // `all` (the default) quietly means interface level only here.
            if self.mode == Mode::Instance {
                warn!(app = %app, "register-mode=instance, but no registry has application-level discovery (ZooKeeper): the services are not registered anywhere");
            }
            return Ok(());
        }
        // Each once; a failed export is tried again at the next service.
        let (v1, v2) = self.versions(rubbo);
        if v1 && st.metadata_service.is_none() {
            st.metadata_service = Some(self.export_metadata_service(rubbo, urls).await?);
        }
        if v2 && st.metadata_service_v2.is_none() {
            st.metadata_service_v2 = Some(self.export_metadata_service_v2(rubbo, urls).await?);
        }
        {
            let mut served = self.served.lock();
            for url in urls {
                served.info.app = Some(app.clone());
                served.info.add_service(ServiceInfo::from_url(url));
                served.urls.insert(url.to_full_string());
            }
        }
        for url in urls {
            let protocol = url
                .protocol()
                .unwrap_or(keys::defaults::PROTOCOL)
                .to_owned();
            if !st.endpoints.iter().any(|e| e.protocol == protocol) {
                st.endpoints.push(Endpoint {
                    port: url.port(),
                    protocol,
                });
            }
        }
        if let Some(interface) = urls[0].service_interface().map(str::to_owned) {
            for b in &backends {
                if let Err(e) = b.mapping.map(&interface, &app).await {
                    warn!(interface = %interface, app = %app, error = %e, "service-name mapping not published");
                }
            }
        }
        let first = st.first.get_or_insert_with(|| urls[0].clone()).clone();
        let instance = self.instance(rubbo, &st, &first);
        let info = self.served.lock().info.clone();
        let changed = st.instance.as_ref() != Some(&instance);
        if changed {
            for b in &backends {
                #[cfg(feature = "zookeeper")]
                if self.remote {
                    if let Some(r) = &b.report {
                        if let Err(e) = r.publish_metadata(&info).await {
                            warn!(error = %e, "app metadata not published");
                        }
                    }
                }
                let started = std::time::Instant::now();
                let done = if st.instance.is_none() {
                    let done = b.discovery.register(instance.clone()).await;
                    if let Some(m) = rubbo.metrics() {
                        m.registry_op(
                            rubbo_metrics::RegistryOp::Register,
                            &b.cluster,
                            "",
                            done.is_ok(),
                            started.elapsed(),
                        );
                    }
                    done
                } else {
                    b.discovery.update(instance.clone()).await
                };
                // Not fatal: the discovery keeps the instance and writes it once its
                // registry is reachable (a new ZooKeeper session).
                if let Err(e) = done {
                    warn!(app = %app, instance = %instance.id(), error = %e, "instance not registered yet");
                }
            }
            info!(app = %app, instance = %instance.id(), revision = info.revision(), services = info.services.len(), "application instance registered");
            st.instance = Some(instance);
        }
        Ok(())
    }

    /// The application-level registries, connected the first time.
    async fn backends_of(&self, rubbo: &Rubbo, st: &mut State) -> Result<Vec<Backend>, RpcError> {
        if st.backends.is_none() {
            let mut backends = std::mem::take(&mut st.given);
            backends.extend(connect_backends(rubbo, &self.sessions).await?);
            #[cfg(feature = "kubernetes")]
            backends.extend(kubernetes_backends(rubbo).await?);
            st.backends = Some(backends);
        }
        Ok(st.backends.clone().unwrap_or_default())
    }

    /// After `urls` were unexported: removes their services and updates the instance,
    /// or unregisters it when no service is left (as Java does for revision `0`).
    async fn unexported(&self, rubbo: &Rubbo, urls: &[Url]) {
        if self.mode == Mode::Interface {
            return;
        }
        let mut st = self.state.lock().await;
        if st.closed || st.instance.is_none() {
            return;
        }
        let empty = {
            let mut served = self.served.lock();
            for url in urls {
                served
                    .info
                    .remove_service(&ServiceInfo::from_url(url).match_key());
                served.urls.remove(&url.to_full_string());
            }
            served.info.services.is_empty()
        };
        let backends = st.backends.clone().unwrap_or_default();
        let Some(old) = st.instance.take() else {
            return;
        };
        if empty {
            for b in &backends {
                if let Err(e) = b.discovery.unregister(&old).await {
                    warn!(instance = %old.id(), error = %e, "instance not unregistered");
                }
            }
            st.first = None;
            info!(
                app = rubbo.application(),
                "no service left: application instance unregistered"
            );
            return;
        }
        let first = st.first.clone().unwrap_or_else(|| urls[0].clone());
        let instance = self.instance(rubbo, &st, &first);
        for b in &backends {
            if let Err(e) = b.discovery.update(instance.clone()).await {
                warn!(instance = %instance.id(), error = %e, "instance not updated");
            }
        }
        info!(
            app = rubbo.application(),
            revision = instance.revision().unwrap_or_default(),
            "application instance updated"
        );
        st.instance = Some(instance);
    }

    /// The instance as Java's customizers build it.
    fn instance(&self, rubbo: &Rubbo, st: &State, first: &Url) -> ServiceInstance {
        let host = first.host().unwrap_or(&rubbo.inner.host).to_owned();
        let mut i = ServiceInstance::new(rubbo.application(), host, first.port());
        i.set_endpoints(&st.endpoints);
        // As Java's `MetadataServiceURLParamsMetadataCustomizer`: with V2 exported,
        // its URL and version 2.0.0 (Java consumers then call V2), else V1's.
        let (ms, version) = match &st.metadata_service_v2 {
            Some(v2) => (Some(v2), keys::METADATA_SERVICE_V2_VERSION),
            None => (st.metadata_service.as_ref(), keys::METADATA_SERVICE_VERSION),
        };
        let served = self.served.lock();
        fill_instance_metadata(
            &mut i,
            served.info.revision(),
            self.remote,
            ms,
            version,
            first,
        );
        i
    }

    /// Exports MetadataService V1 (group = the application), not registered at
    /// interface level, on `metadata-service-protocol` when set, else on dubbo when a
    /// service uses it, else on the first service's protocol; on that protocol's
    /// server (a new one on a free port when no service uses the protocol, shared
    /// with V2 when both are on Triple).
    async fn export_metadata_service(&self, rubbo: &Rubbo, urls: &[Url]) -> Result<Url, RpcError> {
        let (at, protocol) = self.metadata_service_v1_at(urls);
        // A protocol no service uses gets a server on a free port, shared with V2
        // when both are on Triple (servers are keyed by the port asked for).
        let port = match self.metadata_service_port {
            Some(port) => InternalPort::Fixed(port),
            None if at.protocol() == Some(protocol) => InternalPort::Shared {
                fallback: at.port(),
            },
            None => InternalPort::Shared { fallback: 0 },
        };
        let service = MetadataServiceServer::new(Arc::new(MetadataServiceImpl {
            app: rubbo.application().to_owned(),
            served: self.served.clone(),
        }));
        export_internal(
            rubbo,
            at,
            protocol,
            port,
            &MetadataServiceServer::<MetadataServiceImpl>::SERVICE,
            None,
            |url| service.into_invoker(url),
        )
        .await
    }

    /// The service URL MetadataService V1 goes beside, and V1's protocol:
    /// `metadata-service-protocol` when set, else dubbo when a service uses it, else
    /// the first service's protocol.
    fn metadata_service_v1_at<'u>(&'u self, urls: &'u [Url]) -> (&'u Url, &'u str) {
        let wanted = self
            .metadata_service_protocol
            .as_deref()
            .unwrap_or(keys::defaults::PROTOCOL);
        let at = urls
            .iter()
            .find(|u| u.protocol() == Some(wanted))
            .unwrap_or(&urls[0]);
        let protocol = match &self.metadata_service_protocol {
            Some(p) => p.as_str(),
            None => at.protocol().unwrap_or(keys::defaults::PROTOCOL),
        };
        (at, protocol)
    }

    /// Exports MetadataService V2 (version 2.0.0, group = the application) on Triple,
    /// sharing the Triple server of the services (Java's
    /// `ConfigurableMetadataServiceExporter.exportV2`), not registered.
    async fn export_metadata_service_v2(
        &self,
        rubbo: &Rubbo,
        urls: &[Url],
    ) -> Result<Url, RpcError> {
        let at = urls
            .iter()
            .find(|u| u.protocol() == Some(TRIPLE))
            .unwrap_or(&urls[0]);
        let service = MetadataServiceV2Server::new(Arc::new(MetadataServiceV2Impl {
            served: self.served.clone(),
        }));
        // `metadata-service-port` holds for V2 too, unless V1 took it on another
        // protocol: one port serves one protocol here.
        let v1_elsewhere = self.versions(rubbo).0 && self.metadata_service_v1_at(urls).1 != TRIPLE;
        let port = match self.metadata_service_port {
            Some(port) if !v1_elsewhere || port == 0 => InternalPort::Fixed(port),
            Some(port) => {
                info!(
                    port,
                    "metadata-service-port is MetadataService V1's (not on Triple); V2 shares the Triple server of the services"
                );
                InternalPort::Shared { fallback: 0 }
            }
            None => InternalPort::Shared { fallback: 0 },
        };
        export_internal(
            rubbo,
            at,
            TRIPLE,
            port,
            &MetadataServiceV2Server::<MetadataServiceV2Impl>::SERVICE,
            Some(keys::METADATA_SERVICE_V2_VERSION),
            |url| service.into_invoker(url),
        )
        .await
    }

    /// Removes the instance from every registry (first, at shutdown) and stops.
    pub(super) async fn shutdown(&self) {
        let mut st = self.state.lock().await;
        st.closed = true;
        if let Some(r) = self.rules.get() {
            r.close();
        }
        if let Some(r) = self.consumer.get() {
            rubbo_registry::Registry::destroy(r.as_ref()).await;
        }
        // This instance leaves every backend; only the backends made here are
        // destroyed (a given one may hold other applications' instances).
        let instance = st.instance.take();
        for b in st.backends.take().unwrap_or_default() {
            if let Some(i) = &instance {
                if let Err(e) = b.discovery.unregister(i).await {
                    warn!(instance = %i.id(), error = %e, "instance not unregistered");
                }
            }
            if b.owned {
                b.discovery.destroy().await;
            }
        }
    }
}

impl Rubbo {
    /// Unexports `service` (on every protocol and registry): with application-level
    /// registration, the instance's revision is updated first (or the instance
    /// unregistered when no service is left), then its interface-level nodes and
    /// exporters go. Whether it was exported.
    pub async fn unexport(&self, service: &ServiceDescriptor) -> bool {
        let key = service.service_key();
        let gone: Vec<Arc<dyn Exporter>> = {
            let mut exporters = self.inner.exporters.lock();
            let (gone, keep) = exporters.drain(..).partition(|e| {
                let u = e.url();
                u.service_interface() == Some(service.interface) && u.service_key() == key
            });
            *exporters = keep;
            gone
        };
        if gone.is_empty() {
            return false;
        }
        let mut urls: Vec<Url> = Vec::new();
        for e in &gone {
            let u = e.url();
            if !urls
                .iter()
                .any(|x| x.protocol() == u.protocol() && x.port() == u.port())
            {
                urls.push(u);
            }
        }
        self.inner.app_discovery.unexported(self, &urls).await;
        futures::future::join_all(gone.iter().map(|e| e.unexport())).await;
        info!(service = %key, "service unexported");
        true
    }
}

/// The application-level discovery of each ZooKeeper registry, on the registry's
/// session.
#[cfg(feature = "zookeeper")]
async fn connect_backends(rubbo: &Rubbo, sessions: &Sessions) -> Result<Vec<Backend>, RpcError> {
    let mut out = Vec::new();
    for r in &rubbo.inner.registries {
        let r = rubbo_registry::resolve_registry_url(r);
        let r = match r.protocol() {
            Some(keys::protocols::SERVICE_DISCOVERY_REGISTRY) => {
                r.with_protocol(r.get_param(keys::REGISTRY_KEY).unwrap_or("zookeeper"))
            }
            _ => r,
        };
        if r.protocol() != Some("zookeeper") {
            continue;
        }
        let d = rubbo_registry_zookeeper::ZookeeperServiceDiscovery::connect_shared(
            r.clone(),
            &sessions.zookeeper,
        )
        .await
        .map_err(|e| config_err(format!("service discovery on {}: {e}", r.address())))?;
        let d = Arc::new(d);
        out.push(Backend {
            discovery: d.clone(),
            mapping: d.clone(),
            owned: true,
            cluster: crate::registry_protocol::registry_cluster(&r),
            report: Some(d),
        });
    }
    Ok(out)
}

/// The application-level discovery of each `kubernetes://` registry (no mapping:
/// references name their applications with `provided-by`).
#[cfg(feature = "kubernetes")]
async fn kubernetes_backends(rubbo: &Rubbo) -> Result<Vec<Backend>, RpcError> {
    let mut out = Vec::new();
    for r in &rubbo.inner.registries {
        let r = rubbo_registry::resolve_registry_url(r);
        if r.protocol() != Some("kubernetes") {
            continue;
        }
        let d = rubbo_registry_kubernetes::KubernetesServiceDiscovery::connect(&r)
            .await
            .map_err(|e| config_err(format!("service discovery on {}: {e}", r.address())))?;
        let d = Arc::new(d);
        out.push(Backend {
            discovery: d.clone(),
            mapping: d,
            owned: true,
            cluster: crate::registry_protocol::registry_cluster(&r),
            #[cfg(feature = "zookeeper")]
            report: None,
        });
    }
    Ok(out)
}

#[cfg(not(feature = "zookeeper"))]
async fn connect_backends(_: &Rubbo, _: &Sessions) -> Result<Vec<Backend>, RpcError> {
    Ok(Vec::new())
}

impl AppDiscovery {
    /// What the migration rule is read for, for a reference with `params`.
    fn target_of(&self, params: &[(String, String)]) -> migration::rule::Target {
        let get = |key: &str| {
            params
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.trim())
                .filter(|v| !v.is_empty())
        };
        let interface = get(keys::INTERFACE_KEY).unwrap_or_default();
        let display_key = match get(keys::VERSION_KEY) {
            Some(v) => format!("{interface}:{v}"),
            None => interface.to_owned(),
        };
        migration::rule::Target {
            display_key,
            params: params.to_vec(),
            global_step: self.migration.clone(),
            provider_apps: Vec::new(),
        }
    }

    /// The initial migration step of a reference with `params` (no rule): its
    /// `migration.step`, else the application's, else `APPLICATION_FIRST`.
    #[cfg(test)]
    fn step_of(&self, params: &[(String, String)]) -> Result<migration::Step, RpcError> {
        migration::rule::MigrationRule::default().step(&self.target_of(params))
    }

    /// The dynamic migration rule, listened to from the first reference on. An
    /// unreachable config center with `check=true` fails the reference (as its
    /// governance rules would), and the next one tries again.
    async fn rules(
        &self,
        rubbo: &Rubbo,
    ) -> Result<Arc<migration::listener::RuleListener>, RpcError> {
        self.rules
            .get_or_try_init(|| async {
                let cc = self.config_center.get().await?;
                Ok::<_, RpcError>(
                    migration::listener::RuleListener::start(
                        rubbo.application(),
                        cc,
                        &self.local_rule,
                    )
                    .await,
                )
            })
            .await
            .cloned()
    }

    /// The application-level registry of this application's references.
    async fn consumer_registry(
        &self,
        rubbo: &Rubbo,
    ) -> Result<Arc<consumer::ServiceDiscoveryRegistry>, RpcError> {
        self.consumer
            .get_or_try_init(|| async {
                let backends = {
                    let mut st = self.state.lock().await;
                    self.backends_of(rubbo, &mut st).await?
                };
                if backends.is_empty() {
                    return Err(config_err(
                        "application-level discovery needs a registry with it (ZooKeeper) or a service_discovery given in code",
                    ));
                }
                let timeout = std::time::Duration::from_secs(5);
                let fetcher = Arc::new(consumer::ServiceFetcher {
                    protocols: rubbo.inner.protocols.clone(),
                    timeout,
                    metadata_service_port: self.metadata_service_port,
                    #[cfg(feature = "zookeeper")]
                    reports: backends.iter().filter_map(|b| b.report.clone()).collect(),
                });
                let url = Url::parse(&format!(
                    "{}://{}/org.apache.dubbo.registry.RegistryService",
                    keys::protocols::SERVICE_DISCOVERY_REGISTRY,
                    rubbo.inner.host
                ))
                .map_err(|e| config_err(e.to_string()))?;
                Ok(Arc::new(
                    consumer::ServiceDiscoveryRegistry::new(
                        url,
                        backends,
                        fetcher,
                        consumer::Backoff::default(),
                        timeout,
                    )
                    .with_metrics(rubbo.metrics().cloned()),
                ))
            })
            .await
            .cloned()
    }

    /// A reference with `params` (`query`, encoded for `refer=`): a
    /// [`MigrationInvoker`](migration::invoker::MigrationInvoker) at the step the
    /// rule (else the reference, else the application) gives, moved by every later
    /// rule.
    pub(super) async fn refer(
        &self,
        rubbo: &Rubbo,
        params: &[(String, String)],
    ) -> Result<rubbo_common::BoxInvoker, RpcError> {
        let target = self.target_of(params);
        let check = !params
            .iter()
            .any(|(k, v)| k == keys::CHECK_KEY && v.trim().eq_ignore_ascii_case("false"));
        let url = Url::parse(&format!(
            "consumer://{}/{}",
            rubbo.inner.host,
            target.display_key.split(':').next().unwrap_or_default()
        ))
        .map_err(|e| config_err(e.to_string()))?
        .with_params(params.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let maker = ReferMaker {
            rubbo: Arc::downgrade(&rubbo.inner),
            params: params.to_vec(),
        };
        let invoker = Arc::new(migration::invoker::MigrationInvoker::new(
            url,
            Box::new(maker),
            target,
            self.threshold,
        ));
        let rules = self.rules(rubbo).await?;
        let (rule, generation) = rules.rule();
        if let Err(e) = invoker.migrate(&rule, Some(check)).await {
            rubbo_common::Invoker::destroy(invoker.as_ref());
            return Err(e);
        }
        rules.add(&invoker);
        // A rule that came while the reference was made applies now.
        let (rule, now) = rules.rule();
        if now != generation {
            if let Err(e) = invoker.migrate(&rule, None).await {
                warn!(key = rules.key(), error = %e, "migration failed; the previous step stays");
            }
        }
        Ok(invoker)
    }

    async fn refer_application_level(
        &self,
        rubbo: &Rubbo,
        query: &str,
    ) -> Result<migration::invoker::Side, RpcError> {
        let registry = self.consumer_registry(rubbo).await?;
        let url = rubbo_registry::Registry::url(registry.as_ref())
            .clone()
            .with_param_encoded(keys::REFER_KEY, query);
        let (invoker, directory) = rubbo
            .registry_protocol()
            .refer_via(url, Some(registry as rubbo_registry::SharedRegistry))
            .await?;
        Ok(migration::invoker::Side::new(invoker, vec![directory]))
    }
}

/// Makes the interface-level and application-level sides of one reference.
#[derive(Debug)]
struct ReferMaker {
    /// Weak: the application holds its references.
    rubbo: std::sync::Weak<super::Inner>,
    params: Vec<(String, String)>,
}

impl ReferMaker {
    fn rubbo(&self) -> Result<Rubbo, RpcError> {
        self.rubbo
            .upgrade()
            .map(|inner| Rubbo { inner })
            .ok_or_else(|| config_err("the application was shut down"))
    }

    /// The `refer=` query; without `check`, with `check=false`.
    fn query(&self, check: bool) -> String {
        let mut q: Vec<String> = self
            .params
            .iter()
            .filter(|(k, _)| check || k != keys::CHECK_KEY)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if !check {
            q.push(format!("{}=false", keys::CHECK_KEY));
        }
        q.join("&")
    }
}

impl migration::invoker::SideMaker for ReferMaker {
    fn make(
        &self,
        level: migration::invoker::Level,
        check: bool,
    ) -> rubbo_common::BoxFuture<'_, Result<migration::invoker::Side, RpcError>> {
        Box::pin(async move {
            let rubbo = self.rubbo()?;
            let query = self.query(check);
            match level {
                migration::invoker::Level::Interface => {
                    let (invoker, directories) = rubbo.refer_interface_level(&query).await?;
                    Ok(migration::invoker::Side::new(invoker, directories))
                }
                migration::invoker::Level::Application => {
                    rubbo
                        .inner
                        .app_discovery
                        .refer_application_level(&rubbo, &query)
                        .await
                }
            }
        })
    }

    fn provider_apps(&self) -> rubbo_common::BoxFuture<'_, Vec<String>> {
        Box::pin(async move {
            let given = self
                .params
                .iter()
                .rev()
                .find(|(k, _)| k == consumer::PROVIDED_BY_KEY)
                .map(|(_, v)| rubbo_metadata::parse_mapping(v))
                .filter(|a| !a.is_empty());
            if let Some(apps) = given {
                return apps;
            }
            let Ok(rubbo) = self.rubbo() else {
                return Vec::new();
            };
            let Some(interface) = self
                .params
                .iter()
                .find(|(k, _)| k == keys::INTERFACE_KEY)
                .map(|(_, v)| v.clone())
            else {
                return Vec::new();
            };
            let backends = {
                let d = &rubbo.inner.app_discovery;
                let mut st = d.state.lock().await;
                d.backends_of(&rubbo, &mut st).await.unwrap_or_default()
            };
            let mut apps = Vec::new();
            for b in backends {
                if let Ok(list) = b.mapping.get(&interface).await {
                    for a in list {
                        if !apps.contains(&a) {
                            apps.push(a);
                        }
                    }
                }
            }
            apps
        })
    }
}
