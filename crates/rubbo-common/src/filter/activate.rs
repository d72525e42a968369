//! `Activate`: where and when a filter runs unasked (Java's `@Activate`).

use crate::Url;

/// The chain a filter runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Provider side: between the protocol's dispatcher and the service.
    Provider,
    /// Consumer side, per provider: between load balancing and the protocol invoker
    /// (Java's consumer `Filter`s: `activelimit`, `genericimpl`...).
    Consumer,
    /// Consumer side, once per call: around the cluster invoker (Java's
    /// `ClusterFilter`s: `consumercontext`...).
    Cluster,
}

const PROVIDER: u8 = 1;
const CONSUMER: u8 = 2;
const CLUSTER: u8 = 4;

impl Stage {
    fn bit(self) -> u8 {
        match self {
            Stage::Provider => PROVIDER,
            Stage::Consumer => CONSUMER,
            Stage::Cluster => CLUSTER,
        }
    }
}

/// Where and when a filter runs unasked, and in which order: Java's
/// `@Activate(group = .., order = .., value = ..)`.
///
/// ```
/// use rubbo_common::filter::{Activate, Stage};
/// use rubbo_common::Url;
///
/// let token = Activate::provider(0).when_keys(&["token"]);
/// assert!(token.runs_in(Stage::Provider) && !token.runs_in(Stage::Consumer));
/// assert!(!token.is_active(&Url::parse("dubbo://h/S").unwrap()));
/// assert!(token.is_active(&Url::parse("dubbo://h/S?token=abc").unwrap()));
/// // A method-level key counts too (`sayHello.actives=2` activates `actives`).
/// let actives = Activate::consumer(0).when_keys(&["actives"]);
/// assert!(actives.is_active(&Url::parse("dubbo://h/S?sayHello.actives=2").unwrap()));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Activate {
    stages: u8,
    order: i32,
    keys: &'static [&'static str],
    auto: bool,
}

impl Activate {
    /// Runs only where named in `service.filter` / `reference.filter`, in the provider
    /// or the per-provider consumer chain; order 0.
    pub const fn on_demand() -> Self {
        Activate {
            stages: PROVIDER | CONSUMER,
            order: 0,
            keys: &[],
            auto: false,
        }
    }

    /// Runs unasked in every provider chain, at `order`.
    pub const fn provider(order: i32) -> Self {
        Activate {
            stages: PROVIDER,
            order,
            keys: &[],
            auto: true,
        }
    }

    /// Runs unasked in every per-provider consumer chain, at `order`.
    pub const fn consumer(order: i32) -> Self {
        Activate {
            stages: CONSUMER,
            order,
            keys: &[],
            auto: true,
        }
    }

    /// Runs unasked once per consumer call, around the cluster invoker, at `order`.
    pub const fn cluster(order: i32) -> Self {
        Activate {
            stages: CLUSTER,
            order,
            keys: &[],
            auto: true,
        }
    }

    /// Runs unasked in every provider and per-provider consumer chain, at `order`.
    pub const fn both(order: i32) -> Self {
        Activate {
            stages: PROVIDER | CONSUMER,
            order,
            keys: &[],
            auto: true,
        }
    }

    /// Runs unasked only when the URL has one of `keys` with a non-empty value, or a
    /// method-level `{method}.{key}` (Java's `@Activate(value = ..)`).
    pub const fn when_keys(mut self, keys: &'static [&'static str]) -> Self {
        self.keys = keys;
        self
    }

    /// The same stages and keys, only where named.
    pub const fn named_only(mut self) -> Self {
        self.auto = false;
        self
    }

    /// The order: lower runs first (outermost).
    pub const fn order(&self) -> i32 {
        self.order
    }

    /// Whether the filter runs without being named.
    pub const fn is_auto(&self) -> bool {
        self.auto
    }

    /// Whether the filter belongs in a chain of `stage`.
    pub fn runs_in(&self, stage: Stage) -> bool {
        self.stages & stage.bit() != 0
    }

    /// Whether `url` carries what the filter needs to run unasked.
    pub fn is_active(&self, url: &Url) -> bool {
        self.keys.is_empty()
            || url.params().iter().any(|(k, v)| {
                !v.is_empty()
                    && self.keys.iter().any(|key| {
                        k == *key
                            || k.strip_suffix(key)
                                .is_some_and(|prefix| prefix.ends_with('.'))
                    })
            })
    }
}
