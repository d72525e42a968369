//! The registry protocol (Java's `RegistryProtocol`): exporting through a
//! `registry://...&export=<encoded provider URL>` URL serves the provider with its own
//! protocol and registers it; referring through `registry://...&refer=<encoded consumer
//! parameters>` starts a [subscription](subscription) that keeps a dynamic directory,
//! its override rules ([`Configurators`]) and its registry routing rules
//! ([`DynamicRouters`]) up to date, and returns the cluster invoker over it.
//!
//! Every subscription task is owned: destroying (or dropping) the reference ends it,
//! and so does [`Protocol::destroy`] on this protocol, which also waits (bounded) until
//! every subscription has left its registry.

mod exporter;
mod governance;
mod invoker;
mod provider_rules;
mod registration;
mod subscription;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use rubbo_cluster::router::DynamicRouters;
use rubbo_cluster::{ClusterContext, Directory, InvokerFactory};
use rubbo_common::keys::{self, Check, CheckTimeout};
use rubbo_common::{
    BoxFuture, BoxInvoker, ErrorKind, Exporter, ExtensionTable, Invocation, InvokeFuture, Invoker,
    Protocol, RpcError, Url,
};
use rubbo_metrics::{Metrics, RegistryOp};
use rubbo_registry::{
    RegistryFactory, SharedRegistry, get_registry, resolve_registry_url, should_register,
};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use exporter::{Registered, RegistryExporter, ServerExport};
use governance::{Governance, RuleSets};
use invoker::RegistryInvoker;
use provider_rules::ProviderRules;
use registration::Book;
pub use registration::{ReferenceView, Registration};
use subscription::{Feeds, Subscription, Update};

use crate::config_center::ConfigCenter;

/// How long [`Protocol::destroy`] waits for the subscriptions to leave their registries.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// The name of the registry routing rules in the router chain.
const REGISTRY_ROUTERS: &str = "registry-rules";

/// A configuration mistake, reported to the caller.
pub(crate) fn config_err(msg: impl Into<Arc<str>>) -> RpcError {
    RpcError::new(ErrorKind::Unknown, msg)
}

fn registry_err(e: rubbo_registry::RegistryError) -> RpcError {
    RpcError::new(ErrorKind::Registry, e.to_string()).with_source(e)
}

/// The consumer URL a `registry://...&refer=` URL describes.
fn consumer_url(url: &Url) -> Result<Url, RpcError> {
    let refer = url
        .get_param_decoded(keys::REFER_KEY)
        .map_err(|e| config_err(format!("bad refer= in {url}: {e}")))?
        .ok_or_else(|| config_err(format!("no refer= in registry URL {url}")))?;
    let params = Url::parse(&format!("?{refer}"))
        .map_err(|e| config_err(format!("bad refer= parameters {refer}: {e}")))?;
    let interface = params
        .get_param(keys::INTERFACE_KEY)
        .ok_or_else(|| config_err("refer= names no interface"))?;
    let host = params
        .get_param(keys::REGISTER_IP_KEY)
        .unwrap_or("127.0.0.1");
    Ok(Url::parse(&format!(
        "{}://{host}/{interface}",
        keys::protocols::CONSUMER
    ))
    .map_err(|e| config_err(e.to_string()))?
    .with_params(params.params().iter())
    .with_param(keys::SIDE_KEY, keys::CONSUMER_SIDE))
}

/// The `registry` extension of [`Protocol`]. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct RegistryProtocol {
    protocols: Arc<ExtensionTable<dyn Protocol>>,
    registries: Arc<ExtensionTable<dyn RegistryFactory>>,
    cluster: ClusterContext,
    /// The subscription tasks of every reference.
    subscriptions: TaskTracker,
    /// Cancelled by [`Protocol::destroy`]: the parent of every subscription's token.
    closing: CancellationToken,
    /// Where live governance rules come from, besides the registry.
    config_center: ConfigCenter,
    /// The registrations and references, for the QoS port.
    book: Book,
    /// Where registrations, subscriptions and notifications are counted, when
    /// metrics are on.
    metrics: Option<Metrics>,
}

/// A registry's cluster name, as Java's registry metrics label it: its
/// `REGISTRY_CLUSTER` parameter, else `default` (Java sets the parameter to the
/// registry config's id, `default` unless named).
pub(crate) fn registry_cluster(registry: &Url) -> String {
    registry
        .get_param(keys::REGISTRY_CLUSTER_KEY)
        .filter(|n| !n.is_empty())
        .unwrap_or("default")
        .to_owned()
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
            subscriptions: TaskTracker::new(),
            closing: CancellationToken::new(),
            config_center: ConfigCenter::default(),
            book: Book::default(),
            metrics: None,
        }
    }

    /// Counts registrations, subscriptions and notifications in `metrics` (Java's
    /// registry metrics).
    pub(crate) fn with_metrics(mut self, metrics: Option<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Takes live governance rules from `config_center` too (see
    /// [`governance`](self::governance)).
    pub(crate) fn with_config_center(mut self, config_center: ConfigCenter) -> Self {
        self.config_center = config_center;
        self
    }

    /// Every provider registration of the services exported through this protocol
    /// and not yet unexported (`register=false` ones are left out).
    pub fn registrations(&self) -> Vec<Arc<Registration>> {
        self.book.registrations()
    }

    /// Every live reference, with the providers its registry lists.
    pub fn references(&self) -> Vec<ReferenceView> {
        self.book.references()
    }

    /// Registers `provider` in `registry` (unless `register=false`) and wraps
    /// `inner` so that unexporting unregisters it. With a config center, the
    /// provider's override rules re-shape the URL registered, now and at every change
    /// (see [`provider_rules`]).
    async fn registered_exporter(
        &self,
        registry: SharedRegistry,
        inner: Box<dyn Exporter>,
        provider: Url,
        server: Option<Arc<ServerExport>>,
    ) -> Result<Box<dyn Exporter>, RpcError> {
        let rules = match self.config_center.get().await? {
            Some(cc) => Some(ProviderRules::start(cc, &provider).await),
            None => None,
        };
        let configured = rules
            .as_ref()
            .map_or_else(|| provider.clone(), |r| r.configure(&provider));
        let register = should_register(&provider);
        if register {
            let started = std::time::Instant::now();
            let registered = registry.register(configured.clone()).await;
            if let Some(m) = &self.metrics {
                m.registry_op(
                    RegistryOp::RegisterService,
                    &registry_cluster(registry.url()),
                    &provider.service_key(),
                    registered.is_ok(),
                    started.elapsed(),
                );
            }
            if let Err(e) = registered {
                if let Some(r) = &rules {
                    r.close();
                }
                return Err(registry_err(e));
            }
            info!(provider = %provider.address(), service = %provider.service_key(), registry = %registry.url().address(), "registered");
        }
        let registration = Arc::new(Registration::new(registry, provider, configured, register));
        if let Some(r) = &rules {
            r.follow(registration.clone(), server.clone());
        }
        if register {
            self.book.add_registration(registration.clone());
        }
        Ok(Box::new(RegistryExporter {
            inner,
            registration,
            book: self.book.clone(),
            rules,
            server,
        }))
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
        self.registered_exporter(registry, Box::new(Registered(exported)), provider, None)
            .await
    }

    /// Refers through `registry://...&refer=`: subscribes, waits for the first provider
    /// list (bounded; an error with `check=true` and no provider), joins the cluster.
    async fn refer_registry(&self, url: Url) -> Result<Arc<RegistryInvoker>, RpcError> {
        self.refer_on(url, None).await
    }

    /// [`refer_registry`](Self::refer_registry) through `registry` when given.
    async fn refer_on(
        &self,
        url: Url,
        registry: Option<SharedRegistry>,
    ) -> Result<Arc<RegistryInvoker>, RpcError> {
        if self.closing.is_cancelled() {
            return Err(config_err("the registry protocol is destroyed"));
        }
        let consumer = consumer_url(&url)?;
        let registry = match registry {
            Some(r) => r,
            None => self.registry(&url).await?,
        };
        let application = consumer.get_param(keys::APPLICATION_KEY).map(str::to_owned);
        // The consumer's own address, which consumer-side override rules may name
        // (Java's `NetUtils.getLocalHost()`).
        let host = consumer.host().unwrap_or("127.0.0.1").to_owned();

        // Dynamic configuration: override rules change the URL each provider is listed
        // under (so a change re-refers it), and are laid again over the URL merged with
        // the consumer's, so an override beats both sides, as in Java.
        let rules = RuleSets::default();
        let factory: InvokerFactory = {
            let protocols = self.protocols.clone();
            let rules = rules.clone();
            let application = application.clone();
            let host = host.clone();
            Arc::new(move |u: Url| {
                let protocols = protocols.clone();
                let u = rules.configure(&u, &host, application.as_deref());
                Box::pin(async move {
                    let name = u.protocol().unwrap_or(keys::defaults::PROTOCOL).to_owned();
                    let p = protocols
                        .get(&name)
                        .map_err(|e| config_err(e.to_string()))?;
                    p.refer(u).await
                })
            })
        };
        let directory = self.cluster.dynamic_directory(consumer.clone(), factory);
        let routers = Arc::new(DynamicRouters::new(REGISTRY_ROUTERS));
        directory.router_chain().add_router(routers.clone());

        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Update>();
        // Config center rules are read before the first provider list is applied, so
        // the first call already sees them.
        let governance = match self.config_center.get().await? {
            Some(cc) => {
                let tx = tx.clone();
                let changed = Arc::new(move || {
                    let _ = tx.send(Update::Reconfigure);
                });
                Some(
                    Governance::start(
                        cc,
                        &consumer,
                        application.as_deref(),
                        &rules,
                        directory.router_chain().clone(),
                        changed,
                    )
                    .await,
                )
            }
            None => None,
        };
        let feeds = Feeds {
            directory: directory.clone(),
            rules,
            routers,
            application,
            host,
            governance,
            metrics: self.metrics.clone(),
        };
        let (mut subscription, first) = Subscription::start(
            registry.clone(),
            &consumer,
            feeds,
            self.closing.child_token(),
            &self.subscriptions,
            (tx, rx),
        )
        .await?;

        let check = consumer.param::<Check>();
        let wait = consumer.param::<CheckTimeout>();
        let _ = tokio::time::timeout(wait, first).await;
        if check && !directory.is_available() {
            subscription.shutdown().await;
            return Err(RpcError::no_provider(format!(
                "no provider available for {} in registry {} (check=true; set check=false to start without one)",
                consumer.service_key(),
                registry.url().address()
            )));
        }
        let invoker = self
            .cluster
            .join(directory.clone() as Arc<dyn Directory>)
            .map_err(|e| config_err(e.to_string()))?;
        let invoker = Arc::new(RegistryInvoker {
            inner: invoker,
            directory,
            subscription,
            consumer,
        });
        self.book.add_reference(&invoker, registry.url().clone());
        Ok(invoker)
    }

    /// [`refer`](Protocol::refer) through `registry` (an application-level one)
    /// instead of the one `url` names; also returns the reference's directory.
    pub(crate) async fn refer_via(
        &self,
        url: Url,
        registry: Option<SharedRegistry>,
    ) -> Result<(BoxInvoker, Arc<dyn Directory>), RpcError> {
        let invoker = self.refer_on(url, registry).await?;
        let directory = invoker.directory.clone() as Arc<dyn Directory>;
        Ok((invoker as BoxInvoker, directory))
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
            let origin = invoker.clone();
            let exporter = protocol
                .export(Arc::new(WithUrl {
                    inner: invoker,
                    url: provider.clone(),
                }))
                .await?;
            let registered = exporter.url();
            let server = ServerExport::new(protocol, origin, provider, registered.clone());
            this.registered_exporter(registry, exporter, registered, Some(server))
                .await
        })
    }

    fn refer(&self, url: Url) -> BoxFuture<'static, Result<BoxInvoker, RpcError>> {
        let this = self.clone();
        Box::pin(async move {
            let invoker = this.refer_registry(url).await?;
            Ok(invoker as BoxInvoker)
        })
    }

    /// Ends every subscription and waits (at most 5 s) until each has unsubscribed and
    /// unregistered its consumer. Later references are refused.
    fn destroy(&self) -> BoxFuture<'static, ()> {
        let closing = self.closing.clone();
        let tasks = self.subscriptions.clone();
        let config_center = self.config_center.clone();
        Box::pin(async move {
            closing.cancel();
            tasks.close();
            if tokio::time::timeout(CLOSE_WAIT, tasks.wait())
                .await
                .is_err()
            {
                warn!(
                    left = tasks.len(),
                    "subscriptions still leaving their registries"
                );
            }
            config_center.close().await;
        })
    }
}
