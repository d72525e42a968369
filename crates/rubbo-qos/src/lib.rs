#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod command;
mod error;
mod host;
mod permission;
mod server;
mod table;

pub use command::{
    ALL_APPLICATIONS, COMMANDS, CommandContext, CommandSpec, Outcome, Qos, Reply, TELNET_IDLE,
    command,
};
pub use error::QosError;
pub use host::{
    ConfigSection, ConsumerRegistry, ConsumerService, ProviderService, QosHost, Registration,
    RegistryScope, ServerInfo,
};
pub use permission::{PermissionLevel, QosConfig};
pub use server::telnet::{LOGO, MAX_LINE, PROMPT};
pub use server::{FOREIGN_REFUSED, QosServer};
