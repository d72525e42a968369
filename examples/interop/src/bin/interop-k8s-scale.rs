//! The scale bench of Kubernetes discovery (issue 19), beside ZooKeeper's
//! application-level discovery in the same run:
//!
//! ```text
//! interop-k8s-scale --registry 'kubernetes://127.0.0.1:6443?...' --zookeeper 127.0.0.1:2181
//! ```
//!
//! For each backend, in a process of its own (the binary runs itself with `--backend`,
//! so one backend's heap does not lend freed memory to the other's figures):
//!
//! - **kubernetes**: 10 Services (`rubbo-scale-0..9`, selector `app=<name>`) with 100
//!   Pods each, annotated `io.dubbo/metadata` with the JSON a Rubbo provider writes
//!   (`rubbo_registry_kubernetes::parse::metadata_json` of an instance built as the
//!   provider builds it), and one EndpointSlice per Service written by the bench
//!   (`endpointslice.kubernetes.io/managed-by: rubbo-scale`, so the EndpointSlice
//!   controller leaves it alone): the figures are the discovery's, not the
//!   controller's. Pods get no status: the controller's own slices stay empty.
//! - **zookeeper**: the same 1,000 instances as the nodes `/services/{app}/{ip}:{port}`
//!   holding the Curator JSON `ServiceInstance::to_curator_json` writes (what
//!   `ZookeeperServiceDiscovery::register` writes), ephemeral, through one client (a
//!   session per instance would be 1,000 sessions).
//!
//! Then a `KubernetesServiceDiscovery` / `ZookeeperServiceDiscovery` is made and warmed
//! up (client connected, one watch of an absent application answered), `VmRSS` of
//! `/proc/self/status` is read, the 10 applications are watched until all 1,000
//! instances are seen (bounded), and `VmRSS` is read again: the growth per instance
//! counts everything the watches keep (the listed objects, the instance lists, the
//! tasks) and what the allocator keeps of what they freed.
//!
//! Churn: 10 % of the Pods are replaced, one at a time. Kubernetes: the 100 new Pods
//! are created (annotated) first, then each replacement is one EndpointSlice write
//! (the old endpoint out, the new one in), timed from the write returning to the
//! watch delivering a list with the new instance and without the old one; the old Pod
//! is then deleted. ZooKeeper: the new node is created (timed until the list has it),
//! then the old one deleted (timed until the list lacks it): two samples per
//! replacement. Every wait is bounded; everything created is deleted at the end.
//!
//! Prints a markdown table on stdout.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use clap::{Parser, ValueEnum};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client};
use rubbo_common::{Url, keys};
use rubbo_metadata::{
    InstancesWatch, MetadataInfo, ServiceDiscovery, ServiceInfo, ServiceInstance,
    metadata_service_url_params,
};
use rubbo_registry_kubernetes::parse::metadata_json;
use rubbo_registry_kubernetes::{KubernetesServiceDiscovery, METADATA_ANNOTATION, client_config};
use rubbo_registry_zookeeper::ZookeeperServiceDiscovery;
use zookeeper_client::{Acls, CreateMode};

const APPS: usize = 10;
const PODS_PER_APP: usize = 100;
const REPLACED_PER_APP: usize = 10;
const PORT: u16 = 20880;
const PREFIX: &str = "rubbo-scale";
const MANAGED_BY: &str = "rubbo-scale";
const SCALE_LABEL: &str = "rubbo-scale";
const WARMUP_APP: &str = "rubbo-scale-warmup";
/// Concurrent writes while setting up.
const WRITERS: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Backend {
    /// Both, each in a child process, then the table.
    All,
    Kubernetes,
    Zookeeper,
}

/// Kubernetes discovery at 1,000 instances with churn, beside ZooKeeper's.
#[derive(Debug, Parser)]
struct Args {
    /// The `kubernetes://` registry URL (API server, token, CA, namespace).
    #[arg(long)]
    registry: String,
    /// The ZooKeeper address, `host:port`.
    #[arg(long)]
    zookeeper: String,
    /// Which backend this process measures.
    #[arg(long, value_enum, default_value = "all")]
    backend: Backend,
    /// Bound on each wait for the watches (seconds).
    #[arg(long, default_value_t = 120)]
    wait: u64,
}

/// The figures of one backend: one markdown row.
#[derive(Debug)]
struct Figures {
    backend: &'static str,
    seen: usize,
    first_full: Duration,
    rss_before_kb: u64,
    rss_after_kb: u64,
    rss_churned_kb: u64,
    samples: Vec<Duration>,
    what: &'static str,
}

impl Figures {
    fn row(&self) -> String {
        let mut s = self.samples.clone();
        s.sort_unstable();
        let pick = |q: f64| {
            if s.is_empty() {
                return "-".to_owned();
            }
            let i = ((s.len() as f64 * q).ceil() as usize).clamp(1, s.len()) - 1;
            ms(s[i])
        };
        let per_instance =
            self.rss_after_kb.saturating_sub(self.rss_before_kb) as f64 / self.seen.max(1) as f64;
        format!(
            "| {} | {} | {} | {:.1} → {:.1} ({:.1} after churn) | {:.1} | {} × {} | {} | {} | {} |",
            self.backend,
            self.seen,
            ms(self.first_full),
            self.rss_before_kb as f64 / 1024.0,
            self.rss_after_kb as f64 / 1024.0,
            self.rss_churned_kb as f64 / 1024.0,
            per_instance,
            s.len(),
            self.what,
            pick(0.5),
            pick(0.99),
            s.last().map_or("-".to_owned(), |d| ms(*d)),
        )
    }
}

const HEADER: &str = "| backend | instances seen | all seen after | consumer RSS, MiB | RSS per instance, KiB | updates | p50 | p99 | max |\n|---|---|---|---|---|---|---|---|---|";

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// `VmRSS` of this process, in kB.
fn rss_kb() -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status").context("read /proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS in /proc/self/status")
}

fn app(a: usize) -> String {
    format!("{PREFIX}-{a}")
}

/// The pod IP of Pod `i` of application `a` (`i` ≥ 100: the replacements).
fn ip(a: usize, i: usize) -> String {
    format!("10.251.{}.{}", 10 + a, 1 + i)
}

fn pod_name(a: usize, i: usize) -> String {
    format!("{}-{i}", app(a))
}

/// The instance a Rubbo provider of `app` at `ip` registers, built as the bootstrap
/// builds it (revision of its MetadataInfo, endpoints, MetadataService parameters,
/// storage type, `meta-v`).
fn instance(app: &str, ip: &str) -> Result<ServiceInstance> {
    let service = Url::parse(&format!(
        "dubbo://{ip}:{PORT}/org.rubbo.interop.InteropService?application={app}&version=1.0.0&side=provider&methods=echo,whoami&release=0.1.0"
    ))
    .context("service URL")?;
    let metadata_service = Url::parse(&format!(
        "dubbo://{ip}:{PORT}/org.apache.dubbo.metadata.MetadataService?application={app}&group={app}&version=1.0.0&side=provider&dubbo=2.0.2&release=0.1.0"
    ))
    .context("MetadataService URL")?;
    let mut info = MetadataInfo::new(app);
    info.add_service(ServiceInfo::from_url(&service));
    let mut i = ServiceInstance::new(app, ip, PORT);
    i.set_endpoints(&[rubbo_metadata::Endpoint {
        port: PORT,
        protocol: "dubbo".into(),
    }]);
    let mut put = |k: &str, v: String| i.metadata.insert(k.to_owned(), v);
    put(
        keys::EXPORTED_SERVICES_REVISION_PROPERTY_NAME,
        info.revision().to_owned(),
    );
    put(keys::METADATA_STORAGE_TYPE_PROPERTY_NAME, "local".into());
    put(
        keys::METADATA_SERVICE_URL_PARAMS_PROPERTY_NAME,
        metadata_service_url_params(&metadata_service),
    );
    put(
        keys::METADATA_SERVICE_VERSION_NAME,
        keys::METADATA_SERVICE_VERSION.to_owned(),
    );
    Ok(i)
}

fn has(list: &[Arc<ServiceInstance>], ip: &str) -> bool {
    list.iter().any(|i| i.host == ip)
}

/// Waits (bounded) until the watch's list satisfies `cond`; the time it took.
async fn until(
    rx: &mut InstancesWatch,
    within: Duration,
    what: &str,
    cond: impl FnMut(&rubbo_metadata::InstanceList) -> bool,
) -> Result<()> {
    match tokio::time::timeout(within, rx.wait_for(cond)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(_)) => bail!("{what}: the watch ended"),
        Err(_) => bail!("{what}: not seen within {within:?}"),
    }
}

/// Watches the 10 applications (warm-up done by the caller) until all 1,000 instances
/// are seen: the watches, the time it took and the RSS after.
async fn watch_all(
    discovery: &dyn ServiceDiscovery,
    within: Duration,
) -> Result<(Vec<InstancesWatch>, Duration, u64)> {
    let t = Instant::now();
    let mut watches = futures::future::try_join_all((0..APPS).map(|a| {
        let name = app(a);
        async move { discovery.watch(&name).await.context(name) }
    }))
    .await?;
    for (a, rx) in watches.iter_mut().enumerate() {
        let left = within.saturating_sub(t.elapsed());
        until(rx, left, &app(a), |l| l.len() == PODS_PER_APP).await?;
    }
    let took = t.elapsed();
    Ok((watches, took, rss_kb()?))
}

fn seen(watches: &[InstancesWatch]) -> usize {
    watches.iter().map(|w| w.borrow().len()).sum()
}

// ---- Kubernetes ----

fn labels(a: usize) -> BTreeMap<String, String> {
    [
        ("app".to_owned(), app(a)),
        (SCALE_LABEL.to_owned(), "1".to_owned()),
    ]
    .into()
}

fn pod(a: usize, i: usize) -> Result<Pod> {
    let json = metadata_json(&instance(&app(a), &ip(a, i))?.metadata);
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": pod_name(a, i),
            "labels": labels(a),
            "annotations": { METADATA_ANNOTATION: json },
        },
        "spec": { "containers": [{ "name": "app", "image": "rubbo/none" }] },
    }))?)
}

fn endpoint(a: usize, i: usize, ns: &str) -> Endpoint {
    Endpoint {
        addresses: vec![ip(a, i)],
        conditions: Some(EndpointConditions {
            ready: Some(true),
            serving: Some(true),
            terminating: Some(false),
        }),
        target_ref: Some(k8s_openapi::api::core::v1::ObjectReference {
            kind: Some("Pod".into()),
            name: Some(pod_name(a, i)),
            namespace: Some(ns.to_owned()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn slice(a: usize, ns: &str) -> EndpointSlice {
    let mut labels = labels(a);
    labels.remove("app");
    labels.insert("kubernetes.io/service-name".into(), app(a));
    labels.insert(
        "endpointslice.kubernetes.io/managed-by".into(),
        MANAGED_BY.into(),
    );
    EndpointSlice {
        address_type: "IPv4".into(),
        endpoints: (0..PODS_PER_APP).map(|i| endpoint(a, i, ns)).collect(),
        metadata: ObjectMeta {
            name: Some(format!("{}-rubbo", app(a))),
            labels: Some(labels),
            ..Default::default()
        },
        ports: Some(vec![EndpointPort {
            name: Some("dubbo".into()),
            port: Some(i32::from(PORT)),
            protocol: Some("TCP".into()),
            ..Default::default()
        }]),
    }
}

fn service(a: usize) -> Result<Service> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": { "name": app(a), "labels": { SCALE_LABEL: "1" } },
        "spec": {
            "selector": { "app": app(a) },
            "ports": [{ "name": "dubbo", "port": PORT, "targetPort": PORT }],
        },
    }))?)
}

struct Cluster {
    services: Api<Service>,
    pods: Api<Pod>,
    slices: Api<EndpointSlice>,
}

impl Cluster {
    async fn clean(&self) -> Result<()> {
        let by_label = ListParams::default().labels(&format!("{SCALE_LABEL}=1"));
        let now = DeleteParams::default().grace_period(0);
        self.slices
            .delete_collection(&now, &by_label)
            .await
            .context("delete EndpointSlices")?;
        self.pods
            .delete_collection(&now, &by_label)
            .await
            .context("delete Pods")?;
        // Services have no deletecollection: one by one.
        for s in self
            .services
            .list(&by_label)
            .await
            .context("list Services")?
        {
            let name = s.metadata.name.unwrap_or_default();
            self.services
                .delete(&name, &now)
                .await
                .with_context(|| format!("delete Service {name}"))?;
        }
        Ok(())
    }
}

async fn create_all<T, I>(api: &Api<T>, objects: I, what: &str) -> Result<()>
where
    T: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
    I: IntoIterator<Item = T>,
{
    futures::stream::iter(objects)
        .map(|o| async move { api.create(&PostParams::default(), &o).await })
        .buffer_unordered(WRITERS)
        .try_collect::<Vec<_>>()
        .await
        .with_context(|| format!("create {what}"))?;
    Ok(())
}

async fn kubernetes(args: &Args) -> Result<Figures> {
    let within = Duration::from_secs(args.wait);
    let url = Url::parse(&args.registry).context("registry URL")?;
    let config = client_config(&url).await.context("kube config")?;
    let ns = config.default_namespace.clone();
    let client = Client::try_from(config).context("kube client")?;
    let cluster = Cluster {
        services: Api::namespaced(client.clone(), &ns),
        pods: Api::namespaced(client.clone(), &ns),
        slices: Api::namespaced(client.clone(), &ns),
    };
    cluster.clean().await.context("clean before")?;
    let result = kubernetes_run(&cluster, &url, &ns, within).await;
    let cleaned = cluster.clean().await.context("clean after");
    let figures = result?;
    cleaned?;
    Ok(figures)
}

async fn kubernetes_run(
    cluster: &Cluster,
    url: &Url,
    ns: &str,
    within: Duration,
) -> Result<Figures> {
    create_all(
        &cluster.services,
        (0..APPS).map(service).collect::<Result<Vec<_>>>()?,
        "Services",
    )
    .await?;
    let pods = (0..APPS)
        .flat_map(|a| (0..PODS_PER_APP).map(move |i| pod(a, i)))
        .collect::<Result<Vec<_>>>()?;
    create_all(&cluster.pods, pods, "Pods").await?;
    let mut slices = Vec::new();
    for a in 0..APPS {
        slices.push(
            cluster
                .slices
                .create(&PostParams::default(), &slice(a, ns))
                .await
                .context("create EndpointSlice")?,
        );
    }

    // The consumer: connected and warmed up (one watch answered) before the reading.
    let discovery = KubernetesServiceDiscovery::connect(url)
        .await
        .context("connect the discovery")?;
    let warm = discovery.watch(WARMUP_APP).await.context("warm-up watch")?;
    let before = rss_kb()?;
    let (mut watches, first_full, after) = watch_all(&discovery, within).await?;
    let count = seen(&watches);

    // Churn: the new Pods first, then one slice write per replacement.
    let new_pods = (0..APPS)
        .flat_map(|a| (0..REPLACED_PER_APP).map(move |r| pod(a, PODS_PER_APP + r)))
        .collect::<Result<Vec<_>>>()?;
    create_all(&cluster.pods, new_pods, "replacement Pods").await?;
    let mut samples = Vec::new();
    for r in 0..REPLACED_PER_APP {
        for (a, slice) in slices.iter_mut().enumerate() {
            let (old, new) = (r, PODS_PER_APP + r);
            let (old_ip, new_ip) = (ip(a, old), ip(a, new));
            slice
                .endpoints
                .retain(|e| e.addresses.first() != Some(&old_ip));
            slice.endpoints.push(endpoint(a, new, ns));
            let name = slice.metadata.name.clone().unwrap_or_default();
            let t = Instant::now();
            *slice = cluster
                .slices
                .replace(&name, &PostParams::default(), slice)
                .await
                .with_context(|| format!("replace EndpointSlice {name}"))?;
            until(&mut watches[a], within, &new_ip, |l| {
                has(l, &new_ip) && !has(l, &old_ip)
            })
            .await?;
            samples.push(t.elapsed());
            cluster
                .pods
                .delete(&pod_name(a, old), &DeleteParams::default().grace_period(0))
                .await
                .context("delete a replaced Pod")?;
        }
    }
    let churned = rss_kb()?;
    ensure!(
        seen(&watches) == APPS * PODS_PER_APP,
        "instances lost in the churn"
    );
    drop(warm);
    discovery.destroy().await;
    Ok(Figures {
        backend: "kubernetes (EndpointSlices)",
        seen: count,
        first_full,
        rss_before_kb: before,
        rss_after_kb: after,
        rss_churned_kb: churned,
        samples,
        what: "slice writes",
    })
}

// ---- ZooKeeper ----

async fn zookeeper(args: &Args) -> Result<Figures> {
    let within = Duration::from_secs(args.wait);
    let writer = zookeeper_client::Client::connector()
        .with_session_timeout(Duration::from_secs(30))
        .connect(&args.zookeeper)
        .await
        .with_context(|| format!("connect to ZooKeeper {}", args.zookeeper))?;
    let result = zookeeper_run(&writer, args, within).await;
    let cleaned = zk_clean(&writer).await;
    let figures = result?;
    cleaned?;
    Ok(figures)
}

fn zk_path(i: &ServiceInstance) -> String {
    format!("/services/{}/{}", i.service_name, i.id())
}

async fn zk_create(writer: &zookeeper_client::Client, i: &ServiceInstance) -> Result<()> {
    let path = zk_path(i);
    writer
        .create(
            &path,
            i.to_curator_json().as_bytes(),
            &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
        )
        .await
        .with_context(|| format!("create {path}"))?;
    Ok(())
}

async fn zk_clean(writer: &zookeeper_client::Client) -> Result<()> {
    let apps = (0..APPS).map(app).chain([WARMUP_APP.to_owned()]);
    for a in apps {
        let dir = format!("/services/{a}");
        let children = match writer.list_children(&dir).await {
            Ok(c) => c,
            Err(zookeeper_client::Error::NoNode) => continue,
            Err(e) => return Err(e).with_context(|| format!("list {dir}")),
        };
        for c in children {
            match writer.delete(&format!("{dir}/{c}"), None).await {
                Ok(()) | Err(zookeeper_client::Error::NoNode) => {}
                Err(e) => return Err(e).with_context(|| format!("delete {dir}/{c}")),
            }
        }
        match writer.delete(&dir, None).await {
            Ok(()) | Err(zookeeper_client::Error::NoNode) => {}
            Err(e) => return Err(e).with_context(|| format!("delete {dir}")),
        }
    }
    Ok(())
}

async fn zookeeper_run(
    writer: &zookeeper_client::Client,
    args: &Args,
    within: Duration,
) -> Result<Figures> {
    zk_clean(writer).await.context("clean before")?;
    let dirs = CreateMode::Persistent.with_acls(Acls::anyone_all());
    for a in 0..APPS {
        let dir = format!("/services/{}", app(a));
        writer
            .mkdir(&dir, &dirs)
            .await
            .with_context(|| format!("mkdir {dir}"))?;
    }
    let instances = (0..APPS)
        .flat_map(|a| (0..PODS_PER_APP).map(move |i| instance(&app(a), &ip(a, i))))
        .collect::<Result<Vec<_>>>()?;
    futures::stream::iter(&instances)
        .map(|i| zk_create(writer, i))
        .buffer_unordered(WRITERS)
        .try_collect::<Vec<_>>()
        .await?;
    drop(instances);

    let url = Url::parse(&format!("zookeeper://{}", args.zookeeper)).context("ZooKeeper URL")?;
    let discovery = ZookeeperServiceDiscovery::connect(url)
        .await
        .context("connect the discovery")?;
    let warm = discovery.watch(WARMUP_APP).await.context("warm-up watch")?;
    // The warm-up app has no node: its watch's first value is an empty list already;
    // one read of the server proves the session.
    discovery
        .instances(WARMUP_APP)
        .await
        .context("warm-up read")?;
    let before = rss_kb()?;
    let (mut watches, first_full, after) = watch_all(&discovery, within).await?;
    let count = seen(&watches);

    let mut samples = Vec::new();
    for r in 0..REPLACED_PER_APP {
        for (a, rx) in watches.iter_mut().enumerate() {
            let (old_ip, new_ip) = (ip(a, r), ip(a, PODS_PER_APP + r));
            let new = instance(&app(a), &new_ip)?;
            let t = Instant::now();
            zk_create(writer, &new).await?;
            until(rx, within, &new_ip, |l| has(l, &new_ip)).await?;
            samples.push(t.elapsed());
            let old = zk_path(&ServiceInstance::new(app(a), old_ip.clone(), PORT));
            let t = Instant::now();
            writer
                .delete(&old, None)
                .await
                .with_context(|| format!("delete {old}"))?;
            until(rx, within, &old_ip, |l| !has(l, &old_ip)).await?;
            samples.push(t.elapsed());
        }
    }
    let churned = rss_kb()?;
    ensure!(
        seen(&watches) == APPS * PODS_PER_APP,
        "instances lost in the churn"
    );
    drop(warm);
    discovery.destroy().await;
    Ok(Figures {
        backend: "zookeeper (/services)",
        seen: count,
        first_full,
        rss_before_kb: before,
        rss_after_kb: after,
        rss_churned_kb: churned,
        samples,
        what: "node writes",
    })
}

/// Runs this binary for one backend and returns its table row.
async fn child(args: &Args, backend: &str) -> Result<String> {
    let exe = std::env::current_exe().context("current_exe")?;
    let bound = Duration::from_secs(args.wait * 4 + 120);
    let run = tokio::process::Command::new(exe)
        .args(["--registry", &args.registry, "--zookeeper", &args.zookeeper])
        .args(["--backend", backend, "--wait", &args.wait.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(bound, run)
        .await
        .with_context(|| format!("{backend} bench not done within {bound:?}"))?
        .with_context(|| format!("run the {backend} bench"))?;
    ensure!(out.status.success(), "{backend} bench: {}", out.status);
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .find(|l| l.starts_with("| "))
        .map(str::to_owned)
        .with_context(|| format!("{backend} bench printed no row"))
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match args.backend {
        Backend::All => {
            let k = child(&args, "kubernetes").await?;
            let z = child(&args, "zookeeper").await?;
            println!("{HEADER}\n{k}\n{z}");
        }
        Backend::Kubernetes => println!("{}", kubernetes(&args).await?.row()),
        Backend::Zookeeper => println!("{}", zookeeper(&args).await?.row()),
    }
    Ok(())
}
