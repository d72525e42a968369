//! Java's externalized configuration from the config center
//! (`DefaultApplicationDeployer.prepareEnvironment`): at start the application reads
//! the properties under `dubbo.config-center.config-file` (default `dubbo.properties`)
//! in the config center's group (default `dubbo`) and under
//! `dubbo.config-center.app-config-file` (default: the same key) in the group named
//! after the application, and lays them into its configuration with Java's precedence
//! (see [`ConfigLoader::config_center_properties`]): the environment, `--set` and
//! code beat them, they beat `application.yml` and `dubbo.properties` files, and the
//! application's beat the global ones. (Java 3.3's `highest-priority` is deprecated
//! and not read.)
//!
//! With `dubbo.config-center.check=false` an unreachable config center is not an
//! error: the last content seen comes from the local cache file
//! ([`CachedDynamicConfiguration`]), or nothing when there is none.

use std::sync::Arc;

use rubbo_common::{ErrorKind, RpcError, Url, keys};
use rubbo_config::{Config, ConfigLoader};
use rubbo_registry::DEFAULT_GROUP;
use tracing::info;

use crate::bootstrap::{config_center_factories, config_center_url, registry_config_center_url};
use crate::config_center::{ConfigCenter, Source};

/// The default key of the externalized configuration (Java's
/// `DEFAULT_DUBBO_PROPERTIES`).
pub const DEFAULT_CONFIG_FILE: &str = "dubbo.properties";

fn config_err(e: impl std::fmt::Display) -> RpcError {
    RpcError::new(ErrorKind::Unknown, e.to_string())
}

/// Resolves `loader` with the externalized configuration of the config center it
/// names (`dubbo.config-center.address`), as Java does at start (see the [module
/// docs](self)); without a config center, `loader.load()`. The result goes to
/// [`RubboBuilder::config`](crate::RubboBuilder::config).
///
/// With no config center configured, the first registry that can serve as one
/// (ZooKeeper, unless `use-as-config-center=false`) does, with `check=false`, as for
/// the live rules.
///
/// An unreachable config center fails with `check=true` (default); a file that does
/// not parse fails naming its key, group and line.
pub async fn load_config(loader: ConfigLoader) -> Result<Config, RpcError> {
    let first = loader.clone().load().map_err(config_err)?;
    let cc = first.config_center();
    let attr = |k: &str| {
        cc.attributes
            .get(k)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    };
    let factories = Arc::new(config_center_factories());
    let (url, group) = match cc.address.as_deref().filter(|a| !a.is_empty()) {
        Some(address) => {
            let url = config_center_url(address, &cc.attributes);
            let url = Url::parse(&url)
                .map_err(|e| config_err(format!("bad config center address {url}: {e}")))?;
            (url, attr("group").unwrap_or(DEFAULT_GROUP).to_owned())
        }
        // No config center: the registry serves as one, as it does for the rules
        // (Java's `useRegistryAsConfigCenterIfNecessary`, which runs before the
        // environment is prepared), with the registry's group as its group.
        None => {
            let registries = first
                .registries()
                .iter()
                .flat_map(|r| r.urls())
                .map(|r| {
                    Url::parse(&r).map_err(|e| config_err(format!("bad registry address {r}: {e}")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let Some(url) = registry_config_center_url(&registries, &factories) else {
                return Ok(first);
            };
            let group = url
                .get_param(keys::GROUP_KEY)
                .or_else(|| attr("group"))
                .unwrap_or(DEFAULT_GROUP)
                .to_owned();
            (url, group)
        }
    };
    let file = attr("config-file")
        .unwrap_or(DEFAULT_CONFIG_FILE)
        .to_owned();
    let app_file = attr("app-config-file").unwrap_or(&file).to_owned();
    let application = first.application().name.clone().unwrap_or_default();

    // The same connection path (and cache file) as the application's config center.
    let center = ConfigCenter::new(Source::Url(url, factories)).for_application(&application);
    let Some(dynamic) = center.get().await? else {
        return Ok(first);
    };
    let read = |key: String, group: String| {
        let dynamic = dynamic.clone();
        async move {
            dynamic.get_config(&key, &group).await.map_err(|e| {
                config_err(format!("reading {group}/{key} from the config center: {e}"))
            })
        }
    };
    let global = read(file.clone(), group.clone()).await;
    let app = if application.is_empty() {
        Ok(None)
    } else {
        read(app_file.clone(), application.clone()).await
    };
    center.close().await;
    let mut loader = loader;
    if let Some(text) = global? {
        info!(key = %file, group = %group, "externalized configuration from the config center");
        loader = loader
            .config_center_properties(&file, &group, false, &text)
            .map_err(config_err)?;
    }
    if let Some(text) = app? {
        info!(key = %app_file, group = %application, "application externalized configuration from the config center");
        loader = loader
            .config_center_properties(&app_file, &application, true, &text)
            .map_err(config_err)?;
    }
    loader.load().map_err(config_err)
}
