//! The URL parser, its percent-encoded (ZooKeeper node) form and URL lists.

use rubbo_cluster::directory::parse_url_list;
use rubbo_common::Url;
use rubbo_common::url::decode;

/// Registry URLs, their ZooKeeper node form, rule URLs and URL lists.
const URLS: &[&str] = &[
    "dubbo://10.0.0.1:20880/org.apache.dubbo.demo.DemoService?anyhost=true&application=demo-provider&dubbo=2.0.2&interface=org.apache.dubbo.demo.DemoService&methods=sayHello,sayHelloAsync&pid=1&side=provider&timestamp=1700000000000&version=1.0.0",
    "dubbo%3A%2F%2F10.0.0.1%3A20880%2Forg.apache.dubbo.demo.DemoService%3Fapplication%3Ddemo%26group%3Dg%26version%3D1.0.0",
    "tri://[::1]:50051/org.rubbo.Greeter?serialization=hessian2&idl-methods=greet",
    "override://0.0.0.0/org.demo.S?category=configurators&dynamic=false&enabled=true&timeout=500",
    "zookeeper://user:pa%40ss@127.0.0.1:2181/org.apache.dubbo.registry.RegistryService?backup=10.0.0.2:2181,10.0.0.3:2181",
    "condition://0.0.0.0/S?rule=host%20%3D%2010.0.0.1%20%3D%3E%20host%20!%3D%2010.0.0.2",
    "dubbo://a:1;dubbo://b:2?x=y",
    "file:///tmp/a/b.cache",
];

/// URL punctuation and escapes.
pub const DICT: &[&[u8]] = &[
    b"%", b"%2", b"%25", b"://", b"@", b"[", b"]", b":", b"?", b"&", b"=", b";", b",", b"#",
];

/// The URL seeds.
pub fn seeds() -> Vec<Vec<u8>> {
    crate::seeds::texts(URLS)
}

/// A URL as every parser reads it.
pub fn urls(input: &[u8]) {
    let text = crate::text(input);
    // Printing a parsed URL is not asserted to parse back: a host with brackets
    // inside ("h[::1]") parses, as in Java, and prints bracketed.
    if let Ok(url) = Url::parse(&text) {
        let _ = url.to_string();
        let _ = url.address();
    }
    let _ = Url::parse_encoded(&text);
    let _ = decode(&text);
    let _ = parse_url_list(&text);
}
