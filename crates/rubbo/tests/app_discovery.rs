//! Application-level registration on the provider side, with an in-memory discovery:
//! the instance appears after the first export, its revision follows the exported
//! services, the mapping names the application, and shutdown removes the instance.
#![allow(missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use rubbo::{RpcError, Rubbo};
use rubbo_metadata::{MemoryServiceDiscovery, MetadataInfo, ServiceDiscovery, ServiceInfo};

#[rubbo::service(interface = "org.rubbo.test.Who", version = "1.0.0")]
pub trait Who {
    /// `String who()`.
    async fn who(&self) -> Result<String, RpcError>;
}

#[rubbo::service(interface = "org.rubbo.test.Other", group = "g")]
pub trait Other {
    /// `String other()`.
    async fn other(&self) -> Result<String, RpcError>;
}

struct Impl;

impl Who for Impl {
    async fn who(&self) -> Result<String, RpcError> {
        Ok("me".into())
    }
}

impl Other for Impl {
    async fn other(&self) -> Result<String, RpcError> {
        Ok("other".into())
    }
}

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn the_instance_follows_the_exported_services_and_leaves_first() {
    let discovery = Arc::new(MemoryServiceDiscovery::new());
    let app = Rubbo::builder()
        .application("ad-app")
        .port(0)
        .register_mode("instance")
        .service_discovery(discovery.clone())
        .build()
        .unwrap();
    let mut instances = discovery.watch("ad-app").await.unwrap();
    assert!(instances.borrow().is_empty());

    let who = app.export(WhoServer::new(Arc::new(Impl))).await.unwrap();
    let first = instances
        .borrow_and_update()
        .first()
        .cloned()
        .expect("registered");
    assert_eq!(first.id(), format!("127.0.0.1:{}", who.port()));
    let mut expected = MetadataInfo::new("ad-app");
    expected.add_service(ServiceInfo::from_url(&who));
    assert_eq!(first.revision(), Some(expected.revision()));
    for key in [
        "dubbo.endpoints",
        "dubbo.metadata-service.url-params",
        "dubbo.metadata.storage-type",
        "meta-v",
        "timestamp",
    ] {
        assert!(
            first.metadata.contains_key(key),
            "{key} in {:?}",
            first.metadata
        );
    }
    assert_eq!(
        rubbo_metadata::parse_url_params(&first)["port"],
        who.port().to_string(),
        "MetadataService shares the service's port"
    );
    assert_eq!(
        rubbo_metadata::ServiceNameMapping::get(&*discovery, "org.rubbo.test.Who")
            .await
            .unwrap(),
        ["ad-app"]
    );

    // A later export changes the revision and updates the same instance.
    let other = app.export(OtherServer::new(Arc::new(Impl))).await.unwrap();
    tokio::time::timeout(WAIT, instances.changed())
        .await
        .unwrap()
        .unwrap();
    let second = instances.borrow_and_update()[0].clone();
    expected.add_service(ServiceInfo::from_url(&other));
    assert_eq!(second.id(), first.id());
    assert_eq!(second.revision(), Some(expected.revision()));
    assert_ne!(second.revision(), first.revision());

    // Unexporting it brings the first revision back; unexporting the last service
    // unregisters the instance.
    assert!(app.unexport(&OtherServer::<Impl>::SERVICE).await);
    assert!(!app.unexport(&OtherServer::<Impl>::SERVICE).await);
    let third = instances.borrow_and_update()[0].clone();
    assert_eq!(third.revision(), first.revision());
    assert!(app.unexport(&WhoServer::<Impl>::SERVICE).await);
    assert!(instances.borrow_and_update().is_empty());

    // Exported again, it registers again; shutdown removes it.
    app.export(WhoServer::new(Arc::new(Impl))).await.unwrap();
    assert_eq!(instances.borrow_and_update().len(), 1);
    app.shutdown().await;
    assert!(
        instances.borrow().is_empty(),
        "the instance is gone at shutdown"
    );
}

#[tokio::test]
async fn an_unknown_register_mode_is_refused() {
    let err = Rubbo::builder()
        .application("x")
        .register_mode("everything")
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("register-mode"), "{err}");
}

#[tokio::test]
async fn interface_mode_registers_no_instance() {
    let discovery = Arc::new(MemoryServiceDiscovery::new());
    let app = Rubbo::builder()
        .application("if-app")
        .port(0)
        .register_mode("interface")
        .service_discovery(discovery.clone())
        .build()
        .unwrap();
    app.export(WhoServer::new(Arc::new(Impl))).await.unwrap();
    assert!(discovery.instances("if-app").await.unwrap().is_empty());
    app.shutdown().await;
}
