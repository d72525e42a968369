//! An instance registered while ZooKeeper is down is written once it is up (its own
//! server: this test stops and starts it).
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use rubbo_metadata::{ServiceDiscovery, ServiceInstance};
use rubbo_registry_zookeeper::ZookeeperServiceDiscovery;
use support::{ZkServer, init_tracing, wait_until};
use zookeeper_client::Client;

#[tokio::test]
async fn an_instance_registered_while_zookeeper_is_down_is_written_when_it_is_up() {
    init_tracing();
    let mut server = ZkServer::start();
    server.stop();
    let discovery =
        ZookeeperServiceDiscovery::connect(server.registry_url("check=false&timeout=500"))
            .await
            .unwrap();
    let instance = ServiceInstance::new("recovering-app", "127.0.0.1", 7);
    assert!(
        discovery.register(instance.clone()).await.is_err(),
        "ZooKeeper is down"
    );

    server.restart();
    let zk = Client::connect(&server.address()).await.unwrap();
    let path = "/services/recovering-app/127.0.0.1:7";
    wait_until("the instance node", Duration::from_secs(20), || async {
        zk.check_stat(path).await.ok().flatten().is_some()
    })
    .await;
    let (data, _) = zk.get_data(path).await.unwrap();
    assert_eq!(ServiceInstance::from_curator_json(&data).unwrap(), instance);
    discovery.destroy().await;
    assert!(zk.check_stat(path).await.unwrap().is_none());
}
