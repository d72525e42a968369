//! Interface level against application level on a real ZooKeeper, in one run: for N
//! applications × M interfaces (each application its own) × K instances,
//!
//! - **registry bytes written**: what the providers' side sends ZooKeeper (bytes on
//!   the wire, through a counting proxy on 127.0.0.1), and what it stores there
//!   (node paths + data, summed by walking the nodes written): at interface level one
//!   provider URL node per (interface, instance) written by a `ZookeeperRegistry`; at
//!   application level one instance node per instance, one mapping node per
//!   interface and one MetadataInfo node per application (storage type `remote`)
//!   written by a `ZookeeperServiceDiscovery`; then again from nothing with storage type
//!   `local` (Java's default: no MetadataInfo node), for the bytes only. The requests
//!   each writer sends are decoded and counted by ZooKeeper operation, and the
//!   application level's bytes split by part (MetadataInfo, mapping, instance);
//! - **bytes pushed**: what ZooKeeper sends a consumer subscribed to all N × M
//!   interfaces until it holds all N × M × K provider URLs (through its own proxy);
//! - **consumer memory**: `VmRSS` growth of that consumer, a process of its own (this
//!   test binary run again with `APPSCALE_CHILD`), from after its connection is warm to
//!   the full push; it keeps the provider URL lists its listener got, as a directory
//!   would, at both levels.
//!
//! Ignored by default; sizes from `APPSCALE_APPS`, `APPSCALE_INTERFACES`,
//! `APPSCALE_INSTANCES` (100 × 10 × 10):
//! `cargo test -p rubbo --lib zk_scale -- --ignored --nocapture --test-threads=1`.
//! With `APPSCALE_CHILD_WRAP="heaptrack -o /tmp/ht"` the consumers run under that
//! command and exit without freeing, so that heaptrack reports what they hold.
#![allow(clippy::unwrap_used, clippy::cast_precision_loss, clippy::print_stdout)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use parking_lot::Mutex;
use rubbo_common::{Url, keys};
use rubbo_metadata::{
    Endpoint, MetadataInfo, ServiceDiscovery, ServiceInfo, ServiceInstance, ServiceNameMapping,
};
use rubbo_registry::{Registry, SharedListener, subscribe_url};
use rubbo_registry_zookeeper::{ZookeeperRegistry, ZookeeperServiceDiscovery};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::Backend;
use super::consumer::{Backoff, ServiceDiscoveryRegistry, ServiceFetcher};

#[path = "../../../tests/zk/mod.rs"]
mod zk;

const CHILD_ENV: &str = "APPSCALE_CHILD";
const ZK_ENV: &str = "APPSCALE_ZK";
/// A command the consumer child runs under (`heaptrack -o /tmp/appscale`, to see what
/// it keeps): the child then exits without freeing, so that what it holds after the
/// full push shows as not freed.
const WRAP_ENV: &str = "APPSCALE_CHILD_WRAP";
const TEST_PATH: &str = "bootstrap::app_discovery::zk_scale_tests::consumer_child";
const WAIT: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, Copy)]
struct Size {
    apps: usize,
    interfaces: usize,
    instances: usize,
}

impl Size {
    fn from_env() -> Size {
        Size {
            apps: super::scale_knob("APPSCALE_APPS", 100),
            interfaces: super::scale_knob("APPSCALE_INTERFACES", 10),
            instances: super::scale_knob("APPSCALE_INSTANCES", 10),
        }
    }

    fn urls(&self) -> usize {
        self.apps * self.interfaces * self.instances
    }
}

fn app(a: usize) -> String {
    format!("appscale-app-{a}")
}

fn interface(a: usize, m: usize) -> String {
    format!("org.apache.dubbo.scale.App{a}Service{m}")
}

fn host(a: usize, k: usize) -> String {
    format!("10.{}.{}.{}", a % 250, k / 250, k % 250)
}

/// The provider URL a Java 3.3.6 provider registers at interface level.
fn provider_url(a: usize, m: usize, k: usize) -> Url {
    let iface = interface(a, m);
    Url::parse(&format!(
        "dubbo://{}:20880/{iface}?anyhost=true&application={}&background=false&deprecated=false&dubbo=2.0.2&dynamic=true&generic=false&interface={iface}&methods=sayHello,sayHelloAsync&pid=1234&prefer.serialization=hessian2,fastjson2&release=3.3.6&service-name-mapping=true&side=provider&timestamp=1700000000000",
        host(a, k),
        app(a)
    ))
    .unwrap()
}

fn metadata(a: usize, size: Size) -> MetadataInfo {
    let mut info = MetadataInfo::new(app(a));
    for m in 0..size.interfaces {
        info.add_service(ServiceInfo::from_url(&provider_url(a, m, 0)));
    }
    info
}

/// The MetadataService V1 URL a Java 3.3.6 provider of application `a` exports beside
/// its services (group the application, version 1.0.0), on its instance `k`.
fn metadata_service_url(a: usize, k: usize) -> Url {
    let iface = keys::METADATA_SERVICE_INTERFACE;
    Url::parse(&format!(
        "dubbo://{}:20880/{iface}?anyhost=true&application={app}&deprecated=false&dubbo=2.0.2&dynamic=true&generic=false&group={app}&interface={iface}&methods=exportInstanceMetadata,getAndListenInstanceMetadata,getExportedServiceURLs,getExportedURLs,getInstanceMetadataChangedListenerMap,getMetadataInfo,getMetadataInfos,getMetadataURL,getServiceDefinition,getSubscribedURLs,isMetadataService,serviceName,toSortedStrings,version&pid=1234&prefer.serialization=hessian2,fastjson2&release=3.3.6&side=provider&timestamp=1700000000000&version={}",
        host(a, k),
        keys::METADATA_SERVICE_VERSION,
        app = app(a),
    ))
    .unwrap()
}

/// The instance node of application `a`'s instance `k` as a provider writes it: its
/// metadata set by the provider's own [`super::fill_instance_metadata`] (revision,
/// storage type, MetadataService V1's `dubbo.metadata-service.url-params`, `meta-v`,
/// the service URL's `timestamp`), as Java 3.3.6 writes it too (`JAVA_NODE` in
/// `rubbo-metadata`). Each instance has its own start time, as in a fleet whose
/// providers did not start in the same millisecond.
fn instance(a: usize, k: usize, revision: &str, storage: &str, size: Size) -> ServiceInstance {
    let started = 1_700_000_000_000u64 + (a * size.instances + k) as u64 * 1_009;
    let first = provider_url(a, 0, k).with_param(keys::TIMESTAMP_KEY, started.to_string());
    let mut i = ServiceInstance::new(app(a), host(a, k), 20880);
    i.set_endpoints(&[Endpoint {
        port: 20880,
        protocol: "dubbo".into(),
    }]);
    super::fill_instance_metadata(
        &mut i,
        revision,
        storage == "remote",
        Some(&metadata_service_url(a, k)),
        keys::METADATA_SERVICE_VERSION,
        &first,
    );
    i
}

/// A TCP proxy to `target` counting the bytes each way: (client to server, server to
/// client).
/// Also splits what the client sends into ZooKeeper requests and counts them by
/// operation (see [`Requests`]).
#[derive(Debug, Clone)]
struct Counted {
    address: String,
    up: Arc<AtomicU64>,
    down: Arc<AtomicU64>,
    requests: Arc<Mutex<Requests>>,
}

/// The requests a client sent, by ZooKeeper operation: (count, bytes with their
/// 4-byte length prefix).
#[derive(Debug, Default, Clone)]
struct Requests {
    by_op: std::collections::BTreeMap<&'static str, (u64, u64)>,
    /// The bytes of a request not complete yet.
    partial: Vec<u8>,
    /// Whether the connect request (which has no request header) was seen.
    connected: bool,
}

impl Requests {
    fn name(op: i32) -> &'static str {
        match op {
            1 => "create",
            2 => "delete",
            3 => "exists",
            4 => "getData",
            5 => "setData",
            8 => "getChildren",
            11 => "ping",
            12 => "getChildren2",
            15 => "create2",
            101 => "setWatches",
            105 => "setWatches2",
            106 => "addWatch",
            _ => "other",
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        self.partial.extend_from_slice(bytes);
        let mut at = 0;
        while self.partial.len() - at >= 4 {
            let len = u32::from_be_bytes(self.partial[at..at + 4].try_into().unwrap()) as usize;
            if self.partial.len() - at < 4 + len {
                break;
            }
            let frame = &self.partial[at + 4..at + 4 + len];
            let name = if !self.connected {
                self.connected = true;
                "connect"
            } else if frame.len() >= 8 {
                Self::name(i32::from_be_bytes(frame[4..8].try_into().unwrap()))
            } else {
                "other"
            };
            let e = self.by_op.entry(name).or_default();
            e.0 += 1;
            e.1 += 4 + len as u64;
            at += 4 + len;
        }
        self.partial.drain(..at);
    }

    /// `op count-per-unit × mean bytes`, by operation; pings and the connect left out.
    fn summary(&self, per: u64) -> String {
        self.by_op
            .iter()
            .filter(|(op, _)| !matches!(**op, "ping" | "connect"))
            .map(|(op, (n, b))| {
                format!(
                    "{op} {:.2} × {:.0} B",
                    *n as f64 / per.max(1) as f64,
                    *b as f64 / (*n).max(1) as f64
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Counted {
    async fn start(target: String) -> Counted {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let up = Arc::new(AtomicU64::new(0));
        let down = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(Mutex::new(Requests::default()));
        let (u, d, r) = (up.clone(), down.clone(), requests.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&target).await else {
                    continue;
                };
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                // One connection at a time is decoded: the writers here open one.
                *r.lock() = Requests::default();
                tokio::spawn(pipe(cr, sw, u.clone(), Some(r.clone())));
                tokio::spawn(pipe(sr, cw, d.clone(), None));
            }
        });
        Counted {
            address,
            up,
            down,
            requests,
        }
    }

    /// The requests sent so far, and their bytes; [`Requests::partial`] left out.
    fn requests(&self) -> Requests {
        let mut r = self.requests.lock().clone();
        r.partial.clear();
        r
    }

    fn counts(&self) -> (u64, u64) {
        (
            self.up.load(Ordering::SeqCst),
            self.down.load(Ordering::SeqCst),
        )
    }
}

async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    count: Arc<AtomicU64>,
    requests: Option<Arc<Mutex<Requests>>>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                count.fetch_add(n as u64, Ordering::SeqCst);
                if let Some(r) = &requests {
                    r.lock().feed(&buf[..n]);
                }
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Sums path and data lengths of `path` and every node below it.
async fn stored(client: &zookeeper_client::Client, path: &str) -> (u64, u64) {
    let mut nodes = 0;
    let mut bytes = 0;
    let mut todo = vec![path.to_owned()];
    while let Some(p) = todo.pop() {
        let Ok((data, _)) = client.get_data(&p).await else {
            continue;
        };
        nodes += 1;
        bytes += (p.len() + data.len()) as u64;
        for c in client.list_children(&p).await.unwrap_or_default() {
            todo.push(if p == "/" {
                format!("/{c}")
            } else {
                format!("{p}/{c}")
            });
        }
    }
    (nodes, bytes)
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The provider URLs kept by interface, and their count.
type Kept = Arc<Mutex<(HashMap<String, Vec<Url>>, usize)>>;

/// A listener keeping each interface's provider URLs (the `dubbo://` ones of its last
/// list that had any); `total` is their count.
fn keeper() -> (SharedListener, Kept) {
    let kept: Kept = Arc::default();
    let k = kept.clone();
    let listener: SharedListener = Arc::new(move |urls: Vec<Url>| {
        let providers: Vec<Url> = urls
            .into_iter()
            .filter(|u| u.protocol() == Some("dubbo"))
            .collect();
        let Some(iface) = providers
            .first()
            .and_then(|u| u.service_interface())
            .map(str::to_owned)
        else {
            return;
        };
        let mut g = k.lock();
        g.0.insert(iface, providers);
        g.1 = g.0.values().map(Vec::len).sum::<usize>();
    });
    (listener, kept)
}

async fn wait_total(kept: &Mutex<(HashMap<String, Vec<Url>>, usize)>, want: usize) -> Duration {
    let start = Instant::now();
    loop {
        let have = kept.lock().1;
        if have == want {
            return start.elapsed();
        }
        assert!(start.elapsed() < WAIT, "{have} of {want} provider URLs");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn consumer_url(iface: &str) -> Url {
    subscribe_url(
        &Url::parse(&format!(
            "consumer://127.0.0.1/{iface}?interface={iface}&application=appscale-consumer&side=consumer&check=false"
        ))
        .unwrap(),
    )
}

/// The consumer process: subscribes to every interface at the level of
/// `APPSCALE_CHILD`, prints one `APPSCALE-CHILD` line of figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by zk_scale_interface_vs_application as a child process"]
async fn consumer_child() {
    let Ok(level) = std::env::var(CHILD_ENV) else {
        return;
    };
    let size = Size::from_env();
    let zk = std::env::var(ZK_ENV).unwrap();
    let registry_url = Url::parse(&format!("zookeeper://{zk}?timeout=30000")).unwrap();
    let (listener, kept) = keeper();
    let ifaces: Vec<String> = (0..size.apps)
        .flat_map(|a| (0..size.interfaces).map(move |m| interface(a, m)))
        .collect();
    let (before, took, after, holder): (u64, Duration, u64, Box<dyn std::any::Any>) =
        if level == "interface" {
            let r = ZookeeperRegistry::connect(registry_url).await.unwrap();
            // Warm: one subscription of an interface nobody provides.
            r.subscribe(
                consumer_url("org.apache.dubbo.scale.Warmup"),
                listener.clone(),
            )
            .await
            .unwrap();
            let before = rss_kb();
            let start = Instant::now();
            for i in &ifaces {
                r.subscribe(consumer_url(i), listener.clone())
                    .await
                    .unwrap();
            }
            wait_total(&kept, size.urls()).await;
            (before, start.elapsed(), rss_kb(), Box::new(r))
        } else {
            let d = Arc::new(
                ZookeeperServiceDiscovery::connect(registry_url.clone())
                    .await
                    .unwrap(),
            );
            let fetcher = ServiceFetcher {
                protocols: Arc::new(crate::bootstrap::protocols()),
                timeout: Duration::from_secs(10),
                metadata_service_port: None,
                reports: vec![d.clone()],
            };
            let registry = ServiceDiscoveryRegistry::new(
                registry_url.with_protocol("service-discovery-registry"),
                vec![Backend {
                    report: Some(d.clone()),
                    ..Backend::given(d.clone())
                }],
                Arc::new(fetcher),
                Backoff::default(),
                Duration::from_secs(10),
            );
            registry
                .subscribe(
                    consumer_url("org.apache.dubbo.scale.Warmup"),
                    listener.clone(),
                )
                .await
                .unwrap();
            let before = rss_kb();
            let start = Instant::now();
            let subs = futures::stream::iter(&ifaces)
                .map(|i| registry.subscribe(consumer_url(i), listener.clone()))
                .buffer_unordered(16)
                .collect::<Vec<_>>()
                .await;
            assert!(subs.iter().all(Result::is_ok));
            wait_total(&kept, size.urls()).await;
            (before, start.elapsed(), rss_kb(), Box::new((registry, d)))
        };
    println!(
        "\nAPPSCALE-CHILD {level} {before} {after} {} {}",
        took.as_millis(),
        kept.lock().1
    );
    if std::env::var_os(WRAP_ENV).is_some() {
        std::process::exit(0);
    }
    drop(holder);
}

struct ChildFigures {
    rss_before_kb: u64,
    rss_after_kb: u64,
    full_ms: u64,
    urls: u64,
    pushed: u64,
}

async fn run_child(level: &str, zk_address: &str, size: Size) -> ChildFigures {
    let proxy = Counted::start(zk_address.to_owned()).await;
    let exe = std::env::current_exe().unwrap();
    let wrap: Vec<String> = std::env::var(WRAP_ENV)
        .map(|w| w.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    let mut command = match wrap.split_first() {
        Some((program, args)) => {
            let mut c = tokio::process::Command::new(program);
            c.args(args).arg(exe);
            c
        }
        None => tokio::process::Command::new(exe),
    };
    let run = command
        .args([
            TEST_PATH,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, level)
        .env(ZK_ENV, &proxy.address)
        .env("APPSCALE_APPS", size.apps.to_string())
        .env("APPSCALE_INTERFACES", size.interfaces.to_string())
        .env("APPSCALE_INSTANCES", size.instances.to_string())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(WAIT, run).await.unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{level} consumer: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("APPSCALE-CHILD ").map(|(_, f)| f))
        .unwrap_or_else(|| panic!("no figures from the {level} consumer: {stdout}"));
    let f: Vec<u64> = line
        .split(' ')
        .skip(1)
        .map(|v| v.parse().unwrap())
        .collect();
    ChildFigures {
        rss_before_kb: f[0],
        rss_after_kb: f[1],
        full_ms: f[2],
        urls: f[3],
        pushed: proxy.counts().1,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "scale bench on a real ZooKeeper: a few minutes at 100 x 10 x 10"]
async fn zk_scale_interface_vs_application() {
    let size = Size::from_env();
    let server = zk::ZkServer::start();
    let zk_address = server.url().trim_start_matches("zookeeper://").to_owned();
    let raw = zookeeper_client::Client::connect(&zk_address)
        .await
        .unwrap();

    // Interface level: every (interface, instance) URL, through one registry.
    let proxy = Counted::start(zk_address.clone()).await;
    let registry = ZookeeperRegistry::connect(
        Url::parse(&format!("zookeeper://{}?timeout=30000", proxy.address)).unwrap(),
    )
    .await
    .unwrap();
    let urls: Vec<Url> = (0..size.apps)
        .flat_map(|a| {
            (0..size.interfaces)
                .flat_map(move |m| (0..size.instances).map(move |k| provider_url(a, m, k)))
        })
        .collect();
    let start = Instant::now();
    let written = futures::stream::iter(urls)
        .map(|u| registry.register(u))
        .buffer_unordered(64)
        .collect::<Vec<_>>()
        .await;
    assert!(written.iter().all(Result::is_ok));
    let iface_written = proxy.counts().0;
    println!(
        "interface level, requests per provider URL: {}",
        proxy.requests().summary(size.urls() as u64)
    );
    println!(
        "interface level: {} URLs written in {:?}",
        size.urls(),
        start.elapsed()
    );
    let mut iface_stored = (0, 0);
    for a in 0..size.apps {
        for m in 0..size.interfaces {
            let (n, b) = stored(&raw, &format!("/dubbo/{}", interface(a, m))).await;
            iface_stored.0 += n;
            iface_stored.1 += b;
        }
    }

    // Application level: instances, mappings and metadata, through one discovery.
    let (app_written, app_phases, discovery) =
        write_application_level(&zk_address, size, "remote").await;
    let app_stored = stored_application_level(&raw, size).await;
    let i = run_child("interface", &zk_address, size).await;
    let a = run_child("application", &zk_address, size).await;
    assert_eq!(i.urls, size.urls() as u64);
    assert_eq!(a.urls, size.urls() as u64);
    let instances = (size.apps * size.instances) as f64;
    let per = |c: &ChildFigures| (c.rss_after_kb.saturating_sub(c.rss_before_kb)) as f64;
    println!(
        "\n{} apps x {} interfaces x {} instances ({} provider URLs, {} instances)\n",
        size.apps,
        size.interfaces,
        size.instances,
        size.urls(),
        instances
    );
    println!(
        "| level | bytes written (wire) | stored: nodes / bytes | bytes pushed to the consumer | consumer RSS kB before -> after | RSS growth per instance, KiB | full push |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, w, s, c) in [
        ("interface", iface_written, iface_stored, &i),
        ("application", app_written, app_stored, &a),
    ] {
        println!(
            "| {name} | {w} | {} / {} | {} | {} -> {} | {:.2} | {} ms |",
            s.0,
            s.1,
            c.pushed,
            c.rss_before_kb,
            c.rss_after_kb,
            per(c) / instances,
            c.full_ms
        );
    }
    println!(
        "\napp/interface: written {:.3} (wire) {:.3} (stored), pushed {:.3}, consumer memory {:.3}",
        app_written as f64 / iface_written as f64,
        app_stored.1 as f64 / iface_stored.1 as f64,
        a.pushed as f64 / i.pushed as f64,
        per(&a) / per(&i).max(1.0),
    );

    // Java's default storage type, `local`: the MetadataInfo stays in the provider
    // (its MetadataService), the registry gets the mappings and instances only. Written
    // again from nothing: the `remote` pass's instances, parents and mappings removed.
    discovery.destroy().await;
    drop(discovery);
    for a in 0..size.apps {
        raw.delete(&format!("/services/{}", app(a)), None)
            .await
            .unwrap();
        let metadata_path = format!("/dubbo/metadata/{}", app(a));
        let revision = metadata(a, size).revision().to_owned();
        raw.delete(&format!("{metadata_path}/{revision}"), None)
            .await
            .unwrap();
        raw.delete(&metadata_path, None).await.unwrap();
        for m in 0..size.interfaces {
            raw.delete(&format!("/dubbo/mapping/{}", interface(a, m)), None)
                .await
                .unwrap();
        }
    }
    let (local_written, local_phases, discovery) =
        write_application_level(&zk_address, size, "local").await;
    let local_stored = stored_application_level(&raw, size).await;
    println!("\nwritten by the application level, by part (wire bytes; requests per unit):\n");
    println!("| storage type | part | bytes | per unit | requests per unit |");
    println!("|---|---|---|---|---|");
    for (storage, phases) in [("remote", &app_phases), ("local", &local_phases)] {
        for p in phases {
            println!(
                "| {storage} | {} | {} | {:.0} | {} |",
                p.name,
                p.bytes,
                p.bytes as f64 / p.units.max(1) as f64,
                p.requests
            );
        }
    }
    println!(
        "\nlocal: written {local_written} (wire), stored {} / {}; app(local)/interface: written {:.3} (wire) {:.3} (stored)",
        local_stored.0,
        local_stored.1,
        local_written as f64 / iface_written as f64,
        local_stored.1 as f64 / iface_stored.1 as f64,
    );
    discovery.destroy().await;
    drop(registry);
}

/// What one part of the application-level writing sent.
struct Phase {
    name: &'static str,
    /// Applications, interfaces or instances written.
    units: u64,
    bytes: u64,
    /// [`Requests::summary`] per unit.
    requests: String,
}

/// The requests in `after` that are not in `before`.
fn since(before: &Requests, after: &Requests) -> Requests {
    let mut d = after.clone();
    for (op, (n, b)) in &before.by_op {
        let e = d.by_op.entry(op).or_default();
        e.0 -= n;
        e.1 -= b;
    }
    d.by_op.retain(|_, (n, _)| *n > 0);
    d
}

/// Writes the application level of `size` through one `ZookeeperServiceDiscovery` and
/// a counting proxy: for each application its MetadataInfo (storage type `remote`
/// only), the mapping of each interface, its instances. Returns the bytes written,
/// by part, and the discovery (its instances are ephemeral).
async fn write_application_level(
    zk_address: &str,
    size: Size,
    storage: &str,
) -> (u64, Vec<Phase>, ZookeeperServiceDiscovery) {
    let proxy = Counted::start(zk_address.to_owned()).await;
    let discovery = ZookeeperServiceDiscovery::connect(
        Url::parse(&format!("zookeeper://{}?timeout=30000", proxy.address)).unwrap(),
    )
    .await
    .unwrap();
    let start_bytes = proxy.counts().0;
    let mut totals: [(u64, Requests); 3] = Default::default();
    let start = Instant::now();
    for a in 0..size.apps {
        let info = metadata(a, size);
        let mut mark = (proxy.counts().0, proxy.requests());
        let mut account = |part: usize, proxy: &Counted| {
            let now = (proxy.counts().0, proxy.requests());
            let t = &mut totals[part];
            t.0 += now.0 - mark.0;
            let d = since(&mark.1, &now.1);
            for (op, (n, b)) in d.by_op {
                let e = t.1.by_op.entry(op).or_default();
                e.0 += n;
                e.1 += b;
            }
            mark = now;
        };
        if storage == "remote" {
            discovery.publish_metadata(&info).await.unwrap();
        }
        account(0, &proxy);
        for m in 0..size.interfaces {
            discovery.map(&interface(a, m), &app(a)).await.unwrap();
        }
        account(1, &proxy);
        let regs = (0..size.instances)
            .map(|k| discovery.register(instance(a, k, info.revision(), storage, size)));
        for r in futures::future::join_all(regs).await {
            r.unwrap();
        }
        account(2, &proxy);
    }
    let written = proxy.counts().0 - start_bytes;
    println!(
        "application level ({storage}): {} instances written in {:?}",
        size.apps * size.instances,
        start.elapsed()
    );
    let units = [
        size.apps,
        size.apps * size.interfaces,
        size.apps * size.instances,
    ];
    let phases = ["MetadataInfo", "mapping", "instance"]
        .into_iter()
        .zip(units)
        .zip(totals)
        .filter(|((_, _), (bytes, _))| *bytes > 0)
        .map(|((name, units), (bytes, requests))| Phase {
            name,
            units: units as u64,
            bytes,
            requests: requests.summary(units as u64),
        })
        .collect();
    (written, phases, discovery)
}

/// Nodes and bytes (path + data) stored under what the application level writes.
async fn stored_application_level(raw: &zookeeper_client::Client, size: Size) -> (u64, u64) {
    let mut app_stored = (0, 0);
    for a in 0..size.apps {
        for p in [
            format!("/services/{}", app(a)),
            format!("/dubbo/metadata/{}", app(a)),
        ] {
            let (n, b) = stored(raw, &p).await;
            app_stored.0 += n;
            app_stored.1 += b;
        }
        for m in 0..size.interfaces {
            let (n, b) = stored(raw, &format!("/dubbo/mapping/{}", interface(a, m))).await;
            app_stored.0 += n;
            app_stored.1 += b;
        }
    }
    app_stored
}

/// The bench's instance carries what a Java 3.3.6 provider's does (`JAVA_NODE` in
/// `rubbo-metadata`): the same six entries, the same url-params.
#[test]
fn the_bench_instance_is_a_providers() {
    let size = Size::from_env();
    let i = instance(3, 7, "e87870eed9f9d4ce5d65e26098f85b35", "local", size);
    assert_eq!(
        i.metadata.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            keys::ENDPOINTS,
            keys::METADATA_SERVICE_URL_PARAMS_PROPERTY_NAME,
            keys::EXPORTED_SERVICES_REVISION_PROPERTY_NAME,
            keys::METADATA_STORAGE_TYPE_PROPERTY_NAME,
            keys::METADATA_SERVICE_VERSION_NAME,
            keys::TIMESTAMP_KEY,
        ]
    );
    assert_eq!(
        i.metadata[keys::METADATA_SERVICE_URL_PARAMS_PROPERTY_NAME],
        r#"{"prefer.serialization":"hessian2,fastjson2","version":"1.0.0","dubbo":"2.0.2","release":"3.3.6","side":"provider","port":"20880","protocol":"dubbo"}"#
    );
    assert_eq!(i.metadata[keys::METADATA_SERVICE_VERSION_NAME], "1.0.0");
    // Each instance its own start time, of a timestamp's length.
    let other = instance(3, 8, "e87870eed9f9d4ce5d65e26098f85b35", "local", size);
    let (t, u) = (
        &i.metadata[keys::TIMESTAMP_KEY],
        &other.metadata[keys::TIMESTAMP_KEY],
    );
    assert_ne!(t, u);
    assert_eq!(t.len(), 13);
}
