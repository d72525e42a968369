//! The crate's error.

use crate::Source;

/// A configuration that cannot be read or does not type-check.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A file could not be read.
    #[error("cannot read configuration file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A file whose kind is not known by its extension.
    #[error("configuration file {path}: expected .yml, .yaml or .properties")]
    UnknownFileKind {
        /// The file.
        path: String,
    },
    /// A file that does not parse.
    #[error("{path}:{line}: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A `--set` argument without `=`.
    #[error("--set expects KEY=VALUE, got {arg:?}")]
    BadSet {
        /// The argument.
        arg: String,
    },
    /// A value of the wrong type.
    #[error("{key} = {value:?} ({at}): expected {expected}")]
    Type {
        /// The key.
        key: String,
        /// The value.
        value: String,
        /// What the key takes.
        expected: &'static str,
        /// Where the value was set (file and line, variable, ...).
        at: Source,
    },
}
