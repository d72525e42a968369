//! Errors of this crate (rule parsing and configuration).

/// What can go wrong configuring the cluster layer. Call failures are
/// [`RpcError`](rubbo_common::RpcError)s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// A condition rule does not follow the grammar.
    #[error("illegal route rule \"{rule}\": {reason}")]
    IllegalRule {
        /// The rule text.
        rule: String,
        /// What is wrong.
        reason: String,
    },
    /// A YAML rule could not be parsed.
    #[error("invalid {kind} rule: {reason}")]
    InvalidYaml {
        /// `condition` or `tag`.
        kind: &'static str,
        /// The parser's message.
        reason: String,
    },
}
