//! The application's config center: connected once, at the first reference that
//! needs it (Java connects at start; here start is the first refer), and shared by
//! every reference.

use std::fmt;
use std::sync::Arc;

use rubbo_common::keys::{self, Check};
use rubbo_common::{ErrorKind, ExtensionTable, RpcError, Url};
use rubbo_registry::{
    CachedDynamicConfiguration, DynamicConfigurationFactory, SharedDynamicConfiguration,
};
use tokio::sync::OnceCell;
use tracing::info;

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
    /// The application, which names the default cache file.
    application: Arc<str>,
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
            application: Arc::from(""),
        }
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
            Source::Instance(i) => return Ok(Some(i.clone())),
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
                Ok::<_, RpcError>(CachedDynamicConfiguration::wrap(cc, &self.application))
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
