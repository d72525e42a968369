//! The export side: a provider registered in a registry, and its server-side export,
//! which override rules may replace (Java's `RegistryProtocol.reExport`).

use std::sync::Arc;

use parking_lot::Mutex;
use rubbo_common::executor::Executions;
use rubbo_common::keys;
use rubbo_common::{BoxFuture, BoxInvoker, Exporter, Protocol, RpcError, Url};
use tracing::{info, warn};

use super::WithUrl;
use super::provider_rules::ProviderRules;
use super::registration::{Book, Registration};

/// Keys an override changes for consumers only (they read them from the registered
/// URL): a change of these alone re-registers the provider and leaves its export as it
/// is. A change of any other key exports the service again with the new URL as well,
/// as Java's `reExport` does for every change, so the provider's filters (`tps`,
/// `executes`, `token`, `accesslog`, ...) read the new values.
const REGISTRATION_ONLY_KEYS: &[&str] = &[
    keys::WEIGHT_KEY,
    keys::TIMEOUT_KEY,
    keys::DISABLED_KEY,
    keys::ENABLED_KEY,
    keys::RETRIES_KEY,
    keys::LOADBALANCE_KEY,
    keys::CLUSTER_KEY,
    keys::WARMUP_KEY,
];

/// Java's `need-reexport`: `false` turns re-exporting off for a rule.
const NEED_REEXPORT_KEY: &str = "need-reexport";

/// Whether going from the URL exported as `old` to `new` needs the service exported
/// again (see [`REGISTRATION_ONLY_KEYS`]).
pub(super) fn needs_reexport(old: &Url, new: &Url) -> bool {
    if !new.get_bool(NEED_REEXPORT_KEY, true) {
        return false;
    }
    let differs =
        |k: &str| !REGISTRATION_ONLY_KEYS.contains(&k) && old.get_param(k) != new.get_param(k);
    old.params().iter().any(|(k, _)| differs(k)) || new.params().iter().any(|(k, _)| differs(k))
}

/// The server-side export of a service, replaceable by a re-export.
pub(super) struct ServerExport {
    protocol: Arc<dyn Protocol>,
    /// The service's invoker as given to the registry protocol.
    origin: BoxInvoker,
    /// The provider URL the service was first exported with (its bind address).
    export_url: Url,
    /// The export made by the last re-export, if any; it replaces the first one in
    /// the protocol's table (same server, same service key).
    /// `Err(())` once unexported: a re-export finishing later is taken off again.
    current: Mutex<Result<Option<Box<dyn Exporter>>, ()>>,
    /// The URL the service is exported with now.
    exported: Mutex<Url>,
}

impl std::fmt::Debug for ServerExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerExport")
            .field("exported", &*self.exported.lock())
            .finish()
    }
}

impl ServerExport {
    /// The export of `origin` through `protocol` with `export_url`, whose exporter
    /// reported `exported` as its URL.
    pub(super) fn new(
        protocol: Arc<dyn Protocol>,
        origin: BoxInvoker,
        export_url: Url,
        exported: Url,
    ) -> Arc<Self> {
        Arc::new(ServerExport {
            protocol,
            origin,
            export_url,
            current: Mutex::new(Ok(None)),
            exported: Mutex::new(exported),
        })
    }

    /// Exports the service again when going to `configured` (the provider URL
    /// re-shaped by override rules) [needs it](needs_reexport); the new export takes
    /// the old one's place on the same server. Returns whether it re-exported.
    pub(super) async fn reexport_if_needed(&self, configured: &Url) -> Result<bool, RpcError> {
        let old = self.exported.lock().clone();
        if !needs_reexport(&old, configured) {
            return Ok(false);
        }
        // The first export's bind address (its port may have been 0), with the
        // re-shaped parameters.
        let gone = removed(&old, configured);
        let gone: Vec<&str> = gone.iter().map(String::as_str).collect();
        let url = self
            .export_url
            .with_params(configured.params().iter())
            .without_params(&gone);
        let exporter = self
            .protocol
            .export(Arc::new(WithUrl {
                inner: self.origin.clone(),
                url,
            }))
            .await?;
        {
            let mut current = self.current.lock();
            if let Ok(current) = &mut *current {
                info!(service = %configured.service_key(), provider = %configured.address(), "provider exported again for its override rules");
                // The previous exporter is dropped, not unexported: unexporting it
                // would take the service (now the new export) off the server.
                *self.exported.lock() = configured.clone();
                *current = Some(exporter);
                return Ok(true);
            }
        }
        // Unexported while this export ran: it does not stay on the server.
        exporter.unexport().await;
        Ok(false)
    }

    /// Unexports whichever export is current, else `first`; a re-export that ends
    /// after this is unexported too.
    fn unexport(&self, first: &dyn Exporter) -> BoxFuture<'static, ()> {
        match std::mem::replace(&mut *self.current.lock(), Err(())) {
            Ok(Some(e)) => e.unexport(),
            Ok(None) => first.unexport(),
            Err(()) => Box::pin(async {}),
        }
    }
}

/// Keys `old` has and `new` lacks (a withdrawn rule's), to drop from the export.
fn removed(old: &Url, new: &Url) -> Vec<String> {
    old.params()
        .iter()
        .filter(|(k, _)| new.get_param(k).is_none())
        .map(|(k, _)| k.to_string())
        .collect()
}

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
    /// The server-side export, replaceable by a re-export (none for a
    /// registration-only export).
    pub(super) server: Option<Arc<ServerExport>>,
}

impl Exporter for RegistryExporter {
    fn invoker(&self) -> &BoxInvoker {
        self.inner.invoker()
    }

    fn url(&self) -> Url {
        self.registration.provider().clone()
    }

    /// The first export's server: a re-export serves on the same one.
    fn executions(&self) -> Option<Arc<Executions>> {
        self.inner.executions()
    }

    fn unexport(&self) -> BoxFuture<'static, ()> {
        let registration = self.registration.clone();
        self.book.remove_registration(&registration);
        if let Some(r) = &self.rules {
            r.close();
        }
        let inner = match &self.server {
            Some(s) => s.unexport(&*self.inner),
            None => self.inner.unexport(),
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_provider_side_changes_need_a_reexport() {
        let p =
            |q: &str| Url::parse(&format!("dubbo://10.0.0.1:20880/a.B?interface=a.B{q}")).unwrap();
        let base = p("&weight=100");
        assert!(!needs_reexport(&base, &base));
        assert!(!needs_reexport(
            &base,
            &p("&weight=200&timeout=9&disabled=true&retries=0")
        ));
        assert!(
            !needs_reexport(&p("&weight=200&timeout=9"), &base),
            "withdrawn"
        );
        assert!(needs_reexport(&base, &p("&weight=100&tps=5")));
        assert!(
            needs_reexport(&p("&weight=100&executes=3"), &base),
            "withdrawn"
        );
        assert!(!needs_reexport(
            &base,
            &p("&weight=100&tps=5&need-reexport=false")
        ));
    }
}
