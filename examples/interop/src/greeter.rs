//! The contract's `org.rubbo.interop.Greeter` (CONTRACT.md section 2), generated from
//! `interop/proto/greeter.proto` by rubbo-build: its unary `Greet` over Triple in IDL
//! (protobuf) mode. The streaming rpcs come with issue #13.

use rubbo::Status;

/// The code generated from `greeter.proto`: messages, `Greeter`, `GreeterClient`,
/// `GreeterServer`.
#[allow(missing_docs)]
pub mod proto {
    rubbo::include_proto!("org.rubbo.interop");
}

use proto::{GreetReply, GreetRequest, Greeter};

/// The name that makes every Greeter method fail.
pub const ERROR_NAME: &str = "error";
/// The status message of that failure.
pub const ERROR_MESSAGE: &str = "bad name";

/// The contract's Greeter: `Greet` answers `"Hello, <name>"` with the payload echoed;
/// the name `"error"` fails with `INVALID_ARGUMENT` `"bad name"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct GreeterProvider;

impl Greeter for GreeterProvider {
    async fn greet(&self, request: GreetRequest) -> Result<GreetReply, Status> {
        if request.name == ERROR_NAME {
            return Err(Status::invalid_argument(ERROR_MESSAGE));
        }
        Ok(GreetReply {
            message: format!("Hello, {}", request.name),
            index: 0,
            payload: request.payload,
        })
    }
}
