//! The built-in provider filters, each in the chain the built-in table builds for a
//! provider URL, against a mock service: what each does, when it is absent, and
//! that `service.filter=-name` removes it.

mod support;

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rubbo_common::filter::Stage;
use rubbo_common::{
    BizException, ECHO_METHOD, ErrorKind, GENERIC_METHOD, Invocation, Payload, RpcResult, Value,
};
use rubbo_hessian2::{List, Object};
use support::{answered_str, chain, chain_names, mock};

const SERVICE: &str = "org.rubbo.interop.InteropService";

fn url(query: &str) -> String {
    format!("dubbo://127.0.0.1:20880/{SERVICE}?interface={SERVICE}&{query}")
}

fn call(method: &str) -> Invocation {
    Invocation::new(SERVICE, method)
}

// ---- echo

#[tokio::test]
async fn echo_answers_its_argument_without_reaching_the_service() {
    let (service, handle) = mock(&url(""));
    let chain = chain(service, Stage::Provider);
    let echo = call(ECHO_METHOD).with_arguments(vec![Value::from("ping")]);
    assert_eq!(answered_str(chain.invoke(echo).await), "ping");
    assert_eq!(handle.count(), 0, "the service is not called");
    // Not a one-argument `$echo`: a call like any other.
    chain
        .invoke(call(ECHO_METHOD).with_arguments(vec![Value::from(1), Value::from(2)]))
        .await
        .unwrap();
    assert_eq!(handle.count(), 1);
}

#[tokio::test]
async fn without_echo_the_service_gets_echo_calls() {
    let (service, handle) = mock(&url("service.filter=-echo"));
    let chain = chain(service, Stage::Provider);
    let echo = call(ECHO_METHOD).with_arguments(vec![Value::from("ping")]);
    assert_eq!(answered_str(chain.invoke(echo).await), "ok");
    assert_eq!(handle.last().method(), ECHO_METHOD);
}

// ---- generic

fn generic_call() -> Invocation {
    let types = Value::List(List {
        type_name: None,
        items: vec![Value::from("java.lang.String"), Value::from("int")],
    });
    let args = Value::List(List {
        type_name: None,
        items: vec![Value::from("ann"), Value::from(7)],
    });
    call(GENERIC_METHOD)
        .with_arguments(vec![Value::from("findUser"), types, args])
        .with_attachment("trace", "t1")
}

#[tokio::test]
async fn generic_calls_reach_the_real_method_and_come_back_as_maps() {
    let (service, handle) = mock(&url(""));
    let user = Object::new("org.rubbo.interop.User")
        .with_field("name", "ann")
        .with_field("age", 7);
    handle.answer(Ok(RpcResult::value(Payload::Value(Value::Object(user)))));
    let chain = chain(service, Stage::Provider);
    let result = chain.invoke(generic_call()).await.unwrap();

    let got = handle.last();
    assert_eq!(got.method(), "findUser");
    assert_eq!(got.parameter_types(), "Ljava/lang/String;I");
    assert_eq!(
        got.arguments().as_values().unwrap(),
        &[Value::from("ann"), Value::from(7)]
    );
    assert_eq!(got.attachment_str("trace"), Some("t1"));
    let Some(Payload::Value(v @ Value::Map(_))) = result.payload() else {
        panic!("a map: {result:?}");
    };
    assert_eq!(
        v.field("class").and_then(Value::as_str),
        Some("org.rubbo.interop.User")
    );
    assert_eq!(v.field("name").and_then(Value::as_str), Some("ann"));
}

#[tokio::test]
async fn generic_calls_get_exceptions_wrapped_in_generic_exception() {
    let (service, handle) = mock(&url(""));
    handle.answer(Ok(RpcResult::from_exception(BizException::new(
        "org.rubbo.interop.NotFound",
        Some("no ann".into()),
    ))));
    let chain = chain(service, Stage::Provider);
    let result = chain.invoke(generic_call()).await.unwrap();
    let e = result.exception().expect("an exception");
    assert_eq!(e.class, rubbo_filter::GENERIC_EXCEPTION);
    assert_eq!(
        e.value.field("exceptionClass").and_then(Value::as_str),
        Some("org.rubbo.interop.NotFound")
    );
    assert_eq!(
        e.value.field("exceptionMessage").and_then(Value::as_str),
        Some("no ann")
    );
}

#[tokio::test]
async fn without_generic_the_service_gets_invoke_itself() {
    let (service, handle) = mock(&url("service.filter=-generic"));
    chain(service, Stage::Provider)
        .invoke(generic_call())
        .await
        .unwrap();
    assert_eq!(handle.last().method(), GENERIC_METHOD);
}

// ---- token

#[tokio::test]
async fn token_refuses_calls_without_the_providers_token() {
    let (service, handle) = mock(&url("token=secret"));
    let chain = chain(service, Stage::Provider);
    for inv in [call("m"), call("m").with_attachment("token", "guess")] {
        let err = chain.invoke(inv).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");
        assert!(err.message().starts_with("Invalid token!"), "{err}");
    }
    assert_eq!(handle.count(), 0, "refused calls do not reach the service");
    chain
        .invoke(call("m").with_attachment("token", "secret"))
        .await
        .unwrap();
    assert_eq!(handle.count(), 1);
}

#[tokio::test]
async fn token_is_absent_without_a_token_or_with_a_false_one() {
    assert!(!chain_names(&url(""), Stage::Provider).contains(&"token".to_owned()));
    for query in ["", "token=false", "token=0"] {
        let (service, handle) = mock(&url(query));
        chain(service, Stage::Provider)
            .invoke(call("m"))
            .await
            .unwrap_or_else(|e| panic!("{query}: {e}"));
        assert_eq!(handle.count(), 1, "{query}");
    }
}

#[tokio::test]
async fn without_token_a_provider_with_a_token_serves_everyone() {
    let (service, handle) = mock(&url("token=secret&service.filter=-token"));
    chain(service, Stage::Provider)
        .invoke(call("m"))
        .await
        .unwrap();
    assert_eq!(handle.count(), 1);
}

// ---- context

fn routed_call() -> Invocation {
    [
        "path",
        "interface",
        "group",
        "version",
        "dubbo",
        "timeout",
        "_TO",
        "async",
        "dubbo.tag",
        "dubbo.force.tag",
    ]
    .into_iter()
    .fold(call("m"), |inv, k| inv.with_attachment(k, "x"))
    .with_attachment("token", "secret")
    .with_attachment("tenant", "acme")
}

#[tokio::test]
async fn context_hides_the_routing_attachments_after_token_read_them() {
    let (service, handle) = mock(&url("token=secret"));
    chain(service, Stage::Provider)
        .invoke(routed_call())
        .await
        .expect("token saw its attachment before context removed it");
    let got = handle.last();
    let mut keys: Vec<&str> = got.attachments().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["tenant"]);
}

#[tokio::test]
async fn without_context_the_service_sees_every_attachment() {
    let (service, handle) = mock(&url("service.filter=-context"));
    chain(service, Stage::Provider)
        .invoke(routed_call())
        .await
        .unwrap();
    let got = handle.last();
    assert_eq!(got.attachments().len(), 12);
    assert_eq!(got.attachment_str("token"), Some("secret"));
    assert_eq!(got.attachment_str("_TO"), Some("x"));
}

// ---- exception

fn throwing(query: &str, class: &str) -> (rubbo_common::BoxInvoker, support::Handle) {
    let (service, handle) = mock(&url(query));
    handle.answer(Ok(RpcResult::from_exception(BizException::new(
        class,
        Some("boom".into()),
    ))));
    (chain(service, Stage::Provider), handle)
}

#[tokio::test]
async fn exception_replaces_foreign_exceptions_by_runtime_exception() {
    let (chain, _) = throwing("", "com.thirdparty.Boom");
    let result = chain.invoke(call("m")).await.unwrap();
    let e = result.exception().expect("an exception");
    assert_eq!(e.class, rubbo_filter::RUNTIME_EXCEPTION);
    assert_eq!(e.message.as_deref(), Some("com.thirdparty.Boom: boom"));
}

#[tokio::test]
async fn exception_lets_jdk_and_own_exceptions_through() {
    for class in [
        "java.lang.IllegalStateException",
        "org.rubbo.interop.InteropException",
        "org.apache.dubbo.rpc.RpcException",
    ] {
        let (chain, _) = throwing("", class);
        let result = chain.invoke(call("m")).await.unwrap();
        assert_eq!(result.exception().map(|e| e.class.as_str()), Some(class));
    }
}

#[tokio::test]
async fn without_exception_foreign_exceptions_pass_as_they_are() {
    let (chain, _) = throwing("service.filter=-exception", "com.thirdparty.Boom");
    let result = chain.invoke(call("m")).await.unwrap();
    assert_eq!(
        result.exception().map(|e| e.class.as_str()),
        Some("com.thirdparty.Boom")
    );
}

// ---- executelimit

#[tokio::test]
async fn executelimit_refuses_calls_over_the_limit_and_frees_the_slot() {
    let (service, handle) = mock(&url("executes=1"));
    let chain = chain(service, Stage::Provider);
    let release = handle.hold_next();
    let first = tokio::spawn(chain.invoke(call("m")));
    handle.wait_for_calls(1).await;

    let err = chain.invoke(call("m")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LimitExceeded, "{err}");
    assert!(err.message().contains("executes=\"1\""), "{err}");
    assert_eq!(handle.count(), 1, "the refused call does not run");

    release.send(()).unwrap();
    first.await.unwrap().unwrap();
    chain
        .invoke(call("m"))
        .await
        .expect("the slot is free again");
}

#[tokio::test]
async fn executelimit_counts_each_method_on_its_own() {
    let (service, handle) = mock(&url("slow.executes=1"));
    let chain = chain(service, Stage::Provider);
    let _release = handle.hold_next();
    let _first = tokio::spawn(chain.invoke(call("slow")));
    handle.wait_for_calls(1).await;
    chain
        .invoke(call("fast"))
        .await
        .expect("another method is not limited");
    assert_eq!(
        chain.invoke(call("slow")).await.unwrap_err().kind(),
        ErrorKind::LimitExceeded
    );
}

async fn two_concurrent_calls_run(query: &str) {
    let (service, handle) = mock(&url(query));
    let chain = chain(service, Stage::Provider);
    let _release = handle.hold_next();
    let _first = tokio::spawn(chain.invoke(call("m")));
    handle.wait_for_calls(1).await;
    chain
        .invoke(call("m"))
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"));
}

#[tokio::test]
async fn executelimit_is_absent_without_executes_or_when_removed() {
    assert!(!chain_names(&url(""), Stage::Provider).contains(&"executelimit".to_owned()));
    two_concurrent_calls_run("").await;
    two_concurrent_calls_run("executes=1&service.filter=-executelimit").await;
}

// ---- timeout

/// Log lines written while the subscriber is set.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Runs `inv` through the provider chain for `query` with a subscriber scoped to the
/// call, and returns the result and what was logged.
fn logged_call(
    query: &str,
    inv: Invocation,
) -> (Result<RpcResult, rubbo_common::RpcError>, String) {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    let (service, _) = mock(&url(query));
    let chain = chain(service, Stage::Provider);
    let result = tracing::subscriber::with_default(subscriber, || {
        futures::executor::block_on(chain.invoke(inv))
    });
    let text = String::from_utf8_lossy(&logs.0.lock()).into_owned();
    (result, text)
}

fn past_deadline() -> Invocation {
    let mut inv = call("late");
    let past = Instant::now()
        .checked_sub(Duration::from_millis(5))
        .unwrap_or_else(Instant::now);
    inv.set_deadline(past);
    inv
}

#[test]
fn timeout_logs_a_call_that_ended_past_its_deadline_and_still_answers() {
    let (result, logs) = logged_call("", past_deadline());
    assert_eq!(answered_str(result), "ok", "the result is still sent");
    assert!(logs.contains("WARN"), "{logs}");
    assert!(logs.contains("invoke timed out"), "{logs}");
    assert!(logs.contains("method=late"), "{logs}");
}

#[test]
fn timeout_is_quiet_for_calls_in_time_or_without_a_deadline() {
    let mut in_time = call("m");
    in_time.set_deadline(Instant::now() + Duration::from_secs(60));
    for inv in [in_time, call("m")] {
        let (result, logs) = logged_call("", inv);
        result.unwrap();
        assert!(!logs.contains("invoke timed out"), "{logs}");
    }
}

#[test]
fn without_timeout_late_calls_are_not_logged() {
    let (result, logs) = logged_call("service.filter=-timeout", past_deadline());
    result.unwrap();
    assert!(!logs.contains("invoke timed out"), "{logs}");
}
