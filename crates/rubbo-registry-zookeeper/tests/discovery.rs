//! Application-level discovery against a real ZooKeeper: the instance node's
//! lifecycle, tolerant reads, and the mapping's compare-and-set.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::{Arc, OnceLock};
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
    tokio::time::timeout(WAIT, watch.wait_for(|l| l.len() == 1 && *l[0] == first))
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

/// Waits until `what` holds for the watch's list, and returns how many instance nodes
/// `d` read from `before` on.
async fn reads_until(
    d: &ZookeeperServiceDiscovery,
    watch: &mut rubbo_metadata::InstancesWatch,
    before: u64,
    what: impl Fn(&[Arc<ServiceInstance>]) -> bool,
) -> u64 {
    tokio::time::timeout(WAIT, watch.wait_for(|l| what(l)))
        .await
        .unwrap()
        .unwrap();
    d.instance_reads() - before
}

#[tokio::test]
async fn a_change_to_one_of_many_instances_reads_one_node() {
    init_tracing();
    let app = "incremental-app";
    const N: u16 = 60;
    let consumer = discovery().await;
    let zk = raw().await;
    let dir = format!("/services/{app}");
    zk.mkdir(&dir, &CreateMode::Persistent.with_acls(Acls::anyone_all()))
        .await
        .unwrap();
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    for port in 1..=N {
        let i = instance(app, port, "r1");
        zk.create(
            &format!("{dir}/{}", i.id()),
            i.to_curator_json().as_bytes(),
            &ephemeral,
        )
        .await
        .unwrap();
    }
    let mut watch = consumer.watch(app).await.unwrap();
    let first = reads_until(&consumer, &mut watch, 0, |l| l.len() == usize::from(N)).await;
    assert_eq!(first, u64::from(N), "the first list reads every node once");

    // One instance's new revision: one read, and only that instance changed.
    let before = consumer.instance_reads();
    let changed = instance(app, 7, "r2");
    zk.set_data(
        &format!("{dir}/{}", changed.id()),
        changed.to_curator_json().as_bytes(),
        None,
    )
    .await
    .unwrap();
    let reads = reads_until(&consumer, &mut watch, before, |l| {
        l.iter().any(|i| i.port == 7 && i.revision() == Some("r2"))
    })
    .await;
    assert_eq!(reads, 1);
    let list = watch.borrow().clone();
    assert_eq!(list.len(), usize::from(N));
    assert_eq!(
        list.iter().filter(|i| i.revision() == Some("r1")).count(),
        usize::from(N) - 1
    );

    // One instance added: one read.
    let before = consumer.instance_reads();
    let added = instance(app, N + 1, "r1");
    zk.create(
        &format!("{dir}/{}", added.id()),
        added.to_curator_json().as_bytes(),
        &ephemeral,
    )
    .await
    .unwrap();
    let reads = reads_until(&consumer, &mut watch, before, |l| {
        l.len() == usize::from(N) + 1 && l.iter().any(|i| i.port == N + 1)
    })
    .await;
    assert_eq!(reads, 1);

    // Two removed: at most one read each (the one whose data watch fires first
    // finds the node gone), never a re-read of the others.
    let before = consumer.instance_reads();
    for port in [3, N + 1] {
        zk.delete(&format!("{dir}/127.0.0.1:{port}"), None)
            .await
            .unwrap();
    }
    let reads = reads_until(&consumer, &mut watch, before, |l| {
        l.len() == usize::from(N) - 1 && !l.iter().any(|i| i.port == 3 || i.port == N + 1)
    })
    .await;
    assert!(reads <= 2, "{reads} reads for two removals");

    // Removed and written again under the same name with new data: seen.
    let again = instance(app, 5, "r3");
    zk.delete(&format!("{dir}/{}", again.id()), None)
        .await
        .unwrap();
    zk.create(
        &format!("{dir}/{}", again.id()),
        again.to_curator_json().as_bytes(),
        &ephemeral,
    )
    .await
    .unwrap();
    let before = consumer.instance_reads();
    reads_until(&consumer, &mut watch, before, |l| {
        l.len() == usize::from(N) - 1 && l.iter().any(|i| i.port == 5 && i.revision() == Some("r3"))
    })
    .await;
    // The list is still the nodes' content.
    let mut expected = consumer.instances(app).await.unwrap();
    expected.sort_by_key(ServiceInstance::id);
    let listed: Vec<ServiceInstance> = watch.borrow().iter().map(|i| (**i).clone()).collect();
    assert_eq!(listed, expected);
    consumer.destroy().await;
}

#[tokio::test]
async fn watches_of_one_application_share_one_follower() {
    init_tracing();
    let app = "shared-watch-app";
    let provider = discovery().await;
    let consumer = discovery().await;
    provider.register(instance(app, 1, "r1")).await.unwrap();
    let mut a = consumer.watch(app).await.unwrap();
    let mut b = consumer.watch(app).await.unwrap();
    reads_until(&consumer, &mut a, 0, |l| l.len() == 1).await;
    reads_until(&consumer, &mut b, 0, |l| l.len() == 1).await;
    assert_eq!(consumer.instance_reads(), 1, "one read for both watches");

    // A change reaches both for one read.
    provider.register(instance(app, 1, "r2")).await.unwrap();
    let r2 = |l: &[Arc<ServiceInstance>]| l.first().and_then(|i| i.revision()) == Some("r2");
    assert_eq!(reads_until(&consumer, &mut a, 1, r2).await, 1);
    assert_eq!(reads_until(&consumer, &mut b, 1, r2).await, 1);

    // One watch dropped: the other is still served.
    drop(a);
    provider.register(instance(app, 2, "r1")).await.unwrap();
    reads_until(&consumer, &mut b, 0, |l| l.len() == 2).await;

    // Both dropped, then watched again: a new follower reads the nodes again.
    drop(b);
    let mut c = consumer.watch(app).await.unwrap();
    let before = consumer.instance_reads();
    provider.register(instance(app, 3, "r1")).await.unwrap();
    reads_until(&consumer, &mut c, before, |l| l.len() == 3).await;
    provider.destroy().await;
    reads_until(&consumer, &mut c, before, |l| l.is_empty()).await;
    consumer.destroy().await;
}

#[tokio::test]
async fn a_watch_holds_the_first_list_when_returned() {
    let app = "first-list-app";
    let provider = discovery().await;
    let consumer = discovery().await;
    provider.register(instance(app, 1, "r1")).await.unwrap();
    provider.register(instance(app, 2, "r1")).await.unwrap();
    let first = consumer.watch(app).await.unwrap();
    assert_eq!(first.borrow().len(), 2);
    // A second watch of the same application too, with no read of its own.
    let reads = consumer.instance_reads();
    let second = consumer.watch(app).await.unwrap();
    assert_eq!(second.borrow().len(), 2);
    assert_eq!(consumer.instance_reads(), reads);
    provider.destroy().await;
    consumer.destroy().await;
}

/// The total watches a server holds (`wchs`).
fn total_watches(server: &ZkServer) -> Option<usize> {
    let out = server.four_letter("wchs")?;
    let at = out.find("Total watches:")? + "Total watches:".len();
    out[at..].trim().parse().ok()
}

#[tokio::test]
async fn instances_are_followed_without_a_watch_per_instance_node() {
    init_tracing();
    // A server of its own: the other tests' watches would count.
    let server = ZkServer::start();
    let mode = std::env::var("ZK_WATCH").unwrap_or_default();
    let connect = || async {
        ZookeeperServiceDiscovery::connect(server.registry_url("timeout=10000"))
            .await
            .unwrap()
    };
    let (provider, consumer) = (connect().await, connect().await);
    let app = "watch-count-app";
    const N: u16 = 40;
    for port in 1..=N {
        provider.register(instance(app, port, "r1")).await.unwrap();
    }
    let mut watch = consumer.watch(app).await.unwrap();
    reads_until(&consumer, &mut watch, 0, |l| l.len() == usize::from(N)).await;
    let watches = total_watches(&server).expect("wchs");
    if mode == "oneshot" {
        assert!(
            watches >= usize::from(N),
            "{watches} watches with one-shot watches"
        );
    } else {
        // One persistent watch for the application, not one per instance node.
        assert!(watches < 5, "{watches} watches for {N} instance nodes");
    }
    // Still followed: a change, a join and a leave, each one read at most.
    let before = consumer.instance_reads();
    provider.register(instance(app, 7, "r2")).await.unwrap();
    let reads = reads_until(&consumer, &mut watch, before, |l| {
        l.iter().any(|i| i.port == 7 && i.revision() == Some("r2"))
    })
    .await;
    assert_eq!(reads, 1);
    let before = consumer.instance_reads();
    provider.register(instance(app, N + 1, "r1")).await.unwrap();
    let reads = reads_until(&consumer, &mut watch, before, |l| {
        l.len() == usize::from(N) + 1
    })
    .await;
    assert_eq!(reads, 1);
    let before = consumer.instance_reads();
    provider
        .unregister(&instance(app, N + 1, "r1"))
        .await
        .unwrap();
    let reads = reads_until(&consumer, &mut watch, before, |l| l.len() == usize::from(N)).await;
    assert!(reads <= 1, "{reads} reads for a leave");
    provider.destroy().await;
    reads_until(&consumer, &mut watch, 0, |l| l.is_empty()).await;
    consumer.destroy().await;
}

#[tokio::test]
async fn an_instance_is_written_again_under_a_parent_deleted_since() {
    init_tracing();
    let app = "deleted-parent-app";
    let d = discovery().await;
    let zk = raw().await;
    d.register(instance(app, 1, "r1")).await.unwrap();
    d.unregister(&instance(app, 1, "r1")).await.unwrap();
    // The writer made `/services/{app}` once; an operator removes it.
    zk.delete(&format!("/services/{app}"), None).await.unwrap();
    d.register(instance(app, 2, "r1")).await.unwrap();
    assert!(
        zk.check_stat(&format!("/services/{app}/127.0.0.1:2"))
            .await
            .unwrap()
            .is_some()
    );
    d.destroy().await;
}
