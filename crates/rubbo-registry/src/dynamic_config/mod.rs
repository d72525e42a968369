//! The config center (Java's `DynamicConfiguration`): keyed text documents in groups,
//! read, written with compare-and-set, removed and listened to. Governance rules
//! (override, condition and tag routes) live here, in group [`DEFAULT_GROUP`], under
//! the keys [`rule_key`] builds.

mod cache;
mod memory;

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use rubbo_common::keys::{GROUP_KEY, VERSION_KEY};
use rubbo_common::{BoxFuture, Url};
use tracing::error;

use crate::RegistryResult;

pub use cache::{CACHE_FILE_KEY, CachedDynamicConfiguration};
pub use memory::MemoryDynamicConfiguration;

/// The group governance rules live in (Java's `DynamicConfiguration.DEFAULT_GROUP`).
pub const DEFAULT_GROUP: &str = "dubbo";

/// Key suffix of override rules (`{app}.configurators`, `{service}.configurators`).
pub const CONFIGURATORS_SUFFIX: &str = ".configurators";
/// Key suffix of condition routes.
pub const CONDITION_ROUTER_SUFFIX: &str = ".condition-router";
/// Key suffix of tag routes (`{provider app}.tag-router`).
pub const TAG_ROUTER_SUFFIX: &str = ".tag-router";

/// Java's `URL.getColonSeparatedKey()`: `{interface}:{version}:{group}`, an empty slot
/// kept for a missing version or group (`org.demo.Greeter::`, `org.demo.Greeter:1.0.0:`,
/// `org.demo.Greeter::g1`). The service-scope rule keys start with it.
///
/// ```
/// use rubbo_common::Url;
/// use rubbo_registry::rule_key;
/// let url = Url::parse("consumer://10.0.0.9/org.demo.Greeter?interface=org.demo.Greeter&version=1.0.0").unwrap();
/// assert_eq!(rule_key(&url), "org.demo.Greeter:1.0.0:");
/// let url = Url::parse("consumer://10.0.0.9/org.demo.Greeter?group=g1").unwrap();
/// assert_eq!(rule_key(&url), "org.demo.Greeter::g1");
/// ```
pub fn rule_key(url: &Url) -> String {
    let mut key = url.service_interface().unwrap_or("").to_owned();
    for name in [VERSION_KEY, GROUP_KEY] {
        key.push(':');
        if let Some(v) = url.get_param(name).filter(|v| !v.trim().is_empty()) {
            key.push_str(v);
        }
    }
    key
}

/// What happened to a key (Java's `ConfigChangeType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigChangeType {
    /// The key was created.
    Added,
    /// The key's content changed.
    Modified,
    /// The key was removed.
    Deleted,
}

/// A change of one key (Java's `ConfigChangedEvent`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigChangeEvent {
    /// The key.
    pub key: String,
    /// Its group.
    pub group: String,
    /// The new content; empty for [`ConfigChangeType::Deleted`].
    pub content: String,
    /// What happened.
    pub change_type: ConfigChangeType,
}

/// Content and version of a key: the version is what
/// [`DynamicConfiguration::publish_config_cas`] compares (ZooKeeper's node version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigItem {
    /// The content (UTF-8).
    pub content: String,
    /// The version the content was read at.
    pub version: i64,
}

/// Receives the changes of the keys it listens to. Calls come from the config
/// center's tasks: keep them quick and never block. A panic is caught and logged.
///
/// ```
/// use rubbo_registry::{ConfigChangeEvent, ConfigurationListener, SharedConfigListener};
/// use std::sync::Arc;
///
/// let l: SharedConfigListener = Arc::new(|e: ConfigChangeEvent| drop(e));
/// # let _ = l;
/// ```
pub trait ConfigurationListener: Send + Sync + 'static {
    /// One change of a key listened to.
    fn process(&self, event: ConfigChangeEvent);
}

impl<F> ConfigurationListener for F
where
    F: Fn(ConfigChangeEvent) + Send + Sync + 'static,
{
    fn process(&self, event: ConfigChangeEvent) {
        self(event)
    }
}

impl fmt::Debug for dyn ConfigurationListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ConfigurationListener@{:p}",
            self as *const dyn ConfigurationListener
        )
    }
}

/// A shared configuration listener; identified by its `Arc` when removed.
pub type SharedConfigListener = Arc<dyn ConfigurationListener>;

/// Whether `a` and `b` are the same listener (the same allocation).
pub fn same_config_listener(a: &SharedConfigListener, b: &SharedConfigListener) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// Calls `listener` with `event`, catching and logging a panic.
pub fn process_safely(listener: &dyn ConfigurationListener, event: ConfigChangeEvent) -> bool {
    let key = event.key.clone();
    match catch_unwind(AssertUnwindSafe(|| listener.process(event))) {
        Ok(()) => true,
        Err(_) => {
            error!(key, "configuration listener panicked; listener kept");
            false
        }
    }
}

/// A config center (Java's `org.apache.dubbo.common.config.configcenter.DynamicConfiguration`).
///
/// Keys live in groups; a group of `""` means the center's
/// [`default_group`](Self::default_group). Governance rules are in [`DEFAULT_GROUP`].
///
/// - [`add_listener`](Self::add_listener) returns the key's content at the time the
///   listener was added, and then reports every later change, so no change falls
///   between a read and a listen. Implementations re-read keys after losing their
///   connection and report what changed meanwhile.
/// - [`publish_config_cas`](Self::publish_config_cas) writes only when the key is
///   still at the version read (`None`: only when the key does not exist).
///
/// ```
/// use std::sync::Arc;
/// use parking_lot::Mutex;
/// use rubbo_registry::{ConfigChangeEvent, ConfigChangeType, DynamicConfiguration, MemoryDynamicConfiguration};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let cc: Arc<dyn DynamicConfiguration> = Arc::new(MemoryDynamicConfiguration::new());
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let s = seen.clone();
/// let now = cc.add_listener("demo.configurators", "dubbo",
///     Arc::new(move |e: ConfigChangeEvent| s.lock().push(e.change_type))).await.unwrap();
/// assert_eq!(now, None);
/// cc.publish_config("demo.configurators", "dubbo", "configVersion: v3.0").await.unwrap();
/// let item = cc.get_config_item("demo.configurators", "dubbo").await.unwrap().unwrap();
/// assert!(!cc.publish_config_cas("demo.configurators", "dubbo", "x", Some(item.version + 1)).await.unwrap());
/// assert!(cc.publish_config_cas("demo.configurators", "dubbo", "y", Some(item.version)).await.unwrap());
/// assert!(cc.remove_config("demo.configurators", "dubbo").await.unwrap());
/// assert_eq!(*seen.lock(), [ConfigChangeType::Added, ConfigChangeType::Modified, ConfigChangeType::Deleted]);
/// # });
/// ```
pub trait DynamicConfiguration: Send + Sync + fmt::Debug + 'static {
    /// The config center's URL.
    fn url(&self) -> &Url;

    /// The group used when a call names `""` (the URL's `group`, default `dubbo`).
    fn default_group(&self) -> &str;

    /// Whether the config center is reachable now.
    fn is_available(&self) -> bool;

    /// The content and version of `key` in `group`; `None` when absent.
    fn get_config_item<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, RegistryResult<Option<ConfigItem>>>;

    /// The content of `key` in `group`; `None` when absent.
    fn get_config<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, RegistryResult<Option<String>>> {
        Box::pin(async move { Ok(self.get_config_item(key, group).await?.map(|i| i.content)) })
    }

    /// Writes `content` under `key` in `group`, creating or replacing it.
    fn publish_config<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
        content: &'a str,
    ) -> BoxFuture<'a, RegistryResult<()>>;

    /// Writes `content` only if `key` is still at `expected` version (`None`: only if
    /// it does not exist). Returns whether it was written.
    fn publish_config_cas<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
        content: &'a str,
        expected: Option<i64>,
    ) -> BoxFuture<'a, RegistryResult<bool>>;

    /// Removes `key` from `group`. Returns whether it existed.
    fn remove_config<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, RegistryResult<bool>>;

    /// Starts reporting the changes of `key` in `group` to `listener`, and returns the
    /// key's content now (`None` when absent).
    fn add_listener<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
        listener: SharedConfigListener,
    ) -> BoxFuture<'a, RegistryResult<Option<String>>>;

    /// Stops reporting to `listener` (same `Arc`) the changes of `key` in `group`.
    fn remove_listener(&self, key: &str, group: &str, listener: &SharedConfigListener);

    /// Ends every listener and closes the connection.
    fn close(&self) -> BoxFuture<'_, ()>;
}

/// A shared config center.
pub type SharedDynamicConfiguration = Arc<dyn DynamicConfiguration>;

/// Makes config centers from URLs (`zookeeper://127.0.0.1:2181?namespace=dubbo`), one
/// per table entry (Java's `DynamicConfigurationFactory`).
///
/// ```
/// use rubbo_registry::{DynamicConfigurationFactory, MemoryDynamicConfiguration, SharedDynamicConfiguration, RegistryResult};
/// use rubbo_common::{BoxFuture, Url};
/// use std::sync::Arc;
///
/// #[derive(Debug)]
/// struct Memory;
/// impl DynamicConfigurationFactory for Memory {
///     fn get_dynamic_configuration(&self, _: &Url) -> BoxFuture<'static, RegistryResult<SharedDynamicConfiguration>> {
///         Box::pin(async { Ok(Arc::new(MemoryDynamicConfiguration::new()) as SharedDynamicConfiguration) })
///     }
/// }
/// let _dyn: Arc<dyn DynamicConfigurationFactory> = Arc::new(Memory);
/// ```
pub trait DynamicConfigurationFactory: Send + Sync + fmt::Debug + 'static {
    /// The config center of `url` (shared when the implementation can).
    fn get_dynamic_configuration(
        &self,
        url: &Url,
    ) -> BoxFuture<'static, RegistryResult<SharedDynamicConfiguration>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_keys_keep_empty_slots_as_java() {
        let key = |q: &str| rule_key(&Url::parse(&format!("consumer://h/a.B?{q}")).unwrap());
        assert_eq!(key(""), "a.B::");
        assert_eq!(key("version=1.0.0"), "a.B:1.0.0:");
        assert_eq!(key("group=g"), "a.B::g");
        assert_eq!(key("version=1&group=g"), "a.B:1:g");
        assert_eq!(key("interface=x.Y&version= "), "x.Y::");
    }
}
