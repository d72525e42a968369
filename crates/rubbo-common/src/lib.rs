//! The Dubbo URL, invocation model, errors and extension registry shared by every Rubbo layer.
#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    clippy::unwrap_used
)]

pub use rubbo_hessian2::Value;
