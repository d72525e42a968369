//! Filters: middleware around invokers (Java's `Filter` SPI, as tower `Layer`s).
//!
//! # Order
//!
//! On a consumer a call passes, outermost first: consumer filters, the cluster
//! invoker (directory, routers, load balancing, retries), per-provider filters, and
//! the protocol invoker. On a provider: the protocol's dispatcher, provider filters,
//! the service implementation. Within a chain, filters run in ascending
//! [`Filter::order`] (lower runs first, i.e. outermost), ties in registration order.

use std::future::Future;
use std::sync::Arc;

use crate::{BoxFuture, BoxInvoker, Invocation, InvokeFuture, Invoker, RpcError, RpcResult, Url};

/// Which end of a call a filter chain is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The calling side.
    Consumer,
    /// The serving side.
    Provider,
}

impl Side {
    /// The URL `side` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Consumer => crate::keys::CONSUMER_SIDE,
            Side::Provider => crate::keys::PROVIDER_SIDE,
        }
    }
}

/// A filter: wraps an invoker in another (a tower `Layer` over invokers), and says
/// where and when it applies (Java's `@Activate`).
///
/// ```
/// use rubbo_common::{filter_fn, Filter, Invocation, BoxInvoker};
///
/// // Adds an attachment to every call.
/// let tracing = filter_fn(|mut inv: Invocation, next: BoxInvoker| async move {
///     inv.set_attachment("trace-id", "t-1");
///     next.invoke(inv).await
/// });
/// fn _dyn_ok(_: &dyn Filter) {}
/// _dyn_ok(&tracing);
/// ```
pub trait Filter: Send + Sync + std::fmt::Debug + 'static {
    /// Wraps `next`.
    fn layer(&self, next: BoxInvoker) -> BoxInvoker;

    /// Lower runs first (outermost). Default 0.
    fn order(&self) -> i32 {
        0
    }

    /// Whether the filter applies to a chain for `url` on `side`. Default: always.
    fn activate(&self, _url: &Url, _side: Side) -> bool {
        true
    }
}

/// Wraps `invoker` in the filters of `filters` that activate for its URL on `side`,
/// in the documented order.
pub fn build_chain(invoker: BoxInvoker, filters: &[Arc<dyn Filter>], side: Side) -> BoxInvoker {
    let url = invoker.url().clone();
    let mut active: Vec<(usize, &Arc<dyn Filter>)> = filters
        .iter()
        .enumerate()
        .filter(|(_, f)| f.activate(&url, side))
        .collect();
    active.sort_by_key(|(i, f)| (f.order(), *i));
    active
        .into_iter()
        .rev()
        .fold(invoker, |next, (_, f)| f.layer(next))
}

/// A filter from a closure `|invocation, next| async { .. }` (axum's `from_fn`).
pub fn filter_fn<F, Fut>(f: F) -> FilterFn<F>
where
    F: Fn(Invocation, BoxInvoker) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<RpcResult, RpcError>> + Send + 'static,
{
    FilterFn { f: Arc::new(f) }
}

/// The filter made by [`filter_fn`].
pub struct FilterFn<F> {
    f: Arc<F>,
}

impl<F> std::fmt::Debug for FilterFn<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FilterFn")
    }
}

impl<F, Fut> Filter for FilterFn<F>
where
    F: Fn(Invocation, BoxInvoker) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<RpcResult, RpcError>> + Send + 'static,
{
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        Arc::new(FnInvoker {
            f: self.f.clone(),
            next,
        })
    }
}

struct FnInvoker<F> {
    f: Arc<F>,
    next: BoxInvoker,
}

impl<F> std::fmt::Debug for FnInvoker<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnInvoker")
            .field("next", &self.next)
            .finish()
    }
}

impl<F, Fut> Invoker for FnInvoker<F>
where
    F: Fn(Invocation, BoxInvoker) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<RpcResult, RpcError>> + Send + 'static,
{
    fn invoke(&self, invocation: Invocation) -> InvokeFuture {
        Box::pin((self.f)(invocation, self.next.clone()))
    }

    fn url(&self) -> &Url {
        self.next.url()
    }

    fn is_available(&self) -> bool {
        self.next.is_available()
    }

    fn destroy(&self) {
        self.next.destroy()
    }
}

/// A protocol wrapped so that every invoker it refers gets the consumer filter chain
/// and every invoker it exports gets the provider filter chain (Java's
/// `ProtocolFilterWrapper`). The extension registry applies it to every protocol.
#[derive(Debug)]
pub struct FilteredProtocol {
    inner: Arc<dyn crate::Protocol>,
    filters: Arc<[Arc<dyn Filter>]>,
}

impl FilteredProtocol {
    /// Wraps `inner` with `filters`.
    pub fn new(inner: Arc<dyn crate::Protocol>, filters: Arc<[Arc<dyn Filter>]>) -> Self {
        FilteredProtocol { inner, filters }
    }
}

impl crate::Protocol for FilteredProtocol {
    fn default_port(&self) -> u16 {
        self.inner.default_port()
    }

    fn export(
        &self,
        invoker: BoxInvoker,
    ) -> BoxFuture<'static, Result<Box<dyn crate::Exporter>, RpcError>> {
        let chained = build_chain(invoker, &self.filters, Side::Provider);
        self.inner.export(chained)
    }

    fn refer(&self, url: Url) -> BoxFuture<'static, Result<BoxInvoker, RpcError>> {
        let inner = self.inner.clone();
        let filters = self.filters.clone();
        Box::pin(async move {
            let invoker = inner.refer(url).await?;
            Ok(build_chain(invoker, &filters, Side::Consumer))
        })
    }

    fn destroy(&self) -> BoxFuture<'static, ()> {
        self.inner.destroy()
    }
}
