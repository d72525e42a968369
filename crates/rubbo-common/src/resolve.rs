//! Where a setting comes from: Dubbo's precedence rules, implemented once.
//!
//! For a call of method `m`, a setting `k` is looked up, strongest first:
//!
//! 1. a dynamic override (configurator / override rule) for `m.k`, then `k`;
//! 2. the consumer's `m.k` (method level), then the provider's `m.k`;
//! 3. the consumer's `k` (interface level), then the provider's `k`;
//! 4. global defaults (application / consumer config), already folded into the consumer
//!    URL by the config layer, then the built-in default.
//!
//! [`merge_provider_url`] builds the one URL a consumer-side invoker carries (Java's
//! `ClusterUtils.mergeUrl` / `DefaultProviderURLMergeProcessor`), and
//! [`apply_overrides`] lays dynamic overrides on top; after that, plain
//! [`Url::get_method_param`] gives exactly the order above. [`lookup`] does the same
//! without building a URL, for callers that hold the sources separately.

use crate::Url;
use crate::keys::*;

/// Provider keys that never reach the consumer's view (the provider's own executor).
const PROVIDER_ONLY_KEYS: &[&str] = &[
    THREADNAME_KEY,
    THREADPOOL_KEY,
    CORE_THREADS_KEY,
    THREADS_KEY,
    QUEUES_KEY,
    ALIVE_KEY,
    TRANSPORTER_KEY,
];

/// Consumer keys that describe the consumer itself, not the call, and are dropped.
const CONSUMER_SELF_KEYS: &[&str] = &[
    RELEASE_KEY,
    DUBBO_VERSION_KEY,
    METHODS_KEY,
    TIMESTAMP_KEY,
    TAG_KEY,
];

/// Keys whose values are lists that concatenate instead of replacing.
const CONCAT_KEYS: &[&str] = &[REFERENCE_FILTER_KEY, INVOKER_LISTENER_KEY];

/// The URL a consumer-side invoker of `provider` carries: the provider URL with the
/// consumer's parameters laid over it (consumer wins), minus the provider's executor
/// keys; the consumer's `group`, `version` and `generic` are dropped where the provider
/// has them, the consumer's own `release`, `dubbo`, `methods`, `timestamp` and
/// `dubbo.tag` are dropped, `remote.application` is the provider's `application`, and
/// `reference.filter` / `invoker.listener` concatenate.
///
/// ```
/// use rubbo_common::{resolve::merge_provider_url, Url};
///
/// let provider = Url::parse("dubbo://10.0.0.1:20880/S?application=p&timeout=500&threads=200&sayHello.timeout=90").unwrap();
/// let consumer = Url::parse("consumer://10.0.0.9/S?application=c&timeout=3000").unwrap();
/// let merged = merge_provider_url(&provider, &consumer);
/// assert_eq!(merged.get_param("timeout"), Some("3000"));         // consumer beats provider
/// assert_eq!(merged.get_method_param("sayHello", "timeout"), Some("90")); // method beats interface
/// assert_eq!(merged.get_param("threads"), None);                  // provider executor keys dropped
/// assert_eq!(merged.get_param("remote.application"), Some("p"));
/// assert_eq!(merged.address(), "10.0.0.1:20880");
/// ```
pub fn merge_provider_url(provider: &Url, consumer: &Url) -> Url {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (k, v) in consumer.params().iter() {
        if CONSUMER_SELF_KEYS.contains(&k) {
            continue;
        }
        if matches!(k, GROUP_KEY | VERSION_KEY | GENERIC_KEY) && provider.get_param(k).is_some() {
            continue;
        }
        if CONCAT_KEYS.contains(&k) {
            if let Some(pv) = provider.get_param(k).filter(|p| !p.is_empty()) {
                pairs.push((k.to_owned(), format!("{pv},{v}")));
                continue;
            }
        }
        pairs.push((k.to_owned(), v.to_owned()));
    }
    if let Some(app) = provider.get_param(APPLICATION_KEY) {
        pairs.push((REMOTE_APPLICATION_KEY.to_owned(), app.to_owned()));
    }
    provider
        .without_params(PROVIDER_ONLY_KEYS)
        .with_params(pairs)
}

/// Lays the parameters of dynamic override URLs over `url`, in order (later wins).
/// An override with `enabled=false` is skipped.
pub fn apply_overrides<'a>(url: &Url, overrides: impl IntoIterator<Item = &'a Url>) -> Url {
    let mut out = url.clone();
    for o in overrides {
        if !o.param::<Enabled>() {
            continue;
        }
        out = out.with_params(
            o.params()
                .iter()
                .filter(|(k, _)| !matches!(*k, ENABLED_KEY | CATEGORY_KEY | CONFIG_VERSION_KEY)),
        );
    }
    out
}

/// The sources of one setting, strongest first (see the [module docs](self)).
#[derive(Debug, Default, Clone, Copy)]
pub struct Sources<'a> {
    /// Dynamic overrides, in application order (the last one wins).
    pub overrides: &'a [Url],
    /// The consumer's URL.
    pub consumer: Option<&'a Url>,
    /// The provider's URL.
    pub provider: Option<&'a Url>,
}

/// Looks a setting up across separate sources in Dubbo's order: override, then method
/// level (consumer, provider), then interface level (consumer, provider).
///
/// ```
/// use rubbo_common::{resolve::{lookup, Sources}, Url};
///
/// let provider = Url::parse("dubbo://h:1/S?timeout=500&echo.timeout=90").unwrap();
/// let consumer = Url::parse("consumer://h/S?timeout=3000").unwrap();
/// let overrides = [Url::parse("override://0.0.0.0/S?timeout=6000").unwrap()];
/// let mut s = Sources { overrides: &[], consumer: Some(&consumer), provider: Some(&provider) };
/// assert_eq!(lookup(&s, Some("echo"), "timeout"), Some("90"));
/// assert_eq!(lookup(&s, Some("ping"), "timeout"), Some("3000"));
/// s.overrides = &overrides;
/// assert_eq!(lookup(&s, Some("ping"), "timeout"), Some("6000"));
/// ```
pub fn lookup<'a>(sources: &Sources<'a>, method: Option<&str>, key: &str) -> Option<&'a str> {
    for o in sources.overrides.iter().rev() {
        if !o.param::<Enabled>() {
            continue;
        }
        if let Some(v) = method.and_then(|m| o.params().get_method(m, key)) {
            return Some(v);
        }
        if let Some(v) = o.get_param(key) {
            return Some(v);
        }
    }
    let layers = [sources.consumer, sources.provider];
    if let Some(m) = method {
        for url in layers.iter().flatten() {
            if let Some(v) = url.params().get_method(m, key).filter(|v| !v.is_empty()) {
                return Some(v);
            }
        }
    }
    layers
        .iter()
        .flatten()
        .find_map(|url| url.get_param(key).filter(|v| !v.is_empty()))
}

/// A typed setting looked up across separate sources ([`lookup`]), with its default.
///
/// ```
/// use rubbo_common::{keys::HashNodes, resolve::{lookup_param, Sources}, Url};
///
/// let provider = Url::parse("dubbo://h:1/S?hash.nodes=320").unwrap();
/// let consumer = Url::parse("consumer://h/S").unwrap();
/// let s = Sources { overrides: &[], consumer: Some(&consumer), provider: Some(&provider) };
/// assert_eq!(lookup_param::<HashNodes>(&s, Some("m")), 320);
/// assert_eq!(lookup_param::<HashNodes>(&Sources::default(), None), HashNodes::DEFAULT);
/// ```
pub fn lookup_param<P: Param>(sources: &Sources<'_>, method: Option<&str>) -> P::Value {
    lookup(sources, method, P::KEY)
        .and_then(P::parse)
        .unwrap_or_else(P::default_value)
}

/// A string setting looked up across separate sources ([`lookup`]), or its default
/// when no source has it. (An empty value counts as absent on the consumer and provider
/// URLs, as in `lookup`; an override's empty value is returned as it is.)
///
/// ```
/// use rubbo_common::{keys::HashArguments, resolve::{lookup_str, Sources}, Url};
///
/// let consumer = Url::parse("consumer://h/S?m.hash.arguments=0,1").unwrap();
/// let s = Sources { overrides: &[], consumer: Some(&consumer), provider: None };
/// assert_eq!(lookup_str::<HashArguments>(&s, Some("m")), "0,1");
/// assert_eq!(lookup_str::<HashArguments>(&s, Some("n")), "0");
/// ```
pub fn lookup_str<'a, P: StrParam>(sources: &Sources<'a>, method: Option<&str>) -> &'a str {
    lookup(sources, method, P::KEY).unwrap_or(P::DEFAULT)
}
