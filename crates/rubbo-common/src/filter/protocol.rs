//! `FilteredProtocol`: every exported service and referred provider gets its chain
//! (Java's `ProtocolFilterWrapper`).

use std::sync::Arc;

use super::{Filter, Stage, build_chain};
use crate::{BoxFuture, BoxInvoker, Exporter, ExtensionTable, Protocol, RpcError, Url};

/// A protocol wrapped so that every invoker it exports gets the provider chain and
/// every invoker it refers gets the per-provider consumer chain, as the filter table
/// selects them for the invoker's URL. The bootstrap wraps every protocol of its
/// protocol table in one.
///
/// An unknown name in `service.filter` / `reference.filter` fails the export or the
/// refer with an error naming the known filters.
#[derive(Debug, Clone)]
pub struct FilteredProtocol {
    inner: Arc<dyn Protocol>,
    filters: Arc<ExtensionTable<dyn Filter>>,
}

impl FilteredProtocol {
    /// Wraps `inner` with the filters of `filters`.
    pub fn new(inner: Arc<dyn Protocol>, filters: Arc<ExtensionTable<dyn Filter>>) -> Self {
        FilteredProtocol { inner, filters }
    }

    /// The wrapped protocol.
    pub fn get_ref(&self) -> &Arc<dyn Protocol> {
        &self.inner
    }
}

/// A filter list naming an unknown filter: a configuration mistake.
fn config_error(e: crate::ExtensionError) -> RpcError {
    RpcError::new(crate::ErrorKind::Unknown, e.to_string())
}

impl Protocol for FilteredProtocol {
    fn default_port(&self) -> u16 {
        self.inner.default_port()
    }

    fn export(
        &self,
        invoker: BoxInvoker,
    ) -> BoxFuture<'static, Result<Box<dyn Exporter>, RpcError>> {
        match build_chain(invoker, &self.filters, Stage::Provider) {
            Ok(chained) => self.inner.export(chained),
            Err(e) => Box::pin(std::future::ready(Err(config_error(e)))),
        }
    }

    fn describe(&self, service: &str, file_descriptor_set: &'static [u8]) {
        self.inner.describe(service, file_descriptor_set);
    }

    fn refer(&self, url: Url) -> BoxFuture<'static, Result<BoxInvoker, RpcError>> {
        let inner = self.inner.clone();
        let filters = self.filters.clone();
        Box::pin(async move {
            // Chosen (and the names checked) before connecting; the referred invoker's
            // URL is the one asked for.
            let chain = super::select(&filters, &url, Stage::Consumer).map_err(config_error)?;
            let invoker = inner.refer(url).await?;
            Ok(super::wrap(invoker, &chain))
        })
    }

    fn destroy(&self) -> BoxFuture<'static, ()> {
        self.inner.destroy()
    }

    fn abort(&self) {
        self.inner.abort()
    }
}
