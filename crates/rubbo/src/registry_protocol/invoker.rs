//! The invoker a registry reference returns.

use std::sync::Arc;

use rubbo_cluster::{Directory, DynamicDirectory};
use rubbo_common::{BoxInvoker, Invocation, InvokeFuture, Invoker, Url};

use super::subscription::Subscription;

/// The cluster invoker of a reference, owning its subscription: destroying it (or
/// dropping its last handle) ends the subscription task, which unsubscribes and
/// unregisters the consumer.
#[derive(Debug)]
pub(super) struct RegistryInvoker {
    pub(super) inner: BoxInvoker,
    pub(super) directory: Arc<DynamicDirectory>,
    pub(super) subscription: Subscription,
    pub(super) consumer: Url,
}

impl Invoker for RegistryInvoker {
    fn invoke(&self, invocation: Invocation) -> InvokeFuture {
        self.inner.invoke(invocation)
    }
    fn url(&self) -> &Url {
        &self.consumer
    }
    fn is_available(&self) -> bool {
        self.inner.is_available()
    }
    fn destroy(&self) {
        self.subscription.close();
        self.directory.destroy();
        self.inner.destroy();
    }
}
