//! The exchange server: accept loop, a task per connection, dispatch, shutdown.

mod connection;
mod handler;
mod inflight;

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rubbo_common::executor::Executions;
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout_at};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{Instrument, debug, info, warn};

pub use self::handler::{ConnectionInfo, Handler, HandlerFn, handler_fn};
use self::inflight::InFlight;
use crate::id::next_id;
use crate::writer::Outgoing;
use crate::{RemotingError, Request, ServerConfig};

/// Extra time writers get to flush after the shutdown wait.
const FLUSH_GRACE: Duration = Duration::from_secs(1);

/// A Dubbo exchange server on a TCP listener.
///
/// Each accepted connection gets a reader task and a writer task; requests go to the
/// [`Handler`] as [`ServerConfig::dispatch`] says. Heartbeats are answered by the
/// server itself; a connection with nothing read for
/// [`ServerConfig::heartbeat_timeout`] is closed.
///
/// Stop it with [`shutdown`](Server::shutdown) (graceful) or
/// [`abort`](Server::abort); dropping a `Server` aborts it.
///
/// ```
/// # use rubbo_remoting::*;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let handler = handler_fn(|req: Request, conn: ConnectionInfo| async move {
///     let text = format!("hello {}", conn.peer);
///     req.two_way.then(|| Response::ok(req.id, req.serialization, text.into()))
/// });
/// let server = Server::bind("127.0.0.1:0", ServerConfig::default(), handler).await?;
/// assert_ne!(server.local_addr().port(), 0);
/// server.shutdown().await; // readonly to every client, wait for in-flight, close
/// # Ok::<(), RemotingError>(())
/// # }).unwrap();
/// ```
pub struct Server {
    local_addr: SocketAddr,
    shared: Arc<ServerShared>,
}

struct ServerShared {
    config: ServerConfig,
    handler: Arc<dyn Handler>,
    /// Stops everything at once.
    hard: CancellationToken,
    /// Stops the accept loop (child of `hard`).
    stop_accept: CancellationToken,
    conns: Mutex<HashMap<u64, ConnHandle>>,
    inflight: Arc<InFlight>,
    /// The bound on requests handled at once, when there is one.
    executions: Option<Arc<Executions>>,
    tracker: TaskTracker,
}

#[derive(Clone)]
struct ConnHandle {
    tx: mpsc::Sender<Outgoing>,
    /// Graceful close: the writer flushes, then the connection closes.
    drain: CancellationToken,
}

impl Server {
    /// Binds a listener on `addr` (use port 0 for an ephemeral port) and starts
    /// accepting. Must be called inside a tokio runtime.
    pub async fn bind<A, H>(
        addr: A,
        config: ServerConfig,
        handler: H,
    ) -> Result<Server, RemotingError>
    where
        A: ToSocketAddrs,
        H: Handler,
    {
        let listener = TcpListener::bind(addr).await.map_err(RemotingError::Bind)?;
        let local_addr = listener.local_addr().map_err(RemotingError::Bind)?;
        let hard = CancellationToken::new();
        let executions = config.executor_bound().map(Executions::new);
        let shared = Arc::new(ServerShared {
            executions,
            config,
            handler: Arc::new(handler),
            stop_accept: hard.child_token(),
            hard,
            conns: Mutex::default(),
            inflight: Arc::default(),
            tracker: TaskTracker::new(),
        });
        let span = tracing::info_span!("server", local = %local_addr);
        shared
            .tracker
            .spawn(accept_loop(listener, shared.clone()).instrument(span));
        info!(local = %local_addr, "server listening");
        Ok(Server { local_addr, shared })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Open connections.
    pub fn connection_count(&self) -> usize {
        self.shared.conns.lock().len()
    }

    /// Requests being handled now.
    pub fn in_flight(&self) -> usize {
        self.shared.inflight.count()
    }

    /// Requests refused so far because [`ServerConfig::max_in_flight`] (and
    /// [`ServerConfig::queued`]) were reached.
    pub fn rejected(&self) -> u64 {
        self.shared.executions.as_ref().map_or(0, |e| e.rejected())
    }

    /// The bound on requests handled at once, when there is one (its counters are
    /// the provider's thread pool metrics).
    pub fn executions(&self) -> Option<Arc<Executions>> {
        self.shared.executions.clone()
    }

    /// Graceful shutdown: stop accepting, send the readonly event on every open
    /// connection (unless [`ServerConfig::send_readonly`] is off), wait for
    /// in-flight requests at most [`ServerConfig::shutdown_timeout`], flush and
    /// close every connection. Resolves when done; calling it again is harmless.
    pub async fn shutdown(&self) {
        let s = &self.shared;
        s.stop_accept.cancel();
        let deadline = Instant::now() + s.config.shutdown_timeout;
        let conns: Vec<ConnHandle> = s.conns.lock().values().cloned().collect();
        info!(
            connections = conns.len(),
            in_flight = s.inflight.count(),
            "graceful shutdown"
        );
        if s.config.send_readonly {
            for c in &conns {
                let readonly = Outgoing::request(Request::readonly(next_id()));
                let _ = timeout_at(deadline, c.tx.send(readonly)).await;
            }
        }
        if timeout_at(deadline, s.inflight.wait_idle()).await.is_err() {
            warn!(
                in_flight = s.inflight.count(),
                "shutdown wait over with requests in flight"
            );
        }
        for c in s.conns.lock().values() {
            c.drain.cancel();
        }
        s.tracker.close();
        let flush_deadline = deadline.max(Instant::now()) + FLUSH_GRACE;
        if timeout_at(flush_deadline, s.tracker.wait()).await.is_err() {
            debug!("connections did not close in time, aborting them");
        }
        s.hard.cancel();
        info!("server stopped");
    }

    /// Stops at once: closes the listener and every connection without notice.
    pub fn abort(&self) {
        self.shared.hard.cancel();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.hard.cancel();
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.local_addr)
            .field("connections", &self.connection_count())
            .field("dispatch", &self.shared.config.dispatch)
            .finish()
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<ServerShared>) {
    loop {
        let accepted = tokio::select! {
            biased;
            _ = shared.stop_accept.cancelled() => break,
            r = listener.accept() => r,
        };
        match accepted {
            Ok((stream, peer)) => connection::spawn(&shared, stream, peer),
            Err(e) => {
                warn!(error = %e, "accept failed");
                tokio::select! {
                    _ = shared.stop_accept.cancelled() => break,
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
        }
    }
    debug!("accept loop stopped");
}
