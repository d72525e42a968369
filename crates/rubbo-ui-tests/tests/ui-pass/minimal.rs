//! A service crate that depends on nothing but `rubbo` and `serde` compiles with
//! `-D warnings`-level lints on the generated items.
#![deny(missing_docs, missing_debug_implementations, unreachable_pub, unused)]

/// A service.
#[rubbo::service(interface = "x.S", version = "1", group = "g")]
pub trait S {
    /// Echo.
    async fn echo(&self, v: Option<String>) -> Result<Option<String>, rubbo::RpcError>;
}

fn main() {
    let _ = SClient::METHODS;
}
