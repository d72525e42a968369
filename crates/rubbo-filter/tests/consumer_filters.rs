//! The built-in consumer filters (`deadline`, `genericimpl`) and the cluster filter
//! `consumercontext`, each in the chain the built-in table builds for a reference URL,
//! against a mock provider: what each does, when it is absent, and that
//! `reference.filter=-name` removes it.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rubbo_common::filter::Stage;
use rubbo_common::{
    BoxInvoker, ErrorKind, GENERIC_METHOD, Invocation, InvokeFuture, Invoker, RpcError, Url,
};
use support::{chain, chain_names, mock};

const SERVICE: &str = "org.rubbo.test.Greeter";

fn url(query: &str) -> String {
    format!("dubbo://127.0.0.1:20880/{SERVICE}?interface={SERVICE}&side=consumer&{query}")
}

fn call(method: &str) -> Invocation {
    Invocation::new(SERVICE, method)
}

/// Asserts `deadline` is `timeout` after a moment between `before` and now.
fn assert_deadline_in(deadline: Option<Instant>, before: Instant, timeout: Duration) {
    let deadline = deadline.expect("the call has a deadline");
    assert!(
        deadline >= before + timeout && deadline <= Instant::now() + timeout,
        "deadline {:?} after the call started, expected {timeout:?}",
        deadline.saturating_duration_since(before)
    );
}

// ---- deadline

#[tokio::test]
async fn deadline_is_now_plus_the_attachment_else_the_method_else_the_service_timeout() {
    let (provider, handle) = mock(&url("timeout=3000&greet.timeout=2000"));
    let chain = chain(provider, Stage::Consumer);
    let cases = [
        (call("greet").with_attachment("timeout", "500"), 500),
        (call("greet"), 2000),
        (call("other"), 3000),
    ];
    for (inv, ms) in cases {
        let before = Instant::now();
        chain.invoke(inv).await.unwrap();
        assert_deadline_in(handle.last().deadline(), before, Duration::from_millis(ms));
    }
}

#[tokio::test]
async fn deadline_defaults_to_one_second_and_keeps_an_existing_deadline() {
    let (provider, handle) = mock(&url(""));
    let chain = chain(provider, Stage::Consumer);
    let before = Instant::now();
    chain.invoke(call("greet")).await.unwrap();
    assert_deadline_in(
        handle.last().deadline(),
        before,
        Duration::from_millis(1000),
    );

    let mut inv = call("greet").with_attachment("timeout", "5");
    let set = Instant::now() + Duration::from_secs(42);
    inv.set_deadline(set);
    chain.invoke(inv).await.unwrap();
    assert_eq!(handle.last().deadline(), Some(set));
}

#[tokio::test]
async fn without_deadline_calls_carry_none() {
    assert_eq!(
        chain_names(&url("timeout=100"), Stage::Consumer),
        ["deadline"]
    );
    let (provider, handle) = mock(&url("timeout=100&reference.filter=-deadline"));
    chain(provider, Stage::Consumer)
        .invoke(call("greet"))
        .await
        .unwrap();
    assert_eq!(handle.last().deadline(), None);
}

// ---- consumercontext

/// A failover-like cluster invoker: the first attempt fails with a network error, the
/// second goes to the same provider with a clone of the call.
#[derive(Debug)]
struct RetryOnce {
    provider: BoxInvoker,
    url: Url,
}

impl Invoker for RetryOnce {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let provider = self.provider.clone();
        Box::pin(async move {
            if let Err(e) = provider.invoke(inv.clone()).await {
                assert!(e.is_retryable());
            }
            provider.invoke(inv).await
        })
    }

    fn url(&self) -> &Url {
        &self.url
    }
}

/// A cluster of one mock provider that fails every call (so the retry runs), in the
/// cluster chain for `query`; the provider has its per-provider chain. Returns the
/// chain, the bare cluster invoker and the mock's handle.
fn cluster(query: &str) -> (BoxInvoker, BoxInvoker, support::Handle) {
    let (provider, handle) = mock(&url(query));
    handle.answer(Err(RpcError::network("refused")));
    let retry: BoxInvoker = Arc::new(RetryOnce {
        provider: chain(provider, Stage::Consumer),
        url: Url::parse(&url(query)).expect("test URL"),
    });
    (chain(retry.clone(), Stage::Cluster), retry, handle)
}

#[tokio::test]
async fn consumercontext_with_countdown_gives_retries_one_deadline() {
    let (cluster, _, handle) = cluster("enable-timeout-countdown=true&timeout=300");
    assert_eq!(
        chain_names(&url("enable-timeout-countdown=true"), Stage::Cluster),
        ["consumercontext"]
    );
    let before = Instant::now();
    let err = cluster.invoke(call("greet")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network);
    let calls = handle.calls();
    assert_eq!(calls.len(), 2, "the call and its retry");
    assert_deadline_in(calls[0].deadline(), before, Duration::from_millis(300));
    assert_eq!(
        calls[0].deadline(),
        calls[1].deadline(),
        "the retry has only what remains"
    );
}

#[tokio::test]
async fn without_countdown_consumercontext_adds_nothing_and_each_attempt_gets_its_own() {
    let (cluster, retry, handle) = cluster("timeout=300");
    assert!(
        Arc::ptr_eq(&cluster, &retry),
        "the cluster chain is the cluster invoker itself"
    );
    cluster.invoke(call("greet")).await.unwrap_err();
    let calls = handle.calls();
    assert_eq!(calls.len(), 2);
    let (first, second) = (calls[0].deadline().unwrap(), calls[1].deadline().unwrap());
    assert!(
        second > first,
        "the per-provider deadline is set per attempt"
    );
}

#[tokio::test]
async fn without_consumercontext_countdown_is_off() {
    let (cluster, retry, handle) =
        cluster("enable-timeout-countdown=true&reference.filter=-consumercontext");
    assert!(Arc::ptr_eq(&cluster, &retry));
    cluster.invoke(call("greet")).await.unwrap_err();
    let calls = handle.calls();
    assert!(calls[1].deadline().unwrap() > calls[0].deadline().unwrap());
}

// ---- genericimpl

#[tokio::test]
async fn genericimpl_marks_invoke_calls_with_the_references_mode() {
    let (provider, handle) = mock(&url("generic=bean"));
    let chain = chain(provider, Stage::Consumer);
    chain.invoke(call(GENERIC_METHOD)).await.unwrap();
    assert_eq!(handle.last().attachment_str("generic"), Some("bean"));
    chain.invoke(call("greet")).await.unwrap();
    assert_eq!(handle.last().attachment_str("generic"), None, "not $invoke");
    chain
        .invoke(call(GENERIC_METHOD).with_attachment("generic", "true"))
        .await
        .unwrap();
    assert_eq!(
        handle.last().attachment_str("generic"),
        Some("true"),
        "the call's own mode is kept"
    );
}

#[tokio::test]
async fn genericimpl_is_absent_without_generic_or_when_removed() {
    assert!(!chain_names(&url(""), Stage::Consumer).contains(&"genericimpl".to_owned()));
    for query in [
        "",
        "generic=false",
        "generic=true&reference.filter=-genericimpl",
    ] {
        let (provider, handle) = mock(&url(query));
        chain(provider, Stage::Consumer)
            .invoke(call(GENERIC_METHOD))
            .await
            .unwrap();
        assert_eq!(handle.last().attachment_str("generic"), None, "{query}");
    }
}
