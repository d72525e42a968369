//! Hessian 2.0 serialization, byte-compatible with Apache Dubbo's hessian-lite.
#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    clippy::unwrap_used
)]

mod value;

pub use value::{List, Map, Object, Value};
