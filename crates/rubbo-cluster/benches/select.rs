//! Selection and routing cost.
//!
//! Run with: `cargo bench -p rubbo-cluster --bench select -- --warm-up-time 1 --measurement-time 2`
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use rubbo_cluster::loadbalance::BalancerEnv;
use rubbo_cluster::router::{Condition, ConditionRule};
use rubbo_cluster::{RouterChain, load_balances};
use rubbo_common::{BoxInvoker, Invocation, InvokeFuture, Invoker, RpcResult, Url, Value};

#[derive(Debug)]
struct P(Url);

impl Invoker for P {
    fn invoke(&self, _: Invocation) -> InvokeFuture {
        Box::pin(async { Ok(RpcResult::null()) })
    }
    fn url(&self) -> &Url {
        &self.0
    }
}

fn providers(n: usize) -> Vec<BoxInvoker> {
    (0..n)
        .map(|i| {
            let url = format!(
                "dubbo://10.{}.{}.{}:20880/org.demo.Greeter?application=demo&weight={}&timestamp=1000&side=provider&region={}&methods=sayHello,find",
                i / 65536,
                (i / 256) % 256,
                i % 256,
                100 + (i % 3) * 50,
                ["hz", "sh", "bj"][i % 3]
            );
            Arc::new(P(Url::parse(&url).unwrap())) as BoxInvoker
        })
        .collect()
}

fn select(c: &mut Criterion) {
    let table = load_balances(&BalancerEnv::default());
    let consumer = Url::parse("consumer://10.0.0.99/org.demo.Greeter").unwrap();
    let inv =
        Invocation::new("org.demo.Greeter", "sayHello").with_arguments(vec![Value::from("key-1")]);
    let mut group = c.benchmark_group("select");
    for name in [
        "random",
        "roundrobin",
        "leastactive",
        "shortestresponse",
        "consistenthash",
        "p2c",
    ] {
        let lb = table.get(name).unwrap();
        for n in [10, 100, 1000] {
            let ps = providers(n);
            group.bench_with_input(BenchmarkId::new(name, n), &ps, |b, ps| {
                b.iter(|| black_box(lb.select(black_box(ps), &consumer, &inv)))
            });
        }
    }
    let lb = table.get("consistenthash").unwrap();
    for n in [10, 100, 1000] {
        let ps = Arc::new(providers(n));
        group.bench_with_input(
            BenchmarkId::new("consistenthash-shared-list", n),
            &ps,
            |b, ps| b.iter(|| black_box(lb.select_list(black_box(ps), &consumer, &inv))),
        );
    }
    group.finish();
}

fn route(c: &mut Criterion) {
    let ps = Arc::new(providers(1000));
    let consumer =
        Url::parse("consumer://10.0.0.99/org.demo.Greeter?application=web&region=hz").unwrap();
    let chain = RouterChain::builtin();
    let rules = [
        "method = find* => region = hz",
        "method = sayHello => region = hz,sh",
        "application = web => side = provider",
        "host = 10.0.0.* => port = 20880",
        "=> region != xx",
        "method = save* => host = 172.22.3.91",
        "application != test => application = demo",
        "=> region = $region,sh,bj",
        "method = sayHello & application = web => weight = 100~200",
        "arguments[0] = key* => host = 10.0.*",
    ];
    let conditions = rules.iter().map(|r| Condition::parse(r).unwrap()).collect();
    chain.set_condition_rule(ConditionRule::new(conditions, false));
    let inv =
        Invocation::new("org.demo.Greeter", "sayHello").with_arguments(vec![Value::from("key-1")]);
    assert!(!chain.route_list(&ps, &consumer, &inv).is_empty());
    c.bench_function("route/10-condition-rules/1000", |b| {
        b.iter(|| black_box(chain.route_list(black_box(&ps), &consumer, &inv)))
    });
    let empty = RouterChain::builtin();
    c.bench_function("route/no-rules/1000", |b| {
        b.iter(|| black_box(empty.route_list(black_box(&ps), &consumer, &inv)))
    });
}

criterion_group!(benches, select, route);
criterion_main!(benches);
