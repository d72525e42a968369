#![doc = include_str!("../README.md")]
// Unsafe stays forbidden here, not in Cargo.toml: see the [lints] note there.
#![forbid(unsafe_code)]

mod client;
mod codec;
mod config;
mod error;
mod id;
mod idle;
mod server;
mod span;
#[cfg(feature = "test-certs")]
pub mod test_certs;
mod tls;
mod writer;

pub use client::{Clients, ConnectionPool, ExchangeClient};
pub use codec::*;
pub use config::{ClientConfig, Dispatch, ServerConfig};
pub use error::RemotingError;
pub use id::next_id;
pub use server::{ConnectionInfo, Handler, HandlerFn, Server, handler_fn};
pub use tls::{
    HANDSHAKE_TIMEOUT, TlsAcceptor, TlsConnector, TlsError, client_key as tls_client_key,
};
