//! gRPC health checking (`grpc.health.v1.Health`, the protocol of
//! `grpc/health/v1/health.proto`) on every Triple server, as Java Dubbo 3.3 serves it
//! (`TriHealthImpl`):
//!
//! - `Check` with an empty service name asks about the server (`SERVING` while it
//!   serves), with a service name about that service (`SERVING` when it is exported
//!   here, by interface name or service key; gRPC's `NOT_FOUND` status otherwise).
//! - `Watch` (a server stream) sends the status at once, then each change, as grpc's
//!   health services do: `SERVING` on export, `NOT_SERVING` on unexport (Java's
//!   `setServiceStatus(url, false)`) and for everything when the server shuts down
//!   (`enterTerminalState`), `SERVICE_UNKNOWN` for a name never exported here. After
//!   the shutdown status the stream ends (status OK), so it does not hold the
//!   graceful shutdown up.
//!
//! The two messages are written here with prost's derive rather than generated: they
//! are two fields in all, and the protocol crate must not need `protoc` to build.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use prost::Message;
use rubbo_common::exporters::ExporterMap;
use rubbo_common::stream::MessageStream;
use rubbo_common::{Encoded, Payload, RpcResult};
use rubbo_serialization::PROTOBUF;
use tokio::sync::watch;

use crate::status::Code;

/// The health service's gRPC name.
pub(crate) const SERVICE: &str = "grpc.health.v1.Health";

/// `HealthCheckRequest`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct HealthCheckRequest {
    /// The service asked about; empty: the server.
    #[prost(string, tag = "1")]
    pub(crate) service: String,
}

/// `HealthCheckResponse`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct HealthCheckResponse {
    /// `ServingStatus`: 0 UNKNOWN, 1 SERVING, 2 NOT_SERVING, 3 SERVICE_UNKNOWN.
    #[prost(int32, tag = "1")]
    pub(crate) status: i32,
}

/// `ServingStatus.SERVING`.
pub(crate) const SERVING: i32 = 1;
/// `ServingStatus.NOT_SERVING`.
pub(crate) const NOT_SERVING: i32 = 2;
/// `ServingStatus.SERVICE_UNKNOWN` (`Watch` only).
pub(crate) const SERVICE_UNKNOWN: i32 = 3;

/// Decodes a `HealthCheckRequest`, or the status to fail with.
pub(crate) fn request(message: &[u8]) -> Result<HealthCheckRequest, (Code, String)> {
    HealthCheckRequest::decode(message).map_err(|e| {
        (
            Code::InvalidArgument,
            format!("bad HealthCheckRequest: {e}"),
        )
    })
}

/// Answers `Check` for the request message `message`: the result to write, or the
/// status to fail with.
pub(crate) fn check(exporters: &ExporterMap, message: &[u8]) -> Result<RpcResult, (Code, String)> {
    let req = request(message)?;
    let known = req.service.is_empty() || {
        let map = exporters.read();
        map.find(&req.service, None, None).is_some() || map.keys().any(|k| k == req.service)
    };
    if !known {
        return Err((Code::NotFound, format!("unknown service {}", req.service)));
    }
    let reply = HealthCheckResponse { status: SERVING }.encode_to_vec();
    Ok(RpcResult::value(Payload::Encoded(Encoded::new(
        &PROTOBUF,
        Bytes::from(reply),
    ))))
}

/// The serving status of each name one server has exported (Java's `TriHealthImpl`
/// status map), and the signal its watchers wait on.
#[derive(Debug)]
pub(crate) struct Statuses {
    state: Mutex<State>,
    changed: watch::Sender<()>,
}

#[derive(Debug)]
struct State {
    statuses: HashMap<String, i32>,
    /// Shut down: every status is `NOT_SERVING` and stays so.
    terminal: bool,
}

impl Default for Statuses {
    fn default() -> Self {
        // The server as a whole ("") serves from the start, as in grpc's servers.
        let statuses = HashMap::from([(String::new(), SERVING)]);
        Statuses {
            state: Mutex::new(State {
                statuses,
                terminal: false,
            }),
            changed: watch::channel(()).0,
        }
    }
}

impl Statuses {
    /// Sets the status of `names` (ignored once shut down) and wakes the watchers.
    pub(crate) fn set<'a>(&self, names: impl IntoIterator<Item = &'a str>, status: i32) {
        let mut state = self.state.lock();
        if state.terminal {
            return;
        }
        for n in names {
            state.statuses.insert(n.to_owned(), status);
        }
        drop(state);
        self.changed.send_replace(());
    }

    /// The server shuts down: every status is `NOT_SERVING` from now on.
    pub(crate) fn terminate(&self) {
        let mut state = self.state.lock();
        state.terminal = true;
        for s in state.statuses.values_mut() {
            *s = NOT_SERVING;
        }
        drop(state);
        self.changed.send_replace(());
    }

    /// The status of `service` for `Watch`, and whether the server shut down.
    fn status(&self, service: &str) -> (i32, bool) {
        let state = self.state.lock();
        let status = state
            .statuses
            .get(service)
            .copied()
            .unwrap_or(SERVICE_UNKNOWN);
        (status, state.terminal)
    }

    /// The replies of `Watch` for `service`: its status now, then each change; after
    /// the shutdown status, the end.
    pub(crate) fn watch(self: &Arc<Self>, service: String) -> MessageStream {
        // Subscribed before the first read, so no change between them is lost.
        let changed = self.changed.subscribe();
        let start = Some((self.clone(), changed, service, None::<i32>));
        MessageStream::new(futures::stream::unfold(start, |state| async move {
            let (this, mut changed, service, last) = state?;
            loop {
                let (status, terminal) = this.status(&service);
                if last != Some(status) {
                    let reply = Bytes::from(HealthCheckResponse { status }.encode_to_vec());
                    let next = (!terminal).then_some((this, changed, service, Some(status)));
                    return Some((Ok(reply), next));
                }
                if terminal || changed.changed().await.is_err() {
                    return None;
                }
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::StreamExt;

    use super::*;

    async fn next(s: &mut MessageStream) -> Option<i32> {
        let m = tokio::time::timeout(Duration::from_secs(10), s.next())
            .await
            .expect("no reply within 10 s")?;
        Some(HealthCheckResponse::decode(m.unwrap()).unwrap().status)
    }

    #[tokio::test]
    async fn watch_sends_the_status_then_each_change_then_ends_at_shutdown() {
        let statuses = Arc::new(Statuses::default());
        let mut server = statuses.watch(String::new());
        let mut svc = statuses.watch("a.B".into());
        assert_eq!(next(&mut server).await, Some(SERVING));
        assert_eq!(next(&mut svc).await, Some(SERVICE_UNKNOWN));
        statuses.set(["a.B"], SERVING);
        assert_eq!(next(&mut svc).await, Some(SERVING));
        // The same status again is no change.
        statuses.set(["a.B"], SERVING);
        statuses.set(["a.B"], NOT_SERVING);
        assert_eq!(next(&mut svc).await, Some(NOT_SERVING));
        statuses.set(["a.B"], SERVING);
        assert_eq!(next(&mut svc).await, Some(SERVING));
        statuses.terminate();
        assert_eq!(next(&mut svc).await, Some(NOT_SERVING));
        assert_eq!(next(&mut svc).await, None, "ends after the shutdown status");
        assert_eq!(next(&mut server).await, Some(NOT_SERVING));
        assert_eq!(next(&mut server).await, None);
        // Nothing changes after shutdown.
        statuses.set(["a.B"], SERVING);
        assert_eq!(statuses.status("a.B"), (NOT_SERVING, true));
    }
}
