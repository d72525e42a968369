#![doc = include_str!("../README.md")]

mod env;
mod error;
mod loader;
mod model;
mod properties;
mod schema;
mod source;
mod tree;
mod yaml;

pub use error::ConfigError;
pub use loader::{ConfigLoader, parse_set_arg};
pub use model::{
    ApplicationConfig, CenterConfig, DefaultsConfig, MethodConfig, ProtocolConfig, RegistryConfig,
    ServiceConfig, SslConfig,
};
pub use source::{Entry, Source};
pub use tree::Config;
