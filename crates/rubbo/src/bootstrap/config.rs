//! `RubboBuilder::config`: the externalized configuration ([`rubbo_config::Config`])
//! applied to the builder.

use std::collections::HashMap;

use rubbo_common::{RpcError, keys};
use rubbo_config::Config;

use super::{Rubbo, RubboBuilder, app_discovery};

/// URL parameters by scope, from the configuration: provider and consumer defaults,
/// and per interface the service's or reference's own (with `{method}.{key}`).
#[derive(Debug, Clone, Default)]
pub(super) struct ScopedParams {
    provider: Vec<(String, String)>,
    consumer: Vec<(String, String)>,
    services: HashMap<String, Vec<(String, String)>>,
    references: HashMap<String, Vec<(String, String)>>,
}

fn pairs(p: &[(String, String)]) -> impl Iterator<Item = (&str, &str)> {
    p.iter().map(|(k, v)| (k.as_str(), v.as_str()))
}

impl ScopedParams {
    /// `dubbo.provider.*` parameters.
    pub(super) fn provider(&self) -> impl Iterator<Item = (&str, &str)> {
        pairs(&self.provider)
    }

    /// `dubbo.consumer.*` parameters.
    pub(super) fn consumer(&self) -> impl Iterator<Item = (&str, &str)> {
        pairs(&self.consumer)
    }

    /// `dubbo.services.<interface>.*` parameters.
    pub(super) fn service(&self, interface: &str) -> impl Iterator<Item = (&str, &str)> {
        pairs(self.services.get(interface).map_or(&[][..], Vec::as_slice))
    }

    /// `dubbo.references.<interface>.*` parameters.
    pub(super) fn reference(&self, interface: &str) -> impl Iterator<Item = (&str, &str)> {
        pairs(
            self.references
                .get(interface)
                .map_or(&[][..], Vec::as_slice),
        )
    }
}

/// Sets each pair in `p`, replacing a value the key already has.
pub(super) fn set_params<'a>(
    p: &mut Vec<(String, String)>,
    extra: impl IntoIterator<Item = (&'a str, &'a str)>,
) {
    for (k, v) in extra {
        match p.iter_mut().find(|(old, _)| old == k) {
            Some(slot) => slot.1 = v.to_owned(),
            None => p.push((k.to_owned(), v.to_owned())),
        }
    }
}

impl RubboBuilder {
    /// Applies an externalized configuration (Java's property tree, see
    /// [`rubbo_config`]): the application name, every registry
    /// (`dubbo.registry`, `dubbo.registries.<id>`), every protocol with its port
    /// (as [`protocol`](Self::protocol); a protocol without a port gets the builder's
    /// [`port`](Self::port) for `dubbo` and 50051 for `tri`), the host
    /// (`dubbo.protocol.host`, else `dubbo.provider.host`), and as URL parameters the
    /// provider defaults (on every exported service), the consumer defaults (on every
    /// reference), and each `dubbo.services.<interface>` /
    /// `dubbo.references.<interface>` with its methods (`{method}.timeout`...).
    ///
    /// Parameter precedence on a URL, weakest first: Rubbo's own, the provider or
    /// consumer defaults, [`param`](Self::param), the service's or reference's
    /// configuration. Builder calls after this one are code and win: they replace
    /// the application name, host and port, and add registries and protocols.
    ///
    /// ```
    /// use rubbo::Rubbo;
    /// use rubbo::config::Config;
    ///
    /// let config = Config::loader()
    ///     .yaml("application.yml", "dubbo:\n  application:\n    name: greeter\n  protocol:\n    port: 0\n")?
    ///     .load()?;
    /// let app = Rubbo::builder().config(&config).build()?;
    /// assert_eq!(app.application(), "greeter");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn config(mut self, config: &Config) -> Self {
        if let Some(name) = &config.application().name {
            self.application = name.clone();
        }
        self.qos.apply(config.application());
        app_discovery::apply_config(&mut self.app_discovery, config);
        self.observe.apply(config);
        for r in config.registries() {
            for url in r.urls() {
                self = self.registry(url);
            }
        }
        let mut host = config.provider().host.clone();
        for p in config.protocols() {
            let port = p.port.unwrap_or(match p.name.as_str() {
                "tri" => keys::defaults::TRIPLE_PORT,
                _ => self.port,
            });
            self.exports.push((p.name.clone(), port));
            if p.host.is_some() {
                host = p.host.clone();
            }
        }
        if let Some(h) = host {
            self.host = h;
        }
        let cc = config.config_center();
        if let Some(address) = cc.address.as_deref().filter(|a| !a.is_empty()) {
            self = self.config_center(config_center_url(address, &cc.attributes));
        }
        let list = |m: &std::collections::BTreeMap<String, String>| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Vec<_>>()
        };
        // `dubbo.ssl.*` is one per application, as in Java: its server keys reach every
        // exported service's URL and its client keys every reference's, with the
        // weakest precedence; the protocols read them there (rubbo_remoting::tls), and
        // they are dropped from the URLs written to registries.
        let mut provider: Vec<(String, String)> = config.ssl().server_params();
        provider.extend(list(&config.provider().params));
        let mut consumer: Vec<(String, String)> = config.ssl().client_params();
        consumer.extend(list(&config.consumer().params));
        self.scoped = ScopedParams {
            provider,
            consumer,
            services: config
                .services()
                .iter()
                .map(|s| (s.interface.clone(), s.url_params()))
                .collect(),
            references: config
                .references()
                .iter()
                .map(|s| (s.interface.clone(), s.url_params()))
                .collect(),
        };
        self
    }
}

/// The config center URL of `dubbo.config-center.address` with its `namespace`,
/// `group`, `timeout` and `check` (a scheme-less address is ZooKeeper's).
pub(crate) fn config_center_url(
    address: &str,
    attributes: &std::collections::BTreeMap<String, String>,
) -> String {
    let mut url = if address.contains("://") {
        address.to_owned()
    } else {
        format!("zookeeper://{address}")
    };
    for key in ["namespace", "group", "timeout", "check"] {
        if let Some(v) = attributes.get(key).filter(|v| !v.is_empty()) {
            let sep = if url.contains('?') { '&' } else { '?' };
            url.push_str(&format!("{sep}{key}={}", v.trim()));
        }
    }
    url
}

impl Rubbo {
    /// `Rubbo::builder().config(config).build()`.
    pub fn from_config(config: &Config) -> Result<Rubbo, RpcError> {
        Rubbo::builder().config(config).build()
    }
}
