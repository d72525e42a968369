//! `tps`: calls of a service per window, against a mock service.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use rubbo_common::filter::{Stage, select};
use rubbo_common::{ErrorKind, Filter, Invocation, Url};
use rubbo_filter::{TpsLimitFilter, builtin_filters};
use support::{MockInvoker, wrap};

fn call(method: &str) -> Invocation {
    Invocation::new("org.rubbo.Greeter", method)
}

#[tokio::test]
async fn tps_lets_the_limit_through_and_refuses_more_within_the_window() {
    // The default window is 60 s: the 4th call is within it however slow the machine.
    let mock = MockInvoker::new("dubbo://127.0.0.1:20880/org.rubbo.Greeter?tps=3");
    let invoker = wrap(&TpsLimitFilter, &mock);
    for i in 0..3 {
        invoker
            .invoke(call("greet"))
            .await
            .unwrap_or_else(|e| panic!("call {i}: {e}"));
    }
    let err = invoker.invoke(call("greet")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LimitExceeded, "{err}");
    assert_eq!(
        err.message(),
        "Failed to invoke service org.rubbo.Greeter.greet because exceed max service tps."
    );
    // The limit is per service, as in Java: another method shares the count.
    let other = invoker.invoke(call("other")).await.unwrap_err();
    assert_eq!(other.kind(), ErrorKind::LimitExceeded, "{other}");
    assert_eq!(
        mock.call_count(),
        3,
        "refused calls never reach the service"
    );
}

#[tokio::test]
async fn calls_pass_again_after_the_interval() {
    // A 200 ms window: find one where the 4th call was refused (a loaded machine may
    // take longer than the window for 4 calls; then try a fresh service).
    let mut refused = None;
    for _ in 0..10 {
        let mock =
            MockInvoker::new("dubbo://127.0.0.1:20880/org.rubbo.Greeter?tps=3&tps.interval=200");
        let invoker = wrap(&TpsLimitFilter, &mock);
        let start = Instant::now();
        for _ in 0..3 {
            invoker.invoke(call("greet")).await.unwrap();
        }
        let fourth = invoker.invoke(call("greet")).await;
        if start.elapsed() < Duration::from_millis(200) {
            let err = fourth.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::LimitExceeded, "{err}");
            refused = Some((mock, invoker));
            break;
        }
    }
    let (mock, invoker) = refused.expect("never made 4 calls within 200 ms");
    assert_eq!(mock.call_count(), 3);

    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if invoker.invoke(call("greet")).await.is_ok() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "calls still refused long after the interval"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(mock.call_count(), 4);
}

#[tokio::test]
async fn a_limit_of_zero_or_less_lets_every_call_through() {
    for tps in ["0", "-1"] {
        let mock = MockInvoker::new(&format!("dubbo://127.0.0.1:20880/S?tps={tps}"));
        let invoker = wrap(&TpsLimitFilter, &mock);
        for _ in 0..20 {
            invoker.invoke(call("greet")).await.unwrap();
        }
        assert_eq!(mock.call_count(), 20);
    }
}

#[test]
fn tps_runs_on_providers_only_when_the_url_has_tps() {
    let table = builtin_filters();
    let names = |url: &str, stage| -> Vec<String> {
        select(&table, &Url::parse(url).unwrap(), stage)
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    };
    assert!(!names("dubbo://h/S", Stage::Provider).contains(&"tps".to_owned()));
    assert!(names("dubbo://h/S?tps=5", Stage::Provider).contains(&"tps".to_owned()));
    assert!(!names("dubbo://h/S?tps=5", Stage::Consumer).contains(&"tps".to_owned()));
    assert!(TpsLimitFilter.activate().runs_in(Stage::Provider));
}
