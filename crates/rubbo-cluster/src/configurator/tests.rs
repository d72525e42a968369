use rubbo_common::Url;

use super::{Configurator, ConfiguratorKind, Configurators};

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

fn rule(s: &str) -> Configurator {
    Configurator::from_url(&url(s)).unwrap()
}

const PROVIDER: &str = "dubbo://10.0.0.1:20880/org.demo.Greeter?timeout=1000&version=1.0.0";

#[test]
fn override_replaces_values_and_copies_no_condition_key() {
    let r = rule(
        "override://0.0.0.0/org.demo.Greeter?category=configurators&dynamic=false&enabled=true\
         &version=2.0.0&side=consumer&configVersion=v2.7&interface=x&providerAddresses=a\
         &timeout=3000&retries=5",
    );
    assert_eq!(r.kind(), ConfiguratorKind::Override);
    let out = r.configure(&url(PROVIDER), None);
    assert_eq!(out.get_param("timeout"), Some("3000"));
    assert_eq!(out.get_param("retries"), Some("5"));
    assert_eq!(
        out.get_param("version"),
        Some("1.0.0"),
        "version is a condition"
    );
    for k in [
        "category",
        "dynamic",
        "enabled",
        "side",
        "configVersion",
        "interface",
        "providerAddresses",
    ] {
        assert_eq!(out.get_param(k), None, "{k} copied");
    }
}

#[test]
fn absent_only_fills_missing_keys() {
    let r = rule("absent://0.0.0.0/org.demo.Greeter?timeout=3000&retries=5");
    assert_eq!(r.kind(), ConfiguratorKind::Absent);
    let out = r.configure(&url(PROVIDER), None);
    assert_eq!(out.get_param("timeout"), Some("1000"));
    assert_eq!(out.get_param("retries"), Some("5"));
}

#[test]
fn host_port_application_and_enabled_decide_the_match() {
    let p = url(PROVIDER);
    let app = Some("web");
    assert!(rule("override://10.0.0.1/x?timeout=1").matches(&p, app));
    assert!(rule("override://10.0.0.1:20880/x?timeout=1").matches(&p, app));
    assert!(rule("override://*/x?timeout=1").matches(&p, app));
    assert!(!rule("override://10.0.0.2/x?timeout=1").matches(&p, app));
    assert!(!rule("override://10.0.0.1:20881/x?timeout=1").matches(&p, app));
    assert!(!rule("override://0.0.0.0:20881/x?timeout=1").matches(&p, app));
    assert!(rule("override://0.0.0.0/x?application=web&timeout=1").matches(&p, app));
    assert!(rule("override://0.0.0.0/x?application=*&timeout=1").matches(&p, None));
    assert!(!rule("override://0.0.0.0/x?application=admin&timeout=1").matches(&p, app));
    assert!(!rule("override://0.0.0.0/x?application=web&timeout=1").matches(&p, None));
    assert!(!rule("override://0.0.0.0/x?enabled=false&timeout=1").matches(&p, app));
    let unchanged = rule("override://10.0.0.2/x?timeout=1").configure(&p, app);
    assert_eq!(unchanged, p);
}

#[test]
fn only_rule_protocols_make_configurators() {
    assert!(Configurator::from_url(&url("route://0.0.0.0/x?rule=a")).is_none());
    assert!(Configurator::from_url(&url("empty://0.0.0.0/x")).is_none());
    assert!(Configurator::from_url(&url(PROVIDER)).is_none());
}

#[test]
fn a_set_applies_in_order_and_is_replaced_as_a_whole() {
    let set = Configurators::new();
    assert_eq!(
        set.replace_urls(&[
            url("override://0.0.0.0/x?timeout=2000"),
            url("route://0.0.0.0/x?rule=a"),
            url("override://10.0.0.1/x?timeout=3000"),
        ]),
        2
    );
    let p = url(PROVIDER);
    assert_eq!(set.configure(&p, None).get_param("timeout"), Some("3000"));
    set.replace(vec![rule("override://0.0.0.0/x?retries=9")]);
    let out = set.configure(&p, None);
    assert_eq!(out.get_param("timeout"), Some("1000"), "old rules gone");
    assert_eq!(out.get_param("retries"), Some("9"));
    set.replace_urls(&[]);
    assert!(set.is_empty());
    assert_eq!(set.configure(&p, None), p);
}
