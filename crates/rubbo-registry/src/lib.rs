#![doc = include_str!("../README.md")]

mod cache;
mod category;
mod dynamic_config;
mod error;
mod factory;
mod failback;
mod listener;
mod memory;
mod registry;

pub use cache::RegistryCache;
pub use category::{
    ANY_VALUE, CONFIGURATORS_CATEGORY, CONSUMER_SUBSCRIBE_CATEGORIES, CONSUMERS_CATEGORY,
    EMPTY_PROTOCOL, OVERRIDE_PROTOCOL, PROVIDERS_CATEGORY, ROUTE_PROTOCOL, ROUTERS_CATEGORY,
    categories, category_of, consumer_register_url, empty_url, group_by_category, is_any_interface,
    is_empty_url, is_match, is_match_category, list_category, resolve_registry_url,
    should_register, should_subscribe, subscribe_url,
};
pub use dynamic_config::{
    CACHE_FILE_KEY, CONDITION_ROUTER_SUFFIX, CONFIGURATORS_SUFFIX, CachedDynamicConfiguration,
    ConfigChangeEvent, ConfigChangeType, ConfigItem, ConfigurationListener, DEFAULT_GROUP,
    DynamicConfiguration, DynamicConfigurationFactory, MemoryDynamicConfiguration,
    SharedConfigListener, SharedDynamicConfiguration, TAG_ROUTER_SUFFIX, process_safely, rule_key,
    same_config_listener,
};
pub use error::RegistryError;
pub use factory::{
    MemoryRegistryFactory, RegistryFactory, get_registry, registry_factories, registry_key,
};
pub use failback::FailbackRegistry;
pub use listener::{
    NotifyListener, SharedListener, UrlDelta, notify_delta_safely, notify_safely, same_listener,
};
pub use memory::MemoryRegistry;
pub use registry::{Registry, RegistryResult, SharedRegistry};
