//! The `dubbo://` protocol: Java Dubbo's 16-byte header + Hessian 2 bodies.
//!
//! - [`codec`]: request and response bodies, byte-compatible with Java's `DubboCodec`.
//! - [`DubboProtocol`]: exports services on a server and refers providers as invokers,
//!   on top of `rubbo-remoting`.

mod body;
pub mod codec;
mod invoker;
mod names;
mod protocol;
mod server;
pub mod status;

/// JVM parameter descriptors (moved to `rubbo_common::descriptor`; kept here for
/// existing users).
pub use rubbo_common::descriptor;

pub use invoker::DubboInvoker;
pub use protocol::DubboProtocol;
