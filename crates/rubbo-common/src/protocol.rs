//! `Protocol` and `Exporter`: how services are exposed and referred on the wire.

use std::sync::Arc;

use crate::executor::Executions;
use crate::{BoxFuture, BoxInvoker, RpcError, Url};

/// A wire protocol (`dubbo`, `tri`...): exports local invokers as a server and refers
/// remote providers as invokers.
///
/// ```
/// use rubbo_common::{BoxFuture, BoxInvoker, Exporter, Protocol, RpcError, Url};
/// use std::sync::Arc;
///
/// // A protocol is an extension looked up by name, so it must be usable as `dyn`.
/// fn _object_safe(_: Arc<dyn Protocol>) {}
/// ```
pub trait Protocol: Send + Sync + std::fmt::Debug + 'static {
    /// The port used when a URL gives none.
    fn default_port(&self) -> u16;

    /// Serves `invoker` (its URL says host, port, service key). Several services may
    /// share one server on one port.
    fn export(
        &self,
        invoker: BoxInvoker,
    ) -> BoxFuture<'static, Result<Box<dyn Exporter>, RpcError>>;

    /// Hands the protocol the schema of an IDL service before it is exported: the
    /// encoded protobuf `FileDescriptorSet` (with imports) of the `.proto` files
    /// defining `service` (its `package.Service` name), as `rubbo-build` embeds it. A
    /// protocol that serves gRPC server reflection or transcodes JSON keeps it.
    /// Default: ignored.
    fn describe(&self, service: &str, file_descriptor_set: &'static [u8]) {
        let _ = (service, file_descriptor_set);
    }

    /// An invoker calling the provider at `url`.
    fn refer(&self, url: Url) -> BoxFuture<'static, Result<BoxInvoker, RpcError>>;

    /// Unexports everything and closes every connection and server.
    fn destroy(&self) -> BoxFuture<'static, ()>;

    /// Drops every server and its connections at once, without telling consumers and
    /// without draining: what a crash looks like to them. For tests and demos of fault
    /// tolerance. Default: nothing.
    fn abort(&self) {}
}

/// A handle on one exported service.
pub trait Exporter: Send + Sync + std::fmt::Debug {
    /// The exported invoker.
    fn invoker(&self) -> &BoxInvoker;

    /// The URL the service is reachable at: the invoker's URL with what exporting
    /// settled (e.g. the port bound when the URL asked for port 0). This is what a
    /// registry registers.
    fn url(&self) -> Url {
        self.invoker().url().clone()
    }

    /// Stops serving this service (the server closes with its last service).
    fn unexport(&self) -> BoxFuture<'static, ()>;

    /// The execution bound of the server serving this service (Java's provider thread
    /// pool, shared by the services on one port), when it has one; for its metrics.
    /// Default: none.
    fn executions(&self) -> Option<Arc<Executions>> {
        None
    }
}
