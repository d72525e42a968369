//! The application's config center: connected once, at the first reference that
//! needs it (Java connects at start; here start is the first refer), and shared by
//! every reference.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use rubbo_common::keys::{self, Check};
use rubbo_common::{BoxFuture, ErrorKind, ExtensionTable, RpcError, Url};
use rubbo_metrics::Metrics;
use rubbo_registry::{
    CachedDynamicConfiguration, ConfigChangeEvent, ConfigChangeType, ConfigItem,
    DynamicConfiguration, DynamicConfigurationFactory, RegistryResult, SharedConfigListener,
    SharedDynamicConfiguration,
};
use tokio::sync::OnceCell;
use tracing::{info, warn};

/// Where the config center comes from.
#[derive(Clone, Default)]
pub(crate) enum Source {
    /// No config center: rules come only from the registry.
    #[default]
    None,
    /// A URL, made by the factory of its protocol.
    Url(Url, Arc<ExtensionTable<dyn DynamicConfigurationFactory>>),
    /// A ready instance (tests, embedding).
    Instance(SharedDynamicConfiguration),
}

/// The config center of one application, connected on first use.
#[derive(Clone, Default)]
pub(crate) struct ConfigCenter {
    source: Source,
    cell: Arc<OnceCell<SharedDynamicConfiguration>>,
    /// A given instance, wrapped to count its changes.
    instance: Arc<OnceCell<SharedDynamicConfiguration>>,
    /// The application, which names the default cache file.
    application: Arc<str>,
    /// Where delivered changes are counted, when metrics are on.
    metrics: Option<Metrics>,
}

impl fmt::Debug for ConfigCenter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match &self.source {
            Source::None => "none".to_owned(),
            Source::Url(u, _) => u.address(),
            Source::Instance(i) => format!("{:?}", i.url()),
        };
        f.debug_struct("ConfigCenter")
            .field("source", &source)
            .field("connected", &self.cell.initialized())
            .finish()
    }
}

impl ConfigCenter {
    pub(crate) fn new(source: Source) -> Self {
        ConfigCenter {
            source,
            cell: Arc::new(OnceCell::new()),
            instance: Arc::new(OnceCell::new()),
            application: Arc::from(""),
            metrics: None,
        }
    }

    /// Counts the changes the config center delivers in `metrics`
    /// (`dubbo_configcenter_total`).
    pub(crate) fn with_metrics(mut self, metrics: Option<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// The same config center, for `application` (which names its cache file).
    pub(crate) fn for_application(mut self, application: &str) -> Self {
        self.application = Arc::from(application);
        self
    }

    /// The config center, connecting on the first call. `Ok(None)`: none configured.
    /// With `check=true` (default) an unreachable one fails the call (and the next
    /// call tries again); with `check=false` it is returned while it connects, and
    /// answers from its local cache file meanwhile ([`CachedDynamicConfiguration`]:
    /// the last rules and externalized configuration seen, applied until fresh ones
    /// come).
    pub(crate) async fn get(&self) -> Result<Option<SharedDynamicConfiguration>, RpcError> {
        let (url, factories) = match &self.source {
            Source::None => return Ok(None),
            Source::Instance(i) => {
                // Not in `cell`: a given instance is its owner's to close.
                let cc = self
                    .instance
                    .get_or_init(|| async { Counted::wrap(i.clone(), self.metrics.clone()) })
                    .await;
                return Ok(Some(cc.clone()));
            }
            Source::Url(url, factories) => (url, factories),
        };
        let cc = self
            .cell
            .get_or_try_init(|| async {
                let name = url.protocol().unwrap_or("zookeeper");
                let factory = factories
                    .get(name)
                    .map_err(|e| RpcError::new(ErrorKind::Unknown, e.to_string()))?;
                let cc = factory
                    .get_dynamic_configuration(url)
                    .await
                    .map_err(|e| {
                        let check = url.param::<Check>();
                        RpcError::new(
                            ErrorKind::Registry,
                            format!(
                                "config center {} not available (check={check}; set {}=false to start without it): {e}",
                                url.address(),
                                keys::CHECK_KEY
                            ),
                        )
                        .with_source(e)
                    })?;
                info!(config_center = %url.address(), "config center connected");
                let cc = CachedDynamicConfiguration::wrap(cc, &self.application);
                Ok::<_, RpcError>(Counted::wrap(cc, self.metrics.clone()))
            })
            .await?;
        Ok(Some(cc.clone()))
    }

    /// Closes the config center if it was connected.
    pub(crate) async fn close(&self) {
        if let Some(cc) = self.cell.get() {
            cc.close().await;
        }
    }
}

/// A config center whose delivered changes are counted, once per change of a key
/// listened to whatever the number of listeners (Java counts in its one data listener
/// per key): a counting listener joins the first listener of a key and leaves with
/// the last.
struct Counted {
    inner: SharedDynamicConfiguration,
    metrics: Metrics,
    /// Per (key, group): the listeners added and the counting listener.
    counters: Mutex<HashMap<(String, String), (usize, SharedConfigListener)>>,
}

impl fmt::Debug for Counted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Counted")
            .field("inner", &self.inner)
            .finish()
    }
}

impl Counted {
    fn wrap(
        inner: SharedDynamicConfiguration,
        metrics: Option<Metrics>,
    ) -> SharedDynamicConfiguration {
        match metrics {
            Some(metrics) => Arc::new(Counted {
                inner,
                metrics,
                counters: Mutex::default(),
            }),
            None => inner,
        }
    }

    /// The counting listener of a key, for the config center named `center`.
    fn counter(&self, center: String) -> SharedConfigListener {
        let metrics = self.metrics.clone();
        Arc::new(move |e: ConfigChangeEvent| {
            let change = match e.change_type {
                ConfigChangeType::Added => "added",
                ConfigChangeType::Modified => "modified",
                ConfigChangeType::Deleted => "deleted",
                _ => "modified",
            };
            metrics.config_changed(&e.key, &e.group, &center, change);
        })
    }
}

impl DynamicConfiguration for Counted {
    fn url(&self) -> &Url {
        self.inner.url()
    }

    fn default_group(&self) -> &str {
        self.inner.default_group()
    }

    fn is_available(&self) -> bool {
        self.inner.is_available()
    }

    fn get_config_item<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, RegistryResult<Option<ConfigItem>>> {
        self.inner.get_config_item(key, group)
    }

    fn publish_config<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
        content: &'a str,
    ) -> BoxFuture<'a, RegistryResult<()>> {
        self.inner.publish_config(key, group, content)
    }

    fn publish_config_cas<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
        content: &'a str,
        expected: Option<i64>,
    ) -> BoxFuture<'a, RegistryResult<bool>> {
        self.inner.publish_config_cas(key, group, content, expected)
    }

    fn remove_config<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, RegistryResult<bool>> {
        self.inner.remove_config(key, group)
    }

    fn add_listener<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
        listener: SharedConfigListener,
    ) -> BoxFuture<'a, RegistryResult<Option<String>>> {
        Box::pin(async move {
            let content = self.inner.add_listener(key, group, listener).await?;
            let first = {
                let mut counters = self.counters.lock();
                let center = self.inner.url().protocol().unwrap_or("unknown").to_owned();
                let entry = counters
                    .entry((key.to_owned(), group.to_owned()))
                    .or_insert_with(|| (0, self.counter(center)));
                entry.0 += 1;
                (entry.0 == 1).then(|| entry.1.clone())
            };
            if let Some(counter) = first {
                // Counting is not worth failing the caller's listener, which is in:
                // the next listener of the key tries again.
                if let Err(e) = self.inner.add_listener(key, group, counter).await {
                    warn!(key, group, error = %e, "config changes of this key not counted");
                    self.counters
                        .lock()
                        .remove(&(key.to_owned(), group.to_owned()));
                }
            }
            Ok(content)
        })
    }

    fn remove_listener(&self, key: &str, group: &str, listener: &SharedConfigListener) {
        self.inner.remove_listener(key, group, listener);
        let last = {
            let mut counters = self.counters.lock();
            let k = (key.to_owned(), group.to_owned());
            match counters.get_mut(&k) {
                Some(entry) if entry.0 <= 1 => counters.remove(&k).map(|e| e.1),
                Some(entry) => {
                    entry.0 -= 1;
                    None
                }
                None => None,
            }
        };
        if let Some(counter) = last {
            self.inner.remove_listener(key, group, &counter);
        }
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.inner.close()
    }
}
