//! The registry protocol (Java's `RegistryProtocol`): exporting through a
//! `registry://...&export=<encoded provider URL>` URL serves the provider with its own
//! protocol and registers it; referring through `registry://...&refer=<encoded consumer
//! parameters>` subscribes, keeps a dynamic directory up to date from the
//! notifications, and returns the cluster invoker over it.

use std::sync::Arc;
use std::time::Duration;

use rubbo_cluster::router::SingleConditionRouter;
use rubbo_cluster::{ClusterContext, Directory, DynamicDirectory, InvokerFactory};
use rubbo_common::keys::{self, Check};
use rubbo_common::{
    BoxFuture, BoxInvoker, ErrorKind, Exporter, ExtensionTable, Invocation, InvokeFuture, Invoker,
    Protocol, RpcError, Url,
};
use rubbo_registry::{
    CONFIGURATORS_CATEGORY, OVERRIDE_PROTOCOL, PROVIDERS_CATEGORY, ROUTERS_CATEGORY,
    RegistryFactory, SharedListener, SharedRegistry, consumer_register_url, get_registry,
    list_category, resolve_registry_url, should_register, subscribe_url,
};
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

/// How long a `check=true` reference waits for its first provider list.
const CHECK_WAIT: Duration = Duration::from_secs(5);

/// A configuration mistake, reported to the caller.
pub(crate) fn config_err(msg: impl Into<Arc<str>>) -> RpcError {
    RpcError::new(ErrorKind::Unknown, msg)
}

fn registry_err(e: rubbo_registry::RegistryError) -> RpcError {
    RpcError::new(ErrorKind::Registry, e.to_string()).with_source(e)
}

/// The `registry` extension of [`Protocol`]. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct RegistryProtocol {
    protocols: Arc<ExtensionTable<dyn Protocol>>,
    registries: Arc<ExtensionTable<dyn RegistryFactory>>,
    cluster: ClusterContext,
}

impl RegistryProtocol {
    /// A registry protocol serving and referring with `protocols`, reaching registries
    /// through `registries`, and joining directories with `cluster`.
    pub fn new(
        protocols: Arc<ExtensionTable<dyn Protocol>>,
        registries: Arc<ExtensionTable<dyn RegistryFactory>>,
        cluster: ClusterContext,
    ) -> Self {
        RegistryProtocol {
            protocols,
            registries,
            cluster,
        }
    }

    /// Registers an already exported provider in one more registry; unexporting the
    /// returned handle unregisters it (the server is left to its own exporter).
    pub async fn register_only(
        &self,
        registry_url: &Url,
        exported: BoxInvoker,
        provider: Url,
    ) -> Result<Box<dyn Exporter>, RpcError> {
        let registry = self.registry(registry_url).await?;
        registry
            .register(provider.clone())
            .await
            .map_err(registry_err)?;
        Ok(Box::new(RegistryExporter {
            inner: Box::new(Registered(exported)),
            registry,
            registered: provider,
        }))
    }

    async fn registry(&self, url: &Url) -> Result<SharedRegistry, RpcError> {
        let registry_url =
            resolve_registry_url(url).without_params(&[keys::EXPORT_KEY, keys::REFER_KEY]);
        get_registry(&self.registries, &registry_url)
            .await
            .map_err(registry_err)
    }
}

/// An invoker seen under another URL (the provider URL instead of the registry URL).
#[derive(Debug)]
struct WithUrl {
    inner: BoxInvoker,
    url: Url,
}

impl Invoker for WithUrl {
    fn invoke(&self, invocation: Invocation) -> InvokeFuture {
        self.inner.invoke(invocation)
    }
    fn url(&self) -> &Url {
        &self.url
    }
    fn is_available(&self) -> bool {
        self.inner.is_available()
    }
    fn destroy(&self) {
        self.inner.destroy()
    }
}

impl Protocol for RegistryProtocol {
    fn default_port(&self) -> u16 {
        9090
    }

    fn export(
        &self,
        invoker: BoxInvoker,
    ) -> BoxFuture<'static, Result<Box<dyn Exporter>, RpcError>> {
        let this = self.clone();
        Box::pin(async move {
            let reg_url = invoker.url().clone();
            let provider = reg_url
                .get_param_decoded(keys::EXPORT_KEY)
                .map_err(|e| config_err(format!("bad export= in {reg_url}: {e}")))?
                .ok_or_else(|| config_err(format!("no export= in registry URL {reg_url}")))?;
            let provider = Url::parse(&provider)
                .map_err(|e| config_err(format!("bad provider URL {provider}: {e}")))?;
            let name = provider.protocol().unwrap_or(keys::defaults::PROTOCOL);
            let protocol = this
                .protocols
                .get(name)
                .map_err(|e| config_err(e.to_string()))?;
            let registry = this.registry(&reg_url).await?;
            let exporter = protocol
                .export(Arc::new(WithUrl {
                    inner: invoker,
                    url: provider.clone(),
                }))
                .await?;
            let registered = exporter.url();
            if should_register(&registered) {
                registry
                    .register(registered.clone())
                    .await
                    .map_err(registry_err)?;
                info!(provider = %registered.address(), service = %registered.service_key(), registry = %registry.url().address(), "registered");
            }
            Ok(Box::new(RegistryExporter {
                inner: exporter,
                registry,
                registered,
            }) as Box<dyn Exporter>)
        })
    }

    fn refer(&self, url: Url) -> BoxFuture<'static, Result<BoxInvoker, RpcError>> {
        let this = self.clone();
        Box::pin(async move {
            let refer = url
                .get_param_decoded(keys::REFER_KEY)
                .map_err(|e| config_err(format!("bad refer= in {url}: {e}")))?
                .ok_or_else(|| config_err(format!("no refer= in registry URL {url}")))?;
            let params = Url::parse(&format!("?{refer}"))
                .map_err(|e| config_err(format!("bad refer= parameters {refer}: {e}")))?;
            let interface = params
                .get_param(keys::INTERFACE_KEY)
                .ok_or_else(|| config_err("refer= names no interface"))?
                .to_owned();
            let host = params
                .get_param("register.ip")
                .unwrap_or("127.0.0.1")
                .to_owned();
            let consumer = Url::parse(&format!("consumer://{host}/{interface}"))
                .map_err(|e| config_err(e.to_string()))?
                .with_params(params.params().iter())
                .with_param(keys::SIDE_KEY, keys::CONSUMER_SIDE);
            let registry = this.registry(&url).await?;

            let protocols = this.protocols.clone();
            // Dynamic configuration: override URLs from the `configurators` category.
            // They change the URL each provider is listed under (so a change re-refers
            // it), and are laid again over the URL merged with the consumer's, so an
            // override beats both sides, as in Java.
            let overrides: Arc<parking_lot::RwLock<Vec<Url>>> = Arc::default();
            let factory: InvokerFactory = {
                let overrides = overrides.clone();
                let application = consumer.get_param(keys::APPLICATION_KEY).map(str::to_owned);
                Arc::new(move |u: Url| {
                    let protocols = protocols.clone();
                    let u = configure(&u, &overrides.read(), application.as_deref());
                    Box::pin(async move {
                        let name = u.protocol().unwrap_or(keys::defaults::PROTOCOL).to_owned();
                        let p = protocols
                            .get(&name)
                            .map_err(|e| config_err(e.to_string()))?;
                        p.refer(u).await
                    })
                })
            };
            let directory = this.cluster.dynamic_directory(consumer.clone(), factory);

            // Notifications arrive on the registry's threads; one task applies them in
            // order, so a later list never loses to an earlier one.
            let (tx, mut rx) = mpsc::unbounded_channel::<Update>();
            let (first_tx, first_rx) = tokio::sync::oneshot::channel::<()>();
            let dir = directory.clone();
            let service = consumer.service_key();
            let task_overrides = overrides.clone();
            let application = consumer.get_param(keys::APPLICATION_KEY).map(str::to_owned);
            tokio::spawn(async move {
                let mut first = Some(first_tx);
                let mut providers: Option<Vec<Url>> = None;
                while let Some(update) = rx.recv().await {
                    match update {
                        Update::Providers(urls) => providers = Some(urls),
                        Update::Configurators(urls) => {
                            let rules: Vec<Url> = urls
                                .into_iter()
                                .filter(|u| u.protocol() == Some(OVERRIDE_PROTOCOL))
                                .collect();
                            info!(service, rules = rules.len(), "override rules replaced");
                            *task_overrides.write() = rules;
                        }
                    }
                    let Some(list) = &providers else { continue };
                    let listed: Vec<Url> = {
                        let rules = task_overrides.read();
                        list.iter()
                            .map(|p| configure(p, &rules, application.as_deref()))
                            .collect()
                    };
                    dir.notify(listed).await;
                    if let Some(f) = first.take() {
                        let _ = f.send(());
                    }
                }
                debug!(service, "subscription closed");
            });
            let routers = Arc::new(RegistryRouters::default());
            directory.router_chain().add_router(routers.clone());
            let listener: SharedListener = Arc::new(move |urls: Vec<Url>| {
                let category = urls
                    .first()
                    .map(list_category)
                    .unwrap_or(PROVIDERS_CATEGORY);
                match category {
                    PROVIDERS_CATEGORY => {
                        let _ = tx.send(Update::Providers(urls));
                    }
                    CONFIGURATORS_CATEGORY => {
                        let _ = tx.send(Update::Configurators(urls));
                    }
                    ROUTERS_CATEGORY => routers.replace(&urls),
                    other => debug!(
                        category = other,
                        count = urls.len(),
                        "configurators are not applied yet"
                    ),
                }
            });

            if should_register(&consumer) {
                if let Err(e) = registry.register(consumer_register_url(&consumer)).await {
                    warn!(error = %e, "consumer registration failed");
                }
            }
            let sub_url = subscribe_url(&consumer);
            registry
                .subscribe(sub_url.clone(), listener.clone())
                .await
                .map_err(registry_err)?;

            let check = consumer.param::<Check>();
            let wait = consumer.get_duration_ms("check.timeout", CHECK_WAIT.as_millis() as u64);
            let _ = tokio::time::timeout(wait, first_rx).await;
            if check && !directory.is_available() {
                let _ = registry.unsubscribe(sub_url, listener).await;
                return Err(RpcError::no_provider(format!(
                    "no provider available for {} in registry {} (check=true; set check=false to start without one)",
                    consumer.service_key(),
                    registry.url().address()
                )));
            }
            let invoker = this
                .cluster
                .join(directory.clone() as Arc<dyn Directory>)
                .map_err(|e| config_err(e.to_string()))?;
            Ok(Arc::new(RegistryInvoker {
                inner: invoker,
                directory,
                registry,
                subscription: sub_url,
                listener,
                consumer,
            }) as BoxInvoker)
        })
    }

    fn destroy(&self) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

/// What the subscription task applies, in order.
enum Update {
    Providers(Vec<Url>),
    Configurators(Vec<Url>),
}

/// Keys of an override URL that say where it applies, not what it sets.
const OVERRIDE_CONDITION_KEYS: &[&str] = &[
    "category",
    "check",
    "dynamic",
    "enabled",
    "group",
    "version",
    "application",
    "side",
    "configVersion",
    "compatible_config",
    "interface",
    "providerAddresses",
];

/// `url` with the parameters of the enabled override rules that match it laid over it
/// (Java's `AbstractConfigurator.configure`): a rule for host `0.0.0.0` matches every
/// provider, otherwise the provider's host (and port, when the rule has one); a rule
/// naming an `application` matches only that consumer application.
fn configure(url: &Url, rules: &[Url], application: Option<&str>) -> Url {
    let mut out = url.clone();
    for rule in rules {
        if !rule.get_bool("enabled", true) {
            continue;
        }
        let host_ok =
            matches!(rule.host(), None | Some("0.0.0.0") | Some("*")) || rule.host() == url.host();
        let port_ok = rule.port() == 0 || rule.port() == url.port();
        let app_ok = match rule.get_param(keys::APPLICATION_KEY) {
            None | Some("*") => true,
            Some(a) => Some(a) == application,
        };
        if host_ok && port_ok && app_ok {
            out = out.with_params(
                rule.params()
                    .iter()
                    .filter(|(k, _)| !OVERRIDE_CONDITION_KEYS.contains(k)),
            );
        }
    }
    out
}

/// The routing rules a registry publishes in the `routers` category (`route://` or
/// `condition://` URLs with an encoded `rule=`), replaced as a whole on every
/// notification; an `empty://` notification removes them.
#[derive(Debug, Default)]
struct RegistryRouters {
    routers: parking_lot::RwLock<Arc<Vec<SingleConditionRouter>>>,
}

impl RegistryRouters {
    fn replace(&self, urls: &[Url]) {
        let mut next = Vec::new();
        for url in urls {
            if matches!(url.protocol(), Some("empty")) {
                continue;
            }
            match url.protocol() {
                Some("route" | "condition")
                    if url.get_param("router").is_none_or(|r| r == "condition") =>
                {
                    match SingleConditionRouter::from_url(url) {
                        Ok(r) => next.push(r),
                        Err(e) => warn!(rule = %url, error = %e, "bad routing rule skipped"),
                    }
                }
                _ => debug!(rule = %url, "unsupported router type skipped"),
            }
        }
        next.sort_by_key(rubbo_cluster::Router::priority);
        info!(rules = next.len(), "routing rules replaced");
        *self.routers.write() = Arc::new(next);
    }
}

impl rubbo_cluster::Router for RegistryRouters {
    fn name(&self) -> &str {
        "registry-rules"
    }

    fn priority(&self) -> i32 {
        // After the mock and tag routers, with the service condition rules.
        140
    }

    fn route<'a>(
        &self,
        mut candidates: rubbo_cluster::Candidates<'a>,
        consumer: &Url,
        invocation: &Invocation,
    ) -> rubbo_cluster::Candidates<'a> {
        let routers = self.routers.read().clone();
        for r in routers.iter() {
            candidates = rubbo_cluster::Router::route(r, candidates, consumer, invocation);
        }
        candidates
    }
}

/// An exported service registered in a registry: unexporting unregisters first (the
/// node is gone at once), then drains and stops the server.
#[derive(Debug)]
struct RegistryExporter {
    inner: Box<dyn Exporter>,
    registry: SharedRegistry,
    registered: Url,
}

impl Exporter for RegistryExporter {
    fn invoker(&self) -> &BoxInvoker {
        self.inner.invoker()
    }

    fn url(&self) -> Url {
        self.registered.clone()
    }

    fn unexport(&self) -> BoxFuture<'static, ()> {
        let registry = self.registry.clone();
        let url = self.registered.clone();
        let inner = self.inner.unexport();
        Box::pin(async move {
            if let Err(e) = registry.unregister(url.clone()).await {
                warn!(error = %e, provider = %url.address(), "unregister failed");
            }
            inner.await;
        })
    }
}

/// The inner half of a registration-only export: nothing to stop.
#[derive(Debug)]
struct Registered(BoxInvoker);

impl Exporter for Registered {
    fn invoker(&self) -> &BoxInvoker {
        &self.0
    }
    fn unexport(&self) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

/// The cluster invoker of a reference, which unsubscribes when destroyed.
#[derive(Debug)]
struct RegistryInvoker {
    inner: BoxInvoker,
    directory: Arc<DynamicDirectory>,
    registry: SharedRegistry,
    subscription: Url,
    listener: SharedListener,
    consumer: Url,
}

impl Invoker for RegistryInvoker {
    fn invoke(&self, invocation: Invocation) -> InvokeFuture {
        self.inner.invoke(invocation)
    }
    fn url(&self) -> &Url {
        &self.consumer
    }
    fn is_available(&self) -> bool {
        self.inner.is_available()
    }
    fn destroy(&self) {
        let registry = self.registry.clone();
        let sub = self.subscription.clone();
        let listener = self.listener.clone();
        let consumer = consumer_register_url(&self.consumer);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = registry.unsubscribe(sub, listener).await;
                let _ = registry.unregister(consumer).await;
            });
        }
        self.directory.destroy();
        self.inner.destroy();
    }
}
