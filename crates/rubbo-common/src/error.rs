//! `RpcError`: the one error type at the invoker boundary.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use crate::result::BizException;

/// What went wrong, in Java Dubbo's categories (`RpcException` codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Anything else (code 0).
    Unknown,
    /// Connection refused, lost, reset, or not available (code 1).
    Network,
    /// No response in time (code 2).
    Timeout,
    /// The provider's business code threw (code 3); see [`RpcError::biz_exception`].
    Biz,
    /// A filter or rule refused the call (code 4).
    Forbidden,
    /// Encoding or decoding failed (code 5).
    Serialization,
    /// No provider is available after routing (code 6).
    NoProvider,
    /// A concurrency or rate limit was hit, e.g. a full provider pool (code 7).
    LimitExceeded,
    /// The registry failed (code 9).
    Registry,
    /// The provider has no such service or method (code 11).
    MethodNotFound,
    /// Argument validation failed (code 12).
    Validation,
    /// Authentication or authorization failed (code 13).
    Authorization,
}

impl ErrorKind {
    /// The Java `RpcException` code.
    pub fn code(self) -> i32 {
        match self {
            ErrorKind::Unknown => 0,
            ErrorKind::Network => 1,
            ErrorKind::Timeout => 2,
            ErrorKind::Biz => 3,
            ErrorKind::Forbidden => 4,
            ErrorKind::Serialization => 5,
            ErrorKind::NoProvider => 6,
            ErrorKind::LimitExceeded => 7,
            ErrorKind::Registry => 9,
            ErrorKind::MethodNotFound => 11,
            ErrorKind::Validation => 12,
            ErrorKind::Authorization => 13,
        }
    }

    fn name(self) -> &'static str {
        match self {
            ErrorKind::Unknown => "unknown",
            ErrorKind::Network => "network",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Biz => "business exception",
            ErrorKind::Forbidden => "forbidden",
            ErrorKind::Serialization => "serialization",
            ErrorKind::NoProvider => "no provider",
            ErrorKind::LimitExceeded => "limit exceeded",
            ErrorKind::Registry => "registry",
            ErrorKind::MethodNotFound => "method not found",
            ErrorKind::Validation => "validation",
            ErrorKind::Authorization => "authorization",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of an RPC, as every layer (filter, cluster, protocol) reports it.
///
/// Match on [`kind()`](Self::kind); the cause chain is in [`source()`](StdError::source).
/// Cheap to clone (the source is shared), so cluster invokers can keep the last error
/// while retrying.
///
/// ```
/// use rubbo_common::{ErrorKind, RpcError};
///
/// let e = RpcError::timeout("waited 1000 ms for 10.0.0.1:20880");
/// assert_eq!(e.kind(), ErrorKind::Timeout);
/// assert!(e.is_retryable());
/// assert!(!RpcError::biz("org.rubbo.interop.InteropException", Some("boom".into())).is_retryable());
/// ```
#[derive(Clone)]
pub struct RpcError {
    kind: ErrorKind,
    message: Arc<str>,
    source: Option<Arc<dyn StdError + Send + Sync>>,
    biz: Option<Arc<BizException>>,
}

impl RpcError {
    /// An error of `kind` with a message.
    pub fn new(kind: ErrorKind, message: impl Into<Arc<str>>) -> Self {
        RpcError {
            kind,
            message: message.into(),
            source: None,
            biz: None,
        }
    }

    /// Attaches the underlying cause.
    pub fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// A timeout.
    pub fn timeout(message: impl Into<Arc<str>>) -> Self {
        Self::new(ErrorKind::Timeout, message)
    }

    /// A network failure.
    pub fn network(message: impl Into<Arc<str>>) -> Self {
        Self::new(ErrorKind::Network, message)
    }

    /// A serialization failure.
    pub fn serialization(message: impl Into<Arc<str>>) -> Self {
        Self::new(ErrorKind::Serialization, message)
    }

    /// No provider available.
    pub fn no_provider(message: impl Into<Arc<str>>) -> Self {
        Self::new(ErrorKind::NoProvider, message)
    }

    /// Unknown service or method.
    pub fn method_not_found(message: impl Into<Arc<str>>) -> Self {
        Self::new(ErrorKind::MethodNotFound, message)
    }

    /// A business exception thrown by the provider: Java class name and message.
    pub fn biz(class: impl Into<String>, message: Option<String>) -> Self {
        Self::from_biz(BizException::new(class, message))
    }

    /// A business exception with everything the provider sent.
    pub fn from_biz(exception: BizException) -> Self {
        let message: Arc<str> = match &exception.message {
            Some(m) => format!("{}: {}", exception.class, m).into(),
            None => exception.class.clone().into(),
        };
        RpcError {
            kind: ErrorKind::Biz,
            message,
            source: None,
            biz: Some(Arc::new(exception)),
        }
    }

    /// The category.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The Java `RpcException` code of the category.
    pub fn code(&self) -> i32 {
        self.kind.code()
    }

    /// The message, without the cause chain.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The business exception, for [`ErrorKind::Biz`].
    pub fn biz_exception(&self) -> Option<&BizException> {
        self.biz.as_deref()
    }

    /// Whether another provider may succeed: network failures, timeouts and exhausted
    /// provider limits. A business exception never is (Java's failover rule).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Network | ErrorKind::Timeout | ErrorKind::LimitExceeded
        )
    }

    /// Whether this is a business exception.
    pub fn is_biz(&self) -> bool {
        self.kind == ErrorKind::Biz
    }
}

impl fmt::Debug for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RpcError");
        d.field("kind", &self.kind).field("message", &self.message);
        if let Some(s) = &self.source {
            d.field("source", s);
        }
        d.finish()
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} error: {}", self.kind, self.message)
    }
}

impl StdError for RpcError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn StdError + 'static))
    }
}
