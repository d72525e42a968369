//! The crate's error.

use std::io;

/// What can go wrong in the QoS server or a command.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QosError {
    /// The port could not be bound, or a connection failed.
    #[error("qos i/o: {0}")]
    Io(#[from] io::Error),
    /// `qos_host` is not an address to bind.
    #[error("bad qos host {0:?}")]
    BadHost(String),
    /// A command failed; the text is shown to the operator (telnet) or sent as the
    /// 500 body (HTTP).
    #[error("{0}")]
    Command(String),
}

impl QosError {
    /// A command failure with `msg` for the operator.
    pub fn command(msg: impl Into<String>) -> Self {
        QosError::Command(msg.into())
    }
}
