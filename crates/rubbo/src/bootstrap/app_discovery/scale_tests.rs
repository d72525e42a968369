//! The cost of one instance joining among 100,000 at application level, in process:
//! 100 applications × 1,000 instances of one interface over the memory discovery, the
//! consumer's subscription feeding a real [`DynamicDirectory`]; each join is timed
//! from `register` (the instance, whose revision's MetadataInfo is cached) to the
//! directory holding its invoker, and each leave from `unregister` to the directory
//! without it. Ignored by default; run with
//! `cargo test --release -p rubbo --lib scale_tests -- --ignored --nocapture`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rubbo_cluster::{Directory, DynamicDirectory, InvokerFactory, RouterChain, RpcStatus};
use rubbo_common::BoxFuture;
use rubbo_common::{BoxInvoker, ErrorKind, Invocation, InvokeFuture, Invoker, RpcError, Url, keys};
use rubbo_metadata::{
    Endpoint, MemoryServiceDiscovery, MetadataInfo, ServiceDiscovery, ServiceInfo, ServiceInstance,
};
use rubbo_registry::{NotifyListener, Registry, SharedListener, UrlDelta};

use super::Backend;
use super::consumer::{Backoff, MetadataFetcher, PROVIDED_BY_KEY, ServiceDiscoveryRegistry};

const IFACE: &str = "org.rubbo.scale.Greeter";
const APPS: usize = 100;
const PER_APP: usize = 1_000;
/// Joins (each followed by the same instance leaving) measured; `APPSCALE_JOINS`
/// overrides it (more joins make the join path dominate a profile).
fn join_count() -> usize {
    super::scale_knob("APPSCALE_JOINS", 200)
}

/// A provider's invoker without a connection: the figures are the discovery's and
/// the directory's, not 100,000 sockets'.
#[derive(Debug)]
struct Unconnected(Url);

impl Invoker for Unconnected {
    fn invoke(&self, _invocation: Invocation) -> InvokeFuture {
        Box::pin(async { Err(RpcError::new(ErrorKind::Network, "not connected")) })
    }
    fn url(&self) -> &Url {
        &self.0
    }
}

/// Every app's revision is known up front.
#[derive(Debug)]
struct Known(HashMap<String, MetadataInfo>);

impl MetadataFetcher for Known {
    fn fetch(
        &self,
        _instance: &ServiceInstance,
        revision: &str,
    ) -> BoxFuture<'static, Result<MetadataInfo, RpcError>> {
        let info = self.0.get(revision).cloned();
        Box::pin(async move { info.ok_or_else(|| RpcError::new(ErrorKind::Biz, "unknown")) })
    }
}

fn app(a: usize) -> String {
    format!("scale-app-{a}")
}

fn info(a: usize) -> MetadataInfo {
    let url = Url::parse(&format!(
        "dubbo://127.0.0.1:20880/{IFACE}?interface={IFACE}&application={}&side=provider&methods=sayHello,sayHelloAsync&release=3.3.6",
        app(a)
    ))
    .expect("url");
    let mut i = MetadataInfo::new(app(a));
    i.add_service(ServiceInfo::from_url(&url));
    i
}

fn instance(a: usize, n: usize, revision: &str) -> ServiceInstance {
    let host = format!("10.{}.{}.{}", a, n / 256, n % 256);
    let mut i = ServiceInstance::new(app(a), host, 20880);
    i.metadata.insert(
        keys::EXPORTED_SERVICES_REVISION_PROPERTY_NAME.into(),
        revision.into(),
    );
    i.set_endpoints(&[Endpoint {
        port: 20880,
        protocol: "dubbo".into(),
    }]);
    i
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Hands what the subscription announces to the directory, in order, as the registry
/// protocol's subscription does (whole lists to `notify`, deltas to `notify_delta`),
/// and records when the directory held each.
struct Feed {
    tx: tokio::sync::mpsc::UnboundedSender<(Update, Instant)>,
}

enum Update {
    List(Vec<Url>),
    Delta(UrlDelta),
}

impl NotifyListener for Feed {
    fn notify(&self, urls: Vec<Url>) {
        let _ = self.tx.send((Update::List(urls), Instant::now()));
    }
    fn notify_delta(&self, delta: UrlDelta, _full: &dyn Fn() -> Vec<Url>) {
        let _ = self.tx.send((Update::Delta(delta), Instant::now()));
    }
}

/// (directory size, when it was reached, of which the directory's part).
type Applied = Arc<Mutex<Vec<(usize, Instant, Duration)>>>;

/// The first entry of `applied` from index `from` on whose size is `n`, waited for.
async fn wait_for(applied: &Applied, from: usize, n: usize) -> (Instant, Duration) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Some((_, at, d)) = applied
            .lock()
            .iter()
            .skip(from)
            .find(|(len, _, _)| *len == n)
        {
            return (*at, *d);
        }
        assert!(Instant::now() < deadline, "no directory of {n} invokers");
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
}

fn report(what: &str, total: usize, mut all: Vec<Duration>, mut dir: Vec<Duration>) {
    all.sort();
    dir.sort();
    println!(
        "one instance {what} among {total}: p50 {:?}, p99 {:?}, max {:?} (of which the directory: p50 {:?}, p99 {:?}, max {:?}), {} samples",
        percentile(&all, 0.5),
        percentile(&all, 0.99),
        all[all.len() - 1],
        percentile(&dir, 0.5),
        percentile(&dir, 0.99),
        dir[dir.len() - 1],
        all.len(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "scale: 100,000 instances; run in a release build"]
#[allow(
    clippy::unwrap_used,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
async fn one_instance_joining_among_100000() {
    let infos: Vec<MetadataInfo> = (0..APPS).map(info).collect();
    let revisions: Vec<String> = infos.iter().map(|i| i.revision().to_owned()).collect();
    let known = Known(
        infos
            .into_iter()
            .map(|i| (i.revision().to_owned(), i))
            .collect(),
    );
    let discovery = MemoryServiceDiscovery::new();
    for (a, rev) in revisions.iter().enumerate() {
        for n in 0..PER_APP {
            discovery.register(instance(a, n, rev)).await.unwrap();
        }
    }
    let d = Arc::new(discovery.clone());
    let registry = ServiceDiscoveryRegistry::new(
        Url::parse("service-discovery-registry://127.0.0.1/r").unwrap(),
        vec![Backend::given(d)],
        Arc::new(known),
        Backoff::default(),
        Duration::from_secs(5),
    );
    let apps: Vec<String> = (0..APPS).map(app).collect();
    let consumer = Url::parse(&format!(
        "consumer://127.0.0.1/{IFACE}?interface={IFACE}&category=providers,configurators,routers&{PROVIDED_BY_KEY}={}",
        apps.join(",")
    ))
    .unwrap();
    let factory: InvokerFactory =
        Arc::new(|url: Url| Box::pin(async move { Ok(Arc::new(Unconnected(url)) as BoxInvoker) }));
    let directory = Arc::new(DynamicDirectory::new(
        consumer.clone(),
        factory,
        Arc::new(RouterChain::builtin()),
        Arc::new(RpcStatus::new()),
    ));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Update, Instant)>();
    let applied: Applied = Arc::default();
    let dir = directory.clone();
    let log = applied.clone();
    tokio::spawn(async move {
        while let Some((update, announced)) = rx.recv().await {
            match update {
                Update::List(urls) => dir.notify(urls).await,
                Update::Delta(delta) => dir.notify_delta(delta.added, delta.removed).await,
            }
            let now = Instant::now();
            log.lock()
                .push((dir.all_invokers().len(), now, now - announced));
        }
    });
    let listener: SharedListener = Arc::new(Feed { tx });
    let started = Instant::now();
    registry.subscribe(consumer, listener).await.unwrap();
    let total = APPS * PER_APP;
    let (full, _) = wait_for(&applied, 0, total).await;
    println!(
        "{total} instances ({APPS} apps x {PER_APP}): subscribe to a full directory in {:?}",
        full - started
    );
    let (mut joins, mut join_dir, mut leaves, mut leave_dir) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for k in 0..join_count() {
        let a = k % APPS;
        let joined = instance(a, PER_APP + k, &revisions[a]);
        let from = applied.lock().len();
        let t0 = Instant::now();
        discovery.register(joined.clone()).await.unwrap();
        let (at, d) = wait_for(&applied, from, total + 1).await;
        joins.push(at - t0);
        join_dir.push(d);
        let from = applied.lock().len();
        let t0 = Instant::now();
        discovery.unregister(&joined).await.unwrap();
        let (at, d) = wait_for(&applied, from, total).await;
        leaves.push(at - t0);
        leave_dir.push(d);
    }
    report("joining", total, joins, join_dir);
    report("leaving", total, leaves, leave_dir);
}
