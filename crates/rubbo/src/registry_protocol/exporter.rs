//! The export side: a provider registered in a registry.

use std::sync::Arc;

use rubbo_common::{BoxFuture, BoxInvoker, Exporter, Url};
use tracing::warn;

use super::provider_rules::ProviderRules;
use super::registration::{Book, Registration};

/// An exported service registered in a registry: unexporting unregisters first (the
/// node is gone at once, unless `offline` already took it out), then drains and stops
/// the server.
#[derive(Debug)]
pub(super) struct RegistryExporter {
    pub(super) inner: Box<dyn Exporter>,
    pub(super) registration: Arc<Registration>,
    pub(super) book: Book,
    /// The provider's live override rules, when there is a config center.
    pub(super) rules: Option<Arc<ProviderRules>>,
}

impl Exporter for RegistryExporter {
    fn invoker(&self) -> &BoxInvoker {
        self.inner.invoker()
    }

    fn url(&self) -> Url {
        self.registration.provider().clone()
    }

    fn unexport(&self) -> BoxFuture<'static, ()> {
        let registration = self.registration.clone();
        self.book.remove_registration(&registration);
        if let Some(r) = &self.rules {
            r.close();
        }
        let inner = self.inner.unexport();
        Box::pin(async move {
            if let Err(e) = registration.set_registered(false).await {
                let provider = registration.provider().address();
                warn!(error = %e, provider = %provider, "unregister failed");
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
