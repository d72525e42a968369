//! Live governance rules from a real ZooKeeper config center, written under Java's
//! exact keys (`/dubbo/config/dubbo/{key}`), changing what a Rust consumer does over
//! real sockets on 127.0.0.1: override rules (timeout) at service and application
//! scope, condition routes, tag routes, a bad rule, and 100 changes under load.
#![allow(clippy::unwrap_used)]

mod zk;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rubbo::{ErrorKind, RpcError, Rubbo};
use rubbo_registry::DynamicConfiguration;
use rubbo_registry_zookeeper::ZookeeperDynamicConfiguration;
use zk::{ZkServer, wait_until};

const WAIT: Duration = Duration::from_secs(20);
const SERVICE_KEY: &str = "org.rubbo.test.Gov:1.0.0:";

/// The log lines of this test binary (every test's), for waiting until a rejected rule
/// was seen and reported: after that line the rule can no longer take effect, so what
/// the calls do then is the proof that it did not.
fn logs() -> &'static Mutex<String> {
    static LOGS: OnceLock<Mutex<String>> = OnceLock::new();
    LOGS.get_or_init(|| {
        struct Capture;
        impl std::io::Write for Capture {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                logs()
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(buf));
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let _ = tracing_subscriber::fmt()
            .with_env_filter("warn")
            .with_ansi(false)
            .with_writer(|| Capture)
            .try_init();
        Mutex::new(String::new())
    })
}

/// How many warnings so far contain every one of `parts`.
fn warnings(parts: &[&str]) -> usize {
    logs()
        .lock()
        .unwrap()
        .lines()
        .filter(|l| l.contains("WARN") && parts.iter().all(|p| l.contains(p)))
        .count()
}

/// Publishes a rule that must be rejected under `key`, and waits for its log line.
async fn publish_rejected(admin: &ZookeeperDynamicConfiguration, key: &str, content: &str) {
    let what = if key.ends_with(".condition-router") {
        "bad condition route ignored"
    } else {
        "bad override rule ignored"
    };
    let key_field = format!("key=\"{key}\"");
    let before = warnings(&[what, &key_field]);
    publish(admin, key, content).await;
    wait_until(
        &format!("the bad rule under {key} is reported"),
        WAIT,
        || async { warnings(&[what, &key_field]) > before },
    )
    .await;
}

/// A provider that names itself, after `delay`.
#[rubbo::service(interface = "org.rubbo.test.Gov", version = "1.0.0")]
pub trait Gov {
    /// `String id()`.
    async fn id(&self) -> Result<String, RpcError>;
}

struct Node {
    name: String,
    delay: Duration,
}

impl Gov for Node {
    async fn id(&self) -> Result<String, RpcError> {
        tokio::time::sleep(self.delay).await;
        Ok(self.name.clone())
    }
}

/// A provider of application `gov-provider`; returns it and its port.
async fn provider(registry: &str, name: &str, delay: Duration) -> (Rubbo, u16) {
    let p = Rubbo::builder()
        .application("gov-provider")
        .registry(registry)
        .port(0)
        .build()
        .unwrap();
    let url = p
        .export(GovServer::new(Arc::new(Node {
            name: name.into(),
            delay,
        })))
        .await
        .unwrap();
    (p, url.port())
}

/// A consumer `gov-consumer` with a ZooKeeper registry and no config center
/// configured: the registry serves as config center too, as in Java.
async fn consumer(registry: &str, params: &[(&str, &str)]) -> (Rubbo, GovClient) {
    let mut b = Rubbo::builder()
        .application("gov-consumer")
        .registry(registry)
        .param("retries", "0");
    for (k, v) in params {
        b = b.param(*k, *v);
    }
    let c = b.build().unwrap();
    let client = GovClient::new(c.refer(&GovClient::SERVICE).await.unwrap());
    (c, client)
}

/// A config center client writing rules as Dubbo Admin does.
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

fn timeout_rule(scope: &str, key: &str, timeout: u32) -> String {
    format!(
        "configVersion: v3.0\nscope: {scope}\nkey: {key}\nenabled: true\nconfigs:\n  - side: consumer\n    addresses: [0.0.0.0]\n    parameters:\n      timeout: {timeout}\n"
    )
}

/// Whether a call now times out (`Some(true)`), succeeds (`Some(false)`).
async fn times_out(client: &GovClient) -> bool {
    match client.id().await {
        Ok(_) => false,
        Err(e) if e.kind() == ErrorKind::Timeout => true,
        Err(e) => panic!("unexpected error {e}"),
    }
}

async fn wait_timing_out(client: &GovClient, want: bool, what: &str) {
    wait_until(what, WAIT, || async { times_out(client).await == want }).await;
    // Settled: the next calls agree.
    for _ in 0..3 {
        assert_eq!(times_out(client).await, want, "{what}: not settled");
    }
}

#[tokio::test]
async fn override_rules_change_the_timeout_service_scope_over_application_and_withdraw() {
    let server = ZkServer::start();
    let reg = server.url();
    let (_p, _) = provider(&reg, "slow", Duration::from_millis(600)).await;
    let (_c, client) = consumer(&reg, &[("timeout", "200")]).await;
    let admin = admin(&server).await;
    assert!(times_out(&client).await, "200 ms < 600 ms");

    let app_key = "gov-consumer.configurators";
    let service_key = format!("{SERVICE_KEY}.configurators");
    publish(
        &admin,
        app_key,
        &timeout_rule("application", "gov-consumer", 3000),
    )
    .await;
    wait_timing_out(&client, false, "the application rule raises the timeout").await;

    publish(
        &admin,
        &service_key,
        &timeout_rule("service", "org.rubbo.test.Gov:1.0.0", 100),
    )
    .await;
    wait_timing_out(&client, true, "the service rule beats the application rule").await;

    // A malformed rule is reported and keeps the previous one.
    publish_rejected(&admin, &service_key, "configVersion: v3.0\nconfigs: [\n").await;
    publish_rejected(
        &admin,
        app_key,
        "configVersion: v3.0\nkey: gov-consumer\nconfigs:\n  - side: consumer\n",
    )
    .await;
    for _ in 0..5 {
        assert!(times_out(&client).await, "the previous service rule stays");
    }

    // `enabled: false` withdraws the service rule; the application one applies again.
    let disabled = timeout_rule("service", "org.rubbo.test.Gov:1.0.0", 100)
        .replace("enabled: true", "enabled: false");
    publish(&admin, &service_key, &disabled).await;
    wait_timing_out(&client, false, "a disabled service rule is withdrawn").await;

    // Deleting the application rule restores the consumer's own timeout.
    admin.remove_config(app_key, "dubbo").await.unwrap();
    wait_timing_out(&client, true, "deleting the rule restores 200 ms").await;
}

async fn seen(client: &GovClient, calls: usize) -> HashSet<String> {
    let mut s = HashSet::new();
    for _ in 0..calls {
        s.insert(client.id().await.unwrap());
    }
    s
}

#[tokio::test]
async fn condition_route_moves_traffic_away_and_back_and_a_tag_route_tags() {
    let server = ZkServer::start();
    let reg = server.url();
    let (_p0, port0) = provider(&reg, "p0", Duration::ZERO).await;
    let (_p1, port1) = provider(&reg, "p1", Duration::ZERO).await;
    let (_c, client) = consumer(&reg, &[("timeout", "3000")]).await;
    let admin = admin(&server).await;
    wait_until("both providers", WAIT, || async {
        seen(&client, 20).await.len() == 2
    })
    .await;

    let key = format!("{SERVICE_KEY}.condition-router");
    publish(
        &admin,
        &key,
        &format!("configVersion: v3.0\nscope: service\nkey: \"{SERVICE_KEY}\"\nforce: false\nconditions:\n  - => port != {port0}\n"),
    )
    .await;
    wait_until("traffic moved to p1", WAIT, || async {
        seen(&client, 10).await == HashSet::from(["p1".to_owned()])
    })
    .await;
    assert_eq!(seen(&client, 30).await, HashSet::from(["p1".to_owned()]));

    // Bad rules (broken YAML, a wrong type) are reported, and the route stays.
    publish_rejected(&admin, &key, "conditions: {unclosed\n").await;
    assert_eq!(seen(&client, 20).await, HashSet::from(["p1".to_owned()]));
    publish_rejected(&admin, &key, "configVersion: v3.0\nconditions: 42\n").await;
    assert_eq!(seen(&client, 20).await, HashSet::from(["p1".to_owned()]));

    // v3.1 form, application scope: to p0 only.
    let app_key = "gov-consumer.condition-router";
    publish(
        &admin,
        app_key,
        &format!("configVersion: v3.1\nscope: application\nkey: gov-consumer\nforce: true\nconditions:\n  - from:\n      match: method = id\n    to:\n      - match: port = {port1}\n"),
    )
    .await;
    wait_until("app rule narrows to p1", WAIT, || async {
        seen(&client, 10).await == HashSet::from(["p1".to_owned()])
    })
    .await;
    admin.remove_config(&key, "dubbo").await.unwrap();
    admin.remove_config(app_key, "dubbo").await.unwrap();
    wait_until("traffic back on both", WAIT, || async {
        seen(&client, 30).await.len() == 2
    })
    .await;

    // Tag route of the provider application: `gray` is p1's address.
    let (_t, tagged) = consumer(&reg, &[("timeout", "3000"), ("dubbo.tag", "gray")]).await;
    publish(
        &admin,
        "gov-provider.tag-router",
        &format!("configVersion: v3.0\nforce: false\nenabled: true\nkey: gov-provider\ntags:\n  - name: gray\n    addresses: [\"127.0.0.1:{port1}\"]\n"),
    )
    .await;
    wait_until("gray goes to p1", WAIT, || async {
        seen(&tagged, 10).await == HashSet::from(["p1".to_owned()])
    })
    .await;
    wait_until(
        "untagged traffic avoids the gray provider",
        WAIT,
        || async { seen(&client, 10).await == HashSet::from(["p0".to_owned()]) },
    )
    .await;
    admin
        .remove_config("gov-provider.tag-router", "dubbo")
        .await
        .unwrap();
    wait_until("tag withdrawn", WAIT, || async {
        seen(&client, 30).await.len() == 2
    })
    .await;
}

#[tokio::test]
async fn a_hundred_rule_changes_while_calls_run_fail_no_call() {
    let server = ZkServer::start();
    let reg = server.url();
    let (_p0, port0) = provider(&reg, "p0", Duration::ZERO).await;
    let (_p1, port1) = provider(&reg, "p1", Duration::ZERO).await;
    let (_c, client) = consumer(&reg, &[("timeout", "3000")]).await;
    let admin = admin(&server).await;
    let client = Arc::new(client);
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let mut callers = Vec::new();
    for _ in 0..4 {
        let (client, stop, ok, failed) = (client.clone(), stop.clone(), ok.clone(), failed.clone());
        callers.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                match client.id().await {
                    Ok(_) => ok.fetch_add(1, Ordering::SeqCst),
                    Err(e) => {
                        eprintln!("call failed: {e}");
                        failed.fetch_add(1, Ordering::SeqCst)
                    }
                };
            }
        }));
    }
    let route = format!("{SERVICE_KEY}.condition-router");
    let over = format!("{SERVICE_KEY}.configurators");
    for i in 0..100u32 {
        let port = if i % 2 == 0 { port0 } else { port1 };
        if i % 3 == 0 {
            publish(
                &admin,
                &over,
                &timeout_rule("service", "org.rubbo.test.Gov:1.0.0", 2000 + i),
            )
            .await;
        } else {
            publish(
                &admin,
                &route,
                &format!("configVersion: v3.0\nconditions:\n  - => port = {port}\n"),
            )
            .await;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    admin.remove_config(&route, "dubbo").await.unwrap();
    admin.remove_config(&over, "dubbo").await.unwrap();
    let before = ok.load(Ordering::SeqCst);
    wait_until("calls go on after the changes", WAIT, || async {
        ok.load(Ordering::SeqCst) > before + 50
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    for c in callers {
        tokio::time::timeout(WAIT, c).await.unwrap().unwrap();
    }
    assert_eq!(
        failed.load(Ordering::SeqCst),
        0,
        "ok calls: {}",
        ok.load(Ordering::SeqCst)
    );
    assert!(ok.load(Ordering::SeqCst) > 100);
}

#[tokio::test]
async fn an_unreachable_config_center_with_check_false_starts_and_applies_rules_later() {
    let mut server = ZkServer::start();
    let reg = server.url();
    let (_p, _) = provider(&reg, "slow", Duration::from_millis(600)).await;
    // A second ZooKeeper for the config center, down at start.
    let mut cc_server = ZkServer::start();
    let cc_url = cc_server.url();
    cc_server.stop();
    let c = Rubbo::builder()
        .application("gov-consumer")
        .registry(&reg)
        .config_center(format!("{cc_url}?check=false&timeout=500"))
        .param("retries", "0")
        .param("timeout", "200")
        .build()
        .unwrap();
    let client = GovClient::new(c.refer(&GovClient::SERVICE).await.unwrap());
    assert!(times_out(&client).await);
    cc_server.start_again();
    let admin = admin(&cc_server).await;
    publish(
        &admin,
        &format!("{SERVICE_KEY}.configurators"),
        &timeout_rule("service", "org.rubbo.test.Gov:1.0.0", 3000),
    )
    .await;
    wait_timing_out(
        &client,
        false,
        "the rule applies once the config center is up",
    )
    .await;
    drop(server.four_letter("ruok"));
    server.stop();
}

/// The config center's local cache file: a consumer that saw a rule, restarted while
/// the config center is down (`check=false`), runs with that rule from the file at
/// once; when the config center is back, what it holds then (the rule withdrawn)
/// applies.
#[tokio::test]
async fn a_config_center_down_at_start_serves_the_cached_rules_then_the_fresh_ones() {
    let server = ZkServer::start();
    let reg = server.url();
    let (_p, _) = provider(&reg, "slow", Duration::from_millis(600)).await;
    let mut cc_server = ZkServer::start();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cc.cache");
    let cc_address = format!(
        "{}?check=false&timeout=500&cache.file={}",
        cc_server.url(),
        cache.display()
    );
    let start = || async {
        let c = Rubbo::builder()
            .application("gov-consumer")
            .registry(format!("{reg}?use-as-config-center=false"))
            .config_center(&cc_address)
            .param("retries", "0")
            .param("timeout", "200")
            .build()
            .unwrap();
        let client = GovClient::new(c.refer(&GovClient::SERVICE).await.unwrap());
        (c, client)
    };
    let key = format!("{SERVICE_KEY}.configurators");

    // First run: the rule comes from the config center and lands in the file.
    let admin = admin(&cc_server).await;
    publish(
        &admin,
        &key,
        &timeout_rule("service", "org.rubbo.test.Gov:1.0.0", 3000),
    )
    .await;
    let (c1, client) = start().await;
    wait_timing_out(&client, false, "the rule applies").await;
    wait_until("the rule is in the cache file", WAIT, || async {
        // Java properties escaping: `:` is written `\:`.
        std::fs::read_to_string(&cache)
            .is_ok_and(|t| t.contains(r"dubbo/org.rubbo.test.Gov\:1.0.0\:.configurators="))
    })
    .await;
    c1.shutdown().await;
    drop(client);
    admin.close().await;

    // Second run with the config center down: the cached rule holds from the start.
    cc_server.stop();
    let (_c2, client) = start().await;
    for _ in 0..3 {
        assert!(
            !times_out(&client).await,
            "the cached rule applies while the config center is down"
        );
    }

    // The config center comes back; withdrawing the rule there takes effect.
    cc_server.start_again();
    let admin = self::admin(&cc_server).await;
    admin.remove_config(&key, "dubbo").await.unwrap();
    wait_timing_out(
        &client,
        true,
        "the fresh state (no rule) applies once it is back",
    )
    .await;
    wait_until("the file follows", WAIT, || async {
        std::fs::read_to_string(&cache).is_ok_and(|t| !t.contains(".configurators"))
    })
    .await;
}

/// Java's externalized configuration: `dubbo.properties` in group `dubbo` and in the
/// application's group, read from ZooKeeper at start, beat the YAML file; the
/// application's beats the global one; the environment beats both.
#[tokio::test]
async fn externalized_configuration_comes_from_the_config_center() {
    let cc_server = ZkServer::start();
    let admin = admin(&cc_server).await;
    admin
        .publish_config(
            "dubbo.properties",
            "dubbo",
            "dubbo.consumer.timeout=1111\ndubbo.consumer.retries=7\ndubbo.provider.weight=5\n",
        )
        .await
        .unwrap();
    admin
        .publish_config(
            "dubbo.properties",
            "ext-app",
            "dubbo.consumer.timeout=2222\n",
        )
        .await
        .unwrap();
    assert_eq!(
        admin.path("dubbo.properties", "ext-app"),
        "/dubbo/config/ext-app/dubbo.properties"
    );
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "dubbo:\n  application:\n    name: ext-app\n  config-center:\n    address: {}?cache.file={}\n  consumer:\n    timeout: 999\n    retries: 1\n    loadbalance: random\n  provider:\n    weight: 1\n",
        cc_server.url(),
        dir.path().join("cc.cache").display()
    );
    let loader = || {
        rubbo::config::Config::loader()
            .yaml("application.yml", &yaml)
            .unwrap()
            .env_vars([("DUBBO_PROVIDER_WEIGHT".to_owned(), "9".to_owned())])
    };
    let config = rubbo::load_config(loader()).await.unwrap();
    assert_eq!(
        config.get("dubbo.consumer.timeout"),
        Some("2222"),
        "the application's beats the global"
    );
    assert_eq!(
        config.get("dubbo.consumer.retries"),
        Some("7"),
        "the global beats the YAML"
    );
    assert_eq!(
        config.get("dubbo.consumer.loadbalance"),
        Some("random"),
        "the YAML where nothing else says"
    );
    assert_eq!(
        config.get("dubbo.provider.weight"),
        Some("9"),
        "the environment beats the config center"
    );
    assert_eq!(
        config
            .entry("dubbo.consumer.timeout")
            .unwrap()
            .source
            .to_string(),
        "config center ext-app/dubbo.properties:1"
    );
    // And it drives the application.
    let app = Rubbo::from_config(&config).unwrap();
    assert_eq!(app.application(), "ext-app");

    // Without a config center, the files alone.
    let plain = rubbo::load_config(
        rubbo::config::Config::loader()
            .yaml("a.yml", "dubbo:\n  consumer:\n    timeout: 5\n")
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(plain.get("dubbo.consumer.timeout"), Some("5"));
}

/// With no config center configured, the ZooKeeper registry serves as one for the
/// externalized configuration too (Java's `useRegistryAsConfigCenterIfNecessary` runs
/// before the environment is prepared), in the registry's group when it names one;
/// `use-as-config-center=false` opts out.
#[tokio::test]
async fn externalized_configuration_comes_from_the_registry_without_a_config_center() {
    let zk = ZkServer::start();
    let admin = admin(&zk).await;
    admin
        .publish_config("dubbo.properties", "dubbo", "dubbo.consumer.timeout=3333\n")
        .await
        .unwrap();
    admin
        .publish_config("dubbo.properties", "reg-app", "dubbo.consumer.retries=4\n")
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let load = |registry: String| {
        let yaml = format!(
            "dubbo:\n  application:\n    name: reg-app\n  registry:\n    address: {registry}\n  consumer:\n    timeout: 999\n    retries: 1\n"
        );
        async move {
            rubbo::load_config(
                rubbo::config::Config::loader()
                    .yaml("application.yml", &yaml)
                    .unwrap(),
            )
            .await
            .unwrap()
        }
    };
    let cache = dir.path().join("reg.cache");
    let config = load(format!("{}?cache.file={}", zk.url(), cache.display())).await;
    assert_eq!(config.get("dubbo.consumer.timeout"), Some("3333"));
    assert_eq!(config.get("dubbo.consumer.retries"), Some("4"));
    assert_eq!(
        config
            .entry("dubbo.consumer.timeout")
            .unwrap()
            .source
            .to_string(),
        "config center dubbo/dubbo.properties:1"
    );

    // The opt-out: the file alone.
    let off = load(format!(
        "{}?use-as-config-center=false&cache.file={}",
        zk.url(),
        cache.display()
    ))
    .await;
    assert_eq!(off.get("dubbo.consumer.timeout"), Some("999"));
    assert_eq!(off.get("dubbo.consumer.retries"), Some("1"));

    // A registry group is the config center's group (and namespace), as in Java.
    let zk_admin_ns = ZookeeperDynamicConfiguration::connect(
        format!("{}?namespace=fleet", zk.url()).parse().unwrap(),
    )
    .await
    .unwrap();
    zk_admin_ns
        .publish_config("dubbo.properties", "fleet", "dubbo.consumer.timeout=4444\n")
        .await
        .unwrap();
    let grouped = load(format!(
        "{}?group=fleet&cache.file={}",
        zk.url(),
        cache.display()
    ))
    .await;
    assert_eq!(grouped.get("dubbo.consumer.timeout"), Some("4444"));
}
