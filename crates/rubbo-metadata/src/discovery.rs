//! The extension points of application-level discovery: [`ServiceDiscovery`] (the
//! instances of an application) and [`ServiceNameMapping`] (interface to
//! applications), both object safe, with memory implementations in
//! [`crate::memory`].

use std::fmt::Debug;
use std::sync::Arc;

use rubbo_common::BoxFuture;
use tokio::sync::watch;

use crate::error::MetadataResult;
use crate::instance::ServiceInstance;

/// The instances of one application as a watch: the current list, replaced whole on
/// every change (sorted by id). Each instance is shared: a new list, the follower
/// that builds it and every reader hold the same instances, not copies.
pub type InstancesWatch = watch::Receiver<Arc<Vec<Arc<ServiceInstance>>>>;

/// The applications of one interface as a watch: the current list (as
/// [`ServiceNameMapping::get`] returns it), replaced whole on every change. A closed
/// sender means no further change will be seen.
pub type MappingWatch = watch::Receiver<Arc<Vec<String>>>;

/// Registers this application's instance and finds the instances of others (Java's
/// `org.apache.dubbo.registry.client.ServiceDiscovery`).
///
/// A provider [`register`](Self::register)s its instance once its services are
/// exported, [`update`](Self::update)s it when its revision changes, and
/// [`unregister`](Self::unregister)s it first at shutdown. A consumer
/// [`watch`](Self::watch)es the applications the mapping names.
///
/// ```
/// use std::sync::Arc;
/// use rubbo_metadata::{MemoryServiceDiscovery, ServiceDiscovery, ServiceInstance};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let discovery: Arc<dyn ServiceDiscovery> = Arc::new(MemoryServiceDiscovery::new());
/// let mut instances = discovery.watch("greeter").await?;
/// assert!(instances.borrow().is_empty());
///
/// discovery.register(ServiceInstance::new("greeter", "127.0.0.1", 20880)).await?;
/// instances.changed().await.unwrap();
/// assert_eq!(instances.borrow()[0].id(), "127.0.0.1:20880");
///
/// discovery.unregister(&ServiceInstance::new("greeter", "127.0.0.1", 20880)).await?;
/// assert!(discovery.instances("greeter").await?.is_empty());
/// # Ok::<(), rubbo_metadata::MetadataError>(()) }).unwrap();
/// ```
pub trait ServiceDiscovery: Send + Sync + Debug + 'static {
    /// Registers `instance` (replacing one with the same application and id).
    fn register(&self, instance: ServiceInstance) -> BoxFuture<'_, MetadataResult<()>>;

    /// Replaces the registered instance with the same application and id.
    fn update(&self, instance: ServiceInstance) -> BoxFuture<'_, MetadataResult<()>> {
        self.register(instance)
    }

    /// Removes the instance of `instance`'s application and id (absent is fine).
    fn unregister(&self, instance: &ServiceInstance) -> BoxFuture<'_, MetadataResult<()>>;

    /// The instances of `app` now.
    fn instances(&self, app: &str) -> BoxFuture<'_, MetadataResult<Vec<ServiceInstance>>>;

    /// The instances of `app`, kept up to date while the receiver lives.
    fn watch(&self, app: &str) -> BoxFuture<'_, MetadataResult<InstancesWatch>>;

    /// Stops every watch and removes what this discovery registered.
    fn destroy(&self) -> BoxFuture<'_, ()>;
}

/// Which applications serve an interface (Java's `ServiceNameMapping`): providers
/// [`map`](Self::map) each exported interface to their application; consumers
/// [`get`](Self::get) the applications of the interfaces they refer.
///
/// ```
/// use std::sync::Arc;
/// use rubbo_metadata::{MemoryServiceDiscovery, ServiceNameMapping};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let mapping: Arc<dyn ServiceNameMapping> = Arc::new(MemoryServiceDiscovery::new());
/// mapping.map("org.example.Greeter", "greeter-a").await?;
/// mapping.map("org.example.Greeter", "greeter-b").await?;
/// mapping.map("org.example.Greeter", "greeter-a").await?; // already there
/// assert_eq!(mapping.get("org.example.Greeter").await?, ["greeter-a", "greeter-b"]);
/// # Ok::<(), rubbo_metadata::MetadataError>(()) }).unwrap();
/// ```
pub trait ServiceNameMapping: Send + Sync + Debug + 'static {
    /// Adds `app` to the applications of `interface` (nothing if it is there).
    fn map(&self, interface: &str, app: &str) -> BoxFuture<'_, MetadataResult<()>>;

    /// The applications of `interface` (trimmed, deduplicated, in order).
    fn get(&self, interface: &str) -> BoxFuture<'_, MetadataResult<Vec<String>>>;

    /// The applications of `interface`, kept up to date while the receiver lives
    /// (Java's mapping listener). The default reads them once and never changes.
    fn watch_mapping(&self, interface: &str) -> BoxFuture<'_, MetadataResult<MappingWatch>> {
        let interface = interface.to_owned();
        Box::pin(async move {
            let apps = self.get(&interface).await?;
            Ok(watch::channel(Arc::new(apps)).1)
        })
    }
}

/// Splits a mapping value (`a, b,a`) into distinct trimmed names, in order.
pub fn parse_mapping(value: &str) -> Vec<String> {
    let mut apps: Vec<String> = Vec::new();
    for a in value.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        if !apps.iter().any(|x| x == a) {
            apps.push(a.to_owned());
        }
    }
    apps
}

// Both traits are object safe.
const _: Option<&dyn ServiceDiscovery> = None;
const _: Option<&dyn ServiceNameMapping> = None;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_values_are_trimmed_and_deduplicated() {
        assert_eq!(parse_mapping(" a, b,a,,c "), ["a", "b", "c"]);
        assert!(parse_mapping("").is_empty());
    }
}
