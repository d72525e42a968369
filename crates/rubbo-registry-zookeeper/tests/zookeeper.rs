//! Against a real ZooKeeper server (one per test file; each test uses its own root).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rubbo_common::Url;
use rubbo_registry::{
    NotifyListener, Registry, SharedListener, consumer_register_url, empty_url, is_empty_url,
    subscribe_url,
};
use rubbo_registry_zookeeper::{ZookeeperRegistry, paths, registry_factories};
use support::{Recorder, ZkServer, dead_port, init_tracing, wait_until};
use zookeeper_client::{Acls, Client, CreateMode};

const IFACE: &str = "org.apache.dubbo.demo.DemoService";
const WAIT: Duration = Duration::from_secs(15);

/// The provider URL of the wire reference (6.1), as Java registers it, and its node name.
const JAVA_PROVIDER: &str = "dubbo://192.168.1.2:20880/org.apache.dubbo.demo.DemoService?anyhost=true&application=demo-provider&deprecated=false&dubbo=2.0.2&dynamic=true&generic=false&interface=org.apache.dubbo.demo.DemoService&methods=sayHello,sayHelloAsync&pid=1234&prefer.serialization=hessian2,fastjson2&release=3.3.1&service-name-mapping=true&side=provider&timestamp=1700000000000";
const JAVA_NODE: &str = "dubbo%3A%2F%2F192.168.1.2%3A20880%2Forg.apache.dubbo.demo.DemoService%3Fanyhost%3Dtrue%26application%3Ddemo-provider%26deprecated%3Dfalse%26dubbo%3D2.0.2%26dynamic%3Dtrue%26generic%3Dfalse%26interface%3Dorg.apache.dubbo.demo.DemoService%26methods%3DsayHello%2CsayHelloAsync%26pid%3D1234%26prefer.serialization%3Dhessian2%2Cfastjson2%26release%3D3.3.1%26service-name-mapping%3Dtrue%26side%3Dprovider%26timestamp%3D1700000000000";

fn server() -> &'static ZkServer {
    static SERVER: OnceLock<ZkServer> = OnceLock::new();
    SERVER.get_or_init(ZkServer::start)
}

fn provider(port: u16) -> Url {
    Url::parse(&format!(
        "dubbo://127.0.0.1:{port}/{IFACE}?anyhost=true&application=demo-provider&interface={IFACE}&methods=sayHello&side=provider"
    ))
    .unwrap()
}

fn consumer() -> Url {
    subscribe_url(
        &Url::parse(&format!(
            "consumer://127.0.0.1/{IFACE}?application=demo-consumer&interface={IFACE}&side=consumer"
        ))
        .unwrap(),
    )
}

async fn registry(group: &str) -> ZookeeperRegistry {
    init_tracing();
    ZookeeperRegistry::connect(
        server().registry_url(&format!("group={group}&session=4000&timeout=20000")),
    )
    .await
    .unwrap()
}

async fn raw() -> Client {
    Client::connect(&server().address()).await.unwrap()
}

fn providers_path(group: &str) -> String {
    format!("/{group}/{IFACE}/providers")
}

#[tokio::test]
async fn register_and_discover_with_java_node_layout() {
    let p = registry("t_discover").await;
    let c = registry("t_discover").await;
    p.register(provider(20880)).await.unwrap();

    let zk = raw().await;
    let children = zk
        .list_children(&providers_path("t_discover"))
        .await
        .unwrap();
    assert_eq!(children, vec![paths::node_name(&provider(20880))]);
    let node = format!("{}/{}", providers_path("t_discover"), children[0]);
    let (data, stat) = zk.get_data(&node).await.unwrap();
    assert_ne!(stat.ephemeral_owner, 0, "provider nodes are ephemeral");
    assert!(data.is_empty());

    let (rec, l) = Recorder::new();
    c.subscribe(consumer(), l).await.unwrap();
    assert_eq!(rec.providers(), ["127.0.0.1:20880"]);
    assert_eq!(rec.last("providers").unwrap(), vec![provider(20880)]);
    assert_eq!(
        rec.last("routers").unwrap(),
        vec![empty_url(&consumer(), "routers")]
    );
    assert_eq!(
        rec.last("configurators").unwrap(),
        vec![empty_url(&consumer(), "configurators")]
    );

    c.register(consumer_register_url(&consumer()))
        .await
        .unwrap();
    let consumers = zk
        .list_children(&format!("/t_discover/{IFACE}/consumers"))
        .await
        .unwrap();
    assert_eq!(consumers.len(), 1);
    assert!(
        consumers[0]
            .starts_with("consumer%3A%2F%2F127.0.0.1%2Forg.apache.dubbo.demo.DemoService%3F"),
        "{consumers:?}"
    );

    p.register(provider(20881)).await.unwrap();
    rec.wait_providers(&["127.0.0.1:20880", "127.0.0.1:20881"], WAIT)
        .await;
    p.unregister(provider(20880)).await.unwrap();
    rec.wait_providers(&["127.0.0.1:20881"], WAIT).await;
    assert_eq!(c.lookup(consumer()).await.unwrap(), vec![provider(20881)]);
    p.destroy().await;
    c.destroy().await;
}

#[tokio::test]
async fn node_written_by_java_is_read() {
    let url = Url::parse(JAVA_PROVIDER).unwrap();
    assert_eq!(
        paths::node_name(&url),
        JAVA_NODE,
        "we write what Java writes"
    );

    let zk = raw().await;
    let dir = "/t_java/org.apache.dubbo.demo.DemoService/providers";
    zk.mkdir(dir, &CreateMode::Persistent.with_acls(Acls::anyone_all()))
        .await
        .unwrap();
    zk.create(
        &format!("{dir}/{JAVA_NODE}"),
        b"192.168.1.2",
        &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
    )
    .await
    .unwrap();

    let c = registry("t_java").await;
    let (rec, l) = Recorder::new();
    c.subscribe(consumer(), l).await.unwrap();
    let got = rec.last("providers").unwrap();
    assert_eq!(got, vec![url]);
    assert_eq!(got[0].address(), "192.168.1.2:20880");
    assert_eq!(got[0].get_param("methods"), Some("sayHello,sayHelloAsync"));
    assert_eq!(
        got[0].get_param("prefer.serialization"),
        Some("hessian2,fastjson2")
    );
    c.destroy().await;
}

#[tokio::test]
async fn provider_death_is_seen_by_the_consumer() {
    let p1 = registry("t_death").await;
    let p2 = registry("t_death").await;
    let c = registry("t_death").await;
    p1.register(provider(20880)).await.unwrap();
    p2.register(provider(20881)).await.unwrap();
    let (rec, l) = Recorder::new();
    c.subscribe(consumer(), l).await.unwrap();
    rec.wait_providers(&["127.0.0.1:20880", "127.0.0.1:20881"], WAIT)
        .await;

    // Unregister by destroy: the node goes at once.
    let start = Instant::now();
    p1.destroy().await;
    rec.wait_providers(&["127.0.0.1:20881"], Duration::from_secs(5))
        .await;
    // A process that just closes its session (drop).
    drop(p2);
    rec.wait_providers(&[], Duration::from_secs(5)).await;
    assert!(start.elapsed() < Duration::from_secs(5));
    let last = rec.last("providers").unwrap();
    assert_eq!(last.len(), 1);
    assert!(is_empty_url(&last[0]));
    assert_eq!(last[0], empty_url(&consumer(), "providers"));
    c.destroy().await;
}

#[tokio::test]
async fn crashed_provider_disappears_when_its_session_times_out() {
    let c = registry("t_crash").await;
    let (rec, l) = Recorder::new();
    c.subscribe(consumer(), l).await.unwrap();
    rec.wait_providers(&[], WAIT).await;

    // A provider whose process dies without closing its session.
    let crashed = Client::connector()
        .with_session_timeout(Duration::from_secs(2))
        .with_detached()
        .connect(&server().address())
        .await
        .unwrap();
    let path = format!(
        "{}/{}",
        providers_path("t_crash"),
        paths::node_name(&provider(20890))
    );
    crashed
        .create(
            &path,
            &[],
            &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    rec.wait_providers(&["127.0.0.1:20890"], WAIT).await;
    drop(crashed);
    let start = Instant::now();
    rec.wait_providers(&[], Duration::from_secs(20)).await;
    assert!(
        start.elapsed() >= Duration::from_millis(1000),
        "gone only after the session timeout, not at once: {:?}",
        start.elapsed()
    );
    c.destroy().await;
}

#[tokio::test]
async fn garbage_node_names_are_skipped() {
    let zk = raw().await;
    let dir = providers_path("t_garbage");
    zk.mkdir(&dir, &CreateMode::Persistent.with_acls(Acls::anyone_all()))
        .await
        .unwrap();
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    for bad in [
        "bad%ZZescape",
        "not-a-url",
        "dubbo%3A%2F%2Fh%3Anotaport%2Fx",
    ] {
        zk.create(&format!("{dir}/{bad}"), &[], &persistent)
            .await
            .unwrap();
    }
    let p = registry("t_garbage").await;
    p.register(provider(20880)).await.unwrap();

    let c = registry("t_garbage").await;
    let (rec, l) = Recorder::new();
    c.subscribe(consumer(), l).await.unwrap();
    assert_eq!(rec.providers(), ["127.0.0.1:20880"]);
    // More garbage does not clear the list; a new provider is still seen.
    zk.create(&format!("{dir}/more%garbage"), &[], &persistent)
        .await
        .unwrap();
    p.register(provider(20881)).await.unwrap();
    rec.wait_providers(&["127.0.0.1:20880", "127.0.0.1:20881"], WAIT)
        .await;
    assert!(
        rec.seen
            .lock()
            .iter()
            .filter(|l| rubbo_registry::category_of(&l[0]) == "providers")
            .all(|l| !is_empty_url(&l[0])),
        "garbage never emptied the list"
    );
    p.destroy().await;
    c.destroy().await;
}

#[tokio::test]
async fn empty_categories_and_persistent_rules() {
    let c = registry("t_rules").await;
    let (rec, l) = Recorder::new();
    c.subscribe(consumer(), l).await.unwrap();
    for cat in ["providers", "configurators", "routers"] {
        assert_eq!(rec.last(cat).unwrap(), vec![empty_url(&consumer(), cat)]);
    }
    let admin = registry("t_rules").await;
    let route = Url::parse(&format!(
        "route://0.0.0.0/{IFACE}?category=routers&dynamic=false&interface={IFACE}&name=r1&rule=host%3D1.1.1.1"
    ))
    .unwrap();
    admin.register(route.clone()).await.unwrap();
    wait_until("routers list", WAIT, || {
        let rec = rec.clone();
        let route = route.clone();
        async move { rec.last("routers") == Some(vec![route]) }
    })
    .await;
    admin.destroy().await;
    // dynamic=false: persistent, still there after its registry is gone.
    let zk = raw().await;
    let path = format!("/t_rules/{IFACE}/routers/{}", paths::node_name(&route));
    let stat = zk
        .check_stat(&path)
        .await
        .unwrap()
        .expect("route node kept");
    assert_eq!(stat.ephemeral_owner, 0);
    c.destroy().await;
}

#[tokio::test]
async fn unsubscribe_and_panicking_listener() {
    let p = registry("t_unsub").await;
    let c = registry("t_unsub").await;
    let (rec, l) = Recorder::new();
    c.subscribe(consumer(), l.clone()).await.unwrap();

    struct Panics(AtomicUsize);
    impl NotifyListener for Panics {
        fn notify(&self, _: Vec<Url>) {
            self.0.fetch_add(1, Ordering::SeqCst);
            panic!("listener bug");
        }
    }
    let bad = Arc::new(Panics(AtomicUsize::new(0)));
    let bad_l: SharedListener = bad.clone();
    c.subscribe(consumer(), bad_l).await.unwrap();
    assert_eq!(bad.0.load(Ordering::SeqCst), 3);

    p.register(provider(20880)).await.unwrap();
    rec.wait_providers(&["127.0.0.1:20880"], WAIT).await;
    wait_until("panicking listener called again", WAIT, || {
        let bad = bad.clone();
        async move { bad.0.load(Ordering::SeqCst) >= 4 }
    })
    .await;

    c.unsubscribe(consumer(), l).await.unwrap();
    let before = rec.seen.lock().len();
    p.register(provider(20881)).await.unwrap();
    wait_until("panicking listener sees the second provider", WAIT, || {
        let bad = bad.clone();
        async move { bad.0.load(Ordering::SeqCst) >= 5 }
    })
    .await;
    assert_eq!(
        rec.seen.lock().len(),
        before,
        "unsubscribed listener not called"
    );
    p.destroy().await;
    c.destroy().await;
}

#[tokio::test]
async fn a_burst_of_changes_is_one_notification() {
    init_tracing();
    let c = ZookeeperRegistry::connect(
        server().registry_url("group=t_burst&notify.delay=300&timeout=20000"),
    )
    .await
    .unwrap();
    let (rec, l) = Recorder::new();
    c.subscribe(consumer().with_param("category", "providers"), l)
        .await
        .unwrap();
    let p = registry("t_burst").await;
    let ports: Vec<u16> = (21000..21030).collect();
    futures::future::try_join_all(ports.iter().map(|&port| p.register(provider(port))))
        .await
        .unwrap();
    let want: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let want: Vec<&str> = want.iter().map(String::as_str).collect();
    rec.wait_providers(&want, WAIT).await;
    let pushes = rec.seen.lock().len();
    assert!(pushes <= 4, "30 changes gave {pushes} notifications");
    p.destroy().await;
    c.destroy().await;
}

#[tokio::test]
async fn cache_file_serves_a_consumer_started_while_zookeeper_is_down() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dubbo-registry-demo.cache");
    let factories = registry_factories();

    let p = registry("t_cache").await;
    p.register(provider(20880)).await.unwrap();
    {
        let url = server().registry_url(&format!(
            "group=t_cache&timeout=20000&file={}",
            file.display()
        ));
        let c = rubbo_registry::get_registry(&factories, &url)
            .await
            .unwrap();
        let (rec, l) = Recorder::new();
        c.subscribe(consumer(), l).await.unwrap();
        assert_eq!(rec.providers(), ["127.0.0.1:20880"]);
        c.destroy().await;
    }
    assert!(file.exists());

    // ZooKeeper unreachable at start: check=true fails fast without a cache...
    let down = |q: &str| {
        Url::parse(&format!(
            "zookeeper://127.0.0.1:{}?group=t_cache&timeout=500&{q}",
            dead_port()
        ))
        .unwrap()
    };
    let start = Instant::now();
    let err = rubbo_registry::get_registry(&factories, &down("file.cache=false"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, rubbo_registry::RegistryError::Unavailable { .. }),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(3));

    // ...and with check=false plus the cache file the consumer has its providers.
    let c = rubbo_registry::get_registry(
        &factories,
        &down(&format!("check=false&file={}", file.display())),
    )
    .await
    .unwrap();
    assert!(!c.is_available());
    let (rec, l) = Recorder::new();
    c.subscribe(consumer(), l).await.unwrap();
    assert_eq!(rec.providers(), ["127.0.0.1:20880"]);
    assert_eq!(rec.last("providers").unwrap(), vec![provider(20880)]);
    c.destroy().await;
    p.destroy().await;
}

#[tokio::test]
async fn digest_credentials_protect_the_nodes() {
    init_tracing();
    let url = Url::parse(&format!(
        "zookeeper://rubbo:secret@{}?group=t_auth&timeout=20000",
        server().address()
    ))
    .unwrap();
    let p = ZookeeperRegistry::connect(url.clone()).await.unwrap();
    p.register(provider(20880)).await.unwrap();

    // Nodes carry the creator-only ACL: a client without the credentials cannot read.
    let stranger = raw().await;
    let denied = stranger.list_children(&providers_path("t_auth")).await;
    assert!(
        matches!(denied, Err(zookeeper_client::Error::NoAuth)),
        "{denied:?}"
    );

    let c = ZookeeperRegistry::connect(url).await.unwrap();
    let (rec, l) = Recorder::new();
    c.subscribe(consumer(), l).await.unwrap();
    assert_eq!(rec.providers(), ["127.0.0.1:20880"]);
    p.destroy().await;
    rec.wait_providers(&[], WAIT).await;
    c.destroy().await;
}

#[tokio::test]
async fn services_and_lookup_of_every_interface() {
    let p = registry("t_all").await;
    p.register(provider(20880)).await.unwrap();
    let other =
        Url::parse("tri://127.0.0.1:50051/org.demo.Other?interface=org.demo.Other").unwrap();
    p.register(other.clone()).await.unwrap();
    // Dubbo 3 keeps non-service nodes under the root too.
    raw()
        .await
        .mkdir(
            "/t_all/mapping/org.demo.Other",
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    assert_eq!(p.services().await.unwrap(), vec![IFACE, "org.demo.Other"]);
    let any = Url::parse("consumer://127.0.0.1/*?interface=*&group=*&version=*&category=providers")
        .unwrap();
    let mut all: Vec<String> = p
        .lookup(any)
        .await
        .unwrap()
        .iter()
        .map(|u| u.to_string())
        .collect();
    all.sort();
    let mut want = vec![provider(20880).to_string(), other.to_string()];
    want.sort();
    assert_eq!(all, want);
    p.destroy().await;
}

#[tokio::test]
async fn subscription_to_every_interface_follows_new_services() {
    let p = registry("t_any").await;
    p.register(provider(20880)).await.unwrap();
    let c = registry("t_any").await;
    let (rec, l) = Recorder::new();
    let any = Url::parse("consumer://127.0.0.1/*?interface=*&group=*&version=*&category=providers")
        .unwrap();
    c.subscribe(any, l).await.unwrap();
    wait_until("first service's providers", WAIT, || {
        let rec = rec.clone();
        async move { rec.providers() == ["127.0.0.1:20880"] }
    })
    .await;
    // A service that appears later is followed too.
    let other =
        Url::parse("tri://127.0.0.1:50051/org.demo.Other?interface=org.demo.Other&version=2.0")
            .unwrap();
    p.register(other.clone()).await.unwrap();
    wait_until("new service's providers", WAIT, || {
        let rec = rec.clone();
        let other = other.clone();
        async move { rec.seen.lock().iter().any(|l| l == &vec![other.clone()]) }
    })
    .await;
    p.destroy().await;
    c.destroy().await;
}
