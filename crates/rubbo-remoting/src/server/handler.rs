//! The server's request handler.

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::{Request, Response};

/// The peer and local addresses of one server connection.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionInfo {
    /// Connection number, unique within the process.
    pub id: u64,
    /// The remote (consumer) address.
    pub peer: SocketAddr,
    /// The local (provider) address.
    pub local: SocketAddr,
    /// The same two addresses, made once per connection, for the invocations it
    /// carries ([`Invocation::set_peer`](rubbo_common::Invocation::set_peer)): a call
    /// shares them instead of copying them.
    pub endpoints: Arc<rubbo_common::Peer>,
}

/// Answers the requests of a [`Server`](crate::Server).
///
/// Called for every non-event request (heartbeats and readonly events are handled
/// by the server). Return `Some(response)` for a two-way request
/// (`req.two_way`) and `None` for a one-way one; the server sets the response id
/// to the request id. A request with [`broken`](Request::broken) set has no body:
/// answer [`Status::BAD_REQUEST`](crate::Status::BAD_REQUEST) with the reason.
///
/// A panic in `handle` (or in its future) is caught: the server answers a two-way
/// request with status 80 `SERVER_ERROR` whose body comes from
/// [`ServerConfig::error_body`](crate::ServerConfig::error_body), and the connection
/// stays open.
///
/// ```
/// use futures::FutureExt;
/// use futures::future::BoxFuture;
/// use rubbo_remoting::{ConnectionInfo, Handler, Request, Response};
///
/// struct Echo;
/// impl Handler for Echo {
///     fn handle(&self, req: Request, _conn: &ConnectionInfo) -> BoxFuture<'static, Option<Response>> {
///         let resp = req.two_way.then(|| Response::ok(req.id, req.serialization, req.body));
///         async move { resp }.boxed()
///     }
/// }
/// let _dyn_ok: std::sync::Arc<dyn Handler> = std::sync::Arc::new(Echo);
/// ```
pub trait Handler: Send + Sync + 'static {
    /// Handles one request.
    fn handle(&self, req: Request, conn: &ConnectionInfo) -> BoxFuture<'static, Option<Response>>;
}

impl<H: Handler + ?Sized> Handler for Arc<H> {
    fn handle(&self, req: Request, conn: &ConnectionInfo) -> BoxFuture<'static, Option<Response>> {
        (**self).handle(req, conn)
    }
}

impl<H: Handler + ?Sized> Handler for Box<H> {
    fn handle(&self, req: Request, conn: &ConnectionInfo) -> BoxFuture<'static, Option<Response>> {
        (**self).handle(req, conn)
    }
}

/// A [`Handler`] from an async closure; see [`handler_fn`].
#[derive(Clone)]
pub struct HandlerFn<F> {
    f: F,
}

/// Builds a [`Handler`] from `Fn(Request, ConnectionInfo) -> impl Future<Output = Option<Response>>`.
///
/// ```
/// use rubbo_remoting::{ConnectionInfo, Request, Response, handler_fn};
/// let echo = handler_fn(|req: Request, _conn: ConnectionInfo| async move {
///     req.two_way.then(|| Response::ok(req.id, req.serialization, req.body))
/// });
/// # let _ = echo;
/// ```
pub fn handler_fn<F, Fut>(f: F) -> HandlerFn<F>
where
    F: Fn(Request, ConnectionInfo) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<Response>> + Send + 'static,
{
    HandlerFn { f }
}

impl<F, Fut> Handler for HandlerFn<F>
where
    F: Fn(Request, ConnectionInfo) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<Response>> + Send + 'static,
{
    fn handle(&self, req: Request, conn: &ConnectionInfo) -> BoxFuture<'static, Option<Response>> {
        (self.f)(req, conn.clone()).boxed()
    }
}

impl<F> fmt::Debug for HandlerFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HandlerFn")
    }
}
