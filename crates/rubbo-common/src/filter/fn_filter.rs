//! `filter_fn`: a filter from a closure (axum's `from_fn`).

use std::future::Future;
use std::sync::Arc;

use super::{Activate, Filter};
use crate::{BoxInvoker, Invocation, InvokeFuture, Invoker, RpcError, RpcResult, Url};

/// A filter from a closure `|invocation, next| async { .. }` (its future is boxed
/// per call; a filter on a hot path can implement [`Filter`] with an invoker of its
/// own and return `next.invoke(inv)` directly).
///
/// By default the filter runs only where named (`service.filter=name`); give it an
/// [`Activate`] with [`FilterFn::with_activate`] to run unasked.
///
/// ```
/// use rubbo_common::filter::Activate;
/// use rubbo_common::{filter_fn, BoxInvoker, Invocation, RpcError, ErrorKind};
///
/// // Rejects calls without a `tenant` attachment, on every provider.
/// let tenant = filter_fn(|inv: Invocation, next: BoxInvoker| async move {
///     if inv.attachment_str("tenant").is_none() {
///         return Err(RpcError::new(ErrorKind::Forbidden, "no tenant"));
///     }
///     next.invoke(inv).await
/// })
/// .with_activate(Activate::provider(100));
/// ```
pub fn filter_fn<F, Fut>(f: F) -> FilterFn<F>
where
    F: Fn(Invocation, BoxInvoker) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<RpcResult, RpcError>> + Send + 'static,
{
    FilterFn {
        f: Arc::new(f),
        activate: Activate::on_demand(),
    }
}

/// The filter made by [`filter_fn`].
pub struct FilterFn<F> {
    f: Arc<F>,
    activate: Activate,
}

impl<F> FilterFn<F> {
    /// Sets where and when the filter runs unasked.
    pub fn with_activate(mut self, activate: Activate) -> Self {
        self.activate = activate;
        self
    }
}

impl<F> std::fmt::Debug for FilterFn<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilterFn")
            .field("activate", &self.activate)
            .finish()
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

    fn activate(&self) -> Activate {
        self.activate
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
