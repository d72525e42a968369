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
pub use registry::ZookeeperRegistry;
