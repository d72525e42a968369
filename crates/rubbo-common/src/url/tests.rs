use proptest::prelude::*;

use super::*;

fn p(s: &str) -> Url {
    Url::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[test]
fn full_form() {
    let u = p(
        "dubbo://admin:hello1234@10.20.130.230:20880/context/path?version=1.0.0&application=morgan",
    );
    assert_eq!(u.protocol(), Some("dubbo"));
    assert_eq!(u.username(), Some("admin"));
    assert_eq!(u.password(), Some("hello1234"));
    assert_eq!(u.host(), Some("10.20.130.230"));
    assert_eq!(u.port(), 20880);
    assert_eq!(u.path(), Some("context/path"));
    assert_eq!(u.get_param("version"), Some("1.0.0"));
    assert_eq!(u.get_param("application"), Some("morgan"));
    assert_eq!(
        u.to_string(),
        "dubbo://admin:hello1234@10.20.130.230:20880/context/path?application=morgan&version=1.0.0"
    );
}

#[test]
fn no_protocol_host_and_port() {
    let u = p("192.168.1.3:20880");
    assert_eq!(u.protocol(), None);
    assert_eq!(u.host(), Some("192.168.1.3"));
    assert_eq!(u.port(), 20880);
    assert_eq!(u.path(), None);
    assert_eq!(u.to_string(), "192.168.1.3:20880");
}

#[test]
fn file_forms_as_java_reads_them() {
    let u = p("file:///home/user1/router.js?type=script");
    assert_eq!(
        (u.protocol(), u.host(), u.path()),
        (Some("file"), None, Some("home/user1/router.js"))
    );
    assert_eq!(u.get_param("type"), Some("script"));
    assert_eq!(u.to_string(), "file:///home/user1/router.js?type=script");

    let u = p("file://home/user1/router.js?type=script");
    assert_eq!(
        (u.host(), u.path()),
        (Some("home"), Some("user1/router.js"))
    );

    let u = p("file:/D:/1/router.js?type=script");
    assert_eq!(
        (u.protocol(), u.host(), u.path()),
        (Some("file"), None, Some("D:/1/router.js"))
    );

    let u = p("/home/user1/router.js?type=script");
    assert_eq!(
        (u.protocol(), u.host(), u.path()),
        (None, None, Some("home/user1/router.js"))
    );

    let u = p("home/user1/router.js?type=script");
    assert_eq!(
        (u.protocol(), u.host(), u.path()),
        (None, Some("home"), Some("user1/router.js"))
    );
}

#[test]
fn ipv6_hosts() {
    let u = p("dubbo://[fe80::1]:20880/a.B?x=1");
    assert_eq!(u.host(), Some("fe80::1"));
    assert_eq!(u.port(), 20880);
    assert_eq!(u.address(), "[fe80::1]:20880");
    assert_eq!(u.to_string(), "dubbo://[fe80::1]:20880/a.B?x=1");
    assert_eq!(p(&u.to_string()), u);

    let u = p("dubbo://[::1]/a.B");
    assert_eq!((u.host(), u.port()), (Some("::1"), 0));

    // A zone id after the last ':' is not a port (Java ignores it).
    let u = p("dubbo://fe80:0:0:0:894:aeec:f37d:23e1%en0/a.B");
    assert_eq!(u.host(), Some("fe80:0:0:0:894:aeec:f37d:23e1%en0"));
    assert_eq!(u.port(), 0);

    assert!(matches!(
        Url::parse("dubbo://[::1:20880/a"),
        Err(UrlError::UnterminatedBracket(_))
    ));
}

#[test]
fn credentials_rules() {
    assert!(matches!(
        Url::parse("dubbo://:secret@host:1/p"),
        Err(UrlError::PasswordWithoutUsername(_))
    ));
    let u = p("dubbo://user@host:1/p");
    assert_eq!((u.username(), u.password()), (Some("user"), None));
    // Java tolerates "1234@" (user without password).
    let u = p("dubbo://1234@host");
    assert_eq!(u.username(), Some("1234"));
}

#[test]
fn ports() {
    assert_eq!(
        p("dubbo://h:-1/p").port(),
        0,
        "negative ports become 0 as in Java"
    );
    assert!(matches!(
        Url::parse("dubbo://h:abc/p"),
        Err(UrlError::BadPort { .. })
    ));
    assert!(matches!(
        Url::parse("dubbo://h:70000/p"),
        Err(UrlError::BadPort { .. })
    ));
    assert!(matches!(
        Url::parse("://h:1"),
        Err(UrlError::MissingProtocol(_))
    ));
}

#[test]
fn leading_slashes_trimmed_from_path() {
    assert_eq!(p("dubbo://h:1///a.B").path(), Some("a.B"));
    assert_eq!(p("dubbo://h:1/").path(), None);
    assert_eq!(p("dubbo://h:1/x").with_path("//y").path(), Some("y"));
}

#[test]
fn params_grammar() {
    let u = p("dubbo://h:1/p?a=1;b=2&c&=d&e=x=y");
    assert_eq!(u.get_param("a"), Some("1"));
    assert_eq!(u.get_param("b"), Some("2"), "';' separates like '&'");
    assert_eq!(u.get_param("c"), Some("c"), "a bare key stands for itself");
    assert_eq!(u.get_param("d"), Some("d"), "leading '=' skipped");
    assert_eq!(u.get_param("e"), Some("x=y"), "first '=' splits");
    // Legacy default.* keys also answer the plain key, unless it is set.
    let u = p("dubbo://h:1/p?default.timeout=5&default.retries=1&retries=3");
    assert_eq!(u.get_param("timeout"), Some("5"));
    assert_eq!(u.get_param("retries"), Some("3"));
}

#[test]
fn reference_provider_url_and_its_zookeeper_node_name() {
    let full = "dubbo://192.168.1.2:20880/org.apache.dubbo.demo.DemoService?anyhost=true&application=demo-provider&deprecated=false&dubbo=2.0.2&dynamic=true&generic=false&interface=org.apache.dubbo.demo.DemoService&methods=sayHello,sayHelloAsync&pid=1234&prefer.serialization=hessian2,fastjson2&release=3.3.1&service-name-mapping=true&side=provider&timestamp=1700000000000";
    let u = p(full);
    assert_eq!(
        u.to_full_string(),
        full,
        "Java's toFullString order is key order"
    );
    assert_eq!(u.service_key(), "org.apache.dubbo.demo.DemoService");
    assert_eq!(u.get_param("methods"), Some("sayHello,sayHelloAsync"));

    let node = encode(full);
    assert!(node.starts_with("dubbo%3A%2F%2F192.168.1.2%3A20880%2Forg.apache.dubbo.demo.DemoService%3Fanyhost%3Dtrue%26application%3Ddemo-provider"));
    assert!(node.contains("methods%3DsayHello%2CsayHelloAsync"));
    let back = Url::parse_encoded(&node).unwrap();
    assert_eq!(back, u);
    assert_eq!(Url::parse(&decode(&node).unwrap()).unwrap(), u);
}

#[test]
fn nested_export_and_refer_round_trip() {
    let provider =
        p("dubbo://10.0.0.1:20880/a.B?application=x&methods=m1,m2&side=provider&timeout=3000");
    let refer = "application=c&interface=a.B&methods=m1,m2&side=consumer";
    let reg = p("registry://127.0.0.1:2181/org.apache.dubbo.registry.RegistryService?application=x&registry=zookeeper")
        .with_param_encoded(keys::EXPORT_KEY, &provider.to_full_string())
        .with_param_encoded(keys::REFER_KEY, refer);
    // Through its string form (as Dubbo 2 logged and stored it) and back.
    let reparsed = p(&reg.to_string());
    let export = reparsed
        .get_param_decoded(keys::EXPORT_KEY)
        .unwrap()
        .unwrap();
    assert_eq!(p(&export), provider);
    assert_eq!(
        reparsed
            .get_param_decoded(keys::REFER_KEY)
            .unwrap()
            .as_deref(),
        Some(refer)
    );
    // And through ZooKeeper-style whole-URL encoding: the nested value is encoded twice.
    let node = encode(&reg.to_string());
    let from_node = Url::parse_encoded(&node).unwrap();
    assert_eq!(from_node, reg);
    assert_eq!(
        p(&from_node
            .get_param_decoded(keys::EXPORT_KEY)
            .unwrap()
            .unwrap()),
        provider
    );
}

#[test]
fn service_key_and_address() {
    let u = p("dubbo://10.0.0.1:20880/path?interface=org.Foo&group=g&version=1.0");
    assert_eq!(u.service_key(), "g/org.Foo:1.0");
    assert_eq!(u.service_interface(), Some("org.Foo"));
    let u = p("dubbo://10.0.0.1:20880/org.Foo");
    assert_eq!(u.service_key(), "org.Foo");
    assert_eq!(u.address(), "10.0.0.1:20880");
}

#[test]
fn typed_getters_with_defaults() {
    let u = p("dubbo://h:1/S?timeout=250&check=FALSE&retries=x&weight=7&sayHello.timeout=500");
    assert_eq!(u.get_int("weight", 100), 7);
    assert_eq!(
        u.get_int("retries", 2),
        2,
        "unparseable falls back to the default"
    );
    assert!(!u.get_bool("check", true));
    assert!(u.get_bool("sticky-missing", true));
    assert_eq!(u.get_duration_ms("timeout", 1000).as_millis(), 250);
    assert_eq!(
        u.get_method_duration_ms("sayHello", "timeout", 1000)
            .as_millis(),
        500
    );
    assert_eq!(
        u.get_method_duration_ms("other", "timeout", 1000)
            .as_millis(),
        250
    );
    assert_eq!(u.param::<keys::Timeout>().as_millis(), 250);
    assert_eq!(u.method_param::<keys::Timeout>("sayHello").as_millis(), 500);
    assert_eq!(u.param::<keys::Weight>(), 7);
    assert_eq!(u.param::<keys::Retries>(), 2);
    assert_eq!(u.param::<keys::Payload>(), 8 * 1024 * 1024);
}

#[test]
fn method_params_respect_the_methods_list() {
    // With `methods`, only listed methods own "{method}." keys (Java's toMethodParameters).
    let u = p(
        "dubbo://h:1/S?methods=sayHello&sayHello.timeout=500&prefer.serialization=hessian2&timeout=100",
    );
    assert_eq!(u.get_method_param("sayHello", "timeout"), Some("500"));
    assert_eq!(u.params().get_method("prefer", "serialization"), None);
    let u = p("dubbo://h:1/S?sayHello.timeout=500");
    assert_eq!(u.params().get_method("sayHello", "timeout"), Some("500"));
}

#[test]
fn derivation_shares_the_unchanged_half() {
    let a = p("dubbo://10.0.0.1:20880/S?application=x&side=provider");
    let b = a.with_host("10.0.0.2").with_port(20881);
    assert!(a.shares_params_with(&b));
    assert_eq!(b.address(), "10.0.0.2:20881");
    let c = a.with_param("weight", "5");
    assert!(!a.shares_params_with(&c));
    assert_eq!(c.get_param("weight"), Some("5"));
    assert_eq!(a.get_param("weight"), None, "the original is immutable");
    assert_eq!(c.without_params(&["weight"]), a);
    // Separately parsed URLs with equal parameters share one parameter set.
    let d = p("dubbo://10.9.9.9:1/S?side=provider&application=x");
    assert!(a.shares_params_with(&d));
}

#[test]
fn precedence_override_then_method_then_interface_consumer_before_provider() {
    use crate::resolve::{Sources, apply_overrides, lookup, merge_provider_url};
    let provider = p(
        "dubbo://10.0.0.1:20880/S?application=prov&timeout=500&sayHello.timeout=90&retries=1&threads=100&version=1.0",
    );
    let consumer = p(
        "consumer://10.0.0.9/S?application=cons&timeout=3000&loadbalance=roundrobin&version=2.0&release=3.3.0",
    );
    let merged = merge_provider_url(&provider, &consumer);
    assert_eq!(merged.get_method_param("sayHello", "timeout"), Some("90"));
    assert_eq!(merged.get_method_param("ping", "timeout"), Some("3000"));
    assert_eq!(
        merged.get_param("retries"),
        Some("1"),
        "provider value kept when the consumer is silent"
    );
    assert_eq!(merged.get_param("loadbalance"), Some("roundrobin"));
    assert_eq!(merged.get_param("threads"), None);
    assert_eq!(
        merged.get_param("version"),
        Some("1.0"),
        "consumer version dropped where the provider has one"
    );
    assert_eq!(merged.get_param("release"), None);
    assert_eq!(merged.get_param("application"), Some("cons"));
    assert_eq!(merged.get_param("remote.application"), Some("prov"));

    let over = [p(
        "override://0.0.0.0/S?timeout=6000&category=configurators&enabled=true",
    )];
    let final_url = apply_overrides(&merged, &over);
    assert_eq!(final_url.get_method_param("ping", "timeout"), Some("6000"));
    let disabled = [p("override://0.0.0.0/S?timeout=6000&enabled=false")];
    assert_eq!(
        apply_overrides(&merged, &disabled).get_param("timeout"),
        Some("3000")
    );

    let s = Sources {
        overrides: &over,
        consumer: Some(&consumer),
        provider: Some(&provider),
    };
    assert_eq!(lookup(&s, Some("sayHello"), "timeout"), Some("6000"));
    let s = Sources {
        overrides: &[],
        ..s
    };
    assert_eq!(lookup(&s, Some("sayHello"), "timeout"), Some("90"));
    assert_eq!(lookup(&s, Some("ping"), "timeout"), Some("3000"));
    assert_eq!(lookup(&s, None, "retries"), Some("1"));
    assert_eq!(lookup(&s, None, "nothing"), None);
}

#[test]
fn many_provider_urls_share_parameters() {
    let template = "dubbo://10.0.0.1:20880/org.apache.dubbo.demo.DemoService?anyhost=true&application=demo-provider&dubbo=2.0.2&interface=org.apache.dubbo.demo.DemoService&methods=sayHello&side=provider";
    let base = p(template);
    let urls: Vec<Url> = (0..1000u32)
        .map(|i| {
            p(&template.replace(
                "10.0.0.1:20880",
                &format!(
                    "10.{}.{}.{}:{}",
                    i / 65536,
                    (i / 256) % 256,
                    i % 256,
                    20000 + i % 1000
                ),
            ))
        })
        .collect();
    assert!(urls.iter().all(|u| u.shares_params_with(&base)));
}

fn hash_of(u: &Url) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(u)
}

fn arb_token() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_.-]{1,12}"
}

fn arb_url() -> impl Strategy<Value = Url> {
    (
        proptest::option::of("[a-z][a-z0-9+]{0,8}"),
        proptest::option::of((
            "[a-zA-Z0-9_]{1,8}",
            proptest::option::of("[a-zA-Z0-9_]{1,8}"),
        )),
        prop_oneof![
            "[a-z][a-z0-9-]{0,10}(\\.[a-z0-9-]{1,5}){0,3}".prop_map(Some),
            Just(Some("::1".to_owned())),
            Just(Some("fe80::1".to_owned())),
        ],
        0u16..,
        proptest::option::of("[a-zA-Z0-9_.-]{1,10}(/[a-zA-Z0-9_.-]{1,10}){0,2}"),
        proptest::collection::btree_map(arb_token(), "[a-zA-Z0-9_.,:/*-]{1,16}", 0..6),
    )
        .prop_map(|(proto, creds, host, port, path, params)| {
            let mut s = String::new();
            if let Some(proto) = &proto {
                s.push_str(proto);
                s.push_str("://");
            }
            if let Some((u, pw)) = &creds {
                s.push_str(u);
                if let Some(pw) = pw {
                    s.push(':');
                    s.push_str(pw);
                }
                s.push('@');
            }
            let host = host.unwrap_or_default();
            if host.contains(':') {
                s.push_str(&format!("[{host}]"));
            } else {
                s.push_str(&host);
            }
            if port > 0 {
                s.push_str(&format!(":{port}"));
            }
            if let Some(path) = &path {
                s.push('/');
                s.push_str(path);
            }
            let mut first = true;
            for (k, v) in &params {
                s.push(if first { '?' } else { '&' });
                first = false;
                s.push_str(&format!("{k}={v}"));
            }
            Url::parse(&s).unwrap_or_else(|e| panic!("generated {s}: {e}"))
        })
}

proptest! {
    #[test]
    fn parse_format_round_trip(u in arb_url()) {
        let text = u.to_string();
        prop_assert_eq!(Url::parse(&text).unwrap(), u.clone(), "{}", text);
        prop_assert_eq!(Url::parse_encoded(&encode(&text)).unwrap(), u);
    }

    /// A URL moved by `with_address` is the URL parsed from its text: same string,
    /// equal, same hash, and it still shares the template's parameters.
    #[test]
    fn moved_url_is_the_parsed_one(
        u in arb_url(),
        host in prop_oneof![
            "[a-z0-9][a-z0-9-]{0,10}(\\.[a-z0-9-]{1,5}){0,3}",
            Just("fe80::2".to_owned()),
        ],
        port in 1u16..,
    ) {
        let moved = u.with_address(&host, port);
        let parsed = Url::parse(&moved.to_string()).unwrap();
        prop_assert_eq!(moved.to_string(), parsed.to_string());
        prop_assert_eq!(&moved, &parsed);
        prop_assert_eq!(hash_of(&moved), hash_of(&parsed));
        prop_assert_eq!((moved.host(), moved.port()), (Some(host.as_str()), port));
        prop_assert!(moved.shares_params_with(&u));
        prop_assert!(moved.shares_params_with(&parsed));
    }

    #[test]
    fn parse_never_panics(s in "\\PC{0,60}") {
        let _ = Url::parse(&s);
        let _ = Url::parse_encoded(&s);
    }
}

#[test]
fn providers_differing_in_pid_and_timestamp_share_one_core() {
    let url = |i: u32| {
        p(&format!(
            "dubbo://10.0.{}.{}:2088{}/a.B?application=x&interface=a.B&methods=m1,m2&m1.timeout=5&pid={}&side=provider&timestamp={}&weight=100",
            i / 256,
            i % 256,
            i % 3,
            1000 + i,
            1_700_000_000_000u64 + u64::from(i)
        ))
    };
    let a = url(1);
    let b = url(2);
    assert!(a.params().shares_core_with(b.params()));
    assert!(!a.shares_params_with(&b), "pid and timestamp differ");
    assert_ne!(a.params(), b.params());
    assert_eq!(a, url(1));
    assert!(a.shares_params_with(&url(1)));
    assert_eq!(a.get_param("pid"), Some("1001"));
    assert_eq!(a.get_param("timestamp"), Some("1700000000001"));
    assert_eq!(a.get_method_param("m1", "timeout"), Some("5"));
    assert_eq!(a.params().len(), 8);
    let keys: Vec<&str> = a.params().iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        [
            "application",
            "interface",
            "m1.timeout",
            "methods",
            "pid",
            "side",
            "timestamp",
            "weight"
        ]
    );
    assert_eq!(
        a.to_string(),
        "dubbo://10.0.0.1:20881/a.B?application=x&interface=a.B&m1.timeout=5&methods=m1,m2&pid=1001&side=provider&timestamp=1700000000001&weight=100"
    );
    // Equal parameters built another way are equal, and hash alike.
    let c = Url::parse("dubbo://10.0.0.1:20881/a.B")
        .unwrap()
        .with_params(a.params().iter());
    assert_eq!(c, a);
    let hash = |u: &Url| {
        use std::hash::{BuildHasher, RandomState};
        thread_local!(static S: RandomState = RandomState::new());
        S.with(|s| s.hash_one(u))
    };
    assert_eq!(hash(&c), hash(&a));
    // Derivations keep or drop the per-instance values.
    let d = a.with_param("timestamp", "1");
    assert!(d.params().shares_core_with(a.params()));
    assert_eq!(d.get_param("timestamp"), Some("1"));
    let e = a.without_params(&["pid"]);
    assert_eq!(e.get_param("pid"), None);
    assert_eq!(e.params().len(), 7);
    assert!(!e.params().shares_core_with(a.params()));
    let only_ts = p("dubbo://h:1/S?timestamp=5&a=1");
    assert_eq!(only_ts.get_param("timestamp"), Some("5"));
    assert_eq!(only_ts.get_param("pid"), None);
    assert_eq!(only_ts.to_string(), "dubbo://h:1/S?a=1&timestamp=5");
    let long = "9".repeat(40);
    let heap = p(&format!("dubbo://h:1/S?pid={long}&timestamp={long}"));
    assert_eq!(heap.get_param("pid"), Some(long.as_str()));
    assert_eq!(heap.get_param("timestamp"), Some(long.as_str()));
}

#[test]
fn a_url_is_one_small_allocation() {
    assert_eq!(std::mem::size_of::<Url>(), 8);
    assert!(std::mem::size_of::<super::Inner>() <= 56);
}
