//! `mock=` behaviour around the cluster invoker.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use rubbo_cluster::{ClusterContext, Rand};
use rubbo_common::{BoxInvoker, ErrorKind, Payload, Url, Value};
use support::*;

fn join_with(ctx: &ClusterContext, params: &str, ps: &[&Arc<TestInvoker>]) -> BoxInvoker {
    let consumer = Url::parse(&format!("consumer://10.0.0.99/org.demo.Greeter?{params}")).unwrap();
    let dir = ctx.static_directory(consumer, ps.iter().map(|p| p.boxed()).collect());
    ctx.join(dir).unwrap()
}

fn join(params: &str, ps: &[&Arc<TestInvoker>]) -> BoxInvoker {
    join_with(&ClusterContext::with_rand(Rand::seeded(3)), params, ps)
}

fn value(r: &rubbo_common::RpcResult) -> Value {
    match r.payload() {
        Some(Payload::Value(v)) => v.clone(),
        Some(Payload::Null) => Value::Null,
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn fail_mock_returns_values_only_on_rpc_failure() {
    let down = TestInvoker::failing(&provider_url(1, ""), ErrorKind::Network);
    let up = TestInvoker::ok(&provider_url(2, ""));
    for (mock, expected) in [
        ("return null", Value::Null),
        ("return", Value::Null),
        ("return empty", Value::Null),
        ("return true", Value::Bool(true)),
        ("fail:return false", Value::Bool(false)),
        ("return \"hello\"", Value::from("hello")),
        ("return `quoted`", Value::from("quoted")),
        ("return 123", Value::Int(123)),
        ("return abc", Value::from("abc")),
    ] {
        let r = bounded(join(&format!("mock={mock}&retries=0"), &[&down]).invoke(inv("m")))
            .await
            .unwrap();
        assert_eq!(value(&r), expected, "mock={mock}");
        // A working provider answers for itself.
        let r = bounded(join(&format!("mock={mock}"), &[&up]).invoke(inv("m")))
            .await
            .unwrap();
        assert_eq!(value(&r), Value::from("10.0.0.2:20880"));
    }
    let r = bounded(join("mock=return {\"a\":1}&retries=0", &[&down]).invoke(inv("m")))
        .await
        .unwrap();
    assert!(matches!(value(&r), Value::Map(m) if m.entries.len() == 1));
    let r = bounded(join("mock=return [1,2,3]&retries=0", &[&down]).invoke(inv("m")))
        .await
        .unwrap();
    assert!(matches!(value(&r), Value::List(l) if l.items.len() == 3));
}

#[tokio::test]
async fn business_exceptions_are_not_mocked() {
    let biz = TestInvoker::new(&provider_url(1, ""), |_, _| Reply::Biz);
    let r = bounded(join("mock=return 1", &[&biz]).invoke(inv("m")))
        .await
        .unwrap();
    assert!(r.exception().is_some());
    let biz_err = TestInvoker::failing(&provider_url(2, ""), ErrorKind::Biz);
    let e = bounded(join("mock=return 1", &[&biz_err]).invoke(inv("m")))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Biz);
}

#[tokio::test]
async fn force_mock_skips_the_call() {
    let up = TestInvoker::ok(&provider_url(1, ""));
    let r = bounded(join("mock=force:return 7", &[&up]).invoke(inv("m")))
        .await
        .unwrap();
    assert_eq!(value(&r), Value::Int(7));
    assert_eq!(up.calls(), 0);
    // Method level: only `m` is forced.
    let r = bounded(join("m.mock=force:return 7", &[&up]).invoke(inv("other")))
        .await
        .unwrap();
    assert_eq!(value(&r), Value::from("10.0.0.1:20880"));
    // Off values.
    for off in ["false", "0", "null", "N/A"] {
        bounded(join(&format!("mock={off}"), &[&up]).invoke(inv("m")))
            .await
            .unwrap();
    }
    assert_eq!(up.calls(), 5);
}

#[tokio::test]
async fn throw_mocks() {
    let down = TestInvoker::failing(&provider_url(1, ""), ErrorKind::Timeout);
    let e = bounded(join("mock=throw&retries=0", &[&down]).invoke(inv("m")))
        .await
        .unwrap_err();
    assert!(!e.is_biz());
    assert!(
        e.message()
            .contains("mocked exception for service degradation"),
        "{}",
        e.message()
    );
    let e = bounded(join("mock=force:throw org.demo.MockException", &[&down]).invoke(inv("m")))
        .await
        .unwrap_err();
    assert!(e.is_biz());
    assert_eq!(e.biz_exception().unwrap().class, "org.demo.MockException");
}

#[tokio::test]
async fn registered_mock_implementations() {
    let ctx = ClusterContext::with_rand(Rand::seeded(4));
    let impl_default = TestInvoker::ok("mock://127.0.0.1:1/org.demo.GreeterMock");
    let impl_named = TestInvoker::ok("mock://127.0.0.2:1/org.demo.Other");
    ctx.mocks
        .register_default("org.demo.Greeter", impl_default.boxed());
    ctx.mocks.register("org.demo.Other", impl_named.boxed());
    let down = TestInvoker::failing(&provider_url(1, ""), ErrorKind::Network);
    for m in ["true", "default", "fail", "force"] {
        let r = bounded(join_with(&ctx, &format!("mock={m}&retries=0"), &[&down]).invoke(inv("m")))
            .await
            .unwrap();
        assert_eq!(value(&r), Value::from("127.0.0.1:1"), "mock={m}");
    }
    let r = bounded(join_with(&ctx, "mock=org.demo.Other&retries=0", &[&down]).invoke(inv("m")))
        .await
        .unwrap();
    assert_eq!(value(&r), Value::from("127.0.0.2:1"));
    // Nothing registered under the name.
    let e = bounded(join_with(&ctx, "mock=org.demo.Missing&retries=0", &[&down]).invoke(inv("m")))
        .await
        .unwrap_err();
    assert!(e.message().contains("org.demo.Missing"));
}

#[tokio::test]
async fn mock_providers_in_the_directory_take_precedence() {
    let down = TestInvoker::failing(&provider_url(1, ""), ErrorKind::Network);
    let mock_provider = TestInvoker::ok("mock://10.9.9.9:1/org.demo.Greeter");
    let r = bounded(join("mock=return 1&retries=0", &[&down, &mock_provider]).invoke(inv("m")))
        .await
        .unwrap();
    assert_eq!(value(&r), Value::from("10.9.9.9:1"));
    // The mock provider never takes normal calls.
    let up = TestInvoker::ok(&provider_url(2, ""));
    for _ in 0..10 {
        let r = bounded(join("", &[&up, &mock_provider]).invoke(inv("m")))
            .await
            .unwrap();
        assert_eq!(value(&r), Value::from("10.0.0.2:20880"));
    }
}
