//! Configurators: dynamic configuration rules laid over URLs (Java's
//! `org.apache.dubbo.rpc.cluster.configurator`).
//!
//! A rule is an `override://` or `absent://` URL. Its host, port, `application` and
//! `enabled` say where it applies; its other parameters are what it sets. An
//! [`Override`](ConfiguratorKind::Override) rule replaces the matching URL's values
//! (Java's `OverrideConfigurator`); an [`Absent`](ConfiguratorKind::Absent) rule only
//! fills in the keys the URL lacks (`AbsentConfigurator`).
//!
//! Rules reach a reference from any source (the registry's `configurators` category
//! today, a config center later) through a [`Configurators`] set, replaced as a whole on
//! every change.
//!
//! # Matching (kept from Rubbo's first registry glue, simpler than Java's)
//!
//! A rule applies to a URL when all of these hold:
//! - `enabled` is not `false`;
//! - its host is absent, `0.0.0.0` or `*`, or equals the URL's host;
//! - its port is 0 or equals the URL's port;
//! - its `application` is absent or `*`, or equals the consumer application given to
//!   [`Configurator::configure`].
//!
//! Rules apply in the order given, so a later matching rule wins a key both set.
//!
//! Where Java's `AbstractConfigurator` differs, not (yet) followed here: the
//! `configVersion` (v2.7+) side checks (`side=consumer` rules matched against the local
//! host), the `providerAddresses` and service-key checks, `~key` conditions, v3.0
//! `match` conditions, and sorting rules by host then `priority`. The condition keys
//! stripped before applying are Java's list, with `interface` in place of `interfaces`
//! and `providerAddresses` added.

mod parser;
mod set;

use rubbo_common::Url;
use rubbo_common::keys::{self, protocols};

pub use parser::{
    APP_DYNAMIC_CONFIGURATORS_CATEGORY, DYNAMIC_CONFIGURATORS_CATEGORY, parse_configurators,
};
pub use set::Configurators;

/// How a rule changes the URLs it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfiguratorKind {
    /// `override://`: the rule's parameters replace the URL's.
    Override,
    /// `absent://`: the rule's parameters are added only where the URL has none.
    Absent,
}

/// Keys of a rule URL that say where it applies, not what it sets.
const CONDITION_KEYS: &[&str] = &[
    keys::CATEGORY_KEY,
    keys::CHECK_KEY,
    keys::DYNAMIC_KEY,
    keys::ENABLED_KEY,
    keys::GROUP_KEY,
    keys::VERSION_KEY,
    keys::APPLICATION_KEY,
    keys::SIDE_KEY,
    keys::CONFIG_VERSION_KEY,
    keys::COMPATIBLE_CONFIG_KEY,
    keys::INTERFACE_KEY,
    keys::OVERRIDE_PROVIDERS_KEY,
];

/// One dynamic configuration rule (Java's `Configurator`). See the
/// [module docs](self) for when it applies.
///
/// ```
/// use rubbo_cluster::configurator::Configurator;
/// use rubbo_common::Url;
///
/// let rule = Configurator::from_url(
///     &Url::parse("override://0.0.0.0/org.demo.Greeter?category=configurators&timeout=3000").unwrap(),
/// ).unwrap();
/// let provider = Url::parse("dubbo://10.0.0.1:20880/org.demo.Greeter?timeout=1000").unwrap();
/// let configured = rule.configure(&provider, Some("demo-consumer"));
/// assert_eq!(configured.get_param("timeout"), Some("3000"));
/// assert_eq!(configured.get_param("category"), None, "condition keys are not copied");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Configurator {
    kind: ConfiguratorKind,
    url: Url,
}

impl Configurator {
    /// A rule of `kind` from `url`.
    pub fn new(kind: ConfiguratorKind, url: Url) -> Self {
        Configurator { kind, url }
    }

    /// The rule of an `override://` or `absent://` URL; `None` for another protocol.
    pub fn from_url(url: &Url) -> Option<Self> {
        let kind = match url.protocol() {
            Some(protocols::OVERRIDE) => ConfiguratorKind::Override,
            Some(protocols::ABSENT) => ConfiguratorKind::Absent,
            _ => return None,
        };
        Some(Configurator::new(kind, url.clone()))
    }

    /// How the rule changes what it matches.
    pub fn kind(&self) -> ConfiguratorKind {
        self.kind
    }

    /// The rule URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// Whether the rule applies to `url` for the consumer application `application`.
    pub fn matches(&self, url: &Url, application: Option<&str>) -> bool {
        let rule = &self.url;
        if !rule.get_bool(keys::ENABLED_KEY, true) {
            return false;
        }
        let host_ok = matches!(
            rule.host(),
            None | Some(keys::ANYHOST_VALUE) | Some(keys::ANY_VALUE)
        ) || rule.host() == url.host();
        let port_ok = rule.port() == 0 || rule.port() == url.port();
        let app_ok = match rule.get_param(keys::APPLICATION_KEY) {
            None | Some(keys::ANY_VALUE) => true,
            Some(a) => Some(a) == application,
        };
        host_ok && port_ok && app_ok
    }

    /// `url` with this rule's parameters laid over it when the rule
    /// [matches](Self::matches); otherwise `url` unchanged.
    pub fn configure(&self, url: &Url, application: Option<&str>) -> Url {
        if !self.matches(url, application) {
            return url.clone();
        }
        let params = self
            .url
            .params()
            .iter()
            .filter(|(k, _)| !CONDITION_KEYS.contains(k));
        match self.kind {
            ConfiguratorKind::Override => url.with_params(params),
            ConfiguratorKind::Absent => url.with_params_if_absent(params),
        }
    }
}

#[cfg(test)]
mod tests;
