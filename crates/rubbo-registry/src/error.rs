//! `RegistryError`: what a registry operation can fail with.

use std::error::Error as StdError;
use std::path::PathBuf;
use std::time::Duration;

use rubbo_common::{ErrorKind, ExtensionError, RpcError, UrlError};

/// Why a registry operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The registry cannot be reached now (not connected, session lost...).
    #[error("registry {address} is not available: {reason}")]
    Unavailable {
        /// The registry address.
        address: String,
        /// What is wrong.
        reason: String,
    },
    /// The operation did not finish in time.
    #[error("registry operation {operation} on {address} timed out after {timeout:?}")]
    Timeout {
        /// The registry address.
        address: String,
        /// `register`, `subscribe`...
        operation: &'static str,
        /// The bound that was hit.
        timeout: Duration,
    },
    /// The registry server refused or failed the operation.
    #[error("registry {address}: {message}")]
    Backend {
        /// The registry address.
        address: String,
        /// What failed.
        message: String,
        /// The client library's error.
        #[source]
        source: Option<Box<dyn StdError + Send + Sync>>,
    },
    /// A URL that cannot be parsed.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// No registry factory for the URL's protocol.
    #[error(transparent)]
    Extension(#[from] ExtensionError),
    /// The registry URL is not usable.
    #[error("invalid registry url: {0}")]
    Config(String),
    /// The registry was destroyed.
    #[error("registry {0} is destroyed")]
    Destroyed(String),
    /// The local cache file could not be read or written.
    #[error("registry cache file {path}: {source}")]
    Cache {
        /// The cache file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl RegistryError {
    /// A backend error with its cause.
    pub fn backend(
        address: impl Into<String>,
        message: impl Into<String>,
        source: impl StdError + Send + Sync + 'static,
    ) -> Self {
        RegistryError::Backend {
            address: address.into(),
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    /// Whether trying again later may succeed (the registry was down, slow or failed):
    /// what a [`FailbackRegistry`](crate::FailbackRegistry) retries. Bad URLs and
    /// configuration, or a destroyed registry, are not retried.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            RegistryError::Unavailable { .. }
                | RegistryError::Timeout { .. }
                | RegistryError::Backend { .. }
        )
    }

    /// An unavailable-registry error.
    pub fn unavailable(address: impl Into<String>, reason: impl Into<String>) -> Self {
        RegistryError::Unavailable {
            address: address.into(),
            reason: reason.into(),
        }
    }
}

impl From<RegistryError> for RpcError {
    fn from(e: RegistryError) -> Self {
        RpcError::new(ErrorKind::Registry, e.to_string()).with_source(e)
    }
}
