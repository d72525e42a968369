//! `org.rubbo.interop.StreamService`: an interop-only service (not in CONTRACT.md)
//! with streams in Triple's wrapper mode, as a plain `#[rubbo::service]` trait. The
//! Java side is `interop/java/.../StreamService.java`, a plain interface with
//! `StreamObserver` parameters; each message is a hessian2 value inside a Triple
//! wrapper. Triple only (over dubbo its methods answer an error, as in Java).
//!
//! | Rust | Java |
//! |---|---|
//! | `users(n) -> Outbound<User>` | `void users(int n, StreamObserver<User>)` |
//! | `join(Streaming<String>) -> String` | `StreamObserver<String> join(StreamObserver<String>)` |
//! | `echo(Streaming<String>) -> Outbound<String>` | `StreamObserver<String> echo(StreamObserver<String>)` |

use futures::StreamExt;
use rubbo::stream::{Outbound, Streaming};
use rubbo::{RpcError, Status};

use crate::contract::{User, contract_user};

/// The word (or a negative count) that fails a stream.
pub const ERROR_NAME: &str = "error";
/// The status message of that failure (INVALID_ARGUMENT).
pub const ERROR_MESSAGE: &str = "bad name";

/// `org.rubbo.interop.StreamService`.
#[rubbo::service(interface = "org.rubbo.interop.StreamService")]
pub trait StreamService {
    /// Server streaming: users `0..|n|-1` (the contract's `listUsers` values), then the
    /// end; for a negative `n`, those users then INVALID_ARGUMENT `"bad name"`.
    async fn users(&self, n: i32) -> Result<Outbound<User>, RpcError>;

    /// Client streaming: the words joined by `,`, at the half-close; the word
    /// `"error"` fails the call with INVALID_ARGUMENT `"bad name"`.
    async fn join(&self, words: Streaming<Option<String>>) -> Result<Option<String>, RpcError>;

    /// Bidirectional: each word back at once as `"<i>:<word>"`; the word `"error"`
    /// fails the stream there with INVALID_ARGUMENT `"bad name"`.
    async fn echo(
        &self,
        words: Streaming<Option<String>>,
    ) -> Result<Outbound<Option<String>>, RpcError>;
}

fn bad_name() -> Status {
    Status::invalid_argument(ERROR_MESSAGE)
}

/// The provider of [`StreamService`].
#[derive(Debug, Clone, Copy, Default)]
pub struct StreamProvider;

impl StreamService for StreamProvider {
    async fn users(&self, n: i32) -> Result<Outbound<User>, RpcError> {
        let count = n.unsigned_abs().min(1_000_000) as i32;
        let users = futures::stream::iter((0..count).map(|i| Ok(contract_user(i))));
        let end = futures::stream::iter((n < 0).then(|| Err(bad_name())));
        Ok(Outbound::try_from_stream(users.chain(end)))
    }

    async fn join(&self, mut words: Streaming<Option<String>>) -> Result<Option<String>, RpcError> {
        let mut all = Vec::new();
        while let Some(w) = words.message().await? {
            let w = w.unwrap_or_default();
            if w == ERROR_NAME {
                return Err(bad_name().into());
            }
            all.push(w);
        }
        Ok(Some(all.join(",")))
    }

    async fn echo(
        &self,
        words: Streaming<Option<String>>,
    ) -> Result<Outbound<Option<String>>, RpcError> {
        let replies = words.enumerate().map(|(i, w)| match w {
            Ok(w) if w.as_deref() == Some(ERROR_NAME) => Err(bad_name()),
            Ok(w) => Ok(Some(format!("{i}:{}", w.unwrap_or_default()))),
            Err(s) => Err(s),
        });
        // Nothing after the first error.
        let mut failed = false;
        let replies = replies.take_while(move |r| {
            let go = !failed;
            failed |= r.is_err();
            std::future::ready(go)
        });
        Ok(Outbound::try_from_stream(replies))
    }
}
