//! 20,000 providers of one interface in a real ZooKeeper: initial subscription and the
//! end-to-end latency of a push where one provider changed (ZooKeeper, client decoding,
//! child cache, listener), with a persistent watch and with a one-shot watch. Prints
//! its figures; ignored by default (about 30 s):
//! `cargo test --release -p rubbo-registry-zookeeper --test scale -- --ignored --nocapture`.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rubbo_common::Url;
use rubbo_registry::{Registry, SharedListener, is_empty_url, subscribe_url};
use rubbo_registry_zookeeper::{ZookeeperRegistry, paths};
use support::{ZkServer, init_tracing};
use zookeeper_client::{Acls, Client, CreateMode};

const N: usize = 20_000;
const IFACE: &str = "org.apache.dubbo.demo.DemoService";

fn provider(i: usize) -> Url {
    Url::parse(&format!(
        "dubbo://10.{}.{}.{}:20880/{IFACE}?anyhost=true&application=demo-provider&deprecated=false&dubbo=2.0.2&dynamic=true&generic=false&interface={IFACE}&methods=sayHello,sayHelloAsync&pid=1234&prefer.serialization=hessian2,fastjson2&release=3.3.1&service-name-mapping=true&side=provider&timestamp=1700000000000",
        i / 65536,
        (i / 256) % 256,
        i % 256
    ))
    .unwrap()
}

/// Waits until the last providers list has `n` URLs; returns when it arrived.
async fn wait_count(last: &Mutex<(usize, Instant)>, n: usize, within: Duration) -> Instant {
    let deadline = Instant::now() + within;
    loop {
        let (count, at) = *last.lock();
        if count == n {
            return at;
        }
        assert!(
            Instant::now() < deadline,
            "waited {within:?} for {n} providers, have {count}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "scale test: 20,000 providers, about 30 s"]
async fn push_with_20000_providers() {
    init_tracing();
    let server = ZkServer::start();
    let zk = Client::connect(&server.address()).await.unwrap();
    let dir = format!("/dubbo/{IFACE}/providers");
    zk.mkdir(&dir, &CreateMode::Persistent.with_acls(Acls::anyone_all()))
        .await
        .unwrap();
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let start = Instant::now();
    for chunk in (0..N).collect::<Vec<_>>().chunks(1000) {
        let paths: Vec<String> = chunk
            .iter()
            .map(|&i| format!("{dir}/{}", paths::node_name(&provider(i))))
            .collect();
        let creates: Vec<_> = paths
            .iter()
            .map(|p| zk.create(p, &[], &persistent))
            .collect();
        for r in futures::future::join_all(creates).await {
            r.unwrap();
        }
    }
    println!("created {N} provider nodes in {:?}", start.elapsed());

    // ZooKeeper lists children in the iteration order of a Java HashSet: the child
    // cache relies on that order staying put when one child comes or goes (for speed
    // only: any order gives the right lists).
    let before = zk.list_children(&dir).await.unwrap();
    let extra = format!("{dir}/{}", paths::node_name(&provider(N + 100)));
    zk.create(&extra, &[], &persistent).await.unwrap();
    let mut after = zk.list_children(&dir).await.unwrap();
    zk.delete(&extra, None).await.unwrap();
    let at = after.iter().position(|c| extra.ends_with(c.as_str()));
    if let Some(at) = at {
        after.remove(at);
    }
    println!(
        "order of {N} children with one added (at {at:?}), then taken out again: {}",
        if after == before { "kept" } else { "changed" }
    );

    // Persistent watch (events name the child) and one-shot watch (full list).
    for mode in ["persistent", "oneshot"] {
        let registry = ZookeeperRegistry::connect(
            server.registry_url(&format!("timeout=20000&notify.delay=0&zk.watch={mode}")),
        )
        .await
        .unwrap();
        let last = Arc::new(Mutex::new((0usize, Instant::now())));
        let sink = last.clone();
        let listener: SharedListener = Arc::new(move |urls: Vec<Url>| {
            if urls
                .first()
                .is_some_and(|u| rubbo_registry::list_category(u) == "providers")
            {
                let n = if is_empty_url(&urls[0]) {
                    0
                } else {
                    urls.len()
                };
                *sink.lock() = (n, Instant::now());
            }
        });
        let consumer = subscribe_url(
            &Url::parse(&format!(
                "consumer://10.0.0.9/{IFACE}?interface={IFACE}&category=providers"
            ))
            .unwrap(),
        );
        let t = Instant::now();
        registry.subscribe(consumer, listener).await.unwrap();
        let initial = wait_count(&last, N, Duration::from_secs(60)).await - t;
        println!("{mode}: initial subscription with {N} providers: {initial:?}");

        let mut adds = Vec::new();
        let mut removes = Vec::new();
        for round in 0..10 {
            let extra = format!("{dir}/{}", paths::node_name(&provider(N + round)));
            let t = Instant::now();
            zk.create(&extra, &[], &persistent).await.unwrap();
            adds.push(wait_count(&last, N + 1, Duration::from_secs(30)).await - t);
            let t = Instant::now();
            zk.delete(&extra, None).await.unwrap();
            removes.push(wait_count(&last, N, Duration::from_secs(30)).await - t);
        }
        adds.sort();
        removes.sort();
        println!(
            "{mode}: one provider added to {N}: min {:?} median {:?} max {:?}; removed: min {:?} median {:?} max {:?}",
            adds[0], adds[5], adds[9], removes[0], removes[5], removes[9]
        );
        registry.destroy().await;
    }
}
