//! A protobuf (IDL) service over Triple: `proto/hello.proto` (no `package`) turned into
//! Rust by `rubbo-build` in `build.rs`, served and called with the bootstrap.
//!
//! ```no_run
//! use protobuf_example::hello::{Hello, HelloClient, SayRequest};
//!
//! # async fn demo() -> anyhow::Result<()> {
//! let (provider, port) = protobuf_example::app(0).await?;
//! let consumer = rubbo::Rubbo::builder().application("hello-consumer").build()?;
//! let invoker = consumer
//!     .refer_url(&HelloClient::SERVICE, &format!("tri://127.0.0.1:{port}"))
//!     .await?;
//! let reply = HelloClient::new(invoker)
//!     .say(SayRequest { name: "world".into() })
//!     .await?;
//! assert_eq!(reply.message, "Hello, world!");
//! provider.shutdown().await;
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

use rubbo::stream::Outbound;
use rubbo::{Rubbo, Status};

/// The code generated from `proto/hello.proto`.
#[allow(missing_docs)]
pub mod hello {
    rubbo::include_proto!("_");
}

use hello::{Hello, HelloServer, SayReply, SayRequest};

/// The implementation of `Hello`.
#[derive(Debug, Clone, Copy, Default)]
pub struct HelloService;

impl Hello for HelloService {
    async fn say(&self, request: SayRequest) -> Result<SayReply, Status> {
        if request.name.is_empty() {
            return Err(Status::invalid_argument("name is empty"));
        }
        Ok(SayReply {
            message: format!("Hello, {}!", request.name),
        })
    }

    async fn say_many(&self, request: SayRequest) -> Result<Outbound<SayReply>, Status> {
        if request.name.is_empty() {
            return Err(Status::invalid_argument("name is empty"));
        }
        let replies = (1..=SAY_MANY).map(move |i| SayReply {
            message: format!("Hello, {}! ({i}/{SAY_MANY})", request.name),
        });
        Ok(Outbound::from_messages(replies))
    }
}

/// How many replies `SayMany` streams.
pub const SAY_MANY: usize = 3;

/// A provider serving `Hello` on `tri://127.0.0.1:{port}` (0: any free port), and the
/// port it is bound to.
pub async fn app(port: u16) -> anyhow::Result<(Rubbo, u16)> {
    let rubbo = Rubbo::builder()
        .application("hello-provider")
        .protocol("tri", port)
        .build()?;
    let url = rubbo
        .export(HelloServer::new(Arc::new(HelloService)))
        .await?;
    Ok((rubbo, url.port()))
}
