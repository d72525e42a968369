use rubbo_common::Url;

use super::{Configurator, ConfiguratorKind, Configurators, RuleSide, parse_rules};

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

fn rule(s: &str) -> Configurator {
    Configurator::from_url(&url(s)).unwrap()
}

const PROVIDER: &str = "dubbo://10.0.0.1:20880/org.demo.Greeter?timeout=1000&version=1.0.0&application=prov&side=provider";

/// A consumer at 10.0.0.9 of application `web`.
const WEB: RuleSide<'static> = RuleSide::Consumer {
    host: "10.0.0.9",
    application: Some("web"),
};

#[test]
fn override_replaces_values_and_copies_no_condition_key() {
    let r = rule(
        "override://0.0.0.0/org.demo.Greeter?category=configurators&dynamic=false&enabled=true\
         &version=1.0.0&side=consumer&configVersion=v2.7&providerAddresses=10.0.0.1:20880\
         &timeout=3000&retries=5",
    );
    assert_eq!(r.kind(), ConfiguratorKind::Override);
    let out = r.configure(&url(PROVIDER), WEB);
    assert_eq!(out.get_param("timeout"), Some("3000"));
    assert_eq!(out.get_param("retries"), Some("5"));
    for k in [
        "category",
        "dynamic",
        "enabled",
        "configVersion",
        "providerAddresses",
    ] {
        assert_eq!(out.get_param(k), None, "{k} copied");
    }
    assert_eq!(
        out.get_param("side"),
        Some("provider"),
        "side is a condition"
    );
}

#[test]
fn absent_only_fills_missing_keys() {
    let r = rule("absent://0.0.0.0/org.demo.Greeter?timeout=3000&retries=5");
    assert_eq!(r.kind(), ConfiguratorKind::Absent);
    let out = r.configure(&url(PROVIDER), WEB);
    assert_eq!(out.get_param("timeout"), Some("1000"));
    assert_eq!(out.get_param("retries"), Some("5"));
}

/// Java's `AbstractConfigurator`: a `configVersion` rule applies on its `side` only,
/// to the consumer's own host (or 0.0.0.0), the named provider addresses, application
/// and service.
#[test]
fn versioned_rules_match_side_addresses_application_and_service() {
    let p = url(PROVIDER);
    let v = |q: &str| rule(&format!("override://{q}&configVersion=v3.0&timeout=1"));
    // Side.
    assert!(v("0.0.0.0/org.demo.Greeter?version=1.0.0&side=consumer").matches(&p, WEB));
    assert!(!v("0.0.0.0/org.demo.Greeter?version=1.0.0&side=provider").matches(&p, WEB));
    assert!(
        v("0.0.0.0/org.demo.Greeter?version=1.0.0&side=provider").matches(&p, RuleSide::Provider)
    );
    assert!(
        !v("0.0.0.0/org.demo.Greeter?version=1.0.0").matches(&p, WEB),
        "no side: nowhere"
    );
    assert!(!v("0.0.0.0/org.demo.Greeter?version=1.0.0").matches(&p, RuleSide::Provider));
    // `addresses` (the rule's host) name consumers on the consumer side...
    assert!(v("10.0.0.9/org.demo.Greeter?version=1.0.0&side=consumer").matches(&p, WEB));
    assert!(!v("10.0.0.1/org.demo.Greeter?version=1.0.0&side=consumer").matches(&p, WEB));
    // ... and providers on the provider side.
    assert!(
        v("10.0.0.1/org.demo.Greeter?version=1.0.0&side=provider").matches(&p, RuleSide::Provider)
    );
    assert!(
        !v("10.0.0.9/org.demo.Greeter?version=1.0.0&side=provider").matches(&p, RuleSide::Provider)
    );
    // `providerAddresses`.
    for ok in [
        "10.0.0.1:20880",
        "10.0.0.1",
        "0.0.0.0",
        "0.0.0.0:*",
        "0.0.0.0:20880",
        "1.1.1.1,10.0.0.1:20880",
    ] {
        let r = v(&format!(
            "0.0.0.0/org.demo.Greeter?version=1.0.0&side=consumer&providerAddresses={ok}"
        ));
        assert!(r.matches(&p, WEB), "{ok}");
    }
    for no in ["10.0.0.1:20881", "10.0.0.2", "0.0.0.0:20881"] {
        let r = v(&format!(
            "0.0.0.0/org.demo.Greeter?version=1.0.0&side=consumer&providerAddresses={no}"
        ));
        assert!(!r.matches(&p, WEB), "{no}");
    }
    // `applications`: the consumer's on a consumer, the provider's on a provider.
    assert!(
        v("0.0.0.0/org.demo.Greeter?version=1.0.0&side=consumer&application=web").matches(&p, WEB)
    );
    assert!(
        !v("0.0.0.0/org.demo.Greeter?version=1.0.0&side=consumer&application=prov")
            .matches(&p, WEB)
    );
    assert!(
        v("0.0.0.0/org.demo.Greeter?version=1.0.0&side=provider&application=prov")
            .matches(&p, RuleSide::Provider)
    );
    assert!(
        !v("0.0.0.0/org.demo.Greeter?version=1.0.0&side=provider&application=web")
            .matches(&p, RuleSide::Provider)
    );
    // `services`: `*` or the service key.
    assert!(v("0.0.0.0/*?side=consumer").matches(&p, WEB));
    assert!(
        !v("0.0.0.0/org.demo.Greeter?side=consumer").matches(&p, WEB),
        "version differs"
    );
    assert!(!v("0.0.0.0/org.demo.Other?version=1.0.0&side=consumer").matches(&p, WEB));
    // Disabled.
    assert!(!v("0.0.0.0/*?side=consumer&enabled=false").matches(&p, WEB));
}

/// Java's `configureDeprecated`: a legacy rule with a port is for that provider; without
/// one it names a consumer (or, as 0.0.0.0, everyone).
#[test]
fn legacy_rules_match_as_java_2_6() {
    let p = url(PROVIDER);
    assert!(rule("override://10.0.0.1:20880/x?timeout=1").matches(&p, WEB));
    assert!(rule("override://10.0.0.1:20880/x?timeout=1").matches(&p, RuleSide::Provider));
    assert!(rule("override://0.0.0.0:20880/x?timeout=1").matches(&p, WEB));
    assert!(!rule("override://10.0.0.1:20881/x?timeout=1").matches(&p, WEB));
    assert!(!rule("override://10.0.0.2:20880/x?timeout=1").matches(&p, WEB));
    // No port: the consumer's host.
    assert!(rule("override://10.0.0.9/x?timeout=1").matches(&p, WEB));
    assert!(!rule("override://10.0.0.1/x?timeout=1").matches(&p, WEB));
    assert!(!rule("override://10.0.0.9/x?timeout=1").matches(&p, RuleSide::Provider));
    assert!(rule("override://0.0.0.0/x?timeout=1").matches(&p, RuleSide::Provider));
    // application, side and ~key conditions.
    assert!(rule("override://0.0.0.0/x?application=web&timeout=1").matches(&p, WEB));
    assert!(rule("override://0.0.0.0/x?application=*&timeout=1").matches(&p, WEB));
    assert!(!rule("override://0.0.0.0/x?application=admin&timeout=1").matches(&p, WEB));
    assert!(!rule("override://0.0.0.0/x?side=provider&timeout=1").matches(&p, WEB));
    assert!(rule("override://0.0.0.0/x?~version=1.0.0&timeout=1").matches(&p, WEB));
    assert!(!rule("override://0.0.0.0/x?~version=2.0.0&timeout=1").matches(&p, WEB));
    let out = rule("override://0.0.0.0/x?~version=1.0.0&timeout=7").configure(&p, WEB);
    assert_eq!(out.get_param("timeout"), Some("7"));
    assert_eq!(
        out.get_param("~version"),
        None,
        "~key conditions are not copied"
    );
    assert!(!rule("override://0.0.0.0/x?enabled=false&timeout=1").matches(&p, WEB));
    let unchanged = rule("override://10.0.0.2/x?timeout=1").configure(&p, WEB);
    assert_eq!(unchanged, p);
}

/// The v3.0 `match` of an item: address, providerAddress, service, app and param.
#[test]
fn v30_match_conditions_hold_on_both_sides() {
    let p = url(PROVIDER);
    let one = |side: &str, m: &str| {
        let text = format!(
            "configVersion: v3.0\nkey: org.demo.Greeter:1.0.0\nconfigs:\n  - side: {side}\n    match:\n{m}\n    parameters: {{timeout: 5}}\n"
        );
        let rules = parse_rules(&text).unwrap();
        assert_eq!(rules.len(), 1, "{text}");
        rules.into_iter().next().unwrap()
    };
    let cases: &[(&str, &str, bool)] = &[
        ("consumer", "      address: {cird: 10.0.0.0/24}", true),
        ("consumer", "      address: {exact: 10.0.0.1}", false),
        (
            "consumer",
            "      providerAddress: {wildcard: '10.0.0.*'}",
            true,
        ),
        (
            "consumer",
            "      providerAddress: {exact: '10.0.0.1:20881'}",
            false,
        ),
        (
            "consumer",
            "      service: {oneof: [{exact: 'org.demo.Greeter:1.0.0'}]}",
            true,
        ),
        (
            "consumer",
            "      service: {oneof: [{prefix: org.other}]}",
            false,
        ),
        ("consumer", "      app: {oneof: [{exact: web}]}", true),
        ("consumer", "      app: {oneof: [{exact: prov}]}", false),
        (
            "consumer",
            "      param: [{key: timeout, value: {exact: '1000'}}]",
            true,
        ),
        (
            "consumer",
            "      param: [{key: timeout, value: {regex: '2.*'}}]",
            false,
        ),
        ("provider", "      app: {oneof: [{exact: prov}]}", true),
        ("provider", "      address: {exact: 10.0.0.1}", true),
        ("provider", "      address: {exact: 10.0.0.9}", false),
    ];
    for (side, m, want) in cases {
        let on = if *side == "consumer" {
            WEB
        } else {
            RuleSide::Provider
        };
        let r = one(side, m);
        assert_eq!(r.matches(&p, on), *want, "{side} {m}");
        let timeout = r.configure(&p, on).get_param("timeout").map(str::to_owned);
        assert_eq!(timeout.as_deref() == Some("5"), *want, "{side} {m}");
    }
    assert!(
        parse_rules(
            "key: a.B\nconfigs:\n  - side: consumer\n    match: 3\n    parameters: {a: 1}\n"
        )
        .is_err()
    );
}

#[test]
fn only_rule_protocols_make_configurators() {
    assert!(Configurator::from_url(&url("route://0.0.0.0/x?rule=a")).is_none());
    assert!(Configurator::from_url(&url("empty://0.0.0.0/x")).is_none());
    assert!(Configurator::from_url(&url(PROVIDER)).is_none());
}

#[test]
fn a_set_applies_in_java_order_and_is_replaced_as_a_whole() {
    let set = Configurators::new();
    assert_eq!(
        set.replace_urls(&[
            url("override://10.0.0.9/x?timeout=3000"),
            url("route://0.0.0.0/x?rule=a"),
            url("override://0.0.0.0/x?timeout=2000&priority=2"),
            url("override://0.0.0.0/x?timeout=2500&priority=1"),
        ]),
        3
    );
    let p = url(PROVIDER);
    // Sorted by host then priority: the consumer-specific rule comes last and wins.
    assert_eq!(set.configure(&p, WEB).get_param("timeout"), Some("3000"));
    let other = RuleSide::Consumer {
        host: "10.0.0.8",
        application: Some("web"),
    };
    assert_eq!(
        set.configure(&p, other).get_param("timeout"),
        Some("2000"),
        "priority 2 applies last"
    );
    set.replace(vec![rule("override://0.0.0.0/x?retries=9")]);
    let out = set.configure(&p, WEB);
    assert_eq!(out.get_param("timeout"), Some("1000"), "old rules gone");
    assert_eq!(out.get_param("retries"), Some("9"));
    set.replace_urls(&[]);
    assert!(set.is_empty());
    assert_eq!(set.configure(&p, WEB), p);
}
