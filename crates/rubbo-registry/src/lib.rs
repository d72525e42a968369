#![doc = include_str!("../README.md")]

mod cache;
mod category;
mod error;
mod factory;
mod failback;
mod listener;
mod memory;
mod registry;

pub use cache::RegistryCache;
pub use category::{
    ANY_VALUE, CLASSIFIER_KEY, CONFIGURATORS_CATEGORY, CONSUMER_SUBSCRIBE_CATEGORIES,
    CONSUMERS_CATEGORY, DEFAULT_CATEGORY, EMPTY_PROTOCOL, ENABLED_KEY, FILE_CACHE_KEY, FILE_KEY,
    NOTIFY_DELAY_KEY, OVERRIDE_PROTOCOL, PROVIDERS_CATEGORY, RETRY_PERIOD_KEY, ROUTE_PROTOCOL,
    ROUTERS_CATEGORY, TIMEOUT_KEY, categories, category_of, consumer_register_url, empty_url,
    group_by_category, is_any_interface, is_empty_url, is_match, is_match_category, list_category,
    resolve_registry_url, should_register, should_subscribe, subscribe_url,
};
pub use error::RegistryError;
pub use factory::{
    MemoryRegistryFactory, RegistryFactory, get_registry, registry_factories, registry_key,
};
pub use failback::{DEFAULT_OPERATION_TIMEOUT, DEFAULT_RETRY_PERIOD, FailbackRegistry};
pub use listener::{NotifyListener, SharedListener, notify_safely, same_listener};
pub use memory::MemoryRegistry;
pub use registry::{Registry, RegistryResult, SharedRegistry};
