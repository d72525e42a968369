#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod command;
mod error;
mod host;
mod log_level;
mod permission;
mod server;
mod table;

pub use command::{
    ALL_APPLICATIONS, COMMANDS, CommandContext, CommandSpec, Outcome, Qos, Reply, Session,
    TELNET_IDLE, command,
};
pub use error::QosError;
pub use host::{
    ConfigSection, ConsumerRegistry, ConsumerService, LocalService, MethodCount, MethodSignature,
    ProviderService, QosHost, Registration, RegistryScope, RouterState, ServerInfo,
};
pub use log_level::LogLevelSwitch;
pub use permission::{PermissionLevel, QosConfig};
pub use server::telnet::{LOGO, MAX_LINE, PROMPT};
pub use server::{FOREIGN_REFUSED, QosServer};
