#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    clippy::unwrap_used
)]

mod client;
mod codec;
mod config;
mod error;
mod id;
mod idle;
mod server;
mod span;
mod writer;

pub use client::{Clients, ConnectionPool, ExchangeClient};
pub use codec::*;
pub use config::{ClientConfig, Dispatch, ServerConfig};
pub use error::RemotingError;
pub use id::next_id;
pub use server::{ConnectionInfo, Handler, HandlerFn, Server, handler_fn};
