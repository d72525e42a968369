//! Fault-tolerance strategies against providers that fail in scripted ways.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rubbo_cluster::cluster::FailbackCluster;
use rubbo_cluster::{Cluster, ClusterContext, Directory, Rand};
use rubbo_common::{BoxInvoker, ErrorKind, Url};
use support::*;

fn ctx() -> ClusterContext {
    ClusterContext::with_rand(Rand::seeded(11))
}

fn join(params: &str, ps: &[&Arc<TestInvoker>]) -> BoxInvoker {
    let ctx = ctx();
    let consumer = Url::parse(&format!("consumer://10.0.0.99/org.demo.Greeter?{params}")).unwrap();
    let dir = ctx.static_directory(consumer, ps.iter().map(|p| p.boxed()).collect());
    ctx.join(dir).unwrap()
}

fn total_calls(ps: &[&Arc<TestInvoker>]) -> usize {
    ps.iter().map(|p| p.calls()).sum()
}

#[tokio::test]
async fn failover_retries_other_providers_on_retryable_errors() {
    let a = TestInvoker::failing(&provider_url(1, ""), ErrorKind::Network);
    let b = TestInvoker::failing(&provider_url(2, ""), ErrorKind::Timeout);
    let c = TestInvoker::ok(&provider_url(3, ""));
    let ps = [&a, &b, &c];
    for round in 0..20 {
        let inv = join("", &ps);
        let r = bounded(inv.invoke(support::inv("m"))).await.unwrap();
        assert_eq!(answered_by(&r), "10.0.0.3:20880", "round {round}");
    }
    // Each call tries distinct providers: never more than one call per provider.
    assert!(a.calls() <= 20 && b.calls() <= 20 && c.calls() == 20);
}

#[tokio::test]
async fn failover_gives_up_after_retries_plus_one() {
    let ps: Vec<Arc<TestInvoker>> = (1..=5)
        .map(|i| TestInvoker::failing(&provider_url(i, ""), ErrorKind::Network))
        .collect();
    let refs: Vec<&Arc<TestInvoker>> = ps.iter().collect();
    let err = bounded(join("", &refs).invoke(inv("m"))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network);
    assert!(err.message().contains("Tried 3 times"), "{}", err.message());
    assert_eq!(total_calls(&refs), 3);
    // Every try went to a different provider.
    assert_eq!(ps.iter().filter(|p| p.calls() == 1).count(), 3);
    // retries=0: one try; method-level beats interface-level.
    let err = bounded(join("retries=0", &refs).invoke(inv("m")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network);
    assert_eq!(total_calls(&refs), 4);
    bounded(join("retries=0&m.retries=4", &refs).invoke(inv("m")))
        .await
        .unwrap_err();
    assert_eq!(total_calls(&refs), 9);
    // The attachment overrides once.
    let once = inv("m").with_attachment("retries", "1");
    bounded(join("", &refs).invoke(once)).await.unwrap_err();
    assert_eq!(total_calls(&refs), 11);
}

#[tokio::test]
async fn failover_never_retries_business_or_non_retryable_errors() {
    let biz = TestInvoker::new(&provider_url(1, ""), |_, _| Reply::Biz);
    let r = bounded(join("", &[&biz]).invoke(inv("m"))).await.unwrap();
    assert!(r.exception().is_some());
    assert_eq!(biz.calls(), 1);
    let biz_err = TestInvoker::failing(&provider_url(2, ""), ErrorKind::Biz);
    let other = TestInvoker::ok(&provider_url(3, ""));
    // Whichever is picked first: a Biz error is returned at once.
    for _ in 0..10 {
        let r = bounded(join("loadbalance=roundrobin", &[&biz_err, &other]).invoke(inv("m"))).await;
        if let Err(e) = r {
            assert_eq!(e.kind(), ErrorKind::Biz);
        }
    }
    let ser = TestInvoker::failing(&provider_url(4, ""), ErrorKind::Serialization);
    let err = bounded(join("", &[&ser]).invoke(inv("m")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Serialization);
    assert_eq!(ser.calls(), 1);
}

#[tokio::test]
async fn failover_never_resends_a_stream_that_went_out() {
    use rubbo_common::Arguments;
    use rubbo_common::stream::{MessageStream, StreamKind, StreamSlot};
    let streaming = || {
        inv("m").with_arguments(Arguments::Stream(StreamSlot::new(
            StreamKind::Bidi,
            MessageStream::empty(),
        )))
    };
    // The provider took (sent) the stream, then failed: not retried.
    let sent: Vec<Arc<TestInvoker>> = (1..=3)
        .map(|i| {
            TestInvoker::new(&provider_url(i, ""), |_, inv| {
                let _ = inv.arguments().as_stream().map(|s| s.take());
                Reply::Err(ErrorKind::Network)
            })
        })
        .collect();
    let refs: Vec<&Arc<TestInvoker>> = sent.iter().collect();
    let err = bounded(join("", &refs).invoke(streaming()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network);
    assert_eq!(total_calls(&refs), 1);
    // Failed before taking it (no connection): another provider gets it.
    let unsent: Vec<Arc<TestInvoker>> = (1..=3)
        .map(|i| TestInvoker::failing(&provider_url(i, ""), ErrorKind::Network))
        .collect();
    let refs: Vec<&Arc<TestInvoker>> = unsent.iter().collect();
    bounded(join("", &refs).invoke(streaming()))
        .await
        .unwrap_err();
    assert_eq!(total_calls(&refs), 3);
}

#[tokio::test]
async fn no_provider_error_when_nothing_is_available() {
    let a = TestInvoker::ok(&provider_url(1, ""));
    a.available.store(false, Ordering::SeqCst);
    for cluster in ["failover", "failfast", "forking", "broadcast", "available"] {
        let err = bounded(join(&format!("cluster={cluster}"), &[&a]).invoke(inv("m")))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NoProvider, "{cluster}");
    }
    assert_eq!(a.calls(), 0);
}

#[tokio::test]
async fn sticky_keeps_the_last_good_provider() {
    let ps: Vec<Arc<TestInvoker>> = (1..=4)
        .map(|i| TestInvoker::ok(&provider_url(i, "")))
        .collect();
    let refs: Vec<&Arc<TestInvoker>> = ps.iter().collect();
    let invoker = join("sticky=true", &refs);
    let first = answered_by(&bounded(invoker.invoke(inv("m"))).await.unwrap());
    for _ in 0..20 {
        assert_eq!(
            answered_by(&bounded(invoker.invoke(inv("m"))).await.unwrap()),
            first
        );
    }
    // Without sticky, random spreads the calls.
    let invoker = join("", &refs);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..40 {
        seen.insert(answered_by(
            &bounded(invoker.invoke(inv("m"))).await.unwrap(),
        ));
    }
    assert!(seen.len() > 1);
}

#[tokio::test]
async fn failfast_makes_one_attempt() {
    let a = TestInvoker::failing(&provider_url(1, ""), ErrorKind::Network);
    let b = TestInvoker::failing(&provider_url(2, ""), ErrorKind::Network);
    let err = bounded(join("cluster=failfast", &[&a, &b]).invoke(inv("m")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network);
    assert_eq!(total_calls(&[&a, &b]), 1);
}

#[tokio::test]
async fn failsafe_swallows_errors() {
    let a = TestInvoker::failing(&provider_url(1, ""), ErrorKind::Timeout);
    let r = bounded(join("cluster=failsafe", &[&a]).invoke(inv("m")))
        .await
        .unwrap();
    assert!(matches!(r.payload(), Some(rubbo_common::Payload::Null)));
    assert_eq!(a.calls(), 1);
    // No provider at all is swallowed too.
    a.available.store(false, Ordering::SeqCst);
    assert!(
        bounded(join("cluster=failsafe", &[&a]).invoke(inv("m")))
            .await
            .is_ok()
    );
}

#[tokio::test(start_paused = true)]
async fn failback_retries_in_the_background() {
    // Fails twice, then works.
    let a = TestInvoker::new(&provider_url(1, ""), |n, _| {
        if n < 2 {
            Reply::Err(ErrorKind::Network)
        } else {
            Reply::Ok
        }
    });
    let r = join("cluster=failback", &[&a])
        .invoke(inv("m"))
        .await
        .unwrap();
    assert!(matches!(r.payload(), Some(rubbo_common::Payload::Null)));
    assert_eq!(a.calls(), 1);
    tokio::time::sleep(Duration::from_millis(4_900)).await;
    assert_eq!(a.calls(), 1, "no retry before 5 s");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(a.calls(), 2);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(a.calls(), 3);
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(a.calls(), 3, "stops after a success");
}

#[tokio::test(start_paused = true)]
async fn failback_gives_up_after_retries_and_bounds_its_queue() {
    let a = TestInvoker::failing(&provider_url(1, ""), ErrorKind::Network);
    let invoker = join("cluster=failback&retries=2&failbacktasks=3", &[&a]);
    for _ in 0..5 {
        invoker.invoke(inv("m")).await.unwrap();
    }
    assert_eq!(a.calls(), 5);
    tokio::time::sleep(Duration::from_secs(60)).await;
    // Three calls queued (the bound), each retried twice; two were dropped.
    assert_eq!(a.calls(), 5 + 3 * 2);
    // A custom period.
    let b = TestInvoker::failing(&provider_url(2, ""), ErrorKind::Network);
    let ctx = ctx();
    let consumer = Url::parse("consumer://10.0.0.99/org.demo.Greeter?retries=1").unwrap();
    let dir: Arc<dyn Directory> = ctx.static_directory(consumer, vec![b.boxed()]);
    let inv2 = FailbackCluster::with_period(Duration::from_millis(100)).join(dir, &ctx);
    inv2.invoke(inv("m")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(b.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn forking_first_success_wins_and_cancels_the_rest() {
    let slow = TestInvoker::new(&provider_url(1, ""), |_, _| {
        Reply::After(Duration::from_millis(500), Box::new(Reply::Ok))
    });
    let fast = TestInvoker::new(&provider_url(2, ""), |_, _| {
        Reply::After(Duration::from_millis(10), Box::new(Reply::Ok))
    });
    let ctx = ctx();
    let consumer = Url::parse("consumer://10.0.0.99/org.demo.Greeter?cluster=forking").unwrap();
    let dir = ctx.static_directory(consumer, vec![slow.boxed(), fast.boxed()]);
    let all = dir.all_invokers();
    let invoker = ctx.join(dir).unwrap();
    let r = invoker.invoke(inv("m")).await.unwrap();
    assert_eq!(answered_by(&r), "10.0.0.2:20880");
    assert_eq!((slow.calls(), fast.calls()), (1, 1));
    // The slow call was cancelled: nothing stays active.
    assert_eq!(ctx.status.get(&all[0], "m").unwrap().active(), 0);
}

#[tokio::test(start_paused = true)]
async fn forking_respects_forks_and_fails_when_all_fail() {
    let ps: Vec<Arc<TestInvoker>> = (1..=5)
        .map(|i| TestInvoker::failing(&provider_url(i, ""), ErrorKind::Network))
        .collect();
    let refs: Vec<&Arc<TestInvoker>> = ps.iter().collect();
    let err = join("cluster=forking&forks=3", &refs)
        .invoke(inv("m"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network);
    assert_eq!(total_calls(&refs), 3);
    assert_eq!(ps.iter().filter(|p| p.calls() == 1).count(), 3);
    // forks <= 0: all providers.
    join("cluster=forking&forks=0", &refs)
        .invoke(inv("m"))
        .await
        .unwrap_err();
    assert_eq!(total_calls(&refs), 8);
    // Nobody answers in time.
    let never = TestInvoker::new(&provider_url(9, ""), |_, _| Reply::Never);
    let err = join("cluster=forking&timeout=300", &[&never])
        .invoke(inv("m"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
}

#[tokio::test]
async fn broadcast_calls_everyone_and_fails_if_any_fails() {
    let ps: Vec<Arc<TestInvoker>> = (1..=4)
        .map(|i| TestInvoker::ok(&provider_url(i, "")))
        .collect();
    let refs: Vec<&Arc<TestInvoker>> = ps.iter().collect();
    bounded(join("cluster=broadcast", &refs).invoke(inv("m")))
        .await
        .unwrap();
    assert!(ps.iter().all(|p| p.calls() == 1));
    let bad = TestInvoker::failing(&provider_url(5, ""), ErrorKind::Network);
    let biz = TestInvoker::new(&provider_url(6, ""), |_, _| Reply::Biz);
    let ok = TestInvoker::ok(&provider_url(7, ""));
    let err = bounded(join("cluster=broadcast", &[&bad, &ok, &biz]).invoke(inv("m")))
        .await
        .unwrap_err();
    // The last failure is reported: the business exception.
    assert_eq!(err.kind(), ErrorKind::Biz);
    assert_eq!((bad.calls(), ok.calls(), biz.calls()), (1, 1, 1));
}

#[tokio::test]
async fn broadcast_fail_percent_stops_early() {
    let ps: Vec<Arc<TestInvoker>> = (1..=4)
        .map(|i| TestInvoker::failing(&provider_url(i, ""), ErrorKind::Network))
        .collect();
    let refs: Vec<&Arc<TestInvoker>> = ps.iter().collect();
    // 0%: stop at the first failure.
    bounded(join("cluster=broadcast&broadcast.fail.percent=0", &refs).invoke(inv("m")))
        .await
        .unwrap_err();
    assert_eq!(total_calls(&refs), 1);
    // 50% of 4: the third failure stops it.
    bounded(join("cluster=broadcast&broadcast.fail.percent=50", &refs).invoke(inv("m")))
        .await
        .unwrap_err();
    assert_eq!(total_calls(&refs), 1 + 3);
    // Out of range: 100.
    bounded(join("cluster=broadcast&broadcast.fail.percent=300", &refs).invoke(inv("m")))
        .await
        .unwrap_err();
    assert_eq!(total_calls(&refs), 1 + 3 + 4);
}

#[tokio::test]
async fn available_calls_the_first_available_provider() {
    let a = TestInvoker::ok(&provider_url(1, ""));
    let b = TestInvoker::ok(&provider_url(2, ""));
    let c = TestInvoker::ok(&provider_url(3, ""));
    a.available.store(false, Ordering::SeqCst);
    let invoker = join("cluster=available", &[&a, &b, &c]);
    for _ in 0..5 {
        assert_eq!(
            answered_by(&bounded(invoker.invoke(inv("m"))).await.unwrap()),
            "10.0.0.2:20880"
        );
    }
}

#[tokio::test]
async fn unknown_cluster_or_balancer_is_an_error_listing_names() {
    let ctx = ctx();
    let consumer = Url::parse("consumer://h/S?cluster=nope").unwrap();
    let dir = ctx.static_directory(consumer, vec![]);
    let err = ctx.join(dir).unwrap_err().to_string();
    assert!(err.contains("failover") && err.contains("forking"), "{err}");
    let a = TestInvoker::ok(&provider_url(1, ""));
    let err = bounded(join("loadbalance=nope", &[&a]).invoke(inv("m")))
        .await
        .unwrap_err();
    assert!(err.message().contains("roundrobin"), "{}", err.message());
}

#[tokio::test]
async fn every_try_sets_the_target_provider() {
    let a = TestInvoker::ok(&provider_url(1, ""));
    bounded(join("", &[&a]).invoke(inv("m"))).await.unwrap();
    let seen = a.seen.lock();
    assert_eq!(seen[0].target().unwrap().address(), "10.0.0.1:20880");
}

#[tokio::test]
async fn per_call_settings_follow_method_level_and_provider_values() {
    // Distinct answers from `n` calls of `method`.
    async fn spread(invoker: &BoxInvoker, method: &str, n: usize) -> usize {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..n {
            seen.insert(answered_by(
                &bounded(invoker.invoke(inv(method))).await.unwrap(),
            ));
        }
        seen.len()
    }
    let ps: Vec<Arc<TestInvoker>> = (1..=4)
        .map(|i| TestInvoker::ok(&provider_url(i, "")))
        .collect();
    let refs: Vec<&Arc<TestInvoker>> = ps.iter().collect();
    // Sticky for one method only: the other one still spreads, call after call.
    let invoker = join("m.sticky=true", &refs);
    for _ in 0..3 {
        assert_eq!(spread(&invoker, "m", 20).await, 1);
        assert!(spread(&invoker, "other", 40).await > 1);
    }
    // Sticky from the first provider's URL (no method-level settings: resolved once
    // and kept), the same on every call.
    let sticky: Vec<Arc<TestInvoker>> = (1..=4)
        .map(|i| TestInvoker::ok(&provider_url(i, if i == 1 { "sticky=true" } else { "" })))
        .collect();
    let refs: Vec<&Arc<TestInvoker>> = sticky.iter().collect();
    let invoker = join("", &refs);
    assert_eq!(spread(&invoker, "m", 20).await, 1);
    assert_eq!(spread(&invoker, "other", 20).await, 1);
    // retries: method level beats the interface's.
    let failing: Vec<Arc<TestInvoker>> = (1..=4)
        .map(|i| TestInvoker::failing(&provider_url(i, ""), ErrorKind::Network))
        .collect();
    let refs: Vec<&Arc<TestInvoker>> = failing.iter().collect();
    let invoker = join("retries=1&m.retries=3", &refs);
    assert!(bounded(invoker.invoke(inv("m"))).await.is_err());
    assert_eq!(total_calls(&refs), 4);
    assert!(bounded(invoker.invoke(inv("other"))).await.is_err());
    assert_eq!(total_calls(&refs), 6);
}
