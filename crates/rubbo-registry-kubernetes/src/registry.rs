//! The `kubernetes` entry of the registry table: Kubernetes is an application-level
//! registry only, so at interface level it registers and finds nothing (as Java's
//! extension, which has only a `ServiceDiscovery`).

use std::sync::Arc;

use rubbo_common::{BoxFuture, ExtensionTable, Url};
use rubbo_registry::{Registry, RegistryFactory, RegistryResult, SharedListener, SharedRegistry};
use tracing::debug;

/// The interface-level side of a `kubernetes://` registry: nothing is written and no
/// provider is found; the instances are the Service's endpoints, found by
/// [`KubernetesServiceDiscovery`](crate::KubernetesServiceDiscovery).
#[derive(Debug)]
pub struct KubernetesRegistry {
    url: Url,
}

impl KubernetesRegistry {
    /// The registry of `url`.
    pub fn new(url: Url) -> Self {
        KubernetesRegistry { url }
    }
}

impl Registry for KubernetesRegistry {
    fn url(&self) -> &Url {
        &self.url
    }

    fn is_available(&self) -> bool {
        true
    }

    fn register(&self, url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        debug!(service = %url.service_key(), "kubernetes: nothing registered at interface level");
        Box::pin(async { Ok(()) })
    }

    fn unregister(&self, _url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async { Ok(()) })
    }

    fn subscribe(&self, _url: Url, _listener: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async { Ok(()) })
    }

    fn unsubscribe(
        &self,
        _url: Url,
        _listener: SharedListener,
    ) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async { Ok(()) })
    }

    fn lookup(&self, _url: Url) -> BoxFuture<'_, RegistryResult<Vec<Url>>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn destroy(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Makes [`KubernetesRegistry`]s.
#[derive(Debug, Default, Clone)]
pub struct KubernetesRegistryFactory;

impl RegistryFactory for KubernetesRegistryFactory {
    fn get_registry(&self, url: &Url) -> BoxFuture<'static, RegistryResult<SharedRegistry>> {
        let url = url.clone();
        Box::pin(async move { Ok(Arc::new(KubernetesRegistry::new(url)) as SharedRegistry) })
    }
}

/// Adds the `kubernetes` factory to `table`.
pub fn register_factory(table: &mut ExtensionTable<dyn RegistryFactory>) {
    table.register("kubernetes", Arc::new(KubernetesRegistryFactory));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_kubernetes_entry_registers_and_finds_nothing_at_interface_level() {
        let mut table = rubbo_registry::registry_factories();
        register_factory(&mut table);
        let url = Url::parse("kubernetes://127.0.0.1:6443?namespace=shop").unwrap();
        let registry = table
            .get("kubernetes")
            .unwrap()
            .get_registry(&url)
            .await
            .unwrap();
        assert!(registry.is_available());
        let provider = Url::parse("dubbo://10.251.0.2:20880/org.example.Greeter").unwrap();
        registry.register(provider.clone()).await.unwrap();
        assert!(registry.lookup(provider).await.unwrap().is_empty());
        assert_eq!(registry.url().get_param("namespace"), Some("shop"));
    }
}
