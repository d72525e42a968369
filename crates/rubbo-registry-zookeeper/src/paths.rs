//! The node layout Java Dubbo writes (`ZookeeperRegistry.toServicePath` and friends).
//!
//! ```text
//! /{group}                                   root, group = registry URL `group` (default dubbo)
//! /dubbo/{encode(interface)}                 service
//! /dubbo/{iface}/{category}                  providers, consumers, routers, configurators
//! /dubbo/{iface}/{category}/{encode(url.to_full_string())}
//! ```

use rubbo_common::Url;
use rubbo_common::keys::{
    ANY_VALUE, CATEGORY_KEY, CONFIGURATORS_CATEGORY, CONSUMERS_CATEGORY, PROVIDERS_CATEGORY,
    ROUTERS_CATEGORY, ZkRoot,
};
use rubbo_common::url::encode;
use rubbo_registry::category_of;

/// The root path of a registry URL: `/` + `group` (default `dubbo`).
///
/// ```
/// use rubbo_common::Url;
/// use rubbo_registry_zookeeper::paths::root_path;
/// assert_eq!(root_path(&Url::parse("zookeeper://h:2181").unwrap()), "/dubbo");
/// assert_eq!(root_path(&Url::parse("zookeeper://h:2181?group=/a/b").unwrap()), "/a/b");
/// ```
pub fn root_path(registry_url: &Url) -> String {
    let group = registry_url.str_param::<ZkRoot>();
    if group.starts_with('/') {
        group.to_owned()
    } else {
        format!("/{group}")
    }
}

/// The root as a directory (ends with `/`).
fn root_dir(root: &str) -> String {
    if root == "/" {
        root.to_owned()
    } else {
        format!("{root}/")
    }
}

/// `/dubbo/{encode(interface)}` (the root itself for interface `*`).
pub fn service_path(root: &str, url: &Url) -> String {
    let name = url.service_interface().unwrap_or("");
    if name == ANY_VALUE {
        return root.to_owned();
    }
    format!("{}{}", root_dir(root), encode(name))
}

/// `/dubbo/{iface}/{category}` for `url`'s own category (default `providers`).
pub fn category_path(root: &str, url: &Url) -> String {
    format!("{}/{}", service_path(root, url), category_of(url))
}

/// `/dubbo/{iface}/{category}` for each category of a subscribe URL.
pub fn categories_paths(root: &str, url: &Url) -> Vec<(String, String)> {
    let service = service_path(root, url);
    let cats: Vec<&str> = if url.get_param(CATEGORY_KEY) == Some(ANY_VALUE) {
        vec![
            PROVIDERS_CATEGORY,
            CONSUMERS_CATEGORY,
            ROUTERS_CATEGORY,
            CONFIGURATORS_CATEGORY,
        ]
    } else {
        rubbo_registry::categories(url)
    };
    cats.into_iter()
        .map(|c| (c.to_owned(), format!("{service}/{c}")))
        .collect()
}

/// The node name of a registered URL: `encode(url.to_full_string())`.
pub fn node_name(url: &Url) -> String {
    encode(&url.to_full_string())
}

/// The full node path of a registered URL.
pub fn url_path(root: &str, url: &Url) -> String {
    format!("{}/{}", category_path(root, url), node_name(url))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The provider URL of the wire reference (6.1), as Java registers it.
    pub(crate) const JAVA_PROVIDER: &str = "dubbo://192.168.1.2:20880/org.apache.dubbo.demo.DemoService?anyhost=true&application=demo-provider&deprecated=false&dubbo=2.0.2&dynamic=true&generic=false&interface=org.apache.dubbo.demo.DemoService&methods=sayHello,sayHelloAsync&pid=1234&prefer.serialization=hessian2,fastjson2&release=3.3.1&service-name-mapping=true&side=provider&timestamp=1700000000000";

    /// What Java's `URL.encode(url.toFullString())` gives for it.
    pub(crate) const JAVA_NODE: &str = "dubbo%3A%2F%2F192.168.1.2%3A20880%2Forg.apache.dubbo.demo.DemoService%3Fanyhost%3Dtrue%26application%3Ddemo-provider%26deprecated%3Dfalse%26dubbo%3D2.0.2%26dynamic%3Dtrue%26generic%3Dfalse%26interface%3Dorg.apache.dubbo.demo.DemoService%26methods%3DsayHello%2CsayHelloAsync%26pid%3D1234%26prefer.serialization%3Dhessian2%2Cfastjson2%26release%3D3.3.1%26service-name-mapping%3Dtrue%26side%3Dprovider%26timestamp%3D1700000000000";

    #[test]
    fn node_path_is_what_java_writes() {
        let url = Url::parse(JAVA_PROVIDER).unwrap();
        let root = root_path(&Url::parse("zookeeper://127.0.0.1:2181").unwrap());
        assert_eq!(node_name(&url), JAVA_NODE);
        assert_eq!(
            url_path(&root, &url),
            format!("/dubbo/org.apache.dubbo.demo.DemoService/providers/{JAVA_NODE}")
        );
        let parsed = Url::parse_encoded(JAVA_NODE).unwrap();
        assert_eq!(parsed, url);
        assert_eq!(parsed.get_param("methods"), Some("sayHello,sayHelloAsync"));
    }

    #[test]
    fn categories_and_roots() {
        let c =
            Url::parse("consumer://10.0.0.9/a.B?interface=a.B&category=providers,routers").unwrap();
        assert_eq!(
            categories_paths("/dubbo", &c),
            vec![
                ("providers".to_owned(), "/dubbo/a.B/providers".to_owned()),
                ("routers".to_owned(), "/dubbo/a.B/routers".to_owned())
            ]
        );
        let consumer = c.with_param("category", "consumers");
        assert!(
            url_path("/", &consumer)
                .starts_with("/a.B/consumers/consumer%3A%2F%2F10.0.0.9%2Fa.B%3F")
        );
        let any = Url::parse("consumer://h/*?interface=*").unwrap();
        assert_eq!(service_path("/dubbo", &any), "/dubbo");
    }
}
