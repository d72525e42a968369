#![doc = include_str!("../README.md")]

mod discovery;
mod error;
mod info;
mod instance;
mod instance_metadata;
mod interner;
pub mod memory;

pub use discovery::{
    InstanceList, InstancesWatch, MappingWatch, ServiceDiscovery, ServiceNameMapping,
    parse_mapping, shared_instances,
};
pub use error::{MetadataError, MetadataResult};
pub use info::{
    EMPTY_REVISION, EXCLUDED_SERVICE_PARAMS, INSTANCE_PARAMS, MetadataInfo, ServiceInfo,
};
pub use instance::{
    Endpoint, ServiceInstance, ZOOKEEPER_INSTANCE_CLASS, metadata_json,
    metadata_service_url_params, parse_metadata, parse_url_params,
};
pub use instance_metadata::{
    InstanceMetadata, IntoIter as InstanceMetadataIntoIter, Iter as InstanceMetadataIter,
};
pub use interner::MetadataInterner;
pub use memory::MemoryServiceDiscovery;
