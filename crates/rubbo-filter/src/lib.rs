#![doc = include_str!("../README.md")]

mod accesslog;
mod active_limit;
mod consumer_context;
mod context;
mod deadline;
mod echo;
mod exception;
mod executes;
mod generic;
mod generic_impl;
mod support;
mod timeout;
mod token;
mod tps;

use std::sync::Arc;

pub use accesslog::{AccessLogFilter, LOG_TARGET as ACCESS_LOG_TARGET};
pub use active_limit::ActiveLimitFilter;
pub use consumer_context::ConsumerContextFilter;
pub use context::{ContextFilter, UNLOADING_KEYS};
pub use deadline::DeadlineFilter;
pub use echo::EchoFilter;
pub use exception::{ExceptionFilter, RUNTIME_EXCEPTION, passes as exception_passes};
pub use executes::ExecuteLimitFilter;
pub use generic::{GENERIC_EXCEPTION, GenericFilter};
pub use generic_impl::GenericImplFilter;
pub use timeout::TimeoutFilter;
pub use token::TokenFilter;
pub use tps::TpsLimitFilter;

use rubbo_common::{ExtensionTable, Filter};

/// The names of the built-in filters (what `service.filter` / `reference.filter` use).
pub mod names {
    /// [`EchoFilter`](crate::EchoFilter).
    pub const ECHO: &str = "echo";
    /// [`GenericFilter`](crate::GenericFilter).
    pub const GENERIC: &str = "generic";
    /// [`ExceptionFilter`](crate::ExceptionFilter).
    pub const EXCEPTION: &str = "exception";
    /// [`TimeoutFilter`](crate::TimeoutFilter).
    pub const TIMEOUT: &str = "timeout";
    /// [`TokenFilter`](crate::TokenFilter).
    pub const TOKEN: &str = "token";
    /// [`ExecuteLimitFilter`](crate::ExecuteLimitFilter).
    pub const EXECUTE_LIMIT: &str = "executelimit";
    /// [`ContextFilter`](crate::ContextFilter).
    pub const CONTEXT: &str = "context";
    /// [`ConsumerContextFilter`](crate::ConsumerContextFilter).
    pub const CONSUMER_CONTEXT: &str = "consumercontext";
    /// [`DeadlineFilter`](crate::DeadlineFilter).
    pub const DEADLINE: &str = "deadline";
    /// [`GenericImplFilter`](crate::GenericImplFilter).
    pub const GENERIC_IMPL: &str = "genericimpl";
    /// [`ActiveLimitFilter`](crate::ActiveLimitFilter).
    pub const ACTIVE_LIMIT: &str = "activelimit";
    /// [`AccessLogFilter`](crate::AccessLogFilter).
    pub const ACCESS_LOG: &str = "accesslog";
    /// [`TpsLimitFilter`](crate::TpsLimitFilter).
    pub const TPS: &str = "tps";
}

/// Adds the built-in filters to `table`, under their [`names`].
pub fn register_builtins(table: &mut ExtensionTable<dyn Filter>) {
    let builtins: [(&str, Arc<dyn Filter>); 13] = [
        (names::ECHO, Arc::new(EchoFilter)),
        (names::GENERIC, Arc::new(GenericFilter)),
        (names::EXCEPTION, Arc::new(ExceptionFilter)),
        (names::TIMEOUT, Arc::new(TimeoutFilter)),
        (names::TOKEN, Arc::new(TokenFilter)),
        (names::EXECUTE_LIMIT, Arc::new(ExecuteLimitFilter)),
        (names::CONTEXT, Arc::new(ContextFilter)),
        (names::CONSUMER_CONTEXT, Arc::new(ConsumerContextFilter)),
        (names::DEADLINE, Arc::new(DeadlineFilter)),
        (names::GENERIC_IMPL, Arc::new(GenericImplFilter)),
        (names::ACTIVE_LIMIT, Arc::new(ActiveLimitFilter)),
        (names::ACCESS_LOG, Arc::new(AccessLogFilter::default())),
        (names::TPS, Arc::new(TpsLimitFilter)),
    ];
    for (name, filter) in builtins {
        table.register(name, filter);
    }
}

/// A filter table holding the built-in filters.
///
/// ```
/// let table = rubbo_filter::builtin_filters();
/// assert!(table.contains("token") && table.contains("echo"));
/// ```
pub fn builtin_filters() -> ExtensionTable<dyn Filter> {
    let mut table = ExtensionTable::new("filter", "");
    register_builtins(&mut table);
    table
}
