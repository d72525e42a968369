//! `activelimit` in the per-provider consumer chain the built-in table builds, against
//! mock providers: calls over `actives` wait for a slot, until their deadline.

mod support;

use std::future::Future;
use std::pin::{Pin, pin};
use std::task::Poll;
use std::time::{Duration, Instant};

use rubbo_common::filter::Stage;
use rubbo_common::{ErrorKind, Invocation};
use support::{WAIT, answered_str, chain, chain_names, mock};

const SERVICE: &str = "org.rubbo.test.Greeter";

fn url(query: &str) -> String {
    format!("dubbo://127.0.0.1:20880/{SERVICE}?interface={SERVICE}&side=consumer&{query}")
}

fn call(method: &str) -> Invocation {
    Invocation::new(SERVICE, method)
}

/// Whether `fut` is still pending when polled once.
async fn is_pending<F: Future + ?Sized>(fut: Pin<&mut F>) -> bool {
    let mut fut = fut;
    std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx).is_pending())).await
}

#[test]
fn activelimit_runs_after_deadline_and_only_with_actives() {
    assert_eq!(
        chain_names(&url("actives=2"), Stage::Consumer),
        ["deadline", "activelimit"]
    );
    assert_eq!(
        chain_names(&url("greet.actives=2"), Stage::Consumer),
        ["deadline", "activelimit"]
    );
    assert_eq!(chain_names(&url(""), Stage::Consumer), ["deadline"]);
}

#[tokio::test]
async fn a_call_over_the_limit_waits_for_a_slot_then_runs() {
    let (provider, handle) = mock(&url("actives=1&timeout=5000"));
    let chain = chain(provider, Stage::Consumer);
    let release = handle.hold_next();
    let first = tokio::spawn(chain.invoke(call("greet")));
    handle.wait_for_calls(1).await;

    let mut second = pin!(chain.invoke(call("greet")));
    assert!(is_pending(second.as_mut()).await, "the second call waits");
    assert_eq!(handle.count(), 1, "and has not reached the provider");

    release.send(()).unwrap();
    first.await.unwrap().unwrap();
    let answer = tokio::time::timeout(WAIT, second)
        .await
        .expect("the second call gets the freed slot");
    assert_eq!(answered_str(answer), "ok");
    assert_eq!(handle.count(), 2);
}

#[tokio::test]
async fn a_waiting_call_fails_with_timeout_when_its_deadline_passes() {
    let (provider, handle) = mock(&url("actives=1&timeout=80"));
    let chain = chain(provider, Stage::Consumer);
    let _release = handle.hold_next();
    let _first = tokio::spawn(chain.invoke(call("greet")));
    handle.wait_for_calls(1).await;

    let start = Instant::now();
    let err = tokio::time::timeout(WAIT, chain.invoke(call("greet")))
        .await
        .expect("the wait is bounded")
        .unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(75), "it waited");
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    let msg = err.message();
    assert!(
        msg.starts_with(&format!(
            "Waiting concurrent invoke timeout in client-side for service:  {SERVICE}, method: greet, elapsed: "
        )),
        "{msg}"
    );
    assert!(
        msg.ends_with(". concurrent invokes: 1. max concurrent invoke limit: 1"),
        "{msg}"
    );
    assert_eq!(handle.count(), 1, "the timed-out call never ran");
}

#[tokio::test]
async fn the_calls_own_deadline_bounds_the_wait() {
    // A deadline set before (by the caller, or by consumercontext) wins over the URL.
    let (provider, handle) = mock(&url("actives=1&timeout=60000"));
    let chain = chain(provider, Stage::Consumer);
    let _release = handle.hold_next();
    let _first = tokio::spawn(chain.invoke(call("greet")));
    handle.wait_for_calls(1).await;
    let mut inv = call("greet");
    inv.set_deadline(Instant::now() + Duration::from_millis(50));
    let err = tokio::time::timeout(WAIT, chain.invoke(inv))
        .await
        .expect("the deadline ends the wait")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
}

#[tokio::test]
async fn without_a_deadline_the_method_timeout_bounds_the_wait() {
    let (provider, handle) = mock(&url(
        "actives=1&timeout=60000&greet.timeout=50&reference.filter=-deadline",
    ));
    let chain = chain(provider, Stage::Consumer);
    let _release = handle.hold_next();
    let _first = tokio::spawn(chain.invoke(call("greet")));
    handle.wait_for_calls(1).await;
    let err = tokio::time::timeout(WAIT, chain.invoke(call("greet")))
        .await
        .expect("the method timeout ends the wait")
        .unwrap_err();
    assert!(err.message().contains("timeout: 50."), "{err}");
}

#[tokio::test]
async fn the_limit_is_per_method_and_per_provider() {
    let (a, a_handle) = mock(&url("greet.actives=1&timeout=5000"));
    let (b, b_handle) = mock(&url("greet.actives=1&timeout=5000"));
    let (a, b) = (chain(a, Stage::Consumer), chain(b, Stage::Consumer));
    let _release_a = a_handle.hold_next();
    let _first = tokio::spawn(a.invoke(call("greet")));
    a_handle.wait_for_calls(1).await;

    tokio::time::timeout(WAIT, a.invoke(call("other")))
        .await
        .expect("another method has no limit")
        .unwrap();
    tokio::time::timeout(WAIT, b.invoke(call("greet")))
        .await
        .expect("another provider has its own slots")
        .unwrap();
    assert_eq!(b_handle.count(), 1);
}

#[tokio::test]
async fn a_dropped_call_frees_its_slot() {
    let (provider, handle) = mock(&url("actives=1&timeout=5000"));
    let chain = chain(provider, Stage::Consumer);
    let _release = handle.hold_next();
    let mut first = chain.invoke(call("greet"));
    assert!(is_pending(first.as_mut()).await);
    // The caller gives up (a forking cluster cancels the losers).
    drop(first);
    tokio::time::timeout(WAIT, chain.invoke(call("greet")))
        .await
        .expect("the slot was freed")
        .unwrap();
}

async fn concurrent_calls_both_run(query: &str) {
    let (provider, handle) = mock(&url(query));
    let chain = chain(provider, Stage::Consumer);
    let _release = handle.hold_next();
    let _first = tokio::spawn(chain.invoke(call("greet")));
    handle.wait_for_calls(1).await;
    let _second = tokio::spawn(chain.invoke(call("greet")));
    handle.wait_for_calls(2).await;
}

#[tokio::test]
async fn without_actives_or_with_activelimit_removed_calls_do_not_wait() {
    concurrent_calls_both_run("timeout=5000").await;
    concurrent_calls_both_run("actives=0&timeout=5000").await;
    concurrent_calls_both_run("actives=1&timeout=5000&reference.filter=-activelimit").await;
}
