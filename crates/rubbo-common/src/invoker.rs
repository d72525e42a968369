//! `Invoker`: an async call from [`Invocation`] to [`RpcResult`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::{Invocation, RpcError, RpcResult, Url};

/// A boxed, `Send` future: what dynamic invokers return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The future of one call.
pub type InvokeFuture = BoxFuture<'static, Result<RpcResult, RpcError>>;

/// A shared, dynamically typed invoker: what directories, routers, load balancers and
/// cluster strategies hold.
pub type BoxInvoker = Arc<dyn Invoker>;

/// An async call from an [`Invocation`] to an [`RpcResult`]: a provider behind a
/// protocol, a cluster of providers, or a local service implementation.
///
/// `invoke` takes `&self` because invokers sit in shared lists; the returned future is
/// `'static`, so implementations clone what they need into it.
///
/// ```
/// use rubbo_common::{BoxInvoker, Invocation, InvokeFuture, Invoker, Payload, RpcResult, Url, Value};
/// use std::sync::Arc;
///
/// #[derive(Debug)]
/// struct Echo(Url);
///
/// impl Invoker for Echo {
///     fn invoke(&self, inv: Invocation) -> InvokeFuture {
///         Box::pin(async move {
///             let first = inv.arguments().as_values().and_then(|v| v.first()).cloned();
///             Ok(RpcResult::value(Payload::Value(first.unwrap_or(Value::Null))))
///         })
///     }
///     fn url(&self) -> &Url {
///         &self.0
///     }
/// }
///
/// let invoker: BoxInvoker = Arc::new(Echo(Url::new("local", "127.0.0.1", 0)));
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let result = rt.block_on(invoker.invoke(
///     Invocation::new("Echo", "echo").with_arguments(vec![Value::from("hi")]),
/// ));
/// assert!(result.is_ok());
/// ```
pub trait Invoker: Send + Sync + std::fmt::Debug + 'static {
    /// Performs the call.
    fn invoke(&self, invocation: Invocation) -> InvokeFuture;

    /// The URL this invoker stands for (a provider URL, or the consumer URL of a cluster).
    fn url(&self) -> &Url;

    /// Whether the invoker can take calls now (e.g. its connection is up).
    fn is_available(&self) -> bool {
        true
    }

    /// Releases resources (connections); later calls fail.
    fn destroy(&self) {}
}

/// Adapts a [`BoxInvoker`] into a `tower::Service`, so tower middleware can wrap it.
///
/// `poll_ready` reports the invoker's availability: ready while
/// [`Invoker::is_available`], a network error when it is not (a closed connection, a
/// destroyed invoker), so tower's balancers and retries can act on it.
#[derive(Debug, Clone)]
pub struct InvokerService(pub BoxInvoker);

impl tower_service::Service<Invocation> for InvokerService {
    type Response = RpcResult;
    type Error = RpcError;
    type Future = InvokeFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), RpcError>> {
        if self.0.is_available() {
            Poll::Ready(Ok(()))
        } else {
            Poll::Ready(Err(RpcError::network(format!(
                "invoker for {} is not available",
                self.0.url().address()
            ))))
        }
    }

    fn call(&mut self, invocation: Invocation) -> InvokeFuture {
        self.0.invoke(invocation)
    }
}

/// Adapts a cloneable `tower::Service` into an [`Invoker`].
///
/// Each call clones the service (tower services are cheap handles) and waits for it to
/// be ready, so `invoke` can keep taking `&self`.
pub struct ServiceInvoker<S> {
    service: S,
    url: Url,
}

impl<S> ServiceInvoker<S> {
    /// Wraps `service`, reporting `url`.
    pub fn new(service: S, url: Url) -> Self {
        ServiceInvoker { service, url }
    }
}

impl<S> std::fmt::Debug for ServiceInvoker<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceInvoker")
            .field("url", &self.url)
            .finish()
    }
}

impl<S> Invoker for ServiceInvoker<S>
where
    S: tower_service::Service<Invocation, Response = RpcResult, Error = RpcError>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    fn invoke(&self, invocation: Invocation) -> InvokeFuture {
        let mut service = self.service.clone();
        Box::pin(async move {
            futures::future::poll_fn(|cx| service.poll_ready(cx)).await?;
            service.call(invocation).await
        })
    }

    fn url(&self) -> &Url {
        &self.url
    }
}
