//! The contract's `org.rubbo.interop.Greeter` (CONTRACT.md section 2), generated from
//! `interop/proto/greeter.proto` by rubbo-build: its unary `Greet` and its three
//! streaming rpcs over Triple in IDL (protobuf) mode.

use futures::StreamExt;
use rubbo::Status;
use rubbo::stream::{Outbound, Streaming};

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
/// `GreetServerStream` answers that `repeat` times (index 0..repeat-1);
/// `GreetClientStream` answers the names joined by `,`; `GreetBidi` answers each
/// request at once (index = its position). The name `"error"` fails any of them with
/// `INVALID_ARGUMENT` `"bad name"` (mid-stream in `GreetBidi`).
#[derive(Debug, Clone, Copy, Default)]
pub struct GreeterProvider;

fn hello(request: GreetRequest, index: i32) -> Result<GreetReply, Status> {
    if request.name == ERROR_NAME {
        return Err(Status::invalid_argument(ERROR_MESSAGE));
    }
    Ok(GreetReply {
        message: format!("Hello, {}", request.name),
        index,
        payload: request.payload,
    })
}

impl Greeter for GreeterProvider {
    async fn greet(&self, request: GreetRequest) -> Result<GreetReply, Status> {
        hello(request, 0)
    }

    async fn greet_server_stream(
        &self,
        request: GreetRequest,
    ) -> Result<Outbound<GreetReply>, Status> {
        let repeat = request.repeat.max(0);
        let first = hello(request, 0)?;
        let replies = (0..repeat).map(move |index| GreetReply {
            index,
            ..first.clone()
        });
        Ok(Outbound::from_messages(replies))
    }

    async fn greet_client_stream(
        &self,
        mut requests: Streaming<GreetRequest>,
    ) -> Result<GreetReply, Status> {
        let mut names = Vec::new();
        while let Some(r) = requests.message().await? {
            if r.name == ERROR_NAME {
                return Err(Status::invalid_argument(ERROR_MESSAGE));
            }
            names.push(r.name);
        }
        Ok(GreetReply {
            message: names.join(","),
            ..Default::default()
        })
    }

    async fn greet_bidi(
        &self,
        requests: Streaming<GreetRequest>,
    ) -> Result<Outbound<GreetReply>, Status> {
        let replies = requests
            .enumerate()
            .map(|(i, r)| r.and_then(|r| hello(r, i32::try_from(i).unwrap_or(i32::MAX))));
        Ok(Outbound::try_from_stream(replies))
    }
}
