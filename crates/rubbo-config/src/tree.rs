//! The resolved tree and its typed sections.

use std::collections::BTreeMap;
use std::path::Path;

use tracing::warn;

use crate::model::{
    ApplicationConfig, CenterConfig, DefaultsConfig, MethodConfig, ProtocolConfig, RegistryConfig,
    ServiceConfig, SslConfig, int, put_param,
};
use crate::schema::{self, Kind, Type};
use crate::{ConfigError, ConfigLoader, Entry, Source};

/// The resolved configuration: one value per key, each with its source, and the
/// typed sections built from the `dubbo.` keys. Build it with [`Config::loader`].
#[derive(Debug, Clone, Default)]
pub struct Config {
    tree: BTreeMap<String, Entry>,
    unknown: Vec<(String, Source)>,
    application: ApplicationConfig,
    registries: Vec<RegistryConfig>,
    protocols: Vec<ProtocolConfig>,
    provider: DefaultsConfig,
    consumer: DefaultsConfig,
    services: Vec<ServiceConfig>,
    references: Vec<ServiceConfig>,
    config_center: CenterConfig,
    metadata_report: CenterConfig,
    ssl: SslConfig,
}

/// How strong a source is (for two spellings of one attribute).
fn rank(s: &Source) -> u8 {
    match s {
        Source::Code => 7,
        Source::Set => 6,
        Source::Env { .. } => 5,
        Source::ConfigCenter {
            application: true, ..
        } => 4,
        Source::ConfigCenter { .. } => 3,
        Source::File { .. } => 2,
        Source::Default => 1,
    }
}

impl Config {
    /// A loader to add sources to.
    pub fn loader() -> ConfigLoader {
        ConfigLoader::default()
    }

    /// One file (see [`ConfigLoader::file`]) under the process's environment.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        Config::loader().file(path)?.process_env().load()
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.tree.get(key).map(|e| e.value.as_str())
    }

    /// The value of `key` with its source.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.tree.get(key)
    }

    /// Every key and value, in key order (keys outside `dubbo.` included).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.tree.iter().map(|(k, e)| (k.as_str(), e))
    }

    /// The keys under `dubbo.` that Java does not know, with their sources (each was
    /// logged once at `warn`).
    pub fn unknown_keys(&self) -> &[(String, Source)] {
        &self.unknown
    }

    /// `dubbo.application`.
    pub fn application(&self) -> &ApplicationConfig {
        &self.application
    }

    /// `dubbo.registry` first, then `dubbo.registries.<id>` by id.
    pub fn registries(&self) -> &[RegistryConfig] {
        &self.registries
    }

    /// `dubbo.protocol` first, then `dubbo.protocols.<id>` by id.
    pub fn protocols(&self) -> &[ProtocolConfig] {
        &self.protocols
    }

    /// `dubbo.provider`: defaults for every service.
    pub fn provider(&self) -> &DefaultsConfig {
        &self.provider
    }

    /// `dubbo.consumer`: defaults for every reference.
    pub fn consumer(&self) -> &DefaultsConfig {
        &self.consumer
    }

    /// `dubbo.services.<interface>`, by interface.
    pub fn services(&self) -> &[ServiceConfig] {
        &self.services
    }

    /// `dubbo.references.<interface>`, by interface.
    pub fn references(&self) -> &[ServiceConfig] {
        &self.references
    }

    /// The service configured for `interface`.
    pub fn service(&self, interface: &str) -> Option<&ServiceConfig> {
        self.services.iter().find(|s| s.interface == interface)
    }

    /// The reference configured for `interface`.
    pub fn reference(&self, interface: &str) -> Option<&ServiceConfig> {
        self.references.iter().find(|s| s.interface == interface)
    }

    /// `dubbo.config-center` (not applied yet).
    pub fn config_center(&self) -> &CenterConfig {
        &self.config_center
    }

    /// `dubbo.metadata-report` (not applied yet).
    pub fn metadata_report(&self) -> &CenterConfig {
        &self.metadata_report
    }

    /// `dubbo.ssl.*`: the TLS certificates and keys of servers and clients.
    pub fn ssl(&self) -> &SslConfig {
        &self.ssl
    }

    /// Type-checks the tree and builds the sections.
    pub(crate) fn from_tree(tree: BTreeMap<String, Entry>) -> Result<Config, ConfigError> {
        // (kind, id, method) -> attr -> (value, rank)
        type Sections = BTreeMap<(u8, String, String), BTreeMap<String, (String, u8)>>;
        let mut sections: Sections = BTreeMap::new();
        let mut kinds: BTreeMap<u8, Kind> = BTreeMap::new();
        let mut unknown = Vec::new();
        for (key, entry) in &tree {
            if !key.starts_with("dubbo.") {
                continue;
            }
            let Some(p) = schema::parse(key) else {
                if schema::OWNED_ELSEWHERE.iter().any(|p| key.starts_with(p)) {
                    continue;
                }
                warn!(key = %key, source = %entry.source, "unknown configuration key, ignored");
                unknown.push((key.clone(), entry.source.clone()));
                continue;
            };
            let ty = if p.attr.starts_with("parameters.") {
                Type::Str
            } else {
                Type::of(&p.attr)
            };
            ty.check(&entry.value)
                .map_err(|expected| ConfigError::Type {
                    key: key.clone(),
                    value: entry.value.clone(),
                    expected,
                    at: entry.source.clone(),
                })?;
            let tag = match (p.kind, &p.method) {
                (Kind::Method, Some((_, true))) => 100,
                (k, _) => k as u8,
            };
            kinds.insert(tag, p.kind);
            let method = p.method.map(|(m, _)| m).unwrap_or_default();
            let attrs = sections.entry((tag, p.id, method)).or_default();
            let r = rank(&entry.source);
            if attrs.get(&p.attr).is_none_or(|(_, old)| *old <= r) {
                attrs.insert(p.attr, (entry.value.clone(), r));
            }
        }
        let mut c = Config {
            tree,
            unknown,
            ..Config::default()
        };
        let mut service_methods: BTreeMap<(bool, String), Vec<MethodConfig>> = BTreeMap::new();
        for ((tag, id, method), attrs) in sections {
            let attrs: BTreeMap<String, String> =
                attrs.into_iter().map(|(k, (v, _))| (k, v)).collect();
            let opt_id = (!id.is_empty()).then(|| id.clone());
            let get = |k: &str| attrs.get(k).map(|v| v.trim().to_owned());
            match kinds.get(&tag).copied() {
                Some(Kind::Application) => {
                    c.application = ApplicationConfig {
                        name: get("name"),
                        attributes: attrs,
                    }
                }
                Some(Kind::Registry) => {
                    let r = RegistryConfig {
                        id: opt_id,
                        address: get("address"),
                        attributes: attrs,
                    };
                    if r.id.is_none() {
                        c.registries.insert(0, r);
                    } else {
                        c.registries.push(r);
                    }
                }
                Some(Kind::Protocol) => {
                    let name = get("name")
                        .or_else(|| opt_id.clone())
                        .unwrap_or_else(|| "dubbo".to_owned());
                    let port = get("port").and_then(|p| p.parse::<u16>().ok());
                    let p = ProtocolConfig {
                        id: opt_id,
                        name,
                        port,
                        host: get("host"),
                        attributes: attrs,
                    };
                    if p.id.is_none() {
                        c.protocols.insert(0, p);
                    } else {
                        c.protocols.push(p);
                    }
                }
                Some(kind @ (Kind::Provider | Kind::Consumer)) => {
                    let mut d = DefaultsConfig {
                        host: get("host"),
                        params: BTreeMap::new(),
                    };
                    for (k, v) in &attrs {
                        put_param(&mut d.params, k, v);
                    }
                    if kind == Kind::Provider {
                        c.provider = d;
                    } else {
                        c.consumer = d;
                    }
                }
                Some(kind @ (Kind::Service | Kind::Reference)) => {
                    let mut s = ServiceConfig {
                        interface: id,
                        ..ServiceConfig::default()
                    };
                    for (k, v) in &attrs {
                        put_param(&mut s.params, k, v);
                    }
                    if kind == Kind::Service {
                        c.services.push(s);
                    } else {
                        c.references.push(s);
                    }
                }
                Some(Kind::Method) => {
                    let mut m = MethodConfig {
                        name: method,
                        timeout: get("timeout").as_deref().and_then(int),
                        retries: get("retries").as_deref().and_then(int),
                        loadbalance: get("loadbalance"),
                        mock: get("mock"),
                        params: BTreeMap::new(),
                    };
                    for (k, v) in &attrs {
                        put_param(&mut m.params, k, v);
                    }
                    service_methods.entry((tag == 100, id)).or_default().push(m);
                }
                Some(Kind::ConfigCenter) => {
                    c.config_center = CenterConfig {
                        address: get("address"),
                        attributes: attrs,
                    }
                }
                Some(Kind::MetadataReport) => {
                    c.metadata_report = CenterConfig {
                        address: get("address"),
                        attributes: attrs,
                    }
                }
                Some(Kind::Ssl) => c.ssl = SslConfig { attributes: attrs },
                None => {}
            }
        }
        for ((service, interface), methods) in service_methods {
            let list = if service {
                &mut c.services
            } else {
                &mut c.references
            };
            match list.iter_mut().find(|s| s.interface == interface) {
                Some(s) => s.methods = methods,
                None => list.push(ServiceConfig {
                    interface,
                    params: BTreeMap::new(),
                    methods,
                }),
            }
        }
        Ok(c)
    }
}
