//! Router rule examples from the reference and Dubbo's documentation.
#![allow(clippy::unwrap_used)]

mod support;

use rubbo_cluster::router::{Condition, ConditionRule, NEED_MOCK_ATTACHMENT, TagRule};
use rubbo_cluster::{Candidates, Router, RouterChain};
use rubbo_common::{BoxInvoker, Invocation, Url, Value};
use support::*;

fn hosts(list: &[BoxInvoker]) -> Vec<String> {
    list.iter()
        .map(|i| i.url().host().unwrap().to_owned())
        .collect()
}

fn provider(host: &str, params: &str) -> BoxInvoker {
    let q = if params.is_empty() {
        String::new()
    } else {
        format!("?{params}")
    };
    TestInvoker::ok(&format!("dubbo://{host}:20880/org.demo.Greeter{q}")).boxed()
}

fn consumer(host: &str, params: &str) -> Url {
    Url::parse(&format!(
        "consumer://{host}/org.demo.Greeter?application=web&{params}"
    ))
    .unwrap()
}

fn route(rule: &str, force: bool, ps: &[BoxInvoker], c: &Url, inv: &Invocation) -> Vec<String> {
    let cond = Condition::parse(rule).unwrap();
    hosts(&cond.route(Candidates::new(ps), c, inv, force).to_vec())
}

fn ps() -> Vec<BoxInvoker> {
    vec![
        provider("10.20.153.10", "region=hz"),
        provider("10.20.153.11", "region=sh"),
        provider("172.22.3.91", "region=hz"),
        provider("172.22.3.92", "region=bj"),
    ]
}

#[test]
fn host_glob_routing() {
    let c = consumer("10.20.153.10", "");
    assert_eq!(
        route(
            "host = 10.20.153.10 => host = 10.20.153.*",
            false,
            &ps(),
            &c,
            &inv("m")
        ),
        ["10.20.153.10", "10.20.153.11"]
    );
    // Another consumer host: the when-part fails, everything passes.
    let other = consumer("10.1.1.1", "");
    assert_eq!(
        route(
            "host = 10.20.153.10 => host = 10.20.153.*",
            false,
            &ps(),
            &other,
            &inv("m")
        )
        .len(),
        4
    );
}

#[test]
fn read_write_split_by_method() {
    let c = consumer("10.1.1.1", "");
    let rule = "method = find*,list*,get*,query* => host = 172.22.3.91,172.22.3.92";
    assert_eq!(
        route(rule, false, &ps(), &c, &inv("findUser")),
        ["172.22.3.91", "172.22.3.92"]
    );
    assert_eq!(
        route(rule, false, &ps(), &c, &inv("queryAll")),
        ["172.22.3.91", "172.22.3.92"]
    );
    assert_eq!(route(rule, false, &ps(), &c, &inv("save")).len(), 4);
}

#[test]
fn blacklist_and_whitelist() {
    // `host = X =>`: consumer X gets nothing.
    let x = consumer("10.20.153.10", "");
    let y = consumer("10.20.153.99", "");
    assert!(route("host = 10.20.153.10 =>", false, &ps(), &x, &inv("m")).is_empty());
    assert_eq!(
        route("host = 10.20.153.10 =>", false, &ps(), &y, &inv("m")).len(),
        4
    );
    // `host != X =>`: everyone but X gets nothing (a whitelist of X).
    assert_eq!(
        route("host != 10.20.153.10 =>", false, &ps(), &x, &inv("m")).len(),
        4
    );
    assert!(route("host != 10.20.153.10 =>", false, &ps(), &y, &inv("m")).is_empty());
}

#[test]
fn force_controls_empty_results() {
    let c = consumer("10.1.1.1", "");
    let rule = "=> host = 1.2.3.4";
    assert_eq!(route(rule, false, &ps(), &c, &inv("m")).len(), 4);
    assert!(route(rule, true, &ps(), &c, &inv("m")).is_empty());
}

#[test]
fn mismatch_lists_params_and_dollar_references() {
    let c = consumer("10.1.1.1", "region=hz");
    assert_eq!(
        route("=> region != hz", false, &ps(), &c, &inv("m")),
        ["10.20.153.11", "172.22.3.92"]
    );
    // `$region` is the consumer's region.
    assert_eq!(
        route("=> region = $region", false, &ps(), &c, &inv("m")),
        ["10.20.153.10", "172.22.3.91"]
    );
    // Both lists: mismatch wins first.
    assert_eq!(
        route(
            "=> region = hz,sh & region != sh",
            false,
            &ps(),
            &c,
            &inv("m")
        )
        .len(),
        2
    );
    // A key absent from the provider fails the match.
    assert_eq!(route("=> zone = a", true, &ps(), &c, &inv("m")).len(), 0);
    // Prefixes are stripped; `port` is a URL field.
    assert_eq!(
        route(
            "consumer.application = web => provider.port = 20880",
            true,
            &ps(),
            &c,
            &inv("m")
        )
        .len(),
        4
    );
}

#[test]
fn arguments_ranges_and_attachments() {
    let c = consumer("10.1.1.1", "");
    let rule = "arguments[0] = 1~100 & application = web => region = hz";
    let call = |v: Value| inv("m").with_arguments(vec![v]);
    assert_eq!(
        route(rule, false, &ps(), &c, &call(Value::Int(50))),
        ["10.20.153.10", "172.22.3.91"]
    );
    assert_eq!(
        route(rule, false, &ps(), &c, &call(Value::Int(101))).len(),
        4
    );
    assert_eq!(
        route(rule, false, &ps(), &c, &call(Value::from("7"))).len(),
        2
    );
    // Missing argument: the when-part fails.
    assert_eq!(route(rule, false, &ps(), &c, &inv("m")).len(), 4);
    let att = "attachments[user] = vip* => host = 172.22.3.*";
    let vip = inv("m").with_attachment("user", "vip-1");
    assert_eq!(route(att, false, &ps(), &c, &vip).len(), 2);
    assert_eq!(
        route(
            att,
            false,
            &ps(),
            &c,
            &inv("m").with_attachment("user", "x")
        )
        .len(),
        4
    );
}

#[test]
fn yaml_rule_in_a_chain_can_be_replaced_at_run_time() {
    let chain = Both(RouterChain::builtin());
    let c = consumer("10.1.1.1", "");
    let all = ps();
    assert_eq!(chain.route(&all, &c, &inv("sayHello")).len(), 4);
    chain
        .0
        .set_rule(
            "org.demo.Greeter::.condition-router",
            "configVersion: v3.0\nscope: service\nforce: false\nruntime: true\nenabled: true\nkey: \"org.demo.Greeter::\"\nconditions:\n  - method = sayHello => host = 10.20.153.*\n",
        )
        .unwrap();
    assert_eq!(
        hosts(&chain.route(&all, &c, &inv("sayHello"))),
        ["10.20.153.10", "10.20.153.11"]
    );
    assert_eq!(chain.route(&all, &c, &inv("other")).len(), 4);
    // An application rule chains after the service rule.
    chain
        .0
        .set_rule(
            "web.condition-router",
            "scope: application\nkey: web\nforce: true\nconditions:\n  - => region = sh\n",
        )
        .unwrap();
    assert_eq!(
        hosts(&chain.route(&all, &c, &inv("sayHello"))),
        ["10.20.153.11"]
    );
    // Disabled rules pass everything; removal restores.
    chain
        .0
        .set_rule(
            "web.condition-router",
            "scope: application\nkey: web\nenabled: false\nconditions:\n  - => region = sh\n",
        )
        .unwrap();
    assert_eq!(chain.route(&all, &c, &inv("sayHello")).len(), 2);
    chain.0.remove_rule("org.demo.Greeter::.condition-router");
    assert_eq!(chain.route(&all, &c, &inv("sayHello")).len(), 4);
    // Versions above v3.1 are rejected.
    assert!(
        ConditionRule::from_yaml("configVersion: v3.2\nconditions:\n  - => host = 1\n").is_err()
    );
}

#[test]
fn v31_multi_destination_rule() {
    let rule = ConditionRule::from_yaml(
        "configVersion: v3.1\nscope: service\nforce: false\nconditions:\n  - from:\n      match: method = sayHello\n    to:\n      - match: region = hz\n        weight: 100\n      - match: region = nowhere\n        weight: 100\n",
    )
    .unwrap();
    let chain = Both(RouterChain::builtin());
    chain.0.set_condition_rule(rule);
    let c = consumer("10.1.1.1", "");
    // The empty destination is never chosen.
    for _ in 0..20 {
        assert_eq!(
            hosts(&chain.route(&ps(), &c, &inv("sayHello"))),
            ["10.20.153.10", "172.22.3.91"]
        );
    }
}

#[test]
fn unavailable_providers_are_skipped() {
    let a = TestInvoker::ok("dubbo://10.0.0.1:20880/S");
    let b = TestInvoker::ok("dubbo://10.0.0.2:20880/S");
    b.available
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let chain = RouterChain::builtin();
    let list = chain.route(&[a.boxed(), b.boxed()], &consumer("1.1.1.1", ""), &inv("m"));
    assert_eq!(hosts(&list), ["10.0.0.1"]);
}

fn tagged() -> Vec<BoxInvoker> {
    vec![
        provider("192.168.1.10", ""),
        provider("192.168.1.11", "dubbo.tag=gray"),
        provider("192.168.1.12", "env=gray"),
        provider("192.168.1.13", ""),
    ]
}

/// Routes through both paths: a plain slice and a directory snapshot (precomputed tags).
struct Both(RouterChain);

impl Both {
    fn route(&self, all: &[BoxInvoker], c: &Url, inv: &Invocation) -> Vec<BoxInvoker> {
        let plain = self.0.route(all, c, inv);
        let snapshot = std::sync::Arc::new(all.to_vec());
        let fast = self.0.route_list(&snapshot, c, inv);
        assert_eq!(
            hosts(&plain),
            hosts(&fast),
            "the two routing paths disagree"
        );
        if fast.len() == all.len() {
            assert!(
                std::sync::Arc::ptr_eq(&fast, &snapshot),
                "an unfiltered list is not copied"
            );
        }
        plain
    }
}

#[test]
fn static_tags() {
    let chain = Both(RouterChain::builtin());
    let c = consumer("1.1.1.1", "");
    let all = tagged();
    let gray = inv("m").with_attachment("dubbo.tag", "gray");
    assert_eq!(hosts(&chain.route(&all, &c, &gray)), ["192.168.1.11"]);
    // No tag: untagged providers only.
    assert_eq!(
        hosts(&chain.route(&all, &c, &inv("m"))),
        ["192.168.1.10", "192.168.1.12", "192.168.1.13"]
    );
    // Unknown tag falls back to untagged unless forced.
    let blue = inv("m").with_attachment("dubbo.tag", "blue");
    assert_eq!(chain.route(&all, &c, &blue).len(), 3);
    let forced = blue.clone().with_attachment("dubbo.force.tag", "true");
    assert!(chain.route(&all, &c, &forced).is_empty());
    // The consumer URL's tag applies when the call has none.
    let gray_consumer = consumer("1.1.1.1", "dubbo.tag=gray");
    assert_eq!(
        hosts(&chain.route(&all, &gray_consumer, &inv("m"))),
        ["192.168.1.11"]
    );
}

#[test]
fn dynamic_tag_rule() {
    let chain = RouterChain::builtin();
    chain.set_tag_rule(Some(
        TagRule::from_yaml(
            "configVersion: v3.0\nforce: false\nenabled: true\nkey: demo-provider\ntags:\n  - name: gray\n    match:\n      - key: env\n        value: {exact: gray}\n  - name: canary\n    addresses: [\"192.168.1.10:20880\", \"192.168.1.13\"]\n",
        )
        .unwrap(),
    ));
    let c = consumer("1.1.1.1", "");
    let all = tagged();
    let canary = inv("m").with_attachment("dubbo.tag", "canary");
    assert_eq!(
        hosts(&chain.route(&all, &c, &canary)),
        ["192.168.1.10", "192.168.1.13"]
    );
    let gray = inv("m").with_attachment("dubbo.tag", "gray");
    assert_eq!(hosts(&chain.route(&all, &c, &gray)), ["192.168.1.12"]);
    // No tag: providers outside every dynamic group whose static tag is not a rule tag;
    // here .11 carries the static tag `gray`, which the rule names, so none remain.
    assert!(chain.route(&all, &c, &inv("m")).is_empty());
    // A tag the rule does not know: static tag lookup, then fallback to untagged.
    let blue = inv("m").with_attachment("dubbo.tag", "blue");
    assert!(chain.route(&all, &c, &blue).is_empty());
}

#[test]
fn a_rule_tag_naming_no_provider_defers_to_static_tags() {
    let chain = RouterChain::builtin();
    // `gray` matches no provider by parameter, even with force: static tags decide.
    chain
        .set_rule(
            "demo.tag-router",
            "force: true\ntags:\n  - name: gray\n    match:\n      - key: env\n        value: {exact: nowhere}\n  - name: canary\n    addresses: [\"192.168.1.13\"]\n",
        )
        .unwrap();
    let gray = inv("m").with_attachment("dubbo.tag", "gray");
    assert_eq!(
        hosts(&chain.route(&tagged(), &consumer("1.1.1.1", ""), &gray)),
        ["192.168.1.11"]
    );
}

#[test]
fn tag_rule_force() {
    let chain = RouterChain::builtin();
    let c = consumer("1.1.1.1", "");
    let all = tagged();
    let empty_tag = "tags:\n  - name: dark\n    addresses: [\"10.9.9.9\"]\n";
    chain
        .set_rule("demo.tag-router", &format!("force: false\n{empty_tag}"))
        .unwrap();
    let dark = inv("m").with_attachment("dubbo.tag", "dark");
    // Not forced: falls back to providers in no group and without a static tag.
    assert_eq!(
        hosts(&chain.route(&all, &c, &dark)),
        ["192.168.1.10", "192.168.1.12", "192.168.1.13"]
    );
    chain
        .set_rule("demo.tag-router", &format!("force: true\n{empty_tag}"))
        .unwrap();
    assert!(chain.route(&all, &c, &dark).is_empty());
}

#[test]
fn mock_router_separates_mock_providers() {
    let chain = Both(RouterChain::builtin());
    let c = consumer("1.1.1.1", "");
    let all = vec![
        provider("10.0.0.1", ""),
        TestInvoker::ok("mock://10.0.0.2/org.demo.Greeter").boxed(),
    ];
    assert_eq!(hosts(&chain.route(&all, &c, &inv("m"))), ["10.0.0.1"]);
    let need = inv("m").with_attachment(NEED_MOCK_ATTACHMENT, "true");
    assert_eq!(hosts(&chain.route(&all, &c, &need)), ["10.0.0.2"]);
}

#[test]
fn custom_router_is_ordered_by_priority() {
    #[derive(Debug)]
    struct DropAll;
    impl Router for DropAll {
        fn name(&self) -> &str {
            "drop"
        }
        fn priority(&self) -> i32 {
            1000
        }
        fn route<'a>(&self, mut c: Candidates<'a>, _: &Url, _: &Invocation) -> Candidates<'a> {
            c.clear();
            c
        }
    }
    let chain = RouterChain::builtin();
    chain.add_router(std::sync::Arc::new(DropAll));
    assert!(format!("{chain:?}").ends_with("\"drop\"] }"));
    assert!(
        chain
            .route(&ps(), &consumer("1.1.1.1", ""), &inv("m"))
            .is_empty()
    );
}

#[test]
fn cached_then_results_follow_snapshot_and_consumer_changes() {
    let chain = RouterChain::builtin();
    chain.set_condition_rule(ConditionRule::new(
        vec![Condition::parse("=> region = $region").unwrap()],
        true,
    ));
    let hz = consumer("1.1.1.1", "region=hz");
    let sh = consumer("1.1.1.1", "region=sh");
    let first = std::sync::Arc::new(ps());
    assert_eq!(
        hosts(&chain.route_list(&first, &hz, &inv("m"))),
        ["10.20.153.10", "172.22.3.91"]
    );
    assert_eq!(
        hosts(&chain.route_list(&first, &sh, &inv("m"))),
        ["10.20.153.11"]
    );
    // A new snapshot where the sh provider moved to hz.
    let second = std::sync::Arc::new(vec![
        provider("10.20.153.11", "region=hz"),
        provider("172.22.3.92", "region=sh"),
    ]);
    assert_eq!(
        hosts(&chain.route_list(&second, &hz, &inv("m"))),
        ["10.20.153.11"]
    );
    assert_eq!(
        hosts(&chain.route_list(&first, &hz, &inv("m"))),
        ["10.20.153.10", "172.22.3.91"]
    );
}

#[test]
fn router_snapshot_records_each_routers_step_only_while_enabled() {
    let chain = RouterChain::builtin();
    chain
        .set_rule(
            "org.demo.Greeter::.condition-router",
            "scope: service\nkey: \"org.demo.Greeter::\"\nconditions:\n  - => region = hz",
        )
        .unwrap();
    let all = std::sync::Arc::new(ps());
    let c = consumer("10.0.0.1", "");
    chain.route_list(&all, &c, &inv("hello"));
    assert!(chain.recorder().recent().is_empty(), "recorded while off");

    chain.recorder().set_enabled(true);
    let routed = chain.route_list(&all, &c, &inv("hello"));
    assert_eq!(hosts(&routed), ["10.20.153.10", "172.22.3.91"]);
    let recent = chain.recorder().recent();
    assert_eq!(recent.len(), 1);
    let text = &recent[0];
    assert!(
        text.lines()
            .next()
            .unwrap()
            .ends_with("Service: org.demo.Greeter Method: hello"),
        "{text}"
    );
    assert!(
        text.contains(
            "[ Parent Invokers: 4 -> 2 ] 10.20.153.10:20880,10.20.153.11:20880,\
             172.22.3.91:20880,172.22.3.92:20880 -> 10.20.153.10:20880,172.22.3.91:20880"
        ),
        "{text}"
    );
    assert!(
        text.contains("\n  [ service-condition Invokers: 4 -> 2 ]"),
        "{text}"
    );
    assert!(text.contains("\n  [ mock Invokers: 4 -> 4 ]"), "{text}");

    chain.recorder().set_enabled(false);
    chain.route_list(&all, &c, &inv("hello"));
    assert!(chain.recorder().recent().is_empty());
    assert_eq!(
        chain.router_names(),
        ["mock", "tag", "service-condition", "app-condition"]
    );
}
