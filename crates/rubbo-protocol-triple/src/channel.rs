//! One shared HTTP/2 connection to a provider address, multiplexing every call of
//! every invoker of that address; reconnected on the next call once it is closed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioIo, TokioTimer};
use parking_lot::Mutex;
use rubbo_common::{ErrorKind, RpcError};
use rubbo_remoting::TlsConnector;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::task::AbortHandle;
use tracing::{Instrument, debug, warn};

use crate::coalesce::{Busy, BusyGuard, Coalesce};
use crate::config::H2Settings;

/// How long an address whose connection attempt failed counts as unavailable
/// (Rubbo's choice: calls made directly on the invoker reconnect at once).
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The request body type of the client.
pub(crate) type ReqBody = crate::body::TriBody;

/// A connection to one address, opened on demand.
#[derive(Debug)]
pub(crate) struct Channel {
    addr: String,
    settings: H2Settings,
    connect_timeout: Duration,
    /// TLS (ALPN `h2`) when the reference has `dubbo.ssl.client-*` keys.
    tls: Option<TlsConnector>,
    current: Mutex<Option<(SendRequest<ReqBody>, AbortHandle)>>,
    /// When the last connection attempt failed (cleared by one that succeeds).
    failed_at: Mutex<Option<Instant>>,
    /// Serializes connection attempts, so concurrent calls share one.
    connecting: tokio::sync::Mutex<()>,
    /// Calls in flight: while others are, a request waits one turn of the scheduler
    /// before it is written, so that one write carries the requests made meanwhile.
    busy: Arc<Busy>,
    /// The bound on calls in flight (`max.pending`; 0: none).
    max_pending: usize,
}

impl Channel {
    pub(crate) fn new(
        addr: String,
        settings: H2Settings,
        connect_timeout: Duration,
        tls: Option<TlsConnector>,
        max_pending: usize,
    ) -> Self {
        Channel {
            addr,
            settings,
            connect_timeout,
            tls,
            current: Mutex::new(None),
            failed_at: Mutex::new(None),
            connecting: tokio::sync::Mutex::new(()),
            busy: Arc::default(),
            max_pending,
        }
    }

    /// Counts one call in flight until the guard drops; over `max.pending` calls in
    /// flight the call is refused at once, before anything is sent: a retryable
    /// [`ErrorKind::LimitExceeded`], so failover tries another provider. (h2 queues the
    /// streams over the peer's MAX_CONCURRENT_STREAMS without a bound; this bounds them.)
    pub(crate) fn call_started(&self) -> Result<BusyGuard, RpcError> {
        self.busy.try_enter(self.max_pending).map_err(|pending| {
            debug!(peer = %self.addr, pending, max = self.max_pending, "pending-call bound reached, request refused");
            RpcError::new(
                ErrorKind::LimitExceeded,
                format!(
                    "too many pending requests to {}: {pending} waiting, max.pending is {}; request not sent",
                    self.addr, self.max_pending
                ),
            )
        })
    }

    /// The address.
    pub(crate) fn addr(&self) -> &str {
        &self.addr
    }

    /// Whether the connection speaks TLS (`:scheme` is then `https`).
    pub(crate) fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    fn live(&self) -> Option<SendRequest<ReqBody>> {
        self.current
            .lock()
            .as_ref()
            .filter(|(s, _)| !s.is_closed())
            .map(|(s, _)| s.clone())
    }

    /// Whether calls can be tried: the connection is up, or it closed and the next
    /// call reconnects; not for [`RETRY_AFTER`] after a failed attempt to connect, so
    /// that a cluster prefers other providers meanwhile.
    pub(crate) fn is_available(&self) -> bool {
        self.live().is_some()
            || self
                .failed_at
                .lock()
                .is_none_or(|t| t.elapsed() >= RETRY_AFTER)
    }

    /// A handle to send requests on, connecting first if needed.
    pub(crate) async fn sender(&self) -> Result<SendRequest<ReqBody>, RpcError> {
        if let Some(s) = self.live() {
            return Ok(s);
        }
        let _one = self.connecting.lock().await;
        if let Some(s) = self.live() {
            return Ok(s);
        }
        let (sender, task) = match self.connect().await {
            Ok(c) => c,
            Err(e) => {
                *self.failed_at.lock() = Some(Instant::now());
                return Err(e);
            }
        };
        *self.failed_at.lock() = None;
        if let Some((_, old)) = self.current.lock().replace((sender.clone(), task)) {
            old.abort();
        }
        Ok(sender)
    }

    async fn connect(&self) -> Result<(SendRequest<ReqBody>, AbortHandle), RpcError> {
        let addr = &self.addr;
        let tcp = tokio::time::timeout(self.connect_timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| {
                RpcError::network(format!(
                    "connect to {addr} timed out after {} ms",
                    self.connect_timeout.as_millis()
                ))
            })?
            .map_err(|e| {
                RpcError::network(format!("cannot connect to {addr}: {e}")).with_source(e)
            })?;
        let _ = tcp.set_nodelay(true);
        match &self.tls {
            None => self.handshake(tcp).await,
            Some(tls) => {
                let stream = tls.connect(addr, tcp).await.map_err(|e| {
                    warn!(peer = %addr, error = %e, "TLS handshake failed");
                    RpcError::network(e.to_string()).with_source(e)
                })?;
                self.handshake(stream).await
            }
        }
    }

    /// The HTTP/2 handshake on a connected (and, with TLS, handshaken) socket.
    async fn handshake<IO>(&self, io: IO) -> Result<(SendRequest<ReqBody>, AbortHandle), RpcError>
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let addr = &self.addr;
        let s = self.settings;
        let mut b = hyper::client::conn::http2::Builder::new(BoxingExecutor);
        b.timer(TokioTimer::new())
            .initial_stream_window_size(s.initial_window)
            .initial_connection_window_size(s.initial_window)
            .max_frame_size(s.max_frame)
            .max_header_list_size(s.max_header_list);
        // The call writing its request is one of those in flight: more than one, it waits.
        let io = Coalesce::new(io, self.busy.clone(), 1);
        let (sender, conn) = b.handshake(TokioIo::new(io)).await.map_err(|e| {
            RpcError::network(format!("HTTP/2 handshake with {addr} failed: {e}")).with_source(e)
        })?;
        let span = tracing::debug_span!("triple.client.conn", peer = %addr);
        let task = tokio::spawn(
            async move {
                match conn.await {
                    Ok(()) => debug!("connection closed"),
                    Err(e) => debug!(error = %e, "connection ended with an error"),
                }
            }
            .instrument(span),
        );
        debug!(peer = %addr, "connected");
        Ok((sender, task.abort_handle()))
    }

    /// Closes the connection now.
    pub(crate) fn close(&self) {
        if let Some((_, task)) = self.current.lock().take() {
            task.abort();
        }
    }
}

/// Spawns hyper's futures on tokio, boxed. hyper spawns two per call (the request
/// body's pipe and the response's future), all of one enum type whose largest variant
/// is the whole connection task: spawned as they are, each call's task would hold (and
/// copy, on creation and on completion) that much. Boxed, the task holds a pointer
/// and the future is moved once (tonic's channel spawns the same way).
#[derive(Debug, Clone, Copy, Default)]
struct BoxingExecutor;

impl<F> hyper::rt::Executor<F> for BoxingExecutor
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        tokio::spawn(Box::pin(fut));
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        self.close();
    }
}
