//! Rubbo: Apache Dubbo for Rust, wire-compatible with Java Dubbo.
//!
//! Define a service as a Rust trait; [`service`] generates the consumer stub and the
//! provider dispatcher, with JVM descriptors derived from the Rust types
//! ([`JavaType`]):
//!
//! ```
//! use std::sync::Arc;
//! use rubbo::{JavaType, RpcError, Url};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, JavaType, Debug, PartialEq)]
//! #[serde(rename = "org.example.User")]
//! pub struct User {
//!     pub id: i64,
//!     pub name: String,
//! }
//!
//! /// Users, as the Java interface `org.example.UserService` declares them.
//! #[rubbo::service(interface = "org.example.UserService", version = "1.0.0")]
//! pub trait UserService {
//!     /// `User find(long id)`: wire name `find`, descriptor `J`.
//!     async fn find(&self, id: i64) -> Result<Option<User>, RpcError>;
//!     /// `void touchAll()`: wire name `touchAll`.
//!     async fn touch_all(&self) -> Result<(), RpcError>;
//! }
//!
//! struct Users;
//!
//! impl UserService for Users {
//!     async fn find(&self, id: i64) -> Result<Option<User>, RpcError> {
//!         Ok(Some(User { id, name: format!("user-{id}") }))
//!     }
//!     async fn touch_all(&self) -> Result<(), RpcError> {
//!         Ok(())
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let invoker = UserServiceServer::new(Arc::new(Users)).into_invoker(Url::new("local", "127.0.0.1", 0));
//! let client = UserServiceClient::new(invoker);
//! assert_eq!(client.find(7).await?.map(|u| u.name), Some("user-7".to_owned()));
//! assert_eq!(UserServiceClient::METHODS[0].parameter_types, "J");
//! # Ok::<(), RpcError>(()) }).unwrap();
//! ```
//!
//! See [`service`] for what is generated, [`context`] for attachments, and
//! [`JavaType`] for the type mapping.

// Generated code names `::rubbo::codegen`; this lets the facade use its own macros.
extern crate self as rubbo;

mod bootstrap;
#[doc(hidden)]
pub mod codegen;
mod config_center;
pub mod context;
pub mod dev_registry;
pub mod external_config;
mod generic;
mod java_type;
#[cfg(feature = "otlp")]
pub mod otlp;
pub mod registry_protocol;
pub mod stream;
mod wrapper_stream;

pub use bootstrap::{Rubbo, RubboBuilder, config_center_factories, protocols, registry_factories};
pub use external_config::load_config;
pub use generic::GenericClient;
pub use java_type::JavaType;
pub use rubbo_common::filter;
pub use rubbo_common::{
    Arguments, Attachments, BizException, BoxInvoker, ErrorKind, Exporter, Filter, Invocation,
    InvokeFuture, Invoker, Payload, Protocol, RpcError, RpcResult, Url, Value, filter_fn,
};
/// Java's externalized configuration (the `dubbo.` property tree); see
/// [`RubboBuilder::config`].
pub use rubbo_config as config;
pub use rubbo_filter::builtin_filters;
pub use rubbo_hessian2::{BigDecimal, BigInteger, Date};
/// Metrics with Java Dubbo's names and W3C trace propagation ([`rubbo_metrics`]).
pub use rubbo_metrics as metrics;
pub use rubbo_protocol_dubbo::DubboProtocol;
pub use rubbo_protocol_triple::{Code, Status, TripleProtocol};

/// The dynamic value model (Hessian 2 / Java object graph) and its parts.
pub mod value {
    pub use rubbo_hessian2::{List, Map, Object, Value};
}
pub use rubbo_macros::{JavaType, service};

/// Includes the code `rubbo-build` generated for a proto package (`"org.rubbo.interop"`;
/// `"_"` for protos without a package) from Cargo's `OUT_DIR`, as tonic's
/// `include_proto!` does.
///
/// ```ignore
/// pub mod greeter {
///     rubbo::include_proto!("org.rubbo.interop");
/// }
/// ```
#[macro_export]
macro_rules! include_proto {
    ($package:tt) => {
        include!(concat!(env!("OUT_DIR"), concat!("/", $package, ".rs")));
    };
}
