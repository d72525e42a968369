//! Application-level discovery against a real ZooKeeper: the instance node's
//! lifecycle, tolerant reads, and the mapping's compare-and-set.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::OnceLock;
use std::time::Duration;

use rubbo_metadata::{
    MetadataInfo, ServiceDiscovery, ServiceInfo, ServiceInstance, ServiceNameMapping,
};
use rubbo_registry_zookeeper::ZookeeperServiceDiscovery;
use support::{ZkServer, init_tracing};
use zookeeper_client::{Acls, Client, CreateMode};

const WAIT: Duration = Duration::from_secs(15);

fn server() -> &'static ZkServer {
    static SERVER: OnceLock<ZkServer> = OnceLock::new();
    SERVER.get_or_init(ZkServer::start)
}

async fn discovery() -> ZookeeperServiceDiscovery {
    ZookeeperServiceDiscovery::connect(server().registry_url("timeout=10000"))
        .await
        .unwrap()
}

async fn raw() -> Client {
    Client::connect(&server().address()).await.unwrap()
}

fn instance(app: &str, port: u16, revision: &str) -> ServiceInstance {
    let mut i = ServiceInstance::new(app, "127.0.0.1", port);
    i.metadata
        .insert("dubbo.metadata.revision".into(), revision.into());
    i.metadata
        .insert("dubbo.metadata.storage-type".into(), "local".into());
    i
}

#[tokio::test]
async fn the_instance_node_lives_with_the_instance() {
    init_tracing();
    let app = "lifecycle-app";
    // A short session, so that its end (below) drops the node soon.
    let provider =
        ZookeeperServiceDiscovery::connect(server().registry_url("timeout=10000&session=2000"))
            .await
            .unwrap();
    let consumer = discovery().await;
    let zk = raw().await;
    let mut watch = consumer.watch(app).await.unwrap();

    let first = instance(app, 20880, "r1");
    provider.register(first.clone()).await.unwrap();
    let path = format!("/services/{app}/127.0.0.1:20880");
    assert_eq!(provider.instance_path(&first), path);
    let (data, stat) = zk.get_data(&path).await.unwrap();
    assert_ne!(stat.ephemeral_owner, 0, "the instance node is ephemeral");
    assert_eq!(ServiceInstance::from_curator_json(&data).unwrap(), first);
    tokio::time::timeout(WAIT, watch.wait_for(|l| l.as_slice() == [first.clone()]))
        .await
        .unwrap()
        .unwrap();

    // A new revision replaces the node's data; watchers see it.
    let second = instance(app, 20880, "r2");
    provider.update(second.clone()).await.unwrap();
    tokio::time::timeout(
        WAIT,
        watch.wait_for(|l| l.first().and_then(|i| i.revision()) == Some("r2")),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        consumer.instances(app).await.unwrap(),
        std::slice::from_ref(&second)
    );

    // Unregistering removes it at once.
    provider.unregister(&second).await.unwrap();
    assert!(zk.check_stat(&path).await.unwrap().is_none());
    tokio::time::timeout(WAIT, watch.wait_for(|l| l.is_empty()))
        .await
        .unwrap()
        .unwrap();

    // Registered again, then the provider is gone without unregistering: the node
    // goes when ZooKeeper expires its session.
    provider.register(first.clone()).await.unwrap();
    tokio::time::timeout(WAIT, watch.wait_for(|l| l.len() == 1))
        .await
        .unwrap()
        .unwrap();
    drop(provider);
    tokio::time::timeout(WAIT, watch.wait_for(|l| l.is_empty()))
        .await
        .unwrap()
        .unwrap();
    consumer.destroy().await;
}

#[tokio::test]
async fn destroy_removes_the_instance_node() {
    let app = "destroy-app";
    let provider = discovery().await;
    let zk = raw().await;
    provider.register(instance(app, 1, "r")).await.unwrap();
    let path = format!("/services/{app}/127.0.0.1:1");
    assert!(zk.check_stat(&path).await.unwrap().is_some());
    provider.destroy().await;
    assert!(zk.check_stat(&path).await.unwrap().is_none());
}

#[tokio::test]
async fn a_garbage_node_is_skipped_and_the_valid_ones_kept() {
    init_tracing();
    let app = "garbage-app";
    let d = discovery().await;
    let zk = raw().await;
    zk.mkdir(
        &format!("/services/{app}"),
        &CreateMode::Persistent.with_acls(Acls::anyone_all()),
    )
    .await
    .unwrap();
    zk.create(
        &format!("/services/{app}/10.0.0.1:1"),
        b"{not json",
        &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
    )
    .await
    .unwrap();
    let mut watch = d.watch(app).await.unwrap();
    d.register(instance(app, 2, "r")).await.unwrap();
    tokio::time::timeout(WAIT, watch.wait_for(|l| l.len() == 1 && l[0].port == 2))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d.instances(app).await.unwrap().len(), 1);
    d.destroy().await;
}

#[tokio::test]
async fn the_mapping_appends_each_application_once_even_when_racing() {
    let iface = "org.example.Mapped";
    let path = format!("/dubbo/mapping/{iface}");
    let discoveries = [discovery().await, discovery().await, discovery().await];
    let apps = ["app-a", "app-b", "app-c"];
    let maps = discoveries
        .iter()
        .zip(apps)
        .map(|(d, app)| d.map(iface, app));
    for r in futures::future::join_all(maps).await {
        r.unwrap();
    }
    let mut got = discoveries[0].get(iface).await.unwrap();
    got.sort();
    assert_eq!(got, apps);
    let zk = raw().await;
    let (_, before) = zk.get_data(&path).await.unwrap();
    // Mapping an application that is there writes nothing.
    discoveries[1].map(iface, "app-b").await.unwrap();
    let (data, after) = zk.get_data(&path).await.unwrap();
    assert_eq!(before.version, after.version);
    assert_eq!(String::from_utf8(data).unwrap().split(',').count(), 3);
    assert!(
        discoveries[0]
            .get("org.example.Unmapped")
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn app_metadata_is_published_once_per_revision() {
    let d = discovery().await;
    let mut info = MetadataInfo::new("published-app");
    info.add_service(ServiceInfo {
        name: Some("org.example.S".into()),
        protocol: Some("dubbo".into()),
        port: 1,
        path: Some("org.example.S".into()),
        ..ServiceInfo::default()
    });
    d.publish_metadata(&info).await.unwrap();
    d.publish_metadata(&info).await.unwrap();
    let zk = raw().await;
    let path = format!("/dubbo/metadata/published-app/{}", info.revision());
    let (data, stat) = zk.get_data(&path).await.unwrap();
    assert_eq!(stat.version, 0);
    assert_eq!(
        MetadataInfo::from_json(std::str::from_utf8(&data).unwrap()).unwrap(),
        info
    );
}
