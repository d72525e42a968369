//! `LazyProtocol`: a built-in protocol made the first time it is used.
//!
//! Every application's protocol table names the built-ins (`dubbo`, `tri`), but most
//! use one of them. Making a protocol builds its tables (serializations, schemas,
//! health) and runs code that is otherwise never run, whose pages then count in the
//! process's resident memory; an application serving only Triple should not pay for
//! `dubbo`, nor one serving only `dubbo` for Triple.

use std::fmt;
use std::sync::{Arc, OnceLock};

use rubbo_common::{BoxFuture, BoxInvoker, Exporter, Protocol, RpcError, Url};

/// A protocol made by `make` on first use (export, refer, describe, default port).
/// Stopping one never made (`destroy`, `abort`) does nothing and makes nothing.
pub(crate) struct LazyProtocol {
    name: &'static str,
    make: fn() -> Arc<dyn Protocol>,
    made: OnceLock<Arc<dyn Protocol>>,
}

impl LazyProtocol {
    /// The protocol `name` (for `Debug`), made by `make` when first used.
    pub(crate) fn new(name: &'static str, make: fn() -> Arc<dyn Protocol>) -> Self {
        LazyProtocol {
            name,
            make,
            made: OnceLock::new(),
        }
    }

    fn get(&self) -> &Arc<dyn Protocol> {
        self.made.get_or_init(self.make)
    }
}

impl fmt::Debug for LazyProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LazyProtocol")
            .field("name", &self.name)
            .field("made", &self.made.get())
            .finish()
    }
}

impl Protocol for LazyProtocol {
    fn default_port(&self) -> u16 {
        self.get().default_port()
    }

    fn export(
        &self,
        invoker: BoxInvoker,
    ) -> BoxFuture<'static, Result<Box<dyn Exporter>, RpcError>> {
        self.get().export(invoker)
    }

    fn describe(&self, service: &str, file_descriptor_set: &'static [u8]) {
        self.get().describe(service, file_descriptor_set);
    }

    fn refer(&self, url: Url) -> BoxFuture<'static, Result<BoxInvoker, RpcError>> {
        self.get().refer(url)
    }

    fn destroy(&self) -> BoxFuture<'static, ()> {
        match self.made.get() {
            Some(p) => p.destroy(),
            None => Box::pin(std::future::ready(())),
        }
    }

    fn abort(&self) {
        if let Some(p) = self.made.get() {
            p.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    static MADE: AtomicUsize = AtomicUsize::new(0);

    #[derive(Debug)]
    struct Counted;

    impl Protocol for Counted {
        fn default_port(&self) -> u16 {
            7
        }
        fn export(&self, _: BoxInvoker) -> BoxFuture<'static, Result<Box<dyn Exporter>, RpcError>> {
            unimplemented!()
        }
        fn refer(&self, _: Url) -> BoxFuture<'static, Result<BoxInvoker, RpcError>> {
            unimplemented!()
        }
        fn destroy(&self) -> BoxFuture<'static, ()> {
            Box::pin(std::future::ready(()))
        }
    }

    fn make() -> Arc<dyn Protocol> {
        MADE.fetch_add(1, Ordering::SeqCst);
        Arc::new(Counted)
    }

    #[tokio::test]
    async fn made_once_on_first_use_and_not_by_stopping() {
        let p = LazyProtocol::new("counted", make);
        p.destroy().await;
        p.abort();
        assert_eq!(MADE.load(Ordering::SeqCst), 0, "stopping made it");
        assert_eq!(p.default_port(), 7);
        assert_eq!(p.default_port(), 7);
        assert_eq!(MADE.load(Ordering::SeqCst), 1);
        p.destroy().await;
        assert_eq!(MADE.load(Ordering::SeqCst), 1);
    }
}
