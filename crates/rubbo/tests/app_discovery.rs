//! Application-level registration on the provider side, with an in-memory discovery:
//! the instance appears after the first export, its revision follows the exported
//! services, the mapping names the application, and shutdown removes the instance.
#![allow(missing_docs)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rubbo::{RpcError, Rubbo};
use rubbo_metadata::{
    MemoryServiceDiscovery, MetadataInfo, ServiceDiscovery, ServiceInfo, ServiceInstance,
};

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

/// Calls `who()` until it answers (bounded by [`WAIT`]).
async fn who_answers(client: &WhoClient) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match client.who().await {
            Ok(s) => {
                assert_eq!(s, "me");
                return;
            }
            Err(e) => assert!(
                tokio::time::Instant::now() < deadline,
                "never answered: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn provider(discovery: &Arc<MemoryServiceDiscovery>, app: &str) -> rubbo::RubboBuilder {
    Rubbo::builder()
        .application(app)
        .port(0)
        .register_mode("instance")
        .service_discovery(discovery.clone())
}

#[tokio::test]
async fn force_application_finds_the_provider_by_its_instance_and_metadata_service() {
    let discovery = Arc::new(MemoryServiceDiscovery::new());
    let p = provider(&discovery, "fa-provider").build().unwrap();
    p.export(WhoServer::new(Arc::new(Impl))).await.unwrap();

    let c = Rubbo::builder()
        .application("fa-consumer")
        .migration("FORCE_APPLICATION")
        .service_discovery(discovery.clone())
        .build()
        .unwrap();
    // check=true (the default): ready once the first metadata is fetched.
    let who = WhoClient::new(c.refer(&WhoClient::SERVICE).await.unwrap());
    assert_eq!(who.who().await.unwrap(), "me");

    // `provided-by` replaces the mapping: naming another application finds nothing.
    let c2 = Rubbo::builder()
        .application("fa-consumer-2")
        .migration("FORCE_APPLICATION")
        .param("provided-by", "someone-else")
        .service_discovery(discovery.clone())
        .build()
        .unwrap();
    let err = c2.refer(&WhoClient::SERVICE).await.unwrap_err();
    assert!(err.to_string().contains("no provider"), "{err}");
    p.shutdown().await;
    c.shutdown().await;
    c2.shutdown().await;
}

#[tokio::test]
async fn a_consumer_whose_first_metadata_fetch_fails_recovers_by_itself() {
    let discovery = Arc::new(MemoryServiceDiscovery::new());
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = asked.clone();
    // The provider's MetadataService fails its first getMetadataInfo (a restart).
    let failing = rubbo::filter_fn(move |inv: rubbo::Invocation, next: rubbo::BoxInvoker| {
        if inv.method() == "getMetadataInfo" && seen.fetch_add(1, Ordering::SeqCst) == 0 {
            return Box::pin(async {
                Err(RpcError::new(
                    rubbo::ErrorKind::Network,
                    "injected: MetadataService not ready",
                ))
            }) as rubbo::InvokeFuture;
        }
        next.invoke(inv)
    })
    .with_activate(rubbo::filter::Activate::provider(0));
    let p = provider(&discovery, "retry-provider")
        .filter("fail-first-metadata", failing)
        .build()
        .unwrap();
    p.export(WhoServer::new(Arc::new(Impl))).await.unwrap();

    let c = Rubbo::builder()
        .application("retry-consumer")
        .migration("FORCE_APPLICATION")
        .param("check", "false")
        .service_discovery(discovery.clone())
        .build()
        .unwrap();
    let who = WhoClient::new(c.refer(&WhoClient::SERVICE).await.unwrap());
    assert!(who.who().await.is_err(), "pending after the failed fetch");
    // Nothing changes in the registry: the retry alone brings the provider in.
    who_answers(&who).await;
    assert!(asked.load(Ordering::SeqCst) >= 2);
    p.shutdown().await;
    c.shutdown().await;
}

#[tokio::test]
async fn application_first_uses_the_instances_when_no_interface_level_provider_is_listed() {
    let discovery = Arc::new(MemoryServiceDiscovery::new());
    let p = provider(&discovery, "af-provider").build().unwrap();
    p.export(WhoServer::new(Arc::new(Impl))).await.unwrap();
    let c = Rubbo::builder()
        .application("af-consumer")
        .registry("memory://local")
        .migration("APPLICATION_FIRST")
        .service_discovery(discovery.clone())
        .build()
        .unwrap();
    let who = WhoClient::new(c.refer(&WhoClient::SERVICE).await.unwrap());
    assert_eq!(who.who().await.unwrap(), "me");
    p.shutdown().await;
    c.shutdown().await;
}

#[tokio::test]
async fn an_unknown_migration_step_is_refused() {
    let err = Rubbo::builder()
        .application("x")
        .migration("SOMETIMES")
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("FORCE_APPLICATION"), "{err}");
}

/// A provider on Triple only, found by its instance (register-mode=instance).
fn tri_provider(discovery: &Arc<MemoryServiceDiscovery>, app: &str) -> rubbo::RubboBuilder {
    Rubbo::builder()
        .application(app)
        .protocol("tri", 0)
        .register_mode("instance")
        .service_discovery(discovery.clone())
}

/// A provider filter counting the calls of `method` (the MetadataService rpcs).
fn counting(method: &'static str, calls: Arc<AtomicUsize>) -> impl rubbo::Filter {
    rubbo::filter_fn(move |inv: rubbo::Invocation, next: rubbo::BoxInvoker| {
        if inv.method() == method {
            calls.fetch_add(1, Ordering::SeqCst);
        }
        next.invoke(inv)
    })
    .with_activate(rubbo::filter::Activate::provider(0))
}

/// The MetadataInfo fetches a provider answered: V1's `getMetadataInfo` and V2's
/// `GetMetadataInfo`.
#[derive(Default)]
struct Fetches {
    v1: Arc<AtomicUsize>,
    v2: Arc<AtomicUsize>,
}

impl Fetches {
    /// `provider`, counting its MetadataService fetches here.
    fn counted(&self, provider: rubbo::RubboBuilder) -> rubbo::RubboBuilder {
        provider
            .filter("count-v1", counting("getMetadataInfo", self.v1.clone()))
            .filter("count-v2", counting("GetMetadataInfo", self.v2.clone()))
    }

    fn v1(&self) -> usize {
        self.v1.load(Ordering::SeqCst)
    }

    fn v2(&self) -> usize {
        self.v2.load(Ordering::SeqCst)
    }
}

/// The first instance `app` registered, and the MetadataService url-params it
/// advertises.
async fn advertised(
    discovery: &MemoryServiceDiscovery,
    app: &str,
) -> (ServiceInstance, BTreeMap<String, String>) {
    let instance = discovery.instances(app).await.expect("instances listed")[0].clone();
    let params = rubbo_metadata::parse_url_params(&instance);
    (instance, params)
}

#[tokio::test]
async fn a_triple_provider_advertises_metadata_service_v2_and_a_consumer_fetches_by_it() {
    let discovery = Arc::new(MemoryServiceDiscovery::new());
    let fetches = Fetches::default();
    let p = fetches
        .counted(tri_provider(&discovery, "v2-provider"))
        .build()
        .unwrap();
    let who = p.export(WhoServer::new(Arc::new(Impl))).await.unwrap();
    assert_eq!(who.protocol(), Some("tri"));

    // What Java 3.3 writes with Triple configured: meta-v 2.0.0 and the url-params of
    // the V2 export (Triple, the services' port, version 2.0.0).
    let (instance, params) = advertised(&discovery, "v2-provider").await;
    assert_eq!(instance.metadata["meta-v"], "2.0.0");
    assert_eq!(params["protocol"], "tri", "{params:?}");
    assert_eq!(params["port"], who.port().to_string());
    assert_eq!(params["version"], "2.0.0");

    let c = Rubbo::builder()
        .application("v2-consumer")
        .migration("FORCE_APPLICATION")
        .service_discovery(discovery.clone())
        .build()
        .unwrap();
    let client = WhoClient::new(c.refer(&WhoClient::SERVICE).await.unwrap());
    assert_eq!(client.who().await.unwrap(), "me");
    assert_eq!(fetches.v2(), 1, "one V2 fetch");
    assert_eq!(fetches.v1(), 0, "no V1 fetch");
    p.shutdown().await;
    c.shutdown().await;
}

#[tokio::test]
async fn a_dubbo_provider_advertises_metadata_service_v1() {
    let discovery = Arc::new(MemoryServiceDiscovery::new());
    let p = provider(&discovery, "v1-provider").build().unwrap();
    p.export(WhoServer::new(Arc::new(Impl))).await.unwrap();
    let (instance, params) = advertised(&discovery, "v1-provider").await;
    assert_eq!(instance.metadata["meta-v"], "1.0.0");
    assert_eq!(params["protocol"], "dubbo", "{params:?}");
    assert_eq!(params["version"], "1.0.0");
    p.shutdown().await;
}

#[tokio::test]
async fn a_consumer_whose_first_v2_fetch_fails_recovers_by_itself() {
    let discovery = Arc::new(MemoryServiceDiscovery::new());
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = asked.clone();
    // The provider's MetadataService V2 fails its first GetMetadataInfo (a restart).
    let failing = rubbo::filter_fn(move |inv: rubbo::Invocation, next: rubbo::BoxInvoker| {
        if inv.method() == "GetMetadataInfo" && seen.fetch_add(1, Ordering::SeqCst) == 0 {
            return Box::pin(async {
                Err(RpcError::new(
                    rubbo::ErrorKind::Network,
                    "injected: MetadataService V2 not ready",
                ))
            }) as rubbo::InvokeFuture;
        }
        next.invoke(inv)
    })
    .with_activate(rubbo::filter::Activate::provider(0));
    let p = tri_provider(&discovery, "v2-retry-provider")
        .filter("fail-first-metadata", failing)
        .build()
        .unwrap();
    p.export(WhoServer::new(Arc::new(Impl))).await.unwrap();

    let c = Rubbo::builder()
        .application("v2-retry-consumer")
        .migration("FORCE_APPLICATION")
        .param("check", "false")
        .service_discovery(discovery.clone())
        .build()
        .unwrap();
    let who = WhoClient::new(c.refer(&WhoClient::SERVICE).await.unwrap());
    assert!(who.who().await.is_err(), "pending after the failed fetch");
    who_answers(&who).await;
    assert!(asked.load(Ordering::SeqCst) >= 2);
    p.shutdown().await;
    c.shutdown().await;
}

/// MetadataService V1 as a Java consumer sees it, for the application `msp-app` (its
/// group), to check on which protocol it is served.
#[rubbo::service(
    interface = "org.apache.dubbo.metadata.MetadataService",
    version = "1.0.0",
    group = "msp-app"
)]
pub trait MetaV1 {
    /// `String serviceName()`.
    async fn service_name(&self) -> Result<Option<String>, RpcError>;
}

/// `serviceName()` of MetadataService V1 at `address` (`tri://127.0.0.1:port`).
async fn v1_service_name(c: &Rubbo, address: &str) -> Result<Option<String>, RpcError> {
    MetaV1Client::new(c.refer_url(&MetaV1Client::SERVICE, address).await?)
        .service_name()
        .await
}

/// A FORCE_APPLICATION consumer calls `who()` through the provider's instance.
async fn discover_and_call(discovery: &Arc<MemoryServiceDiscovery>, app: &str) -> Rubbo {
    let c = Rubbo::builder()
        .application(app)
        .migration("FORCE_APPLICATION")
        .service_discovery(discovery.clone())
        .build()
        .expect("consumer built");
    let who = WhoClient::new(c.refer(&WhoClient::SERVICE).await.expect("referred"));
    assert_eq!(who.who().await.expect("who() answered"), "me");
    c
}

fn load(pairs: &[(&str, &str)]) -> rubbo::config::Config {
    let mut l = rubbo::config::Config::loader();
    for (k, v) in pairs {
        l = l.set(*k, *v);
    }
    l.load().expect("configuration loaded")
}

/// A dubbo provider of `who()` for the application `msp-app` (`register-mode=instance`),
/// configured with `setting` too, its MetadataService fetches counted.
async fn msp_dubbo_provider(
    fetches: &Fetches,
    discovery: &Arc<MemoryServiceDiscovery>,
    setting: (&str, &str),
) -> (Rubbo, rubbo::Url) {
    let config = load(&[
        ("dubbo.application.name", "msp-app"),
        ("dubbo.application.register-mode", "instance"),
        setting,
    ]);
    let p = fetches
        .counted(
            Rubbo::builder()
                .config(&config)
                .port(0)
                .service_discovery(discovery.clone()),
        )
        .build()
        .expect("provider built");
    let who = p
        .export(WhoServer::new(Arc::new(Impl)))
        .await
        .expect("who() exported");
    assert_eq!(who.protocol(), Some("dubbo"));
    (p, who)
}

#[tokio::test]
async fn metadata_service_protocol_tri_exports_v1_and_v2_on_triple_for_a_dubbo_provider() {
    let discovery = Arc::new(MemoryServiceDiscovery::new());
    let fetches = Fetches::default();
    let (p, who) = msp_dubbo_provider(
        &fetches,
        &discovery,
        ("dubbo.application.metadata-service-protocol", "tri"),
    )
    .await;

    // As Java's tripleConfigured: the MetadataService protocol `tri` means V2 is
    // exported and advertised, though no service uses Triple.
    let (instance, params) = advertised(&discovery, "msp-app").await;
    assert_eq!(instance.metadata["meta-v"], "2.0.0");
    assert_eq!(params["protocol"], "tri", "{params:?}");
    assert_eq!(params["version"], "2.0.0");
    let tri_port = params["port"].clone();
    assert_ne!(tri_port, who.port().to_string(), "its own Triple server");
    assert!(
        !instance.metadata["dubbo.endpoints"].contains("tri"),
        "{:?}",
        instance.metadata
    );

    let c = discover_and_call(&discovery, "msp-consumer").await;
    assert_eq!(fetches.v2(), 1, "V2 fetch");
    assert_eq!(fetches.v1(), 0, "no V1 fetch");
    // V1 is served on Triple too (same server), not on dubbo.
    let tri = format!("tri://127.0.0.1:{tri_port}");
    assert_eq!(
        v1_service_name(&c, &tri).await.unwrap().as_deref(),
        Some("msp-app")
    );
    let dubbo = format!("dubbo://127.0.0.1:{}", who.port());
    assert!(v1_service_name(&c, &dubbo).await.is_err(), "no V1 on dubbo");
    p.shutdown().await;
    c.shutdown().await;
}

/// A port nothing listens on now (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

#[tokio::test]
async fn metadata_service_port_gives_metadata_service_a_server_of_its_own() {
    let discovery = Arc::new(MemoryServiceDiscovery::new());
    let fetches = Fetches::default();
    let port = free_port();
    // Java's application-parameter spelling of the key.
    let (p, who) = msp_dubbo_provider(
        &fetches,
        &discovery,
        (
            "dubbo.application.parameters.metadata-service-port",
            &port.to_string(),
        ),
    )
    .await;
    assert_ne!(who.port(), port);

    // The instance advertises MetadataService V1 on the port asked for, not on the
    // services' server, and a consumer fetches the metadata there.
    let (instance, params) = advertised(&discovery, "msp-app").await;
    assert_eq!(instance.metadata["meta-v"], "1.0.0");
    assert_eq!(params["protocol"], "dubbo", "{params:?}");
    assert_eq!(params["port"], port.to_string(), "{params:?}");
    let c = discover_and_call(&discovery, "msport-consumer").await;
    assert_eq!(fetches.v1(), 1, "V1 fetch");
    let at = format!("dubbo://127.0.0.1:{port}");
    assert_eq!(
        v1_service_name(&c, &at).await.unwrap().as_deref(),
        Some("msp-app")
    );
    let services = format!("dubbo://127.0.0.1:{}", who.port());
    assert!(
        v1_service_name(&c, &services).await.is_err(),
        "no MetadataService on the services' server"
    );
    p.shutdown().await;
    c.shutdown().await;
}

#[tokio::test]
async fn metadata_service_port_minus_one_is_a_free_port_for_v1_and_v2_on_triple() {
    let discovery = Arc::new(MemoryServiceDiscovery::new());
    let fetches = Fetches::default();
    let config = load(&[("dubbo.application.metadata-service-port", "-1")]);
    // The services on a port of their own: a free port (-1, or 0) shares the server
    // of any other export of the protocol that asked for a free port.
    let services = free_port();
    let p = fetches
        .counted(
            Rubbo::builder()
                .config(&config)
                .application("msp-app")
                .protocol("tri", services)
                .register_mode("instance")
                .service_discovery(discovery.clone()),
        )
        .build()
        .unwrap();
    let who = p.export(WhoServer::new(Arc::new(Impl))).await.unwrap();
    assert_eq!((who.protocol(), who.port()), (Some("tri"), services));

    // V2 (advertised) and V1 both on one Triple server of their own.
    let (instance, params) = advertised(&discovery, "msp-app").await;
    assert_eq!(instance.metadata["meta-v"], "2.0.0");
    assert_eq!(params["protocol"], "tri", "{params:?}");
    let port = params["port"].clone();
    assert_ne!(port, who.port().to_string(), "not the services' server");
    let c = discover_and_call(&discovery, "msport-tri-consumer").await;
    assert_eq!(fetches.v2(), 1, "V2 fetch");
    let at = format!("tri://127.0.0.1:{port}");
    assert_eq!(
        v1_service_name(&c, &at).await.unwrap().as_deref(),
        Some("msp-app")
    );
    p.shutdown().await;
    c.shutdown().await;
}

#[tokio::test]
async fn metadata_service_protocol_dubbo_exports_only_v1_for_a_triple_provider() {
    let discovery = Arc::new(MemoryServiceDiscovery::new());
    let fetches = Fetches::default();
    let p = fetches
        .counted(tri_provider(&discovery, "msp-app").metadata_service_protocol("dubbo"))
        .build()
        .unwrap();
    let who = p.export(WhoServer::new(Arc::new(Impl))).await.unwrap();
    assert_eq!(who.protocol(), Some("tri"));

    // Not `tri`: Java exports no V2, though the services use Triple.
    let (instance, params) = advertised(&discovery, "msp-app").await;
    assert_eq!(instance.metadata["meta-v"], "1.0.0");
    assert_eq!(params["protocol"], "dubbo", "{params:?}");
    assert_eq!(params["version"], "1.0.0");
    let dubbo_port = params["port"].clone();
    assert_ne!(dubbo_port, who.port().to_string(), "its own dubbo server");

    let c = discover_and_call(&discovery, "msp-consumer").await;
    assert_eq!(fetches.v1(), 1, "V1 fetch");
    assert_eq!(fetches.v2(), 0, "no V2 fetch");
    let dubbo = format!("dubbo://127.0.0.1:{dubbo_port}");
    assert_eq!(
        v1_service_name(&c, &dubbo).await.unwrap().as_deref(),
        Some("msp-app")
    );
    p.shutdown().await;
    c.shutdown().await;
}

#[tokio::test]
async fn only_use_metadata_v2_serves_v2_alone_on_a_triple_provider() {
    let discovery = Arc::new(MemoryServiceDiscovery::new());
    let fetches = Fetches::default();
    // Java's camelCase spelling of the key.
    let config = load(&[("dubbo.application.onlyUseMetadataV2", "true")]);
    let p = fetches
        .counted(tri_provider(&discovery, "msp-app").config(&config))
        .build()
        .unwrap();
    let who = p.export(WhoServer::new(Arc::new(Impl))).await.unwrap();

    let (instance, params) = advertised(&discovery, "msp-app").await;
    assert_eq!(instance.metadata["meta-v"], "2.0.0");
    assert_eq!(params["protocol"], "tri", "{params:?}");
    assert_eq!(params["port"], who.port().to_string());

    let c = discover_and_call(&discovery, "msp-consumer").await;
    assert_eq!(fetches.v2(), 1, "V2 fetch");
    assert_eq!(fetches.v1(), 0, "no V1 fetch");
    let tri = format!("tri://127.0.0.1:{}", who.port());
    assert!(v1_service_name(&c, &tri).await.is_err(), "no V1 exported");
    p.shutdown().await;
    c.shutdown().await;
}

#[tokio::test]
async fn only_use_metadata_v2_without_triple_keeps_v1() {
    let discovery = Arc::new(MemoryServiceDiscovery::new());
    let fetches = Fetches::default();
    let p = fetches
        .counted(provider(&discovery, "msp-app").only_use_metadata_v2(true))
        .build()
        .unwrap();
    let who = p.export(WhoServer::new(Arc::new(Impl))).await.unwrap();
    let (instance, params) = advertised(&discovery, "msp-app").await;
    assert_eq!(instance.metadata["meta-v"], "1.0.0");
    assert_eq!(params["protocol"], "dubbo", "{params:?}");
    assert_eq!(
        params["port"],
        who.port().to_string(),
        "the services' server"
    );
    let c = discover_and_call(&discovery, "msp-consumer").await;
    assert_eq!(fetches.v1(), 1, "V1 fetch");
    p.shutdown().await;
    c.shutdown().await;
}

#[tokio::test]
async fn an_unknown_metadata_service_protocol_is_refused() {
    let err = Rubbo::builder()
        .application("x")
        .metadata_service_protocol("rest")
        .build()
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("dubbo.application.metadata-service-protocol=rest"),
        "{msg}"
    );
    assert!(msg.contains("tri"), "names the known protocols: {msg}");

    let bad = rubbo::config::Config::loader()
        .set("dubbo.application.only-use-metadata-v2", "maybe")
        .load();
    assert!(bad.is_err(), "a non-boolean is a configuration error");
}
