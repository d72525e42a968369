//! Override rules for providers from a real ZooKeeper config center, written under
//! Java's keys (`/dubbo/config/dubbo/{key}`): the provider re-shapes the URL it
//! registered and registers it again (Java's `RegistryProtocol.reExport`), so what
//! every consumer sees changes; withdrawing the rules registers the exported URL again.
#![allow(clippy::unwrap_used)]

mod zk;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use rubbo::{RpcError, Rubbo, Url};
use rubbo_registry::{DynamicConfiguration, Registry, subscribe_url};
use rubbo_registry_zookeeper::{ZookeeperDynamicConfiguration, ZookeeperRegistry};
use zk::{ZkServer, wait_until};

const WAIT: Duration = Duration::from_secs(20);
const IFACE: &str = "org.rubbo.test.ProviderGov";
const RULE_KEY: &str = "org.rubbo.test.ProviderGov:1.0.0:";

/// A provider that names itself.
#[rubbo::service(interface = "org.rubbo.test.ProviderGov", version = "1.0.0")]
pub trait ProviderGov {
    /// `String id()`.
    async fn id(&self) -> Result<String, RpcError>;
}

struct Node(String);

impl ProviderGov for Node {
    async fn id(&self) -> Result<String, RpcError> {
        Ok(self.0.clone())
    }
}

/// A provider of application `pgov-provider`; returns it and its port.
async fn provider(registry: &str, name: &str) -> (Rubbo, u16) {
    let p = Rubbo::builder()
        .application("pgov-provider")
        .registry(registry)
        .port(0)
        .build()
        .unwrap();
    let url = p
        .export(ProviderGovServer::new(Arc::new(Node(name.into()))))
        .await
        .unwrap();
    (p, url.port())
}

async fn admin(server: &ZkServer) -> ZookeeperDynamicConfiguration {
    ZookeeperDynamicConfiguration::connect(server.url().parse().unwrap())
        .await
        .unwrap()
}

async fn publish(admin: &ZookeeperDynamicConfiguration, key: &str, content: &str) {
    assert_eq!(
        admin.path(key, "dubbo"),
        format!("/dubbo/config/dubbo/{key}")
    );
    admin.publish_config(key, "dubbo", content).await.unwrap();
}

/// The provider URLs registered now, by port.
async fn registered(registry: &ZookeeperRegistry) -> HashMap<u16, Vec<Url>> {
    let consumer = Url::parse(&format!(
        "consumer://127.0.0.1/{IFACE}?interface={IFACE}&version=1.0.0&side=consumer"
    ))
    .unwrap();
    let mut by_port: HashMap<u16, Vec<Url>> = HashMap::new();
    for u in registry.lookup(subscribe_url(&consumer)).await.unwrap() {
        if u.protocol() == Some("dubbo") {
            by_port.entry(u.port()).or_default().push(u);
        }
    }
    by_port
}

/// The single URL registered for `port`, if there is exactly one.
async fn registered_one(registry: &ZookeeperRegistry, port: u16) -> Option<Url> {
    let mut all = registered(registry).await;
    match all.remove(&port) {
        Some(mut v) if v.len() == 1 => v.pop(),
        _ => None,
    }
}

fn provider_rule(scope: &str, key: &str, port: u16, params: &str) -> String {
    format!(
        "configVersion: v3.0\nscope: {scope}\nkey: {key}\nenabled: true\nconfigs:\n  - side: provider\n    addresses: [\"127.0.0.1:{port}\"]\n    parameters: {{{params}}}\n"
    )
}

#[tokio::test]
async fn the_registered_url_follows_provider_rules_and_changes_back() {
    let server = ZkServer::start();
    let reg = server.url();
    let (_p, port) = provider(&reg, "p0").await;
    let registry = ZookeeperRegistry::connect(reg.parse().unwrap())
        .await
        .unwrap();
    let admin = admin(&server).await;
    let original = registered_one(&registry, port).await.unwrap();
    assert_eq!(original.get_param("weight"), None);

    // A consumer-side rule under the same key leaves the registration alone; the
    // provider-side application rule published after it re-shapes it.
    let service_key = format!("{RULE_KEY}.configurators");
    publish(
        &admin,
        &service_key,
        "configVersion: v3.0\nscope: service\nkey: org.rubbo.test.ProviderGov:1.0.0\nconfigs:\n  - side: consumer\n    parameters: {weight: 999}\n",
    )
    .await;
    let app_key = "pgov-provider.configurators";
    publish(
        &admin,
        app_key,
        &provider_rule(
            "application",
            "pgov-provider",
            port,
            "weight: 50, timeout: 4321",
        ),
    )
    .await;
    wait_until("the application rule is registered", WAIT, || async {
        registered_one(&registry, port)
            .await
            .is_some_and(|u| u.get_param("weight") == Some("50"))
    })
    .await;
    let u = registered_one(&registry, port).await.unwrap();
    assert_eq!(u.get_param("timeout"), Some("4321"));
    assert_eq!(u.get_param("category"), None, "no rule condition key leaks");

    // Service scope beats application scope.
    publish(
        &admin,
        &service_key,
        &provider_rule(
            "service",
            "org.rubbo.test.ProviderGov:1.0.0",
            port,
            "weight: 200",
        ),
    )
    .await;
    wait_until("the service rule wins", WAIT, || async {
        registered_one(&registry, port)
            .await
            .is_some_and(|u| u.get_param("weight") == Some("200"))
    })
    .await;
    let u = registered_one(&registry, port).await.unwrap();
    assert_eq!(
        u.get_param("timeout"),
        Some("4321"),
        "the app rule still applies"
    );

    // A rule for another provider address changes nothing of this one.
    publish(
        &admin,
        &service_key,
        &provider_rule(
            "service",
            "org.rubbo.test.ProviderGov:1.0.0",
            port + 1,
            "weight: 7",
        ),
    )
    .await;
    wait_until("the service rule no longer applies", WAIT, || async {
        registered_one(&registry, port)
            .await
            .is_some_and(|u| u.get_param("weight") == Some("50"))
    })
    .await;

    // Withdrawing every rule registers the exported URL again, exactly.
    admin.remove_config(&service_key, "dubbo").await.unwrap();
    admin.remove_config(app_key, "dubbo").await.unwrap();
    wait_until("the original URL is back", WAIT, || async {
        registered_one(&registry, port).await.as_ref() == Some(&original)
    })
    .await;
}

#[tokio::test]
async fn a_disabled_provider_is_dropped_by_consumers_with_no_failed_call() {
    let server = ZkServer::start();
    let reg = server.url();
    let (_p0, port0) = provider(&reg, "p0").await;
    let (_p1, _) = provider(&reg, "p1").await;
    let registry = ZookeeperRegistry::connect(reg.parse().unwrap())
        .await
        .unwrap();
    let admin = admin(&server).await;

    // The consumer reads no rule itself (its registry is not its config center): only
    // the provider's new interface-level registration can make it drop p0, so it reads
    // the interface level only (the instances, and their metadata, do not carry it).
    let c = Rubbo::builder()
        .application("pgov-consumer")
        .registry(format!("{reg}?use-as-config-center=false"))
        .migration("FORCE_INTERFACE")
        .param("retries", "0")
        .param("timeout", "3000")
        .build()
        .unwrap();
    let client = ProviderGovClient::new(c.refer(&ProviderGovClient::SERVICE).await.unwrap());
    let seen = |n: usize| {
        let client = client.clone();
        async move {
            let mut s = HashSet::new();
            for _ in 0..n {
                s.insert(client.id().await.unwrap());
            }
            s
        }
    };
    wait_until("both providers", WAIT, || async {
        seen(20).await.len() == 2
    })
    .await;

    // Calls run all along; none may fail.
    let stop = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    let load = {
        let (client, stop, failures, calls) = (
            client.clone(),
            stop.clone(),
            failures.clone(),
            calls.clone(),
        );
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                if let Err(e) = client.id().await {
                    eprintln!("failed call: {e}");
                    failures.fetch_add(1, Ordering::SeqCst);
                }
                calls.fetch_add(1, Ordering::SeqCst);
            }
        })
    };

    let key = format!("{RULE_KEY}.configurators");
    publish(
        &admin,
        &key,
        &provider_rule(
            "service",
            "org.rubbo.test.ProviderGov:1.0.0",
            port0,
            "disabled: true",
        ),
    )
    .await;
    wait_until("p0 registered as disabled", WAIT, || async {
        registered_one(&registry, port0)
            .await
            .is_some_and(|u| u.get_param("disabled") == Some("true"))
    })
    .await;
    wait_until("the consumer drops p0", WAIT, || async {
        seen(10).await == HashSet::from(["p1".to_owned()])
    })
    .await;
    assert_eq!(seen(40).await, HashSet::from(["p1".to_owned()]));

    admin.remove_config(&key, "dubbo").await.unwrap();
    wait_until("p0 enabled again", WAIT, || async {
        registered_one(&registry, port0)
            .await
            .is_some_and(|u| u.get_param("disabled").is_none())
    })
    .await;
    wait_until("the consumer calls p0 again", WAIT, || async {
        seen(20).await.len() == 2
    })
    .await;

    stop.store(true, Ordering::SeqCst);
    tokio::time::timeout(WAIT, load).await.unwrap().unwrap();
    assert!(calls.load(Ordering::SeqCst) > 0);
    assert_eq!(failures.load(Ordering::SeqCst), 0, "no call failed");
}

/// A rule changing what the provider's own side reads (`tps`, which the provider's
/// TPS filter takes from the exported URL) exports the service again, as Java's
/// `RegistryProtocol.reExport` does: the limit holds at once, on the same port; and
/// withdrawing the rule exports it without the limit.
#[tokio::test]
async fn a_provider_side_parameter_exports_the_service_again() {
    let server = ZkServer::start();
    let reg = server.url();
    let (_p, port) = provider(&reg, "p0").await;
    let registry = ZookeeperRegistry::connect(reg.parse().unwrap())
        .await
        .unwrap();
    let admin = admin(&server).await;
    let c = Rubbo::builder()
        .application("pgov-consumer")
        .registry(format!("{reg}?use-as-config-center=false"))
        .param("retries", "0")
        .build()
        .unwrap();
    let client = ProviderGovClient::new(c.refer(&ProviderGovClient::SERVICE).await.unwrap());
    for _ in 0..5 {
        assert_eq!(client.id().await.unwrap(), "p0");
    }

    let key = format!("{RULE_KEY}.configurators");
    publish(
        &admin,
        &key,
        &provider_rule(
            "service",
            "org.rubbo.test.ProviderGov:1.0.0",
            port,
            "tps: 2, tps.interval: 600000",
        ),
    )
    .await;
    wait_until("the rule is registered", WAIT, || async {
        registered_one(&registry, port)
            .await
            .is_some_and(|u| u.get_param("tps") == Some("2"))
    })
    .await;
    // The export is replaced before the registration: from now on exactly 2 calls
    // in the interval pass, the next are refused by the provider. (The consumer may
    // briefly list no provider while the node is replaced, unregister then register
    // as in Java: such calls never reach the provider and are not counted.)
    let mut refused = 0;
    let mut passed = 0;
    let deadline = tokio::time::Instant::now() + WAIT;
    while refused < 4 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "tps never refused a call"
        );
        match client.id().await {
            Ok(_) => passed += 1,
            Err(e) if e.kind() == rubbo::ErrorKind::LimitExceeded => refused += 1,
            Err(e) if e.kind() == rubbo::ErrorKind::NoProvider => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert_eq!(passed, 2, "tps=2 holds on the provider");

    admin.remove_config(&key, "dubbo").await.unwrap();
    wait_until("the rule is withdrawn", WAIT, || async {
        registered_one(&registry, port)
            .await
            .is_some_and(|u| u.get_param("tps").is_none())
    })
    .await;
    // Ten calls in a row pass: impossible under tps=2.
    wait_until("no limit after withdrawal", WAIT, || async {
        for _ in 0..10 {
            if client.id().await.is_err() {
                return false;
            }
        }
        true
    })
    .await;
    assert_eq!(
        registered_one(&registry, port).await.map(|u| u.port()),
        Some(port),
        "same server, same port"
    );
}
