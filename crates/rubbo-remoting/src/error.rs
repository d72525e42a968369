//! The crate error.

use std::io;
use std::time::Duration;

use crate::Status;

/// Errors of the transport and exchange layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemotingError {
    /// TLS could not be set up, or its handshake failed.
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    /// Connecting failed.
    #[error("failed to connect to {addr}: {source}")]
    Connect {
        /// Target address.
        addr: String,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// Connecting did not finish within the connect timeout.
    #[error("connect to {addr} timed out after {timeout:?}")]
    ConnectTimeout {
        /// Target address.
        addr: String,
        /// The connect timeout.
        timeout: Duration,
    },
    /// The connection is down and being re-established; the call was not sent.
    #[error("not connected to {addr} (connection lost, reconnecting)")]
    Disconnected {
        /// Target address.
        addr: String,
    },
    /// The provider announced it is shutting down (readonly event); the call was not sent.
    #[error("provider {addr} is read-only (shutting down); request not sent")]
    ReadOnly {
        /// Target address.
        addr: String,
    },
    /// The connection closed while the request was pending (Dubbo `CHANNEL_INACTIVE`).
    #[error("channel to {addr} closed while request {id} was pending")]
    ChannelInactive {
        /// Target address.
        addr: String,
        /// Request id.
        id: i64,
    },
    /// The call did not complete in time. `sent == false`: the request never left
    /// the client (Dubbo `CLIENT_TIMEOUT`); `sent == true`: it was written but no
    /// response came (Dubbo `SERVER_TIMEOUT`).
    #[error(
        "{} request {id} to {addr} timed out after {timeout:?}",
        if *.sent { "Waiting server-side response timeout (sent, no reply):" } else { "Sending request timeout in client-side (not sent):" }
    )]
    Timeout {
        /// Target address.
        addr: String,
        /// Request id.
        id: i64,
        /// The call's timeout.
        timeout: Duration,
        /// Whether the request had been written to the socket.
        sent: bool,
    },
    /// The request body exceeds the payload limit; nothing was sent.
    #[error("Data length too large: {len}, max payload: {max}")]
    PayloadTooLarge {
        /// Body length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The connection has its bound of pending calls (`max.pending`) waiting for
    /// replies; the call was refused at once and not sent. Another provider, or this
    /// one once replies drain, can take it.
    #[error(
        "too many pending requests to {addr}: {pending} waiting, max.pending is {max}; request not sent"
    )]
    Limit {
        /// Target address.
        addr: String,
        /// Calls pending on the connection when this one was refused.
        pending: usize,
        /// The bound.
        max: usize,
    },
    /// The client or pool was closed by its owner.
    #[error("client to {addr} is closed")]
    Closed {
        /// Target address.
        addr: String,
    },
    /// Binding the server's listener failed.
    #[error("failed to bind server: {0}")]
    Bind(#[source] io::Error),
    /// A configuration value is invalid.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
}

impl RemotingError {
    /// `true` for [`RemotingError::Timeout`].
    pub fn is_timeout(&self) -> bool {
        matches!(self, RemotingError::Timeout { .. })
    }

    /// `true` for [`RemotingError::Limit`]: the connection's bound of pending calls
    /// refused the call before sending it.
    pub fn is_limit(&self) -> bool {
        matches!(self, RemotingError::Limit { .. })
    }

    /// `true` for connection-level failures (connect, TLS handshake, disconnected,
    /// channel inactive, readonly, closed): the call can go to another provider.
    pub fn is_network(&self) -> bool {
        matches!(
            self,
            RemotingError::Connect { .. }
                | RemotingError::ConnectTimeout { .. }
                | RemotingError::Disconnected { .. }
                | RemotingError::ReadOnly { .. }
                | RemotingError::ChannelInactive { .. }
                | RemotingError::Closed { .. }
                | RemotingError::Tls(
                    crate::TlsError::Handshake { .. } | crate::TlsError::HandshakeTimeout { .. }
                )
        )
    }

    /// The Dubbo status this error stands for on the consumer side.
    pub fn status(&self) -> Status {
        match self {
            RemotingError::Timeout { sent: true, .. } => Status::SERVER_TIMEOUT,
            RemotingError::Timeout { sent: false, .. } => Status::CLIENT_TIMEOUT,
            e if e.is_network() => Status::CHANNEL_INACTIVE,
            _ => Status::CLIENT_ERROR,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_messages_distinguish_sent() {
        let t = |sent| RemotingError::Timeout {
            addr: "a:1".into(),
            id: 5,
            timeout: Duration::from_millis(10),
            sent,
        };
        assert!(t(false).to_string().contains("not sent"));
        assert!(t(true).to_string().contains("sent, no reply"));
        assert_eq!(t(false).status(), Status::CLIENT_TIMEOUT);
        assert_eq!(t(true).status(), Status::SERVER_TIMEOUT);
    }

    #[test]
    fn limit_is_neither_timeout_nor_network() {
        let e = RemotingError::Limit {
            addr: "a:1".into(),
            pending: 4,
            max: 4,
        };
        assert!(e.is_limit() && !e.is_timeout() && !e.is_network());
        assert!(e.to_string().contains("max.pending is 4"), "{e}");
        assert_eq!(e.status(), Status::CLIENT_ERROR);
    }
}
