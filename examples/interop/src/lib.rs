//! The interop contract (`../shared/interop/CONTRACT.md`) in Rust: the
//! `org.rubbo.interop.InteropService` definition, its data types, a provider
//! implementation, and the consumer's checks. The `interop-provider` and
//! `interop-consumer` binaries, the demo and the benchmarks all use it.
//!
//! Run with: `cargo run -p interop --bin interop-provider -- --port 20880`

pub mod checks;
mod contract;
mod provider;

pub use contract::{
    Address, Gender, InteropService, InteropServiceClient, InteropServiceServer, User,
    contract_user,
};
pub use provider::{InteropProvider, ProviderHandle, serve, serve_config, serve_on};
