//! Configurators: dynamic configuration rules laid over URLs (Java's
//! `org.apache.dubbo.rpc.cluster.configurator`).
//!
//! A rule is an `override://` or `absent://` URL. Its host, port, `side`,
//! `providerAddresses`, `application`, service, `enabled` and (v3.0) `match` say where
//! it applies; its other parameters are what it sets. An
//! [`Override`](ConfiguratorKind::Override) rule replaces the matching URL's values
//! (Java's `OverrideConfigurator`); an [`Absent`](ConfiguratorKind::Absent) rule only
//! fills in the keys the URL lacks (`AbsentConfigurator`).
//!
//! Rules reach a reference from any source (the registry's `configurators` category,
//! the config center) through a [`Configurators`] set, replaced as a whole on every
//! change.
//!
//! # Matching (Java's `AbstractConfigurator.configure`)
//!
//! A rule is laid over a URL on one [`RuleSide`]: a consumer re-shaping the providers
//! it lists, or a provider re-shaping its own URL. Nothing applies when `enabled` is
//! `false`. Then:
//!
//! - **A `configVersion` rule (v2.7 and later, every config center rule)** applies only
//!   on the side its `side` names (a rule without `side` applies nowhere), when its host
//!   is `0.0.0.0` or the host of that side (the consumer's own address; the
//!   provider's), and when
//!   - `providerAddresses`, when given, names the provider: `ip:port`, `ip`, `0.0.0.0`,
//!     `0.0.0.0:*` or `0.0.0.0:{its port}`;
//!   - its `application`, when given and not `*`, is the application of that side (the
//!     consumer's on a consumer, the provider's on a provider);
//!   - its service key is `*` or the URL's;
//!   - its v3.0 `match` ([`ConditionMatch`]), when given, holds.
//! - **A legacy rule (no `configVersion`)** with a port applies to the URL on that port
//!   when its host is `0.0.0.0` or the URL's host. Without a port, it applies on a
//!   consumer when its host is `0.0.0.0` or the consumer's own address, and on a
//!   provider only when its host is `0.0.0.0`. Its `application`, `side` and `~key`
//!   parameters, when given and not `*`, must equal the URL's (`application` and `side`
//!   are the applying side's).
//!
//! A [`Configurators`] set applies its rules sorted as Java's `Configurator.compareTo`
//! sorts them: by host (as text, so `0.0.0.0` rules come before specific hosts, which
//! then win a key both set), then by `priority`. The condition keys stripped before
//! applying are Java's list, with `interface` in place of `interfaces`, plus
//! `providerAddresses` and the `~key` conditions.

mod condition;
mod parser;
mod set;

use std::sync::Arc;

use rubbo_common::Url;
use rubbo_common::keys::{self, ANY_VALUE, ANYHOST_VALUE, protocols};

pub use condition::{AddressMatch, ConditionMatch, ParamMatch};
pub use parser::{
    APP_DYNAMIC_CONFIGURATORS_CATEGORY, DYNAMIC_CONFIGURATORS_CATEGORY, parse_configurators,
    parse_rules,
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

/// The side a rule is laid over URLs on (Java's `url.getSide()` in
/// `AbstractConfigurator`, with the host it checks the rule's against).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleSide<'a> {
    /// A consumer re-shaping the provider URLs it lists: `host` is the consumer's own
    /// address (Java's `NetUtils.getLocalHost()`), `application` its application.
    Consumer {
        /// The consumer's own address.
        host: &'a str,
        /// The consumer's application.
        application: Option<&'a str>,
    },
    /// A provider re-shaping its own URL: its host and application are the URL's.
    Provider,
}

impl RuleSide<'_> {
    fn name(&self) -> &'static str {
        match self {
            RuleSide::Consumer { .. } => keys::CONSUMER_SIDE,
            RuleSide::Provider => keys::PROVIDER_SIDE,
        }
    }

    /// The application of this side, `url` being the URL configured.
    fn application<'u>(&'u self, url: &'u Url) -> Option<&'u str> {
        match self {
            RuleSide::Consumer { application, .. } => *application,
            RuleSide::Provider => url.get_param(keys::APPLICATION_KEY),
        }
    }

    /// The host a rule's host is compared with (Java's first `configureIfMatch` argument).
    fn host<'u>(&'u self, url: &'u Url) -> &'u str {
        match self {
            RuleSide::Consumer { host, .. } => host,
            RuleSide::Provider => url.host().unwrap_or(""),
        }
    }
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
/// use rubbo_cluster::configurator::{Configurator, RuleSide};
/// use rubbo_common::Url;
///
/// let rule = Configurator::from_url(
///     &Url::parse("override://0.0.0.0/org.demo.Greeter?category=configurators&timeout=3000").unwrap(),
/// ).unwrap();
/// let provider = Url::parse("dubbo://10.0.0.1:20880/org.demo.Greeter?timeout=1000").unwrap();
/// let consumer = RuleSide::Consumer { host: "10.0.0.9", application: Some("demo-consumer") };
/// let configured = rule.configure(&provider, consumer);
/// assert_eq!(configured.get_param("timeout"), Some("3000"));
/// assert_eq!(configured.get_param("category"), None, "condition keys are not copied");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Configurator {
    kind: ConfiguratorKind,
    url: Url,
    condition: Option<Arc<ConditionMatch>>,
}

impl Configurator {
    /// A rule of `kind` from `url`.
    pub fn new(kind: ConfiguratorKind, url: Url) -> Self {
        Configurator {
            kind,
            url,
            condition: None,
        }
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

    /// This rule, applying only where `condition` (a v3.0 `match`) holds too.
    pub fn with_condition(mut self, condition: Option<ConditionMatch>) -> Self {
        self.condition = condition.map(Arc::new);
        self
    }

    /// How the rule changes what it matches.
    pub fn kind(&self) -> ConfiguratorKind {
        self.kind
    }

    /// The rule URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The v3.0 `match` condition, if any.
    pub fn condition(&self) -> Option<&ConditionMatch> {
        self.condition.as_deref()
    }

    /// Whether the rule applies to `url` laid over on `side` (see the
    /// [module docs](self)).
    pub fn matches(&self, url: &Url, side: RuleSide<'_>) -> bool {
        let rule = &self.url;
        if !rule.get_bool(keys::ENABLED_KEY, true) || rule.host().is_none() || url.host().is_none()
        {
            return false;
        }
        let versioned = rule
            .get_param(keys::CONFIG_VERSION_KEY)
            .is_some_and(|v| !v.is_empty());
        if versioned {
            if rule.get_param(keys::SIDE_KEY) != Some(side.name()) {
                return false;
            }
            self.host_matches(side.host(url)) && self.v27_conditions_match(url, side)
        } else if rule.port() != 0 {
            url.port() == rule.port()
                && self.host_matches(url.host().unwrap_or(""))
                && self.legacy_conditions_match(url, side)
        } else {
            let host = match side {
                RuleSide::Consumer { host, .. } => host,
                RuleSide::Provider => ANYHOST_VALUE,
            };
            self.host_matches(host) && self.legacy_conditions_match(url, side)
        }
    }

    /// Java's `configureIfMatch` host test.
    fn host_matches(&self, host: &str) -> bool {
        matches!(self.url.host(), Some(h) if h == ANYHOST_VALUE || h == host)
    }

    /// Java's `isV27ConditionMatchOrUnset`, then the v3.0 `match`.
    fn v27_conditions_match(&self, url: &Url, side: RuleSide<'_>) -> bool {
        let rule = &self.url;
        if let Some(list) = rule
            .get_param(keys::OVERRIDE_PROVIDERS_KEY)
            .filter(|l| !l.is_empty())
        {
            let address = url.address();
            let host = url.host().unwrap_or("");
            let any_port = format!("{ANYHOST_VALUE}:{ANY_VALUE}");
            let this_port = format!("{ANYHOST_VALUE}:{}", url.port());
            let named = list.split(',').map(str::trim).any(|a| {
                a == address || a == ANYHOST_VALUE || a == any_port || a == this_port || a == host
            });
            if !named {
                return false;
            }
        }
        let application = side.application(url);
        if let Some(a) = rule.get_param(keys::APPLICATION_KEY) {
            if a != ANY_VALUE && Some(a) != application {
                return false;
            }
        }
        let service = rule.service_key();
        if service != ANY_VALUE && service != url.service_key() {
            return false;
        }
        let v30 = rule
            .get_param(keys::CONFIG_VERSION_KEY)
            .is_some_and(|v| v.starts_with("v3.0"));
        match (&self.condition, v30) {
            (Some(c), true) => c.is_match(side.host(url), url, application),
            _ => true,
        }
    }

    /// Java's `isDeprecatedConditionMatch`: `application`, `side` and `~key`
    /// parameters, when not `*`, equal the URL's.
    fn legacy_conditions_match(&self, url: &Url, side: RuleSide<'_>) -> bool {
        self.url.params().iter().all(|(k, v)| {
            if v == ANY_VALUE {
                return true;
            }
            let actual = if let Some(key) = k.strip_prefix('~') {
                url.get_param(key)
            } else if k == keys::APPLICATION_KEY {
                side.application(url)
            } else if k == keys::SIDE_KEY {
                Some(side.name())
            } else {
                return true;
            };
            actual == Some(v)
        })
    }

    /// `url` with this rule's parameters laid over it when the rule
    /// [matches](Self::matches) on `side`; otherwise `url` unchanged.
    pub fn configure(&self, url: &Url, side: RuleSide<'_>) -> Url {
        if !self.matches(url, side) {
            return url.clone();
        }
        let params = self
            .url
            .params()
            .iter()
            .filter(|(k, _)| !CONDITION_KEYS.contains(k) && !k.starts_with('~'));
        match self.kind {
            ConfiguratorKind::Override => url.with_params(params),
            ConfiguratorKind::Absent => url.with_params_if_absent(params),
        }
    }
}

#[cfg(test)]
mod tests;
