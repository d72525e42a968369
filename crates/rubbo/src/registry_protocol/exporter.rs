//! The export side: a provider registered in a registry.

use rubbo_common::{BoxFuture, BoxInvoker, Exporter, Url};
use rubbo_registry::SharedRegistry;
use tracing::warn;

/// An exported service registered in a registry: unexporting unregisters first (the
/// node is gone at once), then drains and stops the server.
#[derive(Debug)]
pub(super) struct RegistryExporter {
    pub(super) inner: Box<dyn Exporter>,
    pub(super) registry: SharedRegistry,
    pub(super) registered: Url,
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
pub(super) struct Registered(pub(super) BoxInvoker);

impl Exporter for Registered {
    fn invoker(&self) -> &BoxInvoker {
        &self.0
    }
    fn unexport(&self) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}
