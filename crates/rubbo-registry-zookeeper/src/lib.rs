#![doc = include_str!("../README.md")]
// Unsafe stays forbidden here, not in Cargo.toml: see the [lints] note there.
#![forbid(unsafe_code)]

mod children;
mod config_center;
mod discovery;
mod events;
mod factory;
mod nodes;
pub mod paths;
mod registry;
mod session;
mod sessions;
mod subscription;
mod watch_mode;

pub use children::{ChildCache, ChildUpdate};
pub use config_center::{
    BASE_PATH_KEY, NAMESPACE_KEY, ROOT_PATH_KEY, ZookeeperDynamicConfiguration,
    ZookeeperDynamicConfigurationFactory, config_root, register_config_center_factory,
};
pub use discovery::ZookeeperServiceDiscovery;
pub use factory::{
    ZookeeperRegistryFactory, register_factory, register_factory_with, registry_factories,
};
pub use registry::ZookeeperRegistry;
pub use sessions::ZookeeperSessions;
