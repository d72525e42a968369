//! Where a value came from.

use std::fmt;

/// The source of one value in the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// Set by the program ([`ConfigLoader::code`](crate::ConfigLoader::code)).
    Code,
    /// A `--set KEY=VALUE` argument.
    Set,
    /// An environment variable.
    Env {
        /// The variable's name.
        var: String,
    },
    /// A YAML or `.properties` file.
    File {
        /// The file's name as given.
        path: String,
        /// The 1-based line the value starts on.
        line: usize,
    },
    /// Externalized configuration read from the config center (Java's
    /// `ExternalConfiguration`, or `AppExternalConfiguration` when `group` is the
    /// application's).
    ConfigCenter {
        /// `{group}/{key}`: `dubbo/dubbo.properties`, or the application's group.
        entry: String,
        /// The 1-based line the value is on.
        line: usize,
        /// Whether it is the application's (which beats the global one).
        application: bool,
    },
    /// A default ([`ConfigLoader::default_value`](crate::ConfigLoader::default_value)).
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Code => f.write_str("code"),
            Source::Set => f.write_str("--set"),
            Source::Env { var } => write!(f, "environment variable {var}"),
            Source::File { path, line } => write!(f, "{path}:{line}"),
            Source::ConfigCenter { entry, line, .. } => write!(f, "config center {entry}:{line}"),
            Source::Default => f.write_str("default"),
        }
    }
}

/// One value with its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The value, as written (YAML scalars as their text).
    pub value: String,
    /// Where it was set.
    pub source: Source,
}
