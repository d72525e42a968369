//! The exchange client: one multiplexed connection per client, with reconnect.

mod connection;
pub(crate) mod pending;
mod pool;

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use bytes::Bytes;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::{Instrument, debug, info};

use self::connection::Connection;
pub use self::pool::{Clients, ConnectionPool};
use crate::{ClientConfig, RemotingError, Response};

/// A client of one provider address over one multiplexed TCP connection.
///
/// Cheap to clone (an `Arc` inside); every clone shares the connection. Any
/// number of calls can be in flight at once; each call is a future. When the last
/// clone is dropped (or [`close`](ExchangeClient::close) is called) the connection
/// closes.
///
/// **Connection loss.** Pending calls fail at once with
/// [`RemotingError::ChannelInactive`]. A background task reconnects with a
/// doubling backoff ([`ClientConfig::reconnect_backoff`] up to
/// [`ClientConfig::reconnect_backoff_max`]). Calls made while disconnected **fail
/// fast** with [`RemotingError::Disconnected`] instead of waiting, so a cluster
/// layer can fail over at once; [`is_available`](ExchangeClient::is_available)
/// tells when the connection is back.
///
/// **Readonly.** After the provider's readonly event the connection is
/// unavailable and new calls fail with [`RemotingError::ReadOnly`] until a
/// reconnect replaces the connection.
///
/// ```
/// # use std::time::Duration;
/// # use bytes::Bytes;
/// # use rubbo_remoting::*;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let echo = handler_fn(|req: Request, _conn: ConnectionInfo| async move {
///     req.two_way.then(|| Response::ok(req.id, req.serialization, req.body))
/// });
/// let server = Server::bind("127.0.0.1:0", ServerConfig::default(), echo).await?;
/// let client = ExchangeClient::connect(&server.local_addr().to_string(), ClientConfig::default()).await?;
/// let resp = client.request(Bytes::from_static(b"hi"), HESSIAN2, Duration::from_secs(1)).await?;
/// assert_eq!((resp.status, &resp.body[..]), (Status::OK, &b"hi"[..]));
/// client.send_oneway(Bytes::from_static(b"fire and forget"), HESSIAN2).await?;
/// server.shutdown().await;
/// # Ok::<(), RemotingError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct ExchangeClient {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    shared: Arc<Shared>,
    _close_on_drop: DropGuard,
}

struct Shared {
    addr: Arc<str>,
    config: ClientConfig,
    /// Read by every call: an `ArcSwap` costs a reader no write to a shared line,
    /// where a lock would.
    current: ArcSwapOption<Connection>,
    token: CancellationToken,
    /// Set by [`close`](ExchangeClient::close): the token says the same, but reading
    /// it takes a lock, and every call checks this.
    closed: AtomicBool,
    /// `true` once the first connect attempt finished (at once for `connect`).
    first_attempt: watch::Sender<bool>,
    /// What `first_attempt` holds, read by every call without the channel's lock.
    first_done: AtomicBool,
}

impl ExchangeClient {
    /// Connects to `addr` (`host:port`) within [`ClientConfig::connect_timeout`].
    pub async fn connect(addr: &str, config: ClientConfig) -> Result<Self, RemotingError> {
        let addr: Arc<str> = Arc::from(addr);
        let token = CancellationToken::new();
        let conn = Connection::open(&addr, &config, &token).await?;
        Ok(Self::start(addr, config, token, Some(conn)))
    }

    /// A client that connects in the background (Dubbo `lazy=true`): returns at
    /// once. Calls made before the first connect attempt finished wait for it
    /// (within their timeout); after that, calls while disconnected fail fast as
    /// usual. Must be called inside a tokio runtime.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use rubbo_remoting::*;
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// // nothing listens on port 1: the first call fails with a network error
    /// let client = ExchangeClient::connect_lazy("127.0.0.1:1", ClientConfig::default());
    /// let err = client.request(bytes::Bytes::new(), HESSIAN2, Duration::from_secs(1)).await.unwrap_err();
    /// assert!(err.is_network());
    /// # });
    /// ```
    pub fn connect_lazy(addr: &str, config: ClientConfig) -> Self {
        Self::start(Arc::from(addr), config, CancellationToken::new(), None)
    }

    fn start(
        addr: Arc<str>,
        config: ClientConfig,
        token: CancellationToken,
        conn: Option<Arc<Connection>>,
    ) -> Self {
        let shared = Arc::new(Shared {
            addr: addr.clone(),
            config,
            current: ArcSwapOption::new(conn.clone()),
            token: token.clone(),
            closed: AtomicBool::new(false),
            first_attempt: watch::Sender::new(conn.is_some()),
            first_done: AtomicBool::new(conn.is_some()),
        });
        let span = tracing::debug_span!("client", peer = %addr);
        tokio::spawn(supervise(shared.clone(), conn).instrument(span));
        ExchangeClient {
            inner: Arc::new(Inner {
                shared,
                _close_on_drop: token.drop_guard(),
            }),
        }
    }

    /// Sends a two-way request and waits for its response, at most `timeout`.
    ///
    /// A response with any status is `Ok`; a body over the payload limit yields a
    /// local status-90 response. Errors: [`RemotingError::Timeout`] (its `sent`
    /// field tells "not sent" from "sent, no reply"), network errors (see the type
    /// docs), [`RemotingError::PayloadTooLarge`] (nothing sent).
    pub fn request(
        &self,
        body: Bytes,
        serialization: u8,
        timeout: Duration,
    ) -> impl Future<Output = Result<Response, RemotingError>> + Send + 'static {
        self.request_until(body, serialization, timeout, None)
    }

    /// [`request`](Self::request) for a call that has its deadline already (`timeout`
    /// is what remains of it, for errors and the first connect): the call fails at
    /// `deadline`.
    pub fn request_until(
        &self,
        body: Bytes,
        serialization: u8,
        timeout: Duration,
        deadline: Option<std::time::Instant>,
    ) -> impl Future<Output = Result<Response, RemotingError>> + Send + 'static {
        // The connection is taken now: the call's future then holds it alone (one
        // reference count), not this client.
        let start = if self.inner.shared.first_done.load(Ordering::Acquire) {
            Start::Now(self.connection())
        } else {
            Start::AfterFirstAttempt(self.clone())
        };
        async move {
            match start {
                Start::Now(conn) => conn?.request(body, serialization, timeout, deadline).await,
                // A lazy client before its first connect attempt finished: rare, so
                // boxed to keep every call's future small.
                Start::AfterFirstAttempt(client) => {
                    Box::pin(client.request_after_first_attempt(
                        body,
                        serialization,
                        timeout,
                        deadline,
                    ))
                    .await
                }
            }
        }
    }

    async fn request_after_first_attempt(
        &self,
        body: Bytes,
        serialization: u8,
        timeout: Duration,
        deadline: Option<std::time::Instant>,
    ) -> Result<Response, RemotingError> {
        let started = Instant::now();
        if !self.first_attempt_done(timeout).await {
            return Err(RemotingError::Timeout {
                addr: self.inner.shared.addr.to_string(),
                id: 0,
                timeout,
                sent: false,
            });
        }
        let timeout = timeout.saturating_sub(started.elapsed());
        let conn = self.connection()?;
        conn.request(body, serialization, timeout, deadline).await
    }

    /// Sends a one-way request; returns once it is queued for writing.
    pub async fn send_oneway(&self, body: Bytes, serialization: u8) -> Result<(), RemotingError> {
        let timeout = self.inner.shared.config.connect_timeout;
        if !self.first_attempt_done(timeout).await {
            return Err(RemotingError::ConnectTimeout {
                addr: self.inner.shared.addr.to_string(),
                timeout,
            });
        }
        let conn = self.connection()?;
        conn.send_oneway(body, serialization).await
    }

    /// Waits (at most `limit`) until the first connect attempt of a lazy client
    /// finished; `true` at once for every other client.
    async fn first_attempt_done(&self, limit: Duration) -> bool {
        let shared = &self.inner.shared;
        if shared.first_done.load(Ordering::Acquire) {
            return true;
        }
        let mut rx = shared.first_attempt.subscribe();
        matches!(
            tokio::time::timeout(limit, rx.wait_for(|done| *done)).await,
            Ok(Ok(_))
        )
    }

    /// Connected, not closed and not marked readonly by the provider.
    pub fn is_available(&self) -> bool {
        self.current()
            .is_some_and(|c| !c.is_closed() && !c.is_readonly())
    }

    /// Connected and not closed (may be readonly).
    pub fn is_connected(&self) -> bool {
        self.current().is_some_and(|c| !c.is_closed())
    }

    /// The provider address this client connects to.
    pub fn addr(&self) -> &str {
        &self.inner.shared.addr
    }

    /// Local address of the current connection, `None` while disconnected.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.current()
            .filter(|c| !c.is_closed())
            .map(|c| c.local_addr())
    }

    /// Closes the connection for every clone and stops reconnecting. Pending calls
    /// fail with [`RemotingError::ChannelInactive`], new ones with
    /// [`RemotingError::Closed`].
    pub fn close(&self) {
        self.inner.shared.closed.store(true, Ordering::SeqCst);
        self.inner.shared.token.cancel();
    }

    /// `true` after [`close`](ExchangeClient::close).
    pub fn is_closed(&self) -> bool {
        self.inner.shared.token.is_cancelled()
    }

    pub(crate) fn downgrade(&self) -> std::sync::Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    pub(crate) fn upgrade(weak: &std::sync::Weak<Inner>) -> Option<Self> {
        weak.upgrade().map(|inner| ExchangeClient { inner })
    }

    fn current(&self) -> Option<Arc<Connection>> {
        self.inner.shared.current.load_full()
    }

    fn connection(&self) -> Result<Arc<Connection>, RemotingError> {
        let shared = &self.inner.shared;
        if shared.closed.load(Ordering::SeqCst) {
            return Err(RemotingError::Closed {
                addr: shared.addr.to_string(),
            });
        }
        match &*shared.current.load() {
            Some(c) if c.is_readonly() => Err(RemotingError::ReadOnly {
                addr: shared.addr.to_string(),
            }),
            Some(c) if !c.is_closed() => Ok(c.clone()),
            _ => Err(RemotingError::Disconnected {
                addr: shared.addr.to_string(),
            }),
        }
    }
}

impl fmt::Debug for ExchangeClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExchangeClient")
            .field("addr", &self.addr())
            .field("available", &self.is_available())
            .finish()
    }
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inner")
            .field("addr", &self.shared.addr)
            .finish()
    }
}

/// How a call starts.
enum Start {
    /// On the current connection (or with the error of having none).
    Now(Result<Arc<Connection>, RemotingError>),
    /// After the first connect attempt of a lazy client.
    AfterFirstAttempt(ExchangeClient),
}

impl Shared {
    fn first_attempt_done(&self) {
        self.first_done.store(true, Ordering::Release);
        self.first_attempt.send_replace(true);
    }
}

/// Watches the connection and replaces it when it is lost, until the client closes.
async fn supervise(shared: Arc<Shared>, initial: Option<Arc<Connection>>) {
    let mut conn = match initial {
        Some(c) => Some(c),
        None => reconnect(&shared, Duration::ZERO).await,
    };
    while let Some(c) = conn {
        tokio::select! {
            _ = shared.token.cancelled() => break,
            _ = c.closed() => {}
        }
        shared.current.store(None);
        conn = reconnect(&shared, shared.config.reconnect_backoff).await;
    }
    if let Some(c) = shared.current.swap(None) {
        c.close();
    }
}

/// Connects until it works (installing the connection) or the client closes
/// (`None`). Waits `first_delay` before the first attempt, then doubles the delay
/// from [`ClientConfig::reconnect_backoff`] up to its max.
async fn reconnect(shared: &Shared, first_delay: Duration) -> Option<Arc<Connection>> {
    let mut delay = first_delay;
    let mut backoff = shared.config.reconnect_backoff;
    loop {
        tokio::select! {
            _ = shared.token.cancelled() => return None,
            _ = tokio::time::sleep(delay) => {}
        }
        let attempt = tokio::select! {
            _ = shared.token.cancelled() => return None,
            r = Connection::open(&shared.addr, &shared.config, &shared.token) => r,
        };
        match attempt {
            Ok(c) => {
                info!(peer = %shared.addr, "connected");
                shared.current.store(Some(c.clone()));
                shared.first_attempt_done();
                return Some(c);
            }
            Err(e) => {
                shared.first_attempt_done();
                debug!(error = %e, next_ms = backoff.as_millis() as u64, "connect failed");
                delay = backoff;
                backoff = (backoff * 2).min(shared.config.reconnect_backoff_max);
            }
        }
    }
}
