//! Categories, matching and the URL helpers of the registry layer (Java's
//! `UrlUtils.isMatch`, `RegistryConstants`, `empty://`).

use std::collections::BTreeMap;

use rubbo_common::Url;
pub use rubbo_common::keys::{
    ANY_VALUE, CONFIGURATORS_CATEGORY, CONSUMERS_CATEGORY, PROVIDERS_CATEGORY, ROUTERS_CATEGORY,
};
use rubbo_common::keys::{
    CATEGORY_KEY, CHECK_KEY, CLASSIFIER_KEY, Category, ENABLED_KEY, Enabled, INTERFACE_KEY,
    REGISTRY_KEY, Register, RegistryType, StrParam, Subscribe,
};

/// What a consumer subscribes to.
pub const CONSUMER_SUBSCRIBE_CATEGORIES: &str = "providers,configurators,routers";
/// The protocol of the URL that stands for an empty category.
pub use rubbo_common::keys::protocols::EMPTY as EMPTY_PROTOCOL;
/// The protocol of override (configurator) rules.
pub use rubbo_common::keys::protocols::OVERRIDE as OVERRIDE_PROTOCOL;
/// The protocol of route rules.
pub use rubbo_common::keys::protocols::ROUTE as ROUTE_PROTOCOL;

/// The categories a subscribe URL asks for (`category`, comma separated; `providers`
/// when absent).
///
/// ```
/// use rubbo_common::Url;
/// let url = Url::parse("consumer://h/S?category=providers,configurators,routers").unwrap();
/// assert_eq!(rubbo_registry::categories(&url), ["providers", "configurators", "routers"]);
/// assert_eq!(rubbo_registry::categories(&Url::parse("consumer://h/S").unwrap()), ["providers"]);
/// ```
pub fn categories(url: &Url) -> Vec<&str> {
    let list: Vec<&str> = url
        .get_param(CATEGORY_KEY)
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    if list.is_empty() {
        vec![Category::DEFAULT]
    } else {
        list
    }
}

/// The category of a registered URL (`category`, `providers` when absent). For an
/// `empty://` URL this is the category it empties.
pub fn category_of(url: &Url) -> &str {
    url.get_param(CATEGORY_KEY)
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .unwrap_or(Category::DEFAULT)
}

/// The category of the list a notified URL belongs to, as Java's `RegistryDirectory`
/// judges it: `override://` URLs are configurators and `route://` URLs routers whatever
/// their `category` parameter says; otherwise [`category_of`]. Use this (not
/// `category_of`) to tell which list a notification replaces.
///
/// ```
/// use rubbo_common::Url;
/// let route = Url::parse("route://0.0.0.0/a.B?rule=x").unwrap();
/// assert_eq!(rubbo_registry::list_category(&route), "routers");
/// let empty = Url::parse("empty://h/a.B?category=configurators").unwrap();
/// assert_eq!(rubbo_registry::list_category(&empty), "configurators");
/// ```
pub fn list_category(url: &Url) -> &str {
    match url.protocol() {
        Some(OVERRIDE_PROTOCOL) => CONFIGURATORS_CATEGORY,
        Some(ROUTE_PROTOCOL) => ROUTERS_CATEGORY,
        _ => category_of(url),
    }
}

/// The URL that stands for an empty `category` of the subscription `consumer`: the
/// consumer URL with protocol `empty` and `category={category}` (Java's
/// `toUrlsWithEmpty`).
///
/// ```
/// use rubbo_common::Url;
/// let consumer = Url::parse("consumer://10.0.0.9/a.B?category=providers,routers&interface=a.B").unwrap();
/// let empty = rubbo_registry::empty_url(&consumer, "routers");
/// assert_eq!(empty.to_string(), "empty://10.0.0.9/a.B?category=routers&interface=a.B");
/// assert!(rubbo_registry::is_empty_url(&empty));
/// ```
pub fn empty_url(consumer: &Url, category: &str) -> Url {
    consumer
        .with_protocol(EMPTY_PROTOCOL)
        .with_param(CATEGORY_KEY, category)
}

/// Whether `url` is an `empty://` URL.
pub fn is_empty_url(url: &Url) -> bool {
    url.protocol() == Some(EMPTY_PROTOCOL)
}

/// Java's `UrlUtils.isMatchCategory`: whether `category` is one of `categories` (a
/// comma list that may hold `*` or `-{category}` exclusions).
pub fn is_match_category(category: &str, categories: Option<&str>) -> bool {
    let categories = categories.map(str::trim).filter(|c| !c.is_empty());
    match categories {
        None => category == Category::DEFAULT,
        Some(list) => {
            let items = || list.split(',').map(str::trim);
            if items().any(|c| c == ANY_VALUE) {
                return true;
            }
            if items().any(|c| c.strip_prefix('-') == Some(category)) {
                return false;
            }
            items().any(|c| c == category)
        }
    }
}

/// Java's `UrlUtils.isMatch`: whether registered URL `provider` is for subscription
/// `consumer`: same interface (or `*` on either side), a subscribed category, enabled,
/// and matching group (`*`, equal, or listed), version (`*` or equal) and classifier.
///
/// ```
/// use rubbo_common::Url;
/// let c = Url::parse("consumer://h/a.B?interface=a.B&version=1.0&category=providers").unwrap();
/// let p = |q: &str| Url::parse(&format!("dubbo://1.1.1.1:1/a.B?interface=a.B&{q}")).unwrap();
/// assert!(rubbo_registry::is_match(&c, &p("version=1.0")));
/// assert!(!rubbo_registry::is_match(&c, &p("version=2.0")));
/// assert!(!rubbo_registry::is_match(&c, &p("version=1.0&enabled=false")));
/// assert!(!rubbo_registry::is_match(&c, &p("version=1.0&category=routers")));
/// ```
pub fn is_match(consumer: &Url, provider: &Url) -> bool {
    let ci = consumer.service_interface();
    let pi = provider.service_interface();
    if !(ci == Some(ANY_VALUE) || pi == Some(ANY_VALUE) || ci == pi) {
        return false;
    }
    if !is_match_category(category_of(provider), consumer.get_param(CATEGORY_KEY)) {
        return false;
    }
    if !provider.param::<Enabled>() && consumer.get_param(ENABLED_KEY) != Some(ANY_VALUE) {
        return false;
    }
    let (cg, pg) = (consumer.group(), provider.group());
    let group_ok = cg == Some(ANY_VALUE)
        || cg == pg
        || matches!((cg, pg), (Some(list), Some(g)) if list.split(',').any(|x| x.trim() == g));
    let (cv, pv) = (consumer.version(), provider.version());
    let version_ok = cv == Some(ANY_VALUE) || cv == pv;
    let cc = consumer.get_param(CLASSIFIER_KEY).unwrap_or(ANY_VALUE);
    let pc = provider.get_param(CLASSIFIER_KEY).unwrap_or(ANY_VALUE);
    let classifier_ok = cc == ANY_VALUE || cc == pc;
    group_ok && version_ok && classifier_ok
}

/// The lists to deliver for `urls` (Java's `AbstractRegistry.notify`): the URLs that
/// match `consumer`, grouped by [`list_category`], in the order they came. Categories with no
/// URL are absent; callers add `empty://` where they know a category is empty.
pub fn group_by_category(consumer: &Url, urls: &[Url]) -> BTreeMap<String, Vec<Url>> {
    let mut out: BTreeMap<String, Vec<Url>> = BTreeMap::new();
    for url in urls {
        if is_match(consumer, url) {
            out.entry(list_category(url).to_owned())
                .or_default()
                .push(url.clone());
        }
    }
    out
}

/// The subscribe URL of a consumer: `category=providers,configurators,routers` added
/// when the URL names no category.
pub fn subscribe_url(consumer: &Url) -> Url {
    if consumer
        .get_param(CATEGORY_KEY)
        .is_some_and(|c| !c.is_empty())
    {
        consumer.clone()
    } else {
        consumer.with_param(CATEGORY_KEY, CONSUMER_SUBSCRIBE_CATEGORIES)
    }
}

/// The URL a consumer registers (`category=consumers`, `check=false`), as Java writes it
/// under `/dubbo/{interface}/consumers`, without this process's TLS key files
/// ([`SSL_CLIENT_KEYS`](rubbo_common::keys::SSL_CLIENT_KEYS)).
pub fn consumer_register_url(consumer: &Url) -> Url {
    consumer
        .without_params(rubbo_common::keys::SSL_CLIENT_KEYS)
        .with_params([(CATEGORY_KEY, CONSUMERS_CATEGORY), (CHECK_KEY, "false")])
}

/// Whether a service (or reference) should be registered: `register` is not `false`.
/// `register=false` means subscribe only.
pub fn should_register(url: &Url) -> bool {
    url.param::<Register>()
}

/// Whether a reference should subscribe: `subscribe` is not `false`. `subscribe=false`
/// means register only.
pub fn should_subscribe(url: &Url) -> bool {
    url.param::<Subscribe>()
}

/// The real registry URL: `registry://h:p/...?registry=zookeeper` becomes
/// `zookeeper://h:p/...` without the `registry` parameter; other URLs are returned
/// as they are.
///
/// ```
/// use rubbo_common::Url;
/// let url = Url::parse("registry://127.0.0.1:2181/org.apache.dubbo.registry.RegistryService?registry=zookeeper&timeout=3000").unwrap();
/// assert_eq!(rubbo_registry::resolve_registry_url(&url).to_string(),
///     "zookeeper://127.0.0.1:2181/org.apache.dubbo.registry.RegistryService?timeout=3000");
/// ```
pub fn resolve_registry_url(url: &Url) -> Url {
    if url.protocol() == Some(REGISTRY_KEY) {
        let real = url.str_param::<RegistryType>().to_owned();
        url.with_protocol(&real).without_params(&[REGISTRY_KEY])
    } else {
        url.clone()
    }
}

/// Whether `url` is for every interface (`interface=*`).
pub fn is_any_interface(url: &Url) -> bool {
    url.get_param(INTERFACE_KEY) == Some(ANY_VALUE) || url.path() == Some(ANY_VALUE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn category_matching_follows_java() {
        assert!(is_match_category("providers", None));
        assert!(!is_match_category("routers", None));
        assert!(is_match_category("routers", Some("*")));
        assert!(is_match_category("routers", Some("*,-routers")));
        assert!(!is_match_category("routers", Some("providers,-routers")));
        assert!(is_match_category("routers", Some("providers,routers")));
    }

    #[test]
    fn group_lists_and_any() {
        let p = u("dubbo://1.1.1.1:1/a.B?interface=a.B&group=g2");
        assert!(is_match(&u("consumer://h/a.B?group=g1,g2"), &p));
        assert!(is_match(&u("consumer://h/a.B?group=*"), &p));
        assert!(!is_match(&u("consumer://h/a.B?group=g1"), &p));
        assert!(!is_match(&u("consumer://h/a.B"), &p));
        assert!(is_match(&u("consumer://h/*?group=*"), &p));
        assert!(!is_match(&u("consumer://h/c.D?group=*"), &p));
    }

    #[test]
    fn grouping_keeps_order_and_filters() {
        let c = u("consumer://h/a.B?category=providers,routers");
        let urls = [
            u("dubbo://1.1.1.1:1/a.B"),
            u("route://0.0.0.0/a.B?category=routers"),
            u("dubbo://1.1.1.2:1/a.B"),
            u("dubbo://1.1.1.3:1/c.D"),
            u("override://0.0.0.0/a.B?category=configurators"),
        ];
        let g = group_by_category(&c, &urls);
        assert_eq!(g.len(), 2);
        assert_eq!(g["providers"].len(), 2);
        assert_eq!(g["routers"].len(), 1);
    }

    #[test]
    fn helpers() {
        let c = u("consumer://h/a.B?interface=a.B");
        assert_eq!(
            subscribe_url(&c).get_param("category"),
            Some(CONSUMER_SUBSCRIBE_CATEGORIES)
        );
        assert_eq!(category_of(&consumer_register_url(&c)), "consumers");
        assert!(should_register(&c) && should_subscribe(&c));
        assert!(!should_register(&c.with_param("register", "false")));
        assert!(!should_subscribe(&c.with_param("subscribe", "false")));
        assert_eq!(
            resolve_registry_url(&u("memory://x")).protocol(),
            Some("memory")
        );
    }
}
