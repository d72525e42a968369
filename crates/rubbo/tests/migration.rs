//! The dynamic migration rule, end to end on real sockets: a provider found only at
//! interface level (`register-mode=interface`, answers "iface") and one found only
//! at application level (`register-mode=instance`, answers "inst"); 32 calls in
//! flight at all times while the rule at `{app}.migration` (group
//! `DUBBO_SERVICEDISCOVERY_MIGRATION`) moves the consumer between the steps.
#![allow(missing_docs)]
// The helpers below are test code too (clippy allows unwrap only in `#[test]` fns).
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rubbo::{RpcError, Rubbo};
use rubbo_metadata::MemoryServiceDiscovery;
use rubbo_registry::{DynamicConfiguration, MemoryDynamicConfiguration};

#[rubbo::service(interface = "org.rubbo.test.Which", version = "1.0.0")]
pub trait Which {
    /// `String which()`.
    async fn which(&self) -> Result<String, RpcError>;
}

struct Named(&'static str);

impl Which for Named {
    async fn which(&self) -> Result<String, RpcError> {
        Ok(self.0.to_owned())
    }
}

const GROUP: &str = "DUBBO_SERVICEDISCOVERY_MIGRATION";
const KEY: &str = "mig-consumer.migration";
const WAIT: Duration = Duration::from_secs(20);

/// What the calls saw in each phase: answers by name, and failures.
#[derive(Default)]
struct Seen {
    phase: AtomicUsize,
    by_phase: Mutex<HashMap<usize, HashMap<String, usize>>>,
    failed: AtomicUsize,
    errors: Mutex<Vec<String>>,
}

impl Seen {
    fn count(&self, phase: usize, answer: &str) -> usize {
        self.by_phase
            .lock()
            .get(&phase)
            .and_then(|m| m.get(answer).copied())
            .unwrap_or(0)
    }
}

struct Fleet {
    factories: Arc<rubbo_common::ExtensionTable<dyn rubbo_registry::RegistryFactory>>,
    discovery: Arc<MemoryServiceDiscovery>,
    cc: Arc<MemoryDynamicConfiguration>,
    providers: Vec<Rubbo>,
}

async fn fleet() -> Fleet {
    let factories = Arc::new(rubbo::registry_factories());
    let discovery = Arc::new(MemoryServiceDiscovery::new());
    let iface = Rubbo::builder()
        .application("mig-iface")
        .registry("memory://local")
        .registry_factories(factories.clone())
        .register_mode("interface")
        .port(0)
        .build()
        .unwrap();
    iface
        .export(WhichServer::new(Arc::new(Named("iface"))))
        .await
        .unwrap();
    let inst = Rubbo::builder()
        .application("mig-inst")
        .register_mode("instance")
        .service_discovery(discovery.clone())
        .port(0)
        .build()
        .unwrap();
    inst.export(WhichServer::new(Arc::new(Named("inst"))))
        .await
        .unwrap();
    Fleet {
        factories,
        discovery,
        cc: Arc::new(MemoryDynamicConfiguration::new()),
        providers: vec![iface, inst],
    }
}

fn consumer(f: &Fleet) -> rubbo::RubboBuilder {
    Rubbo::builder()
        .application("mig-consumer")
        .registry("memory://local")
        .registry_factories(f.factories.clone())
        .service_discovery(f.discovery.clone())
        .dynamic_configuration(f.cc.clone())
}

async fn publish(cc: &MemoryDynamicConfiguration, rule: &str) {
    cc.publish_config(KEY, GROUP, rule).await.unwrap();
}

/// Bounded wait until `ok()`.
async fn until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !ok() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn answers(c: &WhichClient, n: usize) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for _ in 0..n {
        *m.entry(c.which().await.unwrap()).or_insert(0) += 1;
    }
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_switch_while_32_calls_are_in_flight_and_none_fails() {
    let f = fleet().await;
    let c = consumer(&f).build().unwrap();
    let client = Arc::new(WhichClient::new(
        c.refer(&WhichClient::SERVICE).await.unwrap(),
    ));
    // No rule: Java's default APPLICATION_FIRST, and the application level has an
    // address (threshold 0.0).
    assert_eq!(client.which().await.unwrap(), "inst");

    let seen = Arc::new(Seen::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let (client, seen, stop) = (client.clone(), seen.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            // Bounded by count as well as by the stop flag.
            for _ in 0..200_000 {
                if stop.load(Ordering::Acquire) {
                    break;
                }
                let phase = seen.phase.load(Ordering::Acquire);
                match client.which().await {
                    Ok(a) => {
                        *seen
                            .by_phase
                            .lock()
                            .entry(phase)
                            .or_default()
                            .entry(a)
                            .or_insert(0) += 1;
                    }
                    Err(e) => {
                        seen.failed.fetch_add(1, Ordering::AcqRel);
                        seen.errors.lock().push(e.to_string());
                    }
                }
            }
        }));
    }

    // Each phase: the rule, and the answers that prove the calls took its path.
    let phases: [(&str, &[&str]); 4] = [
        ("key: mig-consumer\nstep: FORCE_INTERFACE\n", &["iface"]),
        ("key: mig-consumer\nstep: FORCE_APPLICATION\n", &["inst"]),
        // Half the calls may take the application level, the rest the interface level.
        (
            "key: mig-consumer\nstep: APPLICATION_FIRST\nproportion: 50\n",
            &["iface", "inst"],
        ),
        (
            "key: mig-consumer\nstep: FORCE_INTERFACE\nforce: true\n",
            &["iface"],
        ),
    ];
    let mut phase = 0;
    for round in 0..3 {
        for (rule, want) in phases {
            phase += 1;
            // Rules differ by round so none is ignored as a duplicate.
            publish(&f.cc, &format!("{rule}delay: 0\n# round {round}\n")).await;
            seen.phase.store(phase, Ordering::Release);
            for w in want {
                until(&format!("phase {phase} ({rule:?}) answered {w}"), || {
                    seen.count(phase, w) >= 100
                })
                .await;
            }
        }
    }
    stop.store(true, Ordering::Release);
    for t in tasks {
        tokio::time::timeout(WAIT, t).await.unwrap().unwrap();
    }
    let failed = seen.failed.load(Ordering::Acquire);
    assert_eq!(failed, 0, "failed calls: {:?}", seen.errors.lock().first());

    // After the last (forced interface) phase, every call is interface-level.
    let now = answers(&client, 50).await;
    assert_eq!(now.get("iface"), Some(&50), "{now:?}");
    c.shutdown().await;
    for p in &f.providers {
        p.shutdown().await;
    }
}

/// Bounded wait until the client answers `want`.
async fn until_answer(c: &WhichClient, want: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let got = c.which().await;
        if got.as_deref().is_ok_and(|a| a == want) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never {want}; last {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn the_rule_beats_the_reference_and_a_deleted_rule_brings_back_its_step() {
    let f = fleet().await;
    publish(&f.cc, "step: FORCE_INTERFACE\n").await;
    let c = consumer(&f)
        .param("migration.step", "FORCE_APPLICATION")
        .build()
        .unwrap();
    let client = WhichClient::new(c.refer(&WhichClient::SERVICE).await.unwrap());
    // The rule there at the start is in force for the first call.
    assert_eq!(answers(&client, 10).await.get("iface"), Some(&10));

    // A rule Java refuses (a misspelt step) is logged and skipped; the next one
    // still applies.
    publish(&f.cc, "step: force_application\n").await;
    publish(&f.cc, "step: APPLICATION_FIRST\n").await;
    until_answer(&client, "inst").await;
    publish(&f.cc, "step: FORCE_INTERFACE\nforce: true\n").await;
    until_answer(&client, "iface").await;

    // Deleted: the initial step again, the reference's FORCE_APPLICATION.
    f.cc.remove_config(KEY, GROUP).await.unwrap();
    until_answer(&client, "inst").await;
    assert_eq!(answers(&client, 10).await.get("inst"), Some(&10));
    c.shutdown().await;
    for p in &f.providers {
        p.shutdown().await;
    }
}
