//! The `tri://` protocol (Triple): Dubbo 3's HTTP/2 protocol, gRPC-compatible,
//! wire-compatible with Java Dubbo 3.3.
//!
//! This first increment serves and calls unary methods of `#[rubbo::service]` traits
//! in **wrapper mode** (arguments in `TripleRequestWrapper`, results in
//! `TripleResponseWrapper`, hessian2 inside, as Java writes them for a plain Java
//! interface), over HTTP/2 with prior knowledge:
//!
//! - [`TripleProtocol`]: exports services on HTTP/2 servers and refers providers over
//!   one shared, multiplexed connection per address.
//! - [`status`]: gRPC status codes mapped to and from `RpcError` kinds, in one place.
//! - [`wrapper`]: the wrapper messages.
//!
//! Not yet: protobuf (IDL) mode, streaming, compression, h2c upgrade and HTTP/1.1
//! (answered with a clear refusal), health and reflection.

mod body;
mod channel;
pub mod config;
mod error;
pub mod frame;
pub mod headers;
mod invoker;
mod protocol;
mod server;
pub mod status;
pub mod wrapper;

pub use error::TripleError;
pub use invoker::TripleInvoker;
pub use protocol::{TRIPLE, TripleProtocol};
pub use status::Code;
