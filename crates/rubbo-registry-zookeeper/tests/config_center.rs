//! The ZooKeeper config center against a real server: Java's node layout, CAS,
//! listeners, restarts and session expiry, and the session shared with the registry.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rubbo_registry::{
    ConfigChangeEvent, ConfigChangeType, DynamicConfiguration, Registry, SharedConfigListener,
};
use rubbo_registry_zookeeper::{
    ZookeeperDynamicConfiguration, ZookeeperRegistry, ZookeeperSessions,
};
use support::{ZkServer, dead_port, init_tracing, wait_until};
use zookeeper_client::Client;

const WAIT: Duration = Duration::from_secs(30);
const KEY: &str = "org.demo.Greeter::.configurators";

#[derive(Default)]
struct Events(Mutex<Vec<ConfigChangeEvent>>);

impl Events {
    fn listener(self: &Arc<Self>) -> SharedConfigListener {
        let me = self.clone();
        Arc::new(move |e: ConfigChangeEvent| me.0.lock().push(e))
    }
    fn kinds(&self) -> Vec<(ConfigChangeType, String)> {
        self.0
            .lock()
            .iter()
            .map(|e| (e.change_type, e.content.clone()))
            .collect()
    }
    async fn wait_last(&self, kind: ConfigChangeType, content: &str) {
        wait_until(&format!("{kind:?} {content}"), WAIT, || async {
            self.0
                .lock()
                .last()
                .is_some_and(|e| e.change_type == kind && e.content == content)
        })
        .await;
    }
}

#[tokio::test]
async fn publish_get_cas_remove_and_listen_on_javas_paths() {
    init_tracing();
    let server = ZkServer::start();
    let url = server.registry_url("timeout=10000");
    let cc = ZookeeperDynamicConfiguration::connect(url).await.unwrap();
    assert_eq!(cc.root(), "/dubbo/config");
    assert_eq!(cc.path(KEY, "dubbo"), format!("/dubbo/config/dubbo/{KEY}"));
    assert_eq!(cc.path(KEY, ""), format!("/dubbo/config/dubbo/{KEY}"));

    let events = Arc::new(Events::default());
    let now = cc
        .add_listener(KEY, "dubbo", events.listener())
        .await
        .unwrap();
    assert_eq!(now, None);
    assert_eq!(cc.get_config(KEY, "dubbo").await.unwrap(), None);

    cc.publish_config(KEY, "dubbo", "timeout: 1").await.unwrap();
    // The node Java reads: the path and UTF-8 data.
    let zk = Client::connect(&server.address()).await.unwrap();
    let (data, stat) = zk
        .get_data(&format!("/dubbo/config/dubbo/{KEY}"))
        .await
        .unwrap();
    assert_eq!(data, b"timeout: 1");
    events
        .wait_last(ConfigChangeType::Added, "timeout: 1")
        .await;

    let item = cc.get_config_item(KEY, "dubbo").await.unwrap().unwrap();
    assert_eq!(item.version, i64::from(stat.version));
    assert!(
        !cc.publish_config_cas(KEY, "dubbo", "lost", Some(item.version + 1))
            .await
            .unwrap()
    );
    assert!(
        !cc.publish_config_cas(KEY, "dubbo", "lost", None)
            .await
            .unwrap(),
        "exists"
    );
    assert!(
        cc.publish_config_cas(KEY, "dubbo", "timeout: 2", Some(item.version))
            .await
            .unwrap()
    );
    assert!(
        !cc.publish_config_cas(KEY, "dubbo", "stale", Some(item.version))
            .await
            .unwrap()
    );
    events
        .wait_last(ConfigChangeType::Modified, "timeout: 2")
        .await;
    assert_eq!(
        cc.get_config(KEY, "dubbo").await.unwrap().as_deref(),
        Some("timeout: 2")
    );

    // A write by another client (as Dubbo Admin would) is seen too.
    zk.set_data(
        &format!("/dubbo/config/dubbo/{KEY}"),
        "timeout: 3".as_bytes(),
        None,
    )
    .await
    .unwrap();
    events
        .wait_last(ConfigChangeType::Modified, "timeout: 3")
        .await;

    assert!(cc.remove_config(KEY, "dubbo").await.unwrap());
    assert!(!cc.remove_config(KEY, "dubbo").await.unwrap());
    events.wait_last(ConfigChangeType::Deleted, "").await;
    assert!(
        cc.publish_config_cas(KEY, "dubbo", "again", None)
            .await
            .unwrap()
    );
    events.wait_last(ConfigChangeType::Added, "again").await;
    let kinds: Vec<ConfigChangeType> = events.kinds().into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        kinds,
        [
            ConfigChangeType::Added,
            ConfigChangeType::Modified,
            ConfigChangeType::Modified,
            ConfigChangeType::Deleted,
            ConfigChangeType::Added
        ]
    );

    // A second listener gets the current content; a removed one hears nothing more.
    let second = Arc::new(Events::default());
    let l2 = second.listener();
    assert_eq!(
        cc.add_listener(KEY, "dubbo", l2.clone())
            .await
            .unwrap()
            .as_deref(),
        Some("again")
    );
    cc.remove_listener(KEY, "dubbo", &l2);
    cc.publish_config(KEY, "dubbo", "last").await.unwrap();
    events.wait_last(ConfigChangeType::Modified, "last").await;
    assert!(second.kinds().is_empty());

    // Namespace and group shape the path as in Java.
    let other =
        ZookeeperDynamicConfiguration::connect(server.registry_url("namespace=prod&group=g1"))
            .await
            .unwrap();
    other.publish_config("k", "", "v").await.unwrap();
    assert_eq!(zk.get_data("/prod/config/g1/k").await.unwrap().0, b"v");
    cc.close().await;
}

#[tokio::test]
async fn listeners_survive_a_restart_and_a_session_expiry() {
    init_tracing();
    let mut server = ZkServer::start();
    let cc =
        ZookeeperDynamicConfiguration::connect(server.registry_url("session=2000&timeout=20000"))
            .await
            .unwrap();
    cc.publish_config(KEY, "dubbo", "v1").await.unwrap();
    let events = Arc::new(Events::default());
    assert_eq!(
        cc.add_listener(KEY, "dubbo", events.listener())
            .await
            .unwrap()
            .as_deref(),
        Some("v1")
    );

    // A restart within the session: the watch is back.
    server.restart();
    wait_until("config center reconnected", WAIT, || async {
        cc.is_available()
    })
    .await;
    let zk = Client::connect(&server.address()).await.unwrap();
    let path = format!("/dubbo/config/dubbo/{KEY}");
    zk.set_data(&path, b"v2", None).await.unwrap();
    events.wait_last(ConfigChangeType::Modified, "v2").await;

    // An outage longer than the session: a change made while the client is away is
    // reported once the new session is up.
    server.stop();
    // The outage itself (not a wait for a condition): longer than the session timeout.
    tokio::time::sleep(Duration::from_secs(5)).await;
    server.restart();
    let zk = Client::connect(&server.address()).await.unwrap();
    zk.set_data(&path, b"v3", None).await.unwrap();
    events.wait_last(ConfigChangeType::Modified, "v3").await;
    zk.delete(&path, None).await.unwrap();
    events.wait_last(ConfigChangeType::Deleted, "").await;
    let v3s = events.kinds().iter().filter(|(_, c)| c == "v3").count();
    assert_eq!(v3s, 1, "one report per change: {:?}", events.kinds());
}

#[tokio::test]
async fn registry_and_config_center_on_one_address_share_a_session() {
    init_tracing();
    let server = ZkServer::start();
    let sessions = ZookeeperSessions::new();
    let registry = ZookeeperRegistry::connect_shared(server.registry_url(""), &sessions)
        .await
        .unwrap();
    let cc = ZookeeperDynamicConfiguration::connect_shared(
        server.registry_url("namespace=dubbo"),
        &sessions,
    )
    .await
    .unwrap();
    assert_eq!(sessions.live(), 1);
    let connections = server.four_letter("cons").unwrap();
    assert_eq!(
        connections.lines().filter(|l| l.contains("sid=")).count(),
        1,
        "one connection: {connections}"
    );
    // The registry going away leaves the config center's session up.
    registry.destroy().await;
    drop(registry);
    cc.publish_config("k", "dubbo", "v").await.unwrap();
    assert_eq!(
        cc.get_config("k", "dubbo").await.unwrap().as_deref(),
        Some("v")
    );
    assert_eq!(sessions.live(), 1);
    cc.close().await;
    drop(cc);
    assert_eq!(sessions.live(), 0);
}

/// A config center started with `check=false` while ZooKeeper is down does not make
/// each listener wait for a first read it cannot get (a consumer adds several, one
/// after the other, before it serves from its caches); the content comes to the
/// listener once ZooKeeper is there.
#[tokio::test]
async fn listeners_added_while_zookeeper_is_down_do_not_wait_for_it() {
    init_tracing();
    // Also the bound on connecting (check=false returns after it).
    let timeout = Duration::from_secs(3);
    let url = format!(
        "zookeeper://127.0.0.1:{}?check=false&timeout={}",
        dead_port(),
        timeout.as_millis()
    );
    let cc = ZookeeperDynamicConfiguration::connect(url.parse().unwrap())
        .await
        .unwrap();
    let started = std::time::Instant::now();
    for i in 0..5 {
        let events = Arc::new(Events::default());
        let first = cc
            .add_listener(&format!("k{i}.configurators"), "dubbo", events.listener())
            .await
            .unwrap();
        assert_eq!(first, None);
    }
    // Five listeners in much less than one timeout (each used to wait all of it).
    assert!(
        started.elapsed() < timeout,
        "adding five listeners took {:?}",
        started.elapsed()
    );
    cc.close().await;
}
