//! Distribution tests of every balancer against its weights.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rubbo_cluster::loadbalance::{BalancerEnv, ConsistentHashLoadBalance, RoundRobinLoadBalance};
use rubbo_cluster::{LoadBalance, Rand, RpcStatus, StatusInvoker, load_balances};
use rubbo_common::{BoxInvoker, Invocation, Url, Value};
use support::*;

fn providers(params: &[&str]) -> Vec<BoxInvoker> {
    params
        .iter()
        .enumerate()
        .map(|(i, p)| TestInvoker::ok(&provider_url(i + 1, p)).boxed())
        .collect()
}

fn consumer() -> Url {
    Url::parse("consumer://10.0.0.99/org.demo.Greeter").unwrap()
}

fn histogram(
    lb: &dyn LoadBalance,
    invokers: &[BoxInvoker],
    inv: &Invocation,
    n: usize,
) -> Vec<usize> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for _ in 0..n {
        let p = lb.select(invokers, &consumer(), inv).unwrap();
        *counts.entry(p.url().address()).or_default() += 1;
    }
    invokers
        .iter()
        .map(|i| counts.get(&i.url().address()).copied().unwrap_or(0))
        .collect()
}

fn assert_share(counts: &[usize], weights: &[f64], tolerance: f64) {
    let n: usize = counts.iter().sum();
    let total: f64 = weights.iter().sum();
    for (c, w) in counts.iter().zip(weights) {
        let share = *c as f64 / n as f64;
        let expected = w / total;
        assert!(
            (share - expected).abs() <= tolerance,
            "share {share:.3} vs expected {expected:.3} (counts {counts:?}, weights {weights:?})"
        );
    }
}

fn env(seed: u64) -> BalancerEnv {
    BalancerEnv {
        status: Arc::new(RpcStatus::new()),
        rand: Rand::seeded(seed),
    }
}

#[test]
fn random_follows_weights() {
    let table = load_balances(&env(1));
    let lb = table.get("random").unwrap();
    let ps = providers(&["weight=100", "weight=200", "weight=700"]);
    let counts = histogram(&*lb, &ps, &inv("m"), 50_000);
    assert_share(&counts, &[1.0, 2.0, 7.0], 0.02);
}

#[test]
fn random_is_uniform_without_weights_and_with_zero_total() {
    let table = load_balances(&env(2));
    let lb = table.get("random").unwrap();
    let ps = providers(&["", "", "", ""]);
    assert_share(&histogram(&*lb, &ps, &inv("m"), 40_000), &[1.0; 4], 0.02);
    let zeros = providers(&["weight=0", "weight=0"]);
    assert_share(&histogram(&*lb, &zeros, &inv("m"), 20_000), &[1.0; 2], 0.03);
}

#[test]
fn random_honours_method_level_weight() {
    let table = load_balances(&env(3));
    let lb = table.get("random").unwrap();
    let ps = providers(&["weight=100&sayHello.weight=900", "weight=100"]);
    assert_share(
        &histogram(&*lb, &ps, &inv("sayHello"), 40_000),
        &[9.0, 1.0],
        0.02,
    );
    assert_share(
        &histogram(&*lb, &ps, &inv("other"), 40_000),
        &[1.0, 1.0],
        0.02,
    );
}

#[test]
fn warmup_reduces_weight_of_young_providers() {
    let now = rubbo_cluster::loadbalance::now_millis();
    // Started 60 s ago with the default 10 min warm-up: weight 100 * 60/600 = 10.
    let young = format!("timestamp={}", now - 60_000);
    let old = format!("timestamp={}", now - 3_600_000);
    let table = load_balances(&env(4));
    let lb = table.get("random").unwrap();
    let ps = providers(&[&young, &old]);
    assert_share(
        &histogram(&*lb, &ps, &inv("m"), 55_000),
        &[10.0, 100.0],
        0.015,
    );
    // A custom warm-up: half-way through 120 s.
    let half = format!("timestamp={}&warmup=120000", now - 60_000);
    let ps = providers(&[&half, &old]);
    assert_share(
        &histogram(&*lb, &ps, &inv("m"), 30_000),
        &[50.0, 100.0],
        0.02,
    );
}

#[test]
fn roundrobin_matches_javas_smooth_sequence() {
    let lb = RoundRobinLoadBalance::new();
    let ps = providers(&["weight=5", "weight=1", "weight=1"]);
    let names = ["A", "B", "C"];
    let seq: String = (0..14)
        .map(|_| {
            let p = lb.select(&ps, &consumer(), &inv("m")).unwrap();
            names[ps.iter().position(|x| Arc::ptr_eq(x, &p)).unwrap()]
        })
        .collect();
    assert_eq!(seq, "AABACAAAABACAA");
}

#[test]
fn roundrobin_is_exact_per_cycle_and_separate_per_method() {
    let lb = RoundRobinLoadBalance::new();
    let ps = providers(&["weight=3", "weight=2", "weight=1"]);
    for method in ["a", "b"] {
        let counts = histogram(&lb, &ps, &inv(method), 600);
        assert_eq!(counts, vec![300, 200, 100], "method {method}");
    }
}

#[tokio::test]
async fn leastactive_prefers_idle_providers() {
    let env = env(5);
    let table = load_balances(&env);
    let lb = table.get("leastactive").unwrap();
    let busy = TestInvoker::new(&provider_url(1, ""), |_, _| Reply::Never);
    let idle_a = TestInvoker::ok(&provider_url(2, "weight=100"));
    let idle_b = TestInvoker::ok(&provider_url(3, "weight=300"));
    let wrap = |t: &Arc<TestInvoker>| StatusInvoker::wrap(t.boxed(), env.status.clone());
    let ps = vec![wrap(&busy), wrap(&idle_a), wrap(&idle_b)];
    // Two calls stay in flight on the first provider.
    let _pending: Vec<_> = (0..2).map(|_| ps[0].invoke(inv("m"))).collect();
    assert_eq!(env.status.get(&ps[0], "m").unwrap().active(), 2);
    let counts = histogram(&*lb, &ps, &inv("m"), 20_000);
    assert_eq!(counts[0], 0, "the busy provider must never be chosen");
    // Ties broken by weight 1:3.
    assert_share(&counts[1..], &[1.0, 3.0], 0.02);
    // Another method has no active calls: all three tie, weights 100:100:300.
    let other = histogram(&*lb, &ps, &inv("n"), 25_000);
    assert_share(&other, &[1.0, 1.0, 3.0], 0.02);
}

#[tokio::test]
async fn shortestresponse_prefers_fast_providers() {
    let env = env(6);
    let table = load_balances(&env);
    let lb = table.get("shortestresponse").unwrap();
    let slow = TestInvoker::new(&provider_url(1, ""), |_, _| {
        Reply::After(Duration::from_millis(30), Box::new(Reply::Ok))
    });
    let fast = TestInvoker::new(&provider_url(2, ""), |_, _| {
        Reply::After(Duration::from_millis(1), Box::new(Reply::Ok))
    });
    let ps: Vec<BoxInvoker> = [slow, fast]
        .iter()
        .map(|t| StatusInvoker::wrap(t.boxed(), env.status.clone()))
        .collect();
    for p in &ps {
        for _ in 0..3 {
            bounded(p.invoke(inv("m"))).await.unwrap();
        }
    }
    let counts = histogram(&*lb, &ps, &inv("m"), 2_000);
    assert_eq!(counts, vec![0, 2_000]);
    // No statistics for another method: both estimated 0, equal weights, uniform.
    assert_share(&histogram(&*lb, &ps, &inv("n"), 20_000), &[1.0, 1.0], 0.02);
}

#[tokio::test]
async fn p2c_avoids_loaded_providers() {
    let env = env(7);
    let table = load_balances(&env);
    let lb = table.get("p2c").unwrap();
    assert!(table.contains("adaptive"));
    let busy = TestInvoker::new(&provider_url(1, ""), |_, _| Reply::Never);
    let ps: Vec<BoxInvoker> = std::iter::once(busy.boxed())
        .chain((2..=4).map(|i| TestInvoker::ok(&provider_url(i, "")).boxed()))
        .map(|t| StatusInvoker::wrap(t, env.status.clone()))
        .collect();
    let _pending: Vec<_> = (0..5).map(|_| ps[0].invoke(inv("m"))).collect();
    let counts = histogram(&*lb, &ps, &inv("m"), 12_000);
    // The busy provider loses every comparison it takes part in.
    assert_eq!(counts[0], 0);
    assert_share(&counts[1..], &[1.0, 1.0, 1.0], 0.03);
}

fn with_arg(v: Value) -> Invocation {
    inv("m").with_arguments(vec![v])
}

#[test]
fn consistenthash_matches_the_java_ring() {
    // Expected owners computed independently (Python hashlib, Java's ring layout).
    let lb = ConsistentHashLoadBalance::new();
    let ps = providers(&["", "", ""]);
    for (key, owner) in [
        ("hello", "10.0.0.2:20880"),
        ("world", "10.0.0.2:20880"),
        ("rubbo", "10.0.0.3:20880"),
    ] {
        let p = lb
            .select(&ps, &consumer(), &with_arg(Value::from(key)))
            .unwrap();
        assert_eq!(p.url().address(), owner, "key {key}");
    }
    // String.valueOf(42) == "42"; String.valueOf(null) == "null".
    let p = lb
        .select(&ps, &consumer(), &with_arg(Value::Int(42)))
        .unwrap();
    assert_eq!(p.url().address(), "10.0.0.2:20880");
    let p = lb.select(&ps, &consumer(), &with_arg(Value::Null)).unwrap();
    assert_eq!(p.url().address(), "10.0.0.2:20880");
    // No argument: the empty key.
    let p = lb.select(&ps, &consumer(), &inv("m")).unwrap();
    assert_eq!(p.url().address(), "10.0.0.1:20880");
}

#[test]
fn consistenthash_is_stable_when_one_provider_of_ten_leaves() {
    let lb = ConsistentHashLoadBalance::new();
    let all = providers(&[""; 10]);
    let keys: Vec<Invocation> = (0..5_000).map(|k| with_arg(Value::Long(k))).collect();
    let before: Vec<String> = keys
        .iter()
        .map(|i| lb.select(&all, &consumer(), i).unwrap().url().address())
        .collect();
    let gone = all[3].url().address();
    let rest: Vec<BoxInvoker> = all
        .iter()
        .filter(|p| p.url().address() != gone)
        .cloned()
        .collect();
    let after: Vec<String> = keys
        .iter()
        .map(|i| lb.select(&rest, &consumer(), i).unwrap().url().address())
        .collect();
    let moved = before.iter().zip(&after).filter(|(b, a)| b != a).count();
    // Only keys owned by the leaving provider move (~1/10).
    for (b, a) in before.iter().zip(&after) {
        if b != a {
            assert_eq!(*b, gone);
        }
    }
    let share = moved as f64 / keys.len() as f64;
    assert!((0.04..=0.17).contains(&share), "moved share {share}");
    // The shared-list path (what cluster invokers use) agrees with the slice path,
    // before and after the change.
    let shared_all = Arc::new(all.clone());
    let shared_rest = Arc::new(rest.clone());
    for (i, k) in keys.iter().enumerate().step_by(7) {
        let b = lb
            .select_list(&shared_all, &consumer(), k)
            .unwrap()
            .url()
            .address();
        assert_eq!(b, before[i]);
        let a = lb
            .select_list(&shared_rest, &consumer(), k)
            .unwrap()
            .url()
            .address();
        assert_eq!(a, after[i]);
    }
    // Spread over the ring is roughly even.
    let mut counts: HashMap<&String, usize> = HashMap::new();
    for b in &before {
        *counts.entry(b).or_default() += 1;
    }
    assert!(
        counts.values().all(|c| (250..=800).contains(c)),
        "{counts:?}"
    );
}

#[test]
fn consistenthash_uses_hash_arguments() {
    let lb = ConsistentHashLoadBalance::new();
    let ps = providers(&["hash.arguments=1", "hash.arguments=1", "hash.arguments=1"]);
    // The first argument varies, the second is fixed: always the same provider.
    let picks: std::collections::HashSet<String> = (0..50)
        .map(|i| {
            let inv = inv("m").with_arguments(vec![Value::Int(i), Value::from("fixed")]);
            lb.select(&ps, &consumer(), &inv).unwrap().url().address()
        })
        .collect();
    assert_eq!(picks.len(), 1);
}

#[test]
fn unknown_balancer_lists_known_names() {
    let table = load_balances(&env(8));
    let err = table.get("nope").err().unwrap().to_string();
    assert!(
        err.contains("consistenthash") && err.contains("roundrobin"),
        "{err}"
    );
    assert_eq!(table.default_name(), "random");
}

#[tokio::test]
async fn consistenthash_reads_consumer_settings_through_a_cluster() {
    let ctx = rubbo_cluster::ClusterContext::with_rand(Rand::seeded(9));
    let consumer = Url::parse(
        "consumer://10.0.0.99/org.demo.Greeter?loadbalance=consistenthash&hash.arguments=1",
    )
    .unwrap();
    let ps: Vec<BoxInvoker> = (1..=5)
        .map(|i| TestInvoker::ok(&provider_url(i, "")).boxed())
        .collect();
    let invoker = ctx.join(ctx.static_directory(consumer, ps)).unwrap();
    let mut owners = std::collections::HashSet::new();
    for i in 0..30 {
        let call = inv("m").with_arguments(vec![Value::Int(i), Value::from("same")]);
        owners.insert(answered_by(&bounded(invoker.invoke(call)).await.unwrap()));
    }
    assert_eq!(owners.len(), 1, "only the second argument is hashed");
}

#[test]
fn weights_follow_a_provider_replaced_in_place() {
    let table = load_balances(&env(10));
    let lb = table.get("random").unwrap();
    let mut ps = providers(&["weight=100", "weight=100"]);
    // Cache the list (it is remembered once seen twice).
    assert_share(&histogram(&*lb, &ps, &inv("m"), 10_000), &[1.0, 1.0], 0.03);
    // Same buffer, new provider with another weight.
    ps[0] = TestInvoker::ok(&provider_url(1, "weight=900")).boxed();
    assert_share(&histogram(&*lb, &ps, &inv("m"), 20_000), &[9.0, 1.0], 0.02);
    let rr = table.get("roundrobin").unwrap();
    assert_eq!(histogram(&*rr, &ps, &inv("m"), 1_000), vec![900, 100]);
}

#[tokio::test]
async fn shortestresponse_window_restarts() {
    use rubbo_cluster::loadbalance::ShortestResponseLoadBalance;
    let status = Arc::new(RpcStatus::new());
    let lb = ShortestResponseLoadBalance::new(status.clone(), Rand::seeded(12))
        .with_slide_period_ms(400);
    let slow = TestInvoker::new(&provider_url(1, ""), |_, _| {
        Reply::After(Duration::from_millis(25), Box::new(Reply::Ok))
    });
    let fast = TestInvoker::ok(&provider_url(2, ""));
    let ps: Vec<BoxInvoker> = [slow, fast]
        .iter()
        .map(|t| StatusInvoker::wrap(t.boxed(), status.clone()))
        .collect();
    for p in &ps {
        bounded(p.invoke(inv("m"))).await.unwrap();
    }
    assert_eq!(histogram(&lb, &ps, &inv("m"), 200), vec![0, 200]);
    // The window is the behaviour under test: let it run out.
    tokio::time::sleep(Duration::from_millis(450)).await;
    lb.select(&ps, &consumer(), &inv("m"));
    // A new window has no samples: both estimate 0, a fair split.
    assert_share(&histogram(&lb, &ps, &inv("m"), 10_000), &[1.0, 1.0], 0.03);
}

#[test]
fn roundrobin_is_exact_under_concurrency() {
    let lb = Arc::new(RoundRobinLoadBalance::new());
    let ps = Arc::new(providers(&["weight=3", "weight=2", "weight=1"]));
    let counts = Arc::new(parking_lot::Mutex::new(vec![0usize; 3]));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (lb, ps, counts) = (lb.clone(), ps.clone(), counts.clone());
            std::thread::spawn(move || {
                for _ in 0..1_500 {
                    let p = lb.select(&ps, &consumer(), &inv("m")).unwrap();
                    let i = ps.iter().position(|x| Arc::ptr_eq(x, &p)).unwrap();
                    counts.lock()[i] += 1;
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(*counts.lock(), vec![3_000, 2_000, 1_000]);
}
