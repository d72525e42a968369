//! The protobuf schemas a Triple protocol knows: its own services' (health,
//! reflection v1 and v1alpha, from the vendored `proto/` files) and those of the IDL
//! services handed to it by [`Protocol::describe`](rubbo_common::Protocol::describe)
//! before their export. Server reflection answers from them, and the JSON forms of
//! IDL methods transcode with them.
//!
//! One pool per protocol (Java keeps one `SchemaDescriptorRegistry` per process);
//! which services a server lists is still its own exports.

use std::sync::Arc;

use parking_lot::RwLock;
use prost_reflect::{DescriptorPool, FileDescriptor, MethodDescriptor, ServiceDescriptor};
use tracing::{debug, warn};

/// The encoded `FileDescriptorSet` of the built-in services, made by `proto/regen.sh`.
const BUILTIN: &[u8] = include_bytes!("../proto/builtin.bin");

/// The schemas of one protocol; cloning shares them.
///
/// Built on first use: decoding the descriptors (the built-in set and each service's)
/// costs about 0.85 MB of heap and runs much of `prost_reflect`, which a server
/// that is never asked for reflection or JSON does not need. Until then the sets
/// handed to [`Schemas::add`] are only kept (they are `'static`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Schemas {
    inner: Arc<RwLock<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The pool, once built.
    pool: Option<DescriptorPool>,
    /// Sets added before the pool was built, in order: `(service, set)`.
    waiting: Vec<(String, &'static [u8])>,
}

impl Inner {
    /// The pool, built (and the waiting sets added) if it was not yet.
    fn pool(&mut self) -> &mut DescriptorPool {
        let waiting = std::mem::take(&mut self.waiting);
        let pool = self.pool.get_or_insert_with(|| {
            DescriptorPool::decode(BUILTIN).unwrap_or_else(|e| {
                // Cannot happen with the committed file (a test decodes it).
                warn!(error = %e, "the built-in descriptors do not decode");
                DescriptorPool::new()
            })
        });
        for (service, set) in waiting {
            add_to(pool, &service, set);
        }
        pool
    }
}

/// Adds `set` to `pool` unless `service` is known already; a bad set leaves it as it
/// was.
fn add_to(pool: &mut DescriptorPool, service: &str, file_descriptor_set: &[u8]) {
    if pool.get_service_by_name(service).is_some() {
        return;
    }
    // Added to a copy, so a bad set leaves the pool as it was.
    let mut grown = pool.clone();
    match grown.decode_file_descriptor_set(file_descriptor_set) {
        Ok(()) => {
            if grown.get_service_by_name(service).is_none() {
                warn!(
                    service,
                    "the descriptor set does not define the service: it is served, not described"
                );
            }
            debug!(service, files = grown.files().len(), "schema added");
            *pool = grown;
        }
        Err(e) => {
            warn!(service, error = %e, "bad descriptor set: the service is served, not described");
        }
    }
}

impl Schemas {
    /// Adds the encoded `FileDescriptorSet` of `service`. Files already known are
    /// kept; a set that does not decode or refers to unknown types is logged (when the
    /// pool is built) and left out (the service is then served, but not described).
    pub(crate) fn add(&self, service: &str, file_descriptor_set: &'static [u8]) {
        let mut inner = self.inner.write();
        match inner.pool.as_mut() {
            Some(pool) => add_to(pool, service, file_descriptor_set),
            None => {
                if !inner.waiting.iter().any(|(s, _)| s == service) {
                    inner
                        .waiting
                        .push((service.to_owned(), file_descriptor_set));
                }
            }
        }
    }

    /// The pool as it is now (a cheap, shared copy), built if it was not yet.
    pub(crate) fn pool(&self) -> DescriptorPool {
        {
            let inner = self.inner.read();
            if let (Some(pool), true) = (&inner.pool, inner.waiting.is_empty()) {
                return pool.clone();
            }
        }
        self.inner.write().pool().clone()
    }

    /// The service named `name` (`package.Service`), if its schema is known.
    pub(crate) fn service(&self, name: &str) -> Option<ServiceDescriptor> {
        {
            let inner = self.inner.read();
            if let (Some(pool), true) = (&inner.pool, inner.waiting.is_empty()) {
                return pool.get_service_by_name(name);
            }
        }
        self.inner.write().pool().get_service_by_name(name)
    }

    /// The rpc `method` of the service named `service`, if known.
    pub(crate) fn method(&self, service: &str, method: &str) -> Option<MethodDescriptor> {
        self.service(service)?
            .methods()
            .find(|m| m.name() == method)
    }

    /// Whether the pool was built (tests).
    #[cfg(test)]
    fn built(&self) -> bool {
        self.inner.read().pool.is_some()
    }
}

/// `file` and every file it imports, transitively, each once, `file` first (what a
/// reflection answer carries, so the client can resolve every type).
pub(crate) fn with_dependencies(file: FileDescriptor) -> Vec<FileDescriptor> {
    let mut out = vec![file];
    let mut next = 0;
    while next < out.len() {
        let deps: Vec<FileDescriptor> = out[next].dependencies().collect();
        for d in deps {
            if !out.iter().any(|f| f.name() == d.name()) {
                out.push(d);
            }
        }
        next += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_services_are_described() {
        let s = Schemas::default();
        for name in [
            "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
        ] {
            assert!(s.service(name).is_some(), "{name}");
        }
        let watch = s.method("grpc.health.v1.Health", "Watch").unwrap();
        assert!(watch.is_server_streaming() && !watch.is_client_streaming());
        let info = s
            .method(
                "grpc.reflection.v1.ServerReflection",
                "ServerReflectionInfo",
            )
            .unwrap();
        assert!(info.is_server_streaming() && info.is_client_streaming());
    }

    #[test]
    fn the_pool_is_built_on_first_use_with_the_sets_added_before() {
        let s = Schemas::default();
        s.add("x.Y", b"\x0a\x05garbage");
        s.add("grpc.health.v1.Health", BUILTIN);
        assert!(!s.built(), "nothing decoded before a lookup");
        assert!(s.service("grpc.health.v1.Health").is_some());
        assert!(s.built());
        assert!(s.service("x.Y").is_none(), "the bad set was left out");
    }

    #[test]
    fn a_bad_set_leaves_the_pool_as_it_was() {
        let s = Schemas::default();
        let before = s.pool().files().len();
        s.add("x.Y", b"\x0a\x05garbage");
        assert_eq!(s.pool().files().len(), before);
        assert!(s.service("x.Y").is_none());
        // The built-in set again: known files are kept, nothing breaks.
        s.add("grpc.health.v1.Health", BUILTIN);
        assert_eq!(s.pool().files().len(), before);
    }
}
