//! The errors of application-level discovery.

use thiserror::Error;

/// An error of metadata or instance handling, or of a discovery backend.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// A JSON document (instance node, MetadataInfo, endpoints) that does not parse.
    #[error("bad {what} JSON: {reason}")]
    Json {
        /// What was parsed.
        what: &'static str,
        /// Why it failed.
        reason: String,
    },
    /// A discovery or mapping backend failed (ZooKeeper unreachable, ...).
    #[error("service discovery: {0}")]
    Backend(String),
    /// A compare-and-set update kept conflicting after every retry.
    #[error("{what}: still conflicting after {attempts} attempts")]
    Conflict {
        /// What was updated.
        what: String,
        /// How many attempts were made.
        attempts: u32,
    },
}

/// A result of this crate.
pub type MetadataResult<T> = Result<T, MetadataError>;
