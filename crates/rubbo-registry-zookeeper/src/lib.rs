#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    clippy::unwrap_used
)]

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
