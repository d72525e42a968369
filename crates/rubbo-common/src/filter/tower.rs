//! Tower interop: a tower `Layer` used as a filter.

use std::sync::Arc;

use super::{Activate, Filter};
use crate::{BoxInvoker, Invocation, InvokerService, RpcError, RpcResult, ServiceInvoker};

/// Uses a tower `Layer` as a filter: the layer wraps the next invoker seen as a
/// `tower::Service` ([`InvokerService`]), and the service it returns is used as an
/// invoker again ([`ServiceInvoker`]: each call clones it and waits for `poll_ready`).
///
/// ```
/// use rubbo_common::filter::{layer_filter, Activate};
/// use rubbo_common::Filter;
/// use std::time::Duration;
///
/// // tower's own timeout, on every provider call. Its error must become an RpcError:
/// // `tower::timeout::TimeoutLayer` returns `BoxError`, so map it with `MapErrLayer`.
/// #[derive(Clone, Debug)]
/// struct Noop;
/// impl<S> tower_layer::Layer<S> for Noop {
///     type Service = S;
///     fn layer(&self, inner: S) -> S { inner }
/// }
/// let f = layer_filter(Noop).with_activate(Activate::provider(10));
/// fn _dyn_ok(_: &dyn Filter) {}
/// _dyn_ok(&f);
/// ```
pub fn layer_filter<L>(layer: L) -> LayerFilter<L> {
    LayerFilter {
        layer: Arc::new(layer),
        activate: Activate::on_demand(),
    }
}

/// The filter made by [`layer_filter`].
#[derive(Debug)]
pub struct LayerFilter<L> {
    layer: Arc<L>,
    activate: Activate,
}

impl<L> LayerFilter<L> {
    /// Sets where and when the filter runs unasked.
    pub fn with_activate(mut self, activate: Activate) -> Self {
        self.activate = activate;
        self
    }
}

impl<L> Filter for LayerFilter<L>
where
    L: tower_layer::Layer<InvokerService> + Send + Sync + std::fmt::Debug + 'static,
    L::Service: tower_service::Service<Invocation, Response = RpcResult, Error = RpcError>
        + Clone
        + Send
        + Sync
        + 'static,
    <L::Service as tower_service::Service<Invocation>>::Future: Send + 'static,
{
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        let url = next.url().clone();
        Arc::new(ServiceInvoker::new(
            self.layer.layer(InvokerService(next)),
            url,
        ))
    }

    fn activate(&self) -> Activate {
        self.activate
    }
}
