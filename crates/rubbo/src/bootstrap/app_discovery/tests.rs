//! The consumer side of application-level discovery over the memory discovery, with
//! a scripted MetadataService.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rubbo_common::{BoxFuture, ErrorKind, RpcError, Url, keys};
use rubbo_metadata::{
    Endpoint, MemoryServiceDiscovery, MetadataInfo, ServiceDiscovery, ServiceInfo, ServiceInstance,
    ServiceNameMapping,
};
use rubbo_registry::{Registry, SharedListener};
use tokio::sync::watch;

use super::Backend;
use super::consumer::{Backoff, MetadataFetcher, PROVIDED_BY_KEY, ServiceDiscoveryRegistry};
use super::migration::Step;

const IFACE: &str = "org.rubbo.test.Greeter";
const WAIT: Duration = Duration::from_secs(10);

/// What each (app, revision) answers: the info, after `fail` failures; `hang` never answers.
#[derive(Debug, Default)]
struct Script {
    infos: Mutex<HashMap<String, MetadataInfo>>,
    fail: Mutex<HashMap<String, usize>>,
    hang: Mutex<Vec<String>>,
    /// How long each answer takes.
    delay: Mutex<Duration>,
    calls: AtomicUsize,
}

impl MetadataFetcher for Arc<Script> {
    fn fetch(
        &self,
        _instance: &ServiceInstance,
        revision: &str,
    ) -> BoxFuture<'static, Result<MetadataInfo, RpcError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let hang = self.hang.lock().iter().any(|r| r == revision);
        let fail = {
            let mut f = self.fail.lock();
            match f.get_mut(revision) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    true
                }
                _ => false,
            }
        };
        let info = self.infos.lock().get(revision).cloned();
        let delay = *self.delay.lock();
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            if hang {
                std::future::pending::<()>().await;
            }
            if fail {
                return Err(RpcError::new(
                    ErrorKind::Network,
                    "injected: provider restarting",
                ));
            }
            info.ok_or_else(|| RpcError::new(ErrorKind::Biz, "unknown revision"))
        })
    }
}

fn info(app: &str, port: u16, extra: &str) -> MetadataInfo {
    let url = Url::parse(&format!(
        "dubbo://127.0.0.1:{port}/{IFACE}?interface={IFACE}&version=1.0.0&application={app}&side=provider&x={extra}"
    ))
    .unwrap();
    let mut i = MetadataInfo::new(app);
    i.add_service(ServiceInfo::from_url(&url));
    let other = Url::parse(&format!(
        "dubbo://127.0.0.1:{port}/org.rubbo.test.Other?interface=org.rubbo.test.Other&application={app}"
    ))
    .unwrap();
    i.add_service(ServiceInfo::from_url(&other));
    i
}

fn instance(app: &str, port: u16, revision: &str) -> ServiceInstance {
    let mut i = ServiceInstance::new(app, "127.0.0.1", port);
    i.metadata.insert(
        keys::EXPORTED_SERVICES_REVISION_PROPERTY_NAME.into(),
        revision.into(),
    );
    i.set_endpoints(&[Endpoint {
        port,
        protocol: "dubbo".into(),
    }]);
    i
}

struct Fixture {
    discovery: MemoryServiceDiscovery,
    script: Arc<Script>,
    registry: ServiceDiscoveryRegistry,
}

fn fixture() -> Fixture {
    let discovery = MemoryServiceDiscovery::new();
    let script = Arc::new(Script::default());
    let d = Arc::new(discovery.clone());
    let backend = Backend::given(d);
    let registry = ServiceDiscoveryRegistry::new(
        Url::parse("service-discovery-registry://127.0.0.1/r").unwrap(),
        vec![backend],
        Arc::new(script.clone()),
        Backoff {
            base: Duration::from_millis(20),
            max: Duration::from_millis(200),
        },
        Duration::from_millis(300),
    );
    Fixture {
        discovery,
        script,
        registry,
    }
}

fn consumer(extra: &str) -> Url {
    Url::parse(&format!(
        "consumer://127.0.0.1/{IFACE}?interface={IFACE}&version=1.0.0&category=providers,configurators,routers{extra}"
    ))
    .unwrap()
}

/// Subscribes; the receiver holds the addresses (`host:port`) of every list.
async fn subscribe(r: &ServiceDiscoveryRegistry, url: Url) -> watch::Receiver<Vec<String>> {
    let (tx, rx) = watch::channel(Vec::new());
    let listener: SharedListener = Arc::new(move |urls: Vec<Url>| {
        let list: Vec<String> = urls
            .iter()
            .filter(|u| u.protocol() != Some("empty"))
            .map(Url::address)
            .collect();
        tx.send_replace(list);
    });
    r.subscribe(url, listener).await.unwrap();
    rx
}

async fn until(rx: &mut watch::Receiver<Vec<String>>, want: &[&str]) {
    let want: Vec<String> = want.iter().map(|s| (*s).to_owned()).collect();
    let got = tokio::time::timeout(WAIT, rx.wait_for(|l| *l == want))
        .await
        .is_ok();
    assert!(got, "never {want:?}; last {:?}", *rx.borrow());
}

#[tokio::test]
async fn one_fetch_per_revision_and_urls_from_the_instance_and_its_metadata() {
    let f = fixture();
    let meta = info("app-a", 1, "1");
    let rev = meta.revision().to_owned();
    f.script.infos.lock().insert(rev.clone(), meta);
    f.discovery.map(IFACE, "app-a").await.unwrap();
    f.discovery
        .register(instance("app-a", 2001, &rev))
        .await
        .unwrap();
    f.discovery
        .register(instance("app-a", 2002, &rev))
        .await
        .unwrap();

    let mut rx = subscribe(&f.registry, consumer("")).await;
    // The first list is there when subscribe returns.
    assert_eq!(
        *rx.borrow_and_update(),
        ["127.0.0.1:2001", "127.0.0.1:2002"]
    );
    assert_eq!(
        f.script.calls.load(Ordering::SeqCst),
        1,
        "one call for one revision"
    );

    // A third instance with the known revision costs no call.
    f.discovery
        .register(instance("app-a", 2003, &rev))
        .await
        .unwrap();
    until(
        &mut rx,
        &["127.0.0.1:2001", "127.0.0.1:2002", "127.0.0.1:2003"],
    )
    .await;
    assert_eq!(f.script.calls.load(Ordering::SeqCst), 1);

    // A second reference of the same application shares the cache.
    let rx2 = subscribe(&f.registry, consumer("")).await;
    assert_eq!(rx2.borrow().len(), 3);
    assert_eq!(f.script.calls.load(Ordering::SeqCst), 1);
    assert_eq!(f.registry.cached(), 1);

    // Another version is not matched.
    let rx3 = subscribe(&f.registry, consumer("").with_param("version", "2.0.0")).await;
    assert!(rx3.borrow().is_empty());
}

#[tokio::test]
async fn the_mapping_is_watched_and_provided_by_skips_it() {
    let f = fixture();
    let meta = info("app-b", 1, "b");
    let rev = meta.revision().to_owned();
    f.script.infos.lock().insert(rev.clone(), meta);
    f.discovery
        .register(instance("app-b", 3001, &rev))
        .await
        .unwrap();

    let mut mapped = subscribe(&f.registry, consumer("")).await;
    assert!(mapped.borrow_and_update().is_empty(), "no mapping yet");
    let given = subscribe(
        &f.registry,
        consumer("").with_param(PROVIDED_BY_KEY, "app-b"),
    )
    .await;
    assert_eq!(*given.borrow(), ["127.0.0.1:3001"]);

    f.discovery.map(IFACE, "app-b").await.unwrap();
    until(&mut mapped, &["127.0.0.1:3001"]).await;
}

#[tokio::test]
async fn a_failed_fetch_is_retried_and_the_consumer_recovers_by_itself() {
    let f = fixture();
    let meta = info("app-c", 1, "c");
    let rev = meta.revision().to_owned();
    f.script.infos.lock().insert(rev.clone(), meta);
    f.script.fail.lock().insert(rev.clone(), 3);
    f.discovery.map(IFACE, "app-c").await.unwrap();
    f.discovery
        .register(instance("app-c", 4001, &rev))
        .await
        .unwrap();

    let mut rx = subscribe(&f.registry, consumer("")).await;
    assert!(rx.borrow_and_update().is_empty(), "pending, not served yet");
    // No instance change happens: the retries alone bring it in.
    until(&mut rx, &["127.0.0.1:4001"]).await;
    assert_eq!(f.script.calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn bad_instances_never_clear_valid_addresses() {
    let f = fixture();
    let good = info("app-d", 1, "good");
    let rev = good.revision().to_owned();
    f.script.infos.lock().insert(rev.clone(), good.clone());
    f.discovery.map(IFACE, "app-d").await.unwrap();
    f.discovery
        .register(instance("app-d", 5001, &rev))
        .await
        .unwrap();
    // Hanging MetadataService, unknown revision, no revision at all.
    f.script.hang.lock().push("hang".into());
    f.discovery
        .register(instance("app-d", 5002, "hang"))
        .await
        .unwrap();
    f.discovery
        .register(instance("app-d", 5003, "unknown"))
        .await
        .unwrap();
    f.discovery
        .register(ServiceInstance::new("app-d", "127.0.0.1", 5004))
        .await
        .unwrap();

    let mut rx = subscribe(&f.registry, consumer("")).await;
    assert_eq!(*rx.borrow_and_update(), ["127.0.0.1:5001"]);

    // 5001 moves to a revision that cannot be fetched: it keeps its old addresses.
    let before = f.script.calls.load(Ordering::SeqCst);
    f.discovery
        .register(instance("app-d", 5001, "broken"))
        .await
        .unwrap();
    // Wait (bounded) until its new revision failed twice.
    let deadline = tokio::time::Instant::now() + WAIT;
    while f.script.calls.load(Ordering::SeqCst) < before + 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no retry of the broken revision"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(*rx.borrow_and_update(), ["127.0.0.1:5001"]);
    // Once its new revision is served, it is taken.
    let mut next = info("app-d", 1, "next");
    next.revision = Some("broken".into());
    f.script.infos.lock().insert("broken".into(), next);
    f.discovery
        .register(instance("app-d", 5005, &rev))
        .await
        .unwrap();
    until(&mut rx, &["127.0.0.1:5001", "127.0.0.1:5005"]).await;
}

#[test]
fn steps_parse_as_java_names_them() {
    assert_eq!(
        Step::parse("force_application").unwrap(),
        Step::ForceApplication
    );
    assert_eq!(
        Step::parse(" APPLICATION_FIRST").unwrap(),
        Step::ApplicationFirst
    );
    assert_eq!(
        Step::parse("FORCE_INTERFACE").unwrap(),
        Step::ForceInterface
    );
    assert!(Step::parse("SOMETIMES").is_err());
}

/// A directory of `n` placeholder providers whose size a test sets.
#[derive(Debug)]
struct Counted(Mutex<usize>, Url);

impl rubbo_cluster::Directory for Counted {
    fn url(&self) -> &Url {
        &self.1
    }
    fn list(&self, _: &rubbo_common::Invocation) -> Arc<Vec<rubbo_common::BoxInvoker>> {
        self.all_invokers()
    }
    fn all_invokers(&self) -> Arc<Vec<rubbo_common::BoxInvoker>> {
        let n = *self.0.lock();
        Arc::new((0..n).map(|_| placeholder(&self.1)).collect())
    }
    fn destroy(&self) {}
}

#[derive(Debug)]
struct Placeholder(Url);

impl rubbo_common::Invoker for Placeholder {
    fn invoke(&self, _: rubbo_common::Invocation) -> rubbo_common::InvokeFuture {
        Box::pin(async { Err(RpcError::new(ErrorKind::Unknown, "placeholder")) })
    }
    fn url(&self) -> &Url {
        &self.0
    }
}

fn placeholder(url: &Url) -> rubbo_common::BoxInvoker {
    Arc::new(Placeholder(url.clone()))
}

#[test]
fn the_comparator_follows_javas_default_migration_address_comparator() {
    use super::migration::invoker::should_migrate;
    assert!(
        !should_migrate(0, 4, 0.0),
        "no instance address: interface level"
    );
    assert!(!should_migrate(0, 0, 0.0));
    assert!(
        should_migrate(1, 0, 5.0),
        "no interface address: application level"
    );
    assert!(should_migrate(1, 4, 0.0), "Java's default threshold 0.0");
    assert!(!should_migrate(3, 4, 1.0), "3 of 4 is below threshold 1.0");
    assert!(should_migrate(4, 4, 1.0), "4 of 4 covers it");
    assert!(should_migrate(5, 10, 0.5));
}

#[test]
fn the_step_comes_from_javas_property_and_a_reference_parameter_wins() {
    for key in [
        "dubbo.application.service-discovery.migration",
        "dubbo.application.migration.step",
    ] {
        let config = rubbo_config::Config::loader()
            .set_arg(&format!("{key}=FORCE_APPLICATION"))
            .unwrap()
            .set_arg("dubbo.application.name=x")
            .unwrap()
            .load()
            .unwrap();
        let app = crate::Rubbo::builder().config(&config).build().unwrap();
        let d = &app.inner.app_discovery;
        assert_eq!(d.step_of(&[]).unwrap(), Step::ForceApplication, "{key}");
        let own = [("migration.step".to_owned(), "FORCE_INTERFACE".to_owned())];
        assert_eq!(d.step_of(&own).unwrap(), Step::ForceInterface);
    }
    let app = crate::Rubbo::builder().application("x").build().unwrap();
    assert_eq!(
        app.inner.app_discovery.step_of(&[]).unwrap(),
        Step::ApplicationFirst,
        "Java's default"
    );
}

/// Answers every call, counting them by level.
#[derive(Debug)]
struct Answer(Url, Arc<AtomicUsize>);

impl rubbo_common::Invoker for Answer {
    fn invoke(&self, _: rubbo_common::Invocation) -> rubbo_common::InvokeFuture {
        self.1.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(rubbo_common::RpcResult::null()) })
    }
    fn url(&self) -> &Url {
        &self.0
    }
}

/// Sides over directories whose sizes a test sets.
#[derive(Debug)]
struct FakeMaker {
    interface: Arc<Counted>,
    application: Arc<Counted>,
    hits: [Arc<AtomicUsize>; 2],
    made: Arc<Mutex<Vec<Level>>>,
}

use super::migration::invoker::{Level, MigrationInvoker, Side, SideMaker};
use super::migration::rule::{MigrationRule, Target};

impl SideMaker for FakeMaker {
    fn make(&self, level: Level, _check: bool) -> BoxFuture<'_, Result<Side, RpcError>> {
        self.made.lock().push(level);
        let (d, hits) = match level {
            Level::Interface => (self.interface.clone(), self.hits[0].clone()),
            Level::Application => (self.application.clone(), self.hits[1].clone()),
        };
        let invoker: rubbo_common::BoxInvoker = Arc::new(Answer(d.1.clone(), hits));
        Box::pin(async move {
            Ok(Side::new(
                invoker,
                vec![d as Arc<dyn rubbo_cluster::Directory>],
            ))
        })
    }
    fn provider_apps(&self) -> BoxFuture<'_, Vec<String>> {
        Box::pin(async { vec!["p1".to_owned()] })
    }
}

struct Moving {
    invoker: MigrationInvoker,
    interface: Arc<Counted>,
    application: Arc<Counted>,
    hits: [Arc<AtomicUsize>; 2],
    made: Arc<Mutex<Vec<Level>>>,
}

fn moving(interface: usize, application: usize) -> Moving {
    let url = consumer("");
    let interface = Arc::new(Counted(Mutex::new(interface), url.clone()));
    let application = Arc::new(Counted(Mutex::new(application), url.clone()));
    let hits = [Arc::default(), Arc::default()];
    let made = Arc::new(Mutex::new(Vec::new()));
    let maker = FakeMaker {
        interface: interface.clone(),
        application: application.clone(),
        hits: hits.clone(),
        made: made.clone(),
    };
    let target = Target {
        display_key: format!("{IFACE}:1.0.0"),
        ..Target::default()
    };
    Moving {
        invoker: MigrationInvoker::new(url, Box::new(maker), target, 0.0),
        interface,
        application,
        hits,
        made,
    }
}

fn rule(yaml: &str) -> MigrationRule {
    MigrationRule::parse(yaml).unwrap()
}

/// Which level `n` calls took: (interface, application).
async fn calls(m: &Moving, n: usize) -> (usize, usize) {
    let before = (
        m.hits[0].load(Ordering::SeqCst),
        m.hits[1].load(Ordering::SeqCst),
    );
    for _ in 0..n {
        let inv = rubbo_common::Invocation::new(IFACE, "who");
        rubbo_common::Invoker::invoke(&m.invoker, inv)
            .await
            .unwrap();
    }
    (
        m.hits[0].load(Ordering::SeqCst) - before.0,
        m.hits[1].load(Ordering::SeqCst) - before.1,
    )
}

#[tokio::test]
async fn steps_move_as_javas_migration_rule_handler_moves_them() {
    let m = moving(2, 0);
    // The initial rule: APPLICATION_FIRST, both sides, interface level while the
    // application level has no address.
    assert!(
        m.invoker
            .migrate(&MigrationRule::default(), Some(false))
            .await
            .unwrap()
    );
    assert_eq!(m.invoker.step(), Some(Step::ApplicationFirst));
    assert_eq!(calls(&m, 4).await, (4, 0));
    // One instance address among two interface-level ones: Java's threshold 0.0.
    *m.application.0.lock() = 1;
    assert_eq!(calls(&m, 4).await, (0, 4));
    // The rule's threshold: 1 of 2 is below 1.0.
    assert!(
        m.invoker
            .migrate(&rule("step: APPLICATION_FIRST\nthreshold: 1"), None)
            .await
            .unwrap()
    );
    assert_eq!(calls(&m, 4).await, (4, 0));
    // proportion: a share of the calls stays at interface level.
    assert!(
        m.invoker
            .migrate(&rule("step: APPLICATION_FIRST\nproportion: 25"), None)
            .await
            .unwrap()
    );
    let (i, a) = calls(&m, 100).await;
    assert_eq!((i, a), (75, 25));

    // FORCE_APPLICATION that does not pass threshold 2: not taken, both sides kept.
    assert!(
        !m.invoker
            .migrate(&rule("step: FORCE_APPLICATION\nthreshold: 2"), None)
            .await
            .unwrap()
    );
    assert_eq!(m.invoker.step(), Some(Step::ApplicationFirst));
    assert!(m.invoker.has(Level::Interface) && m.invoker.has(Level::Application));

    // FORCE_INTERFACE: 2 of 1 passes; the application side goes.
    assert!(
        m.invoker
            .migrate(&rule("step: FORCE_INTERFACE"), None)
            .await
            .unwrap()
    );
    assert_eq!(m.invoker.step(), Some(Step::ForceInterface));
    assert!(!m.invoker.has(Level::Application));
    assert_eq!(calls(&m, 4).await, (4, 0));

    // From FORCE_INTERFACE, a failing FORCE_APPLICATION drops the side it made.
    let made = m.made.lock().len();
    assert!(
        !m.invoker
            .migrate(&rule("step: FORCE_APPLICATION\nthreshold: 2"), None)
            .await
            .unwrap()
    );
    assert_eq!(m.made.lock().len(), made + 1, "made, compared, dropped");
    assert!(!m.invoker.has(Level::Application));
    assert_eq!(m.invoker.step(), Some(Step::ForceInterface));
    // With force it is taken; the interface side goes.
    assert!(
        m.invoker
            .migrate(
                &rule("step: FORCE_APPLICATION\nthreshold: 2\nforce: true"),
                None
            )
            .await
            .unwrap()
    );
    assert_eq!(m.invoker.step(), Some(Step::ForceApplication));
    assert!(!m.invoker.has(Level::Interface));
    assert_eq!(calls(&m, 4).await, (0, 4));

    // An application sub-rule (by the mapped provider application) wins over the rule.
    let r = rule(
        "step: FORCE_APPLICATION\napplications:\n  - serviceKey: p1\n    step: FORCE_INTERFACE\n",
    );
    assert!(m.invoker.migrate(&r, None).await.unwrap());
    assert_eq!(m.invoker.step(), Some(Step::ForceInterface));
    // And an interface sub-rule over that.
    let r = rule(&format!(
        "applications:\n  - serviceKey: p1\n    step: FORCE_INTERFACE\ninterfaces:\n  - serviceKey: {IFACE}:1.0.0\n    step: APPLICATION_FIRST\n"
    ));
    assert!(m.invoker.migrate(&r, None).await.unwrap());
    assert_eq!(m.invoker.step(), Some(Step::ApplicationFirst));
    assert_eq!(calls(&m, 4).await, (0, 4));
    rubbo_common::Invoker::destroy(&m.invoker);
    let _ = &m.interface;
}

#[tokio::test]
async fn a_bad_rule_is_refused_and_the_previous_one_stays() {
    use super::migration::listener::{LocalRule, RuleListener};
    let l = RuleListener::start("app", None, &LocalRule::default()).await;
    assert_eq!(
        *l.rule().0,
        MigrationRule::default(),
        "no rule: Java's INIT"
    );
    assert!(l.set_raw(Some("step: FORCE_APPLICATION\n".into())));
    assert_eq!(l.rule().0.settings.step, Some(Step::ForceApplication));
    let generation = l.rule().1;
    assert!(l.set_raw(Some("step: [".into())));
    assert!(l.set_raw(Some("step: force_interface".into())));
    assert_eq!(l.rule().0.settings.step, Some(Step::ForceApplication));
    assert_eq!(l.rule().1, generation, "nothing new to move to");
    assert!(
        !l.set_raw(Some("step: force_interface".into())),
        "the same text again"
    );
    assert!(l.set_raw(None));
    assert_eq!(*l.rule().0, MigrationRule::default(), "deleted: INIT again");
    l.close();
}

#[tokio::test]
async fn the_local_rule_file_applies_after_the_delay_when_enabled() {
    use super::migration::listener::{LocalRule, RuleListener};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dubbo-migration.yaml");
    std::fs::write(&path, "key: app\nstep: FORCE_INTERFACE\n").unwrap();
    let path = path.to_string_lossy().into_owned();
    // Not enabled (Java's default): not read.
    let off = LocalRule {
        enabled: false,
        path: Some(path.clone()),
        delay_ms: Some(0),
    };
    let l = RuleListener::start("app", None, &off).await;
    let on = LocalRule {
        enabled: true,
        path: Some(path),
        delay_ms: Some(20),
    };
    let l2 = RuleListener::start("app", None, &on).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while l2.rule().0.settings.step != Some(Step::ForceInterface) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the local rule never applied"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(l.rule().0.settings.step, None);
    l.close();
    l2.close();
}

#[test]
fn the_metadata_service_version_follows_meta_v_and_the_url_params() {
    use super::consumer::{MetadataVersion, metadata_version};
    let with = |meta_v: Option<&str>, params: Option<&str>| {
        let mut i = ServiceInstance::new("app", "127.0.0.1", 20880);
        if let Some(v) = meta_v {
            i.metadata
                .insert(keys::METADATA_SERVICE_VERSION_NAME.to_owned(), v.to_owned());
        }
        if let Some(p) = params {
            i.metadata.insert(
                keys::METADATA_SERVICE_URL_PARAMS_PROPERTY_NAME.to_owned(),
                p.to_owned(),
            );
        }
        metadata_version(&i)
    };
    let tri = Some(r#"{"version":"2.0.0","port":"50051","protocol":"tri"}"#);
    let dubbo = Some(r#"{"version":"1.0.0","port":"20880","protocol":"dubbo"}"#);
    assert_eq!(with(Some("2.0.0"), tri), MetadataVersion::V2);
    assert_eq!(with(Some("1.0.0"), tri), MetadataVersion::V1);
    assert_eq!(with(None, dubbo), MetadataVersion::V1);
    // V2 is served on Triple only; an unknown version, or garbage url-params, is V1.
    assert_eq!(with(Some("2.0.0"), dubbo), MetadataVersion::V1);
    assert_eq!(with(Some("2.0.0"), Some("{garbage")), MetadataVersion::V1);
    assert_eq!(with(Some("9.9.9"), tri), MetadataVersion::V1);
}

#[tokio::test]
async fn references_subscribing_together_fetch_a_revision_once() {
    let f = fixture();
    let meta = info("app-together", 1, "1");
    let rev = meta.revision().to_owned();
    f.script.infos.lock().insert(rev.clone(), meta);
    *f.script.delay.lock() = Duration::from_millis(100);
    f.discovery
        .register(instance("app-together", 2001, &rev))
        .await
        .unwrap();
    let other = Url::parse(&format!(
        "consumer://127.0.0.1/org.rubbo.test.Other?interface=org.rubbo.test.Other&category=providers,configurators,routers&{PROVIDED_BY_KEY}=app-together"
    ))
    .unwrap();
    let (a, b) = tokio::join!(
        subscribe(
            &f.registry,
            consumer(&format!("&{PROVIDED_BY_KEY}=app-together"))
        ),
        subscribe(&f.registry, other),
    );
    assert_eq!(*a.borrow(), ["127.0.0.1:2001"]);
    assert_eq!(*b.borrow(), ["127.0.0.1:2001"]);
    assert_eq!(
        f.script.calls.load(Ordering::SeqCst),
        1,
        "one fetch for both references"
    );
}

#[test]
fn metadata_service_url_without_url_params_uses_the_configured_port_else_the_instance_port() {
    use super::consumer::metadata_service_url;
    // An instance written by a registry that keeps no metadata (Java's
    // `StandardMetadataServiceURLBuilder.generateUrlWithoutMetadata`).
    let instance = ServiceInstance::new("bare-app", "127.0.0.1", 8080);
    let t = Duration::from_secs(5);
    let url = metadata_service_url(&instance, t, Some(7001)).unwrap();
    assert_eq!(url.protocol(), Some("dubbo"));
    assert_eq!(url.port(), 7001);
    assert_eq!(url.get_param("group"), Some("bare-app"));
    assert_eq!(url.get_param("version"), Some("1.0.0"));
    assert_eq!(
        url.path(),
        Some("org.apache.dubbo.metadata.MetadataService")
    );
    for unset in [None, Some(0)] {
        assert_eq!(
            metadata_service_url(&instance, t, unset).unwrap().port(),
            8080
        );
    }
    // url-params win over the configured port.
    let mut advertised = instance.clone();
    advertised.metadata.insert(
        keys::METADATA_SERVICE_URL_PARAMS_PROPERTY_NAME.to_owned(),
        r#"{"port":"20881","protocol":"dubbo"}"#.to_owned(),
    );
    assert_eq!(
        metadata_service_url(&advertised, t, Some(7001))
            .unwrap()
            .port(),
        20881
    );
}

/// A listener that keeps its list by applying deltas, as the directory does, and
/// records any delta that does not fit the list it holds.
#[derive(Debug, Default)]
struct DeltaSet {
    set: Mutex<std::collections::BTreeSet<String>>,
    lists: AtomicUsize,
    deltas: AtomicUsize,
    misfits: Mutex<Vec<String>>,
}

impl rubbo_registry::NotifyListener for DeltaSet {
    fn notify(&self, urls: Vec<Url>) {
        self.lists.fetch_add(1, Ordering::SeqCst);
        *self.set.lock() = urls
            .iter()
            .filter(|u| u.protocol() != Some("empty"))
            .map(Url::to_full_string)
            .collect();
    }

    fn notify_delta(&self, delta: rubbo_registry::UrlDelta, _full: &dyn Fn() -> Vec<Url>) {
        self.deltas.fetch_add(1, Ordering::SeqCst);
        let mut set = self.set.lock();
        let mut misfits = self.misfits.lock();
        for u in &delta.removed {
            if !set.remove(&u.to_full_string()) {
                misfits.push(format!("removed but not listed: {u}"));
            }
        }
        for u in &delta.added {
            if u.protocol() == Some("empty") {
                misfits.push("empty:// in a delta".to_owned());
            } else if !set.insert(u.to_full_string()) {
                misfits.push(format!("added but listed: {u}"));
            }
        }
    }
}

/// xorshift64: a reproducible sequence without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % n as u64).unwrap()
    }
}

#[tokio::test]
async fn deltas_and_whole_lists_agree_through_random_joins_leaves_and_revisions() {
    let f = fixture();
    let apps = ["app-r1", "app-r2"];
    // Three revisions per application, each giving other parameters.
    let mut revisions: HashMap<&str, Vec<String>> = HashMap::new();
    for app in apps {
        for k in 0..3 {
            let meta = info(app, 1, &format!("{app}-{k}"));
            let rev = meta.revision().to_owned();
            f.script.infos.lock().insert(rev.clone(), meta);
            revisions.entry(app).or_default().push(rev);
        }
        f.discovery.map(IFACE, app).await.unwrap();
    }
    let deltas = Arc::new(DeltaSet::default());
    f.registry
        .subscribe(consumer(""), deltas.clone())
        .await
        .unwrap();
    let (tx, whole) = watch::channel(std::collections::BTreeSet::<String>::new());
    let listener: SharedListener = Arc::new(move |urls: Vec<Url>| {
        tx.send_replace(
            urls.iter()
                .filter(|u| u.protocol() != Some("empty"))
                .map(Url::to_full_string)
                .collect(),
        );
    });
    f.registry.subscribe(consumer(""), listener).await.unwrap();

    let mut rng = Rng(0x5eed_1234_abcd_0001);
    // (app, port) -> revision index of what is registered.
    let mut registered: HashMap<(usize, u16), usize> = HashMap::new();
    // How often the list went from some addresses to none.
    let (mut emptied, mut had) = (0, false);
    for step in 0..300 {
        let app = rng.below(apps.len());
        let port = 4000 + u16::try_from(rng.below(24)).unwrap();
        let op = rng.below(10);
        if step % 97 == 96 {
            // Everything leaves: the list empties, then fills again.
            for ((a, p), _) in registered.drain() {
                f.discovery
                    .unregister(&instance(apps[a], p, ""))
                    .await
                    .unwrap();
            }
        } else if registered.contains_key(&(app, port)) && op < 4 {
            registered.remove(&(app, port));
            f.discovery
                .unregister(&instance(apps[app], port, ""))
                .await
                .unwrap();
        } else {
            // A join, or a new revision of an instance there.
            let k = rng.below(3);
            registered.insert((app, port), k);
            f.discovery
                .register(instance(apps[app], port, &revisions[apps[app]][k]))
                .await
                .unwrap();
        }
        // Both subscriptions reach the same list, the one the instances give.
        let mut want: Vec<String> = registered
            .keys()
            .map(|(_, p)| format!("127.0.0.1:{p}"))
            .collect();
        want.sort();
        want.dedup();
        if had && want.is_empty() {
            emptied += 1;
        }
        had = !want.is_empty();
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let by_delta = deltas.set.lock().clone();
            let by_list = whole.borrow().clone();
            let mut addresses: Vec<String> = by_list
                .iter()
                .map(|u| Url::parse(u).unwrap().address())
                .collect();
            addresses.dedup();
            if by_delta == by_list && addresses == want {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "step {step}: deltas {by_delta:?}, whole {by_list:?}, want {want:?}"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    assert!(
        deltas.misfits.lock().is_empty(),
        "{:?}",
        deltas.misfits.lock()
    );
    let (lists, sent) = (
        deltas.lists.load(Ordering::SeqCst),
        deltas.deltas.load(Ordering::SeqCst),
    );
    assert!(sent > 100, "changes came as deltas: {sent}");
    // The first list, and `empty://` each time everything left.
    assert!(emptied > 0);
    assert_eq!(lists, 1 + emptied, "whole lists");
}
