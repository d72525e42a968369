//! Plain configuration structs for clients and servers.

use std::str::FromStr;
use std::time::Duration;

use rubbo_common::executor::ExecutorBound;
use rubbo_common::keys::{ConnectTimeout, Heartbeat, MaxPending, Payload, ShutdownTimeout};

use crate::{ErrorBodyFn, RemotingError, hessian2_error_body};

/// Client (consumer) connection settings.
///
/// ```
/// use std::time::Duration;
/// use rubbo_remoting::ClientConfig;
/// let c = ClientConfig::default().with_heartbeat(Duration::from_millis(100));
/// assert_eq!(c.heartbeat_timeout, Duration::from_millis(300));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientConfig {
    /// Connect timeout (`connect.timeout`, default 3000 ms).
    pub connect_timeout: Duration,
    /// Send a heartbeat after this long with nothing read (`heartbeat`, default
    /// 60 s); zero disables heartbeats and the idle close.
    pub heartbeat: Duration,
    /// Close the connection after this long with nothing read
    /// (`heartbeat.timeout`, default 3 x heartbeat).
    pub heartbeat_timeout: Duration,
    /// Payload limit in bytes (`payload`, default 8 MiB); `<= 0` disables it.
    pub payload: i64,
    /// First reconnect delay; doubles after each failed attempt.
    pub reconnect_backoff: Duration,
    /// Upper bound of the reconnect delay (default 2 s, Dubbo's `reconnect`).
    pub reconnect_backoff_max: Duration,
    /// Frames queued for the connection's writer before senders wait.
    pub write_queue: usize,
    /// Calls waiting for a reply on one connection before new calls are refused
    /// with [`RemotingError::Limit`] (`max.pending`, default 65 536); 0: no bound.
    pub max_pending: usize,
    /// Builds the body of locally generated error responses (status 90).
    pub error_body: ErrorBodyFn,
    /// TLS for every connection (the `dubbo.ssl.client-*` keys); `None` is plaintext.
    pub tls: Option<crate::TlsConnector>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            connect_timeout: ConnectTimeout::DEFAULT,
            heartbeat: Heartbeat::DEFAULT,
            heartbeat_timeout: Heartbeat::DEFAULT * 3,
            payload: Payload::DEFAULT,
            reconnect_backoff: Duration::from_millis(100),
            reconnect_backoff_max: Duration::from_millis(2000),
            write_queue: 8192,
            max_pending: MaxPending::DEFAULT,
            error_body: hessian2_error_body,
            tls: None,
        }
    }
}

impl ClientConfig {
    /// Sets the connect timeout.
    pub fn with_connect_timeout(mut self, t: Duration) -> Self {
        self.connect_timeout = t;
        self
    }

    /// Sets the heartbeat interval and the idle close to 3 x that interval.
    pub fn with_heartbeat(mut self, t: Duration) -> Self {
        self.heartbeat = t;
        self.heartbeat_timeout = t * 3;
        self
    }

    /// Sets the idle close (at least 2 x heartbeat, as in Dubbo).
    pub fn with_heartbeat_timeout(mut self, t: Duration) -> Self {
        self.heartbeat_timeout = t.max(self.heartbeat * 2);
        self
    }

    /// Sets the payload limit (`<= 0` disables it).
    pub fn with_payload(mut self, payload: i64) -> Self {
        self.payload = payload;
        self
    }

    /// Sets the reconnect backoff bounds.
    pub fn with_reconnect_backoff(mut self, first: Duration, max: Duration) -> Self {
        self.reconnect_backoff = first;
        self.reconnect_backoff_max = max.max(first);
        self
    }

    /// Sets how many frames may wait for the writer (at least 1).
    pub fn with_write_queue(mut self, frames: usize) -> Self {
        self.write_queue = frames.max(1);
        self
    }

    /// Sets the bound on pending calls per connection (0: no bound).
    pub fn with_max_pending(mut self, calls: usize) -> Self {
        self.max_pending = calls;
        self
    }

    /// Sets the error-body encoder.
    pub fn with_error_body(mut self, f: ErrorBodyFn) -> Self {
        self.error_body = f;
        self
    }

    /// Sets TLS (`None`: plaintext).
    pub fn with_tls(mut self, tls: Option<crate::TlsConnector>) -> Self {
        self.tls = tls;
        self
    }
}

/// Where a server runs its handler.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Dispatch {
    /// Requests of a connection run at once, each apart from the others (Dubbo
    /// `all`, the default): the handler's future is polled first on the connection's
    /// reader, and a call it does not end at once goes on in a task of its own, so a
    /// call that waits never holds up the next. After a first poll longer than 200 µs
    /// (a handler that computes or blocks) the connection's next 1024 requests each get
    /// a task from the start, so such calls run side by side on the runtime's threads.
    #[default]
    All,
    /// The handler is awaited on the connection's I/O task (Dubbo `direct`):
    /// requests of one connection run one after another.
    Direct,
}

impl FromStr for Dispatch {
    type Err = RemotingError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "all" => Ok(Dispatch::All),
            "direct" => Ok(Dispatch::Direct),
            other => Err(RemotingError::InvalidConfig(format!(
                "unknown dispatcher {other:?}, known: all, direct"
            ))),
        }
    }
}

/// Server (provider) settings.
///
/// ```
/// use rubbo_remoting::{Dispatch, ServerConfig};
/// let c = ServerConfig::default().with_dispatch("direct".parse().unwrap());
/// assert_eq!(c.dispatch, Dispatch::Direct);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Payload limit in bytes for requests read and responses written
    /// (default 8 MiB); `<= 0` disables it.
    pub payload: i64,
    /// How often idle connections are checked (default 60 s).
    pub heartbeat: Duration,
    /// Close a connection after this long with nothing read (`heartbeat.timeout`,
    /// default 180 s); zero disables the idle close.
    pub heartbeat_timeout: Duration,
    /// Handler dispatch mode.
    pub dispatch: Dispatch,
    /// Longest graceful-shutdown wait for in-flight requests (default 10 s).
    pub shutdown_timeout: Duration,
    /// Send the readonly event to every connection on graceful shutdown
    /// (`channel.readonly.send`, default true).
    pub send_readonly: bool,
    /// Frames queued for a connection's writer before senders wait.
    pub write_queue: usize,
    /// Most requests handled at once across the server (Java's `threads`); with
    /// [`queued`](Self::queued) more waiting, a request over both is answered with
    /// status 100 `SERVER_THREADPOOL_EXHAUSTED_ERROR` (Java's text) and a one-way
    /// request is dropped. Zero: unlimited (the default here; the dubbo protocol
    /// sets Java's 200 from the provider URL).
    pub max_in_flight: usize,
    /// Requests admitted beyond [`max_in_flight`](Self::max_in_flight), waiting for
    /// one to end (Java's `queues`, default 0: none; `usize::MAX`: no bound).
    pub queued: usize,
    /// Builds the body of error responses the server writes itself (status 80 on a
    /// handler panic, 25 on an over-payload response, 100 when over
    /// `max_in_flight`).
    pub error_body: ErrorBodyFn,
    /// TLS on every accepted connection (the `dubbo.ssl.server-*` keys); `None` is
    /// plaintext. With TLS, a client that does not speak it is refused.
    pub tls: Option<crate::TlsAcceptor>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            payload: Payload::DEFAULT,
            heartbeat: Heartbeat::DEFAULT,
            heartbeat_timeout: Heartbeat::DEFAULT * 3,
            dispatch: Dispatch::All,
            shutdown_timeout: ShutdownTimeout::DEFAULT,
            send_readonly: true,
            write_queue: 8192,
            max_in_flight: 0,
            queued: 0,
            error_body: hessian2_error_body,
            tls: None,
        }
    }
}

impl ServerConfig {
    /// Sets the heartbeat interval and the idle close to 3 x that interval.
    pub fn with_heartbeat(mut self, t: Duration) -> Self {
        self.heartbeat = t;
        self.heartbeat_timeout = t * 3;
        self
    }

    /// Sets the idle close.
    pub fn with_heartbeat_timeout(mut self, t: Duration) -> Self {
        self.heartbeat_timeout = t;
        self
    }

    /// Sets the payload limit (`<= 0` disables it).
    pub fn with_payload(mut self, payload: i64) -> Self {
        self.payload = payload;
        self
    }

    /// Sets the dispatch mode.
    pub fn with_dispatch(mut self, d: Dispatch) -> Self {
        self.dispatch = d;
        self
    }

    /// Sets the graceful-shutdown wait.
    pub fn with_shutdown_timeout(mut self, t: Duration) -> Self {
        self.shutdown_timeout = t;
        self
    }

    /// Sets the limit of requests handled at once (zero: unlimited).
    pub fn with_max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = max;
        self
    }

    /// Sets how many requests may wait beyond the limit of requests handled at once.
    pub fn with_queued(mut self, queued: usize) -> Self {
        self.queued = queued;
        self
    }

    /// Sets both bounds from a provider's [`ExecutorBound`] (`None`: unlimited).
    ///
    /// ```
    /// use rubbo_common::executor::ExecutorBound;
    /// use rubbo_remoting::ServerConfig;
    /// let c = ServerConfig::default().with_executor(Some(ExecutorBound { threads: 200, queues: 0 }));
    /// assert_eq!((c.max_in_flight, c.queued), (200, 0));
    /// ```
    pub fn with_executor(mut self, bound: Option<ExecutorBound>) -> Self {
        let bound = bound.unwrap_or(ExecutorBound {
            threads: 0,
            queues: 0,
        });
        self.max_in_flight = bound.threads;
        self.queued = bound.queues;
        self
    }

    /// The bound on requests handled at once, if any.
    pub(crate) fn executor_bound(&self) -> Option<ExecutorBound> {
        (self.max_in_flight > 0).then_some(ExecutorBound {
            threads: self.max_in_flight,
            queues: self.queued,
        })
    }

    /// Sets how many frames may wait for a connection's writer (at least 1).
    pub fn with_write_queue(mut self, frames: usize) -> Self {
        self.write_queue = frames.max(1);
        self
    }

    /// Sets whether the readonly event is sent on graceful shutdown.
    pub fn with_send_readonly(mut self, send: bool) -> Self {
        self.send_readonly = send;
        self
    }

    /// Sets the error-body encoder.
    pub fn with_error_body(mut self, f: ErrorBodyFn) -> Self {
        self.error_body = f;
        self
    }

    /// Sets TLS (`None`: plaintext).
    pub fn with_tls(mut self, tls: Option<crate::TlsAcceptor>) -> Self {
        self.tls = tls;
        self
    }
}

pub(crate) fn max_payload(payload: i64) -> Option<usize> {
    if payload <= 0 {
        None
    } else {
        Some(usize::try_from(payload).unwrap_or(usize::MAX))
    }
}
