#![doc = include_str!("../README.md")]
// Unsafe stays forbidden here, not in Cargo.toml: see the [lints] note there.
#![forbid(unsafe_code)]

mod children;
mod events;
mod factory;
mod nodes;
pub mod paths;
mod registry;
mod session;
mod subscription;

pub use children::{ChildCache, ChildUpdate};
pub use factory::{ZookeeperRegistryFactory, register_factory, registry_factories};
pub use registry::{
    BACKUP_KEY, DEFAULT_CONNECT_TIMEOUT, DEFAULT_NOTIFY_DELAY, DEFAULT_SESSION_TIMEOUT,
    ENABLE_EMPTY_PROTECTION_KEY, SESSION_KEY, WATCH_KEY, ZookeeperRegistry,
};
