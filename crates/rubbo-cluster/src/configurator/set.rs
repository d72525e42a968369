//! The rule set of one reference, replaced as a whole.

use std::sync::Arc;

use arc_swap::ArcSwap;
use rubbo_common::Url;
use rubbo_common::keys::{self, protocols};
use tracing::debug;

use super::{Configurator, RuleSide};

/// The dynamic configuration rules in force for one reference, replaced as a whole by
/// whichever source publishes them (a registry's `configurators` category, a config
/// center), and laid over URLs in order. Reads take no lock.
///
/// ```
/// use rubbo_cluster::configurator::{Configurators, RuleSide};
/// use rubbo_common::Url;
///
/// let rules = Configurators::default();
/// let provider = Url::parse("dubbo://10.0.0.1:20880/org.demo.Greeter?weight=100").unwrap();
/// let on = RuleSide::Consumer { host: "10.0.0.9", application: None };
///
/// rules.replace_urls(&[
///     // For the provider on port 20880 of 10.0.0.1 (a legacy rule with a port).
///     Url::parse("override://10.0.0.1:20880/org.demo.Greeter?weight=200").unwrap(),
///     Url::parse("absent://0.0.0.0/org.demo.Greeter?weight=1&timeout=5000").unwrap(),
/// ]);
/// let configured = rules.configure(&provider, on);
/// assert_eq!(configured.get_param("weight"), Some("200"));
/// assert_eq!(configured.get_param("timeout"), Some("5000"));
///
/// // An `empty://` list (the registry's "no rule left") clears the set.
/// rules.replace_urls(&[Url::parse("empty://0.0.0.0/org.demo.Greeter?category=configurators").unwrap()]);
/// assert!(rules.is_empty());
/// assert_eq!(rules.configure(&provider, on), provider);
/// ```
#[derive(Debug, Default)]
pub struct Configurators {
    rules: ArcSwap<Vec<Configurator>>,
}

impl Configurators {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces every rule with `rules`, sorted as Java's `Configurator.compareTo`
    /// does (by host as text, then `priority`; a stable sort keeps the given order
    /// otherwise), which is the order they apply in.
    pub fn replace(&self, mut rules: Vec<Configurator>) {
        rules.sort_by(|a, b| {
            let (a, b) = (a.url(), b.url());
            a.host()
                .unwrap_or("")
                .cmp(b.host().unwrap_or(""))
                .then_with(|| {
                    a.get_int(keys::PRIORITY_KEY, 0)
                        .cmp(&b.get_int(keys::PRIORITY_KEY, 0))
                })
        });
        self.rules.store(Arc::new(rules));
    }

    /// Replaces every rule with the `override://` and `absent://` URLs of `urls`, in
    /// order; other URLs (`empty://` included) are skipped, so an `empty://` list
    /// clears the set. Returns how many rules are now in force.
    pub fn replace_urls(&self, urls: &[Url]) -> usize {
        let rules: Vec<Configurator> = urls
            .iter()
            .filter_map(|u| {
                let rule = Configurator::from_url(u);
                if rule.is_none() && u.protocol() != Some(protocols::EMPTY) {
                    debug!(rule = %u, "not a configurator URL, skipped");
                }
                rule
            })
            .collect();
        let n = rules.len();
        self.replace(rules);
        n
    }

    /// The rules in force now.
    pub fn rules(&self) -> Arc<Vec<Configurator>> {
        self.rules.load_full()
    }

    /// How many rules are in force.
    pub fn len(&self) -> usize {
        self.rules.load().len()
    }

    /// Whether no rule is in force.
    pub fn is_empty(&self) -> bool {
        self.rules.load().is_empty()
    }

    /// `url` with every rule matching on `side` laid over it, in order (see
    /// [`Configurator::configure`]), each matched against the URL the ones before it
    /// left, as in Java's `RegistryDirectory.overrideWithConfigurators`.
    pub fn configure(&self, url: &Url, side: RuleSide<'_>) -> Url {
        let rules = self.rules.load();
        let mut out = url.clone();
        for rule in rules.iter() {
            out = rule.configure(&out, side);
        }
        out
    }
}
