//! ZooKeeper outages: restarts, session expiry, starting while it is down. Each test
//! owns its server.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use rubbo_common::Url;
use rubbo_registry::{FailbackRegistry, Registry, subscribe_url};
use rubbo_registry_zookeeper::{ZookeeperRegistry, paths};
use support::{Recorder, ZkServer, init_tracing, wait_until};
use zookeeper_client::Client;

const IFACE: &str = "org.rubbo.interop.EchoService";
const WAIT: Duration = Duration::from_secs(30);

fn provider(port: u16) -> Url {
    Url::parse(&format!(
        "dubbo://127.0.0.1:{port}/{IFACE}?application=p&interface={IFACE}&side=provider"
    ))
    .unwrap()
}

fn consumer() -> Url {
    subscribe_url(
        &Url::parse(&format!(
            "consumer://127.0.0.1/{IFACE}?interface={IFACE}&side=consumer"
        ))
        .unwrap(),
    )
}

/// The session id owning the node of `url`, if it exists.
async fn node_owner(server: &ZkServer, url: &Url) -> Option<i64> {
    let zk = Client::connect(&server.address()).await.ok()?;
    let path = paths::url_path("/dubbo", url);
    zk.check_stat(&path).await.ok()?.map(|s| s.ephemeral_owner)
}

#[tokio::test]
async fn zookeeper_restart_loses_no_registration_or_subscription() {
    init_tracing();
    let mut server = ZkServer::start();
    let url = server.registry_url("session=10000&timeout=20000");
    let p = ZookeeperRegistry::connect(url.clone()).await.unwrap();
    let c = ZookeeperRegistry::connect(url).await.unwrap();
    p.register(provider(20880)).await.unwrap();
    let (rec, l) = Recorder::new();
    c.subscribe(consumer(), l).await.unwrap();
    assert_eq!(rec.providers(), ["127.0.0.1:20880"]);

    server.restart();

    wait_until("provider registry reconnected", WAIT, || async {
        p.is_available()
    })
    .await;
    wait_until("provider node present", WAIT, || async {
        node_owner(&server, &provider(20880)).await.is_some()
    })
    .await;
    p.register(provider(20881)).await.unwrap();
    rec.wait_providers(&["127.0.0.1:20880", "127.0.0.1:20881"], WAIT)
        .await;
    p.destroy().await;
    rec.wait_providers(&[], WAIT).await;
    c.destroy().await;
}

#[tokio::test]
async fn outage_longer_than_the_session_recreates_nodes_and_watches() {
    init_tracing();
    let mut server = ZkServer::start();
    let url = server.registry_url("session=2000&timeout=20000");
    let p = ZookeeperRegistry::connect(url.clone()).await.unwrap();
    let c = ZookeeperRegistry::connect(url).await.unwrap();
    p.register(provider(20880)).await.unwrap();
    let first_owner = node_owner(&server, &provider(20880)).await.unwrap();
    let (rec, l) = Recorder::new();
    c.subscribe(consumer(), l).await.unwrap();
    assert_eq!(rec.providers(), ["127.0.0.1:20880"]);

    server.stop();
    // The outage itself (not a wait for a condition): longer than the session timeout,
    // so both clients see their sessions expire.
    tokio::time::sleep(Duration::from_secs(5)).await;
    server.restart();

    // A new provider session owns the node again (the old session's node is replaced).
    wait_until("node owned by a new session", WAIT, || async {
        let owner = node_owner(&server, &provider(20880)).await;
        let current = p.client().map(|c| c.session_id().0);
        owner.is_some() && owner != Some(first_owner) && owner == current
    })
    .await;
    // The consumer's subscription is live again.
    p.register(provider(20881)).await.unwrap();
    rec.wait_providers(&["127.0.0.1:20880", "127.0.0.1:20881"], WAIT)
        .await;
    p.destroy().await;
    c.destroy().await;
}

#[tokio::test]
async fn started_while_zookeeper_is_down_then_it_comes_up() {
    init_tracing();
    let mut server = ZkServer::start();
    server.stop();
    let dir = tempfile::tempdir().unwrap();
    let url = server.registry_url(&format!(
        "check=false&timeout=1000&retry.period=200&file={}",
        dir.path().join("cache").display()
    ));
    let zk = ZookeeperRegistry::connect(url).await.unwrap();
    let registry = Arc::new(FailbackRegistry::new(Arc::new(zk)));
    registry.register(provider(20880)).await.unwrap();
    let (rec, l) = Recorder::new();
    registry.subscribe(consumer(), l).await.unwrap();
    assert!(
        rec.seen.lock().is_empty(),
        "check=false: starts with no provider"
    );
    assert!(registry.pending_retries() >= 2);

    server.restart();
    rec.wait_providers(&["127.0.0.1:20880"], WAIT).await;
    assert!(node_owner(&server, &provider(20880)).await.is_some());
    wait_until("retries drained", WAIT, || async {
        registry.pending_retries() == 0
    })
    .await;
    registry.destroy().await;
}
