//! One client TCP connection: writer task, reader task, pending calls, heartbeats.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, trace, warn};

use super::pending::Pending;
use crate::codec::event::MAX_EVENT_BODY;
use crate::config::max_payload;
use crate::id::next_id;
use crate::idle::{IdleTicker, READ_BUF, reserve_read};
use crate::span::in_span;
use crate::writer::{Outgoing, WriterStop, run_writer};
use crate::{ClientConfig, Decoded, Decoder, RemotingError, Request, Response, Status};

#[derive(Debug)]
pub(crate) struct Connection {
    addr: Arc<str>,
    tx: mpsc::Sender<Outgoing>,
    pending: Arc<Pending>,
    readonly: AtomicBool,
    /// Set once the connection is closing: by [`close`](Connection::close), and by the
    /// reader when it stops, before it fails the pending calls. A call registers
    /// itself, then reads this flag, so either the reader fails it or it sees the
    /// flag. (The token says the same, but reading it takes a lock.)
    closed: AtomicBool,
    token: CancellationToken,
    local_addr: SocketAddr,
    max_payload: Option<usize>,
    /// The bound on pending calls, for [`RemotingError::Limit`].
    max_pending: usize,
}

/// Removes a pending entry when the call ends early (error, timeout, caller drop).
struct PendingGuard<'a> {
    pending: &'a Pending,
    id: i64,
    armed: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.pending.remove(self.id);
        }
    }
}

impl Connection {
    pub(crate) async fn open(
        addr: &Arc<str>,
        config: &ClientConfig,
        parent: &CancellationToken,
    ) -> Result<Arc<Connection>, RemotingError> {
        let connect_err = |source| RemotingError::Connect {
            addr: addr.to_string(),
            source,
        };
        let stream = match timeout(config.connect_timeout, TcpStream::connect(&**addr)).await {
            Err(_) => {
                return Err(RemotingError::ConnectTimeout {
                    addr: addr.to_string(),
                    timeout: config.connect_timeout,
                });
            }
            Ok(r) => r.map_err(connect_err)?,
        };
        if let Err(e) = stream.set_nodelay(true) {
            debug!(error = %e, "TCP_NODELAY not set");
        }
        let local_addr = stream.local_addr().map_err(connect_err)?;
        match &config.tls {
            None => {
                let (rd, wr) = stream.into_split();
                Ok(Self::start(addr, config, parent, local_addr, rd, wr))
            }
            Some(tls) => {
                let stream = tls
                    .connect(addr, stream)
                    .await
                    .inspect_err(|e| warn!(peer = %addr, error = %e, "TLS handshake failed"))?;
                let (rd, wr) = tokio::io::split(stream);
                Ok(Self::start(addr, config, parent, local_addr, rd, wr))
            }
        }
    }

    /// Starts the writer, reader and timeout sweeper of a connected (and, with TLS,
    /// handshaken) socket.
    fn start<R, W>(
        addr: &Arc<str>,
        config: &ClientConfig,
        parent: &CancellationToken,
        local_addr: SocketAddr,
        rd: R,
        wr: W,
    ) -> Arc<Connection>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(config.write_queue.max(1));
        let token = parent.child_token();
        let pending = Arc::new(Pending::bounded(config.max_pending));
        let conn = Arc::new(Connection {
            addr: addr.clone(),
            tx,
            pending: pending.clone(),
            readonly: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            token: token.clone(),
            local_addr,
            max_payload: max_payload(config.payload),
            max_pending: config.max_pending,
        });
        let span = tracing::debug_span!("connection", peer = %addr, local = %local_addr);
        let stop = WriterStop {
            close: token,
            drain: None,
        };
        tokio::spawn(in_span(
            span.clone(),
            run_writer(wr, rx, stop, Some(pending.clone()), None),
        ));
        let sweeper = {
            let (addr, token) = (addr.clone(), conn.token.clone());
            async move { pending.run_timeouts(&addr, &token).await }
        };
        tokio::spawn(in_span(span.clone(), sweeper));
        let reader = ReadConfig {
            heartbeat: config.heartbeat,
            heartbeat_timeout: config.heartbeat_timeout,
            payload: config.payload,
            error_body: config.error_body,
        };
        tokio::spawn(in_span(span, read_loop(conn.clone(), rd, reader)));
        debug!(peer = %addr, local = %local_addr, "connected");
        conn
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    pub(crate) fn is_readonly(&self) -> bool {
        self.readonly.load(Ordering::Acquire)
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.token.cancel();
    }

    pub(crate) async fn closed(&self) {
        self.token.cancelled().await;
    }

    fn inactive(&self, id: i64) -> RemotingError {
        RemotingError::ChannelInactive {
            addr: self.addr.to_string(),
            id,
        }
    }

    fn check_payload(&self, len: usize) -> Result<(), RemotingError> {
        let max = self.max_payload.unwrap_or(i32::MAX as usize);
        if len > max {
            return Err(RemotingError::PayloadTooLarge { len, max });
        }
        Ok(())
    }

    pub(crate) async fn request(
        &self,
        body: Bytes,
        serialization: u8,
        timeout: Duration,
        deadline: Option<std::time::Instant>,
    ) -> Result<Response, RemotingError> {
        self.check_payload(body.len())?;
        let id = next_id();
        let timed_out = |sent| RemotingError::Timeout {
            addr: self.addr.to_string(),
            id,
            timeout,
            sent,
        };
        let (tx, rx) = oneshot::channel();
        // The connection's sweeper fails the call at its deadline. Over the bound
        // the call is refused here, before anything is queued.
        if let Err(pending) = self.pending.insert(
            id,
            tx,
            timeout,
            deadline.map(tokio::time::Instant::from_std),
        ) {
            debug!(
                id,
                pending,
                max = self.max_pending,
                "pending-call bound reached, request refused"
            );
            return Err(RemotingError::Limit {
                addr: self.addr.to_string(),
                pending,
                max: self.max_pending,
            });
        }
        let mut guard = PendingGuard {
            pending: &self.pending,
            id,
            armed: true,
        };
        if self.is_closed() {
            return Err(self.inactive(id));
        }
        let frame = Outgoing::request(Request::new(id, serialization, body));
        // Queue at once when there is room; only a full queue needs a timer. That path
        // is boxed: the future of every call stays small (its size decides how costly
        // its allocation and every move of it are).
        match self.tx.try_send(frame) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Closed(_)) => return Err(self.inactive(id)),
            Err(mpsc::error::TrySendError::Full(frame)) => {
                let queued: Pin<Box<dyn Future<Output = _> + Send + '_>> =
                    Box::pin(tokio::time::timeout(timeout, self.tx.send(frame)));
                match queued.await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => return Err(self.inactive(id)),
                    Err(_) => return Err(timed_out(false)),
                }
            }
        }
        let reply = rx.await.unwrap_or_else(|_| Err(self.inactive(id)));
        guard.armed = false;
        reply
    }

    pub(crate) async fn send_oneway(
        &self,
        body: Bytes,
        serialization: u8,
    ) -> Result<(), RemotingError> {
        self.check_payload(body.len())?;
        let id = next_id();
        let frame = Outgoing::request(Request::oneway(id, serialization, body));
        tokio::select! {
            r = self.tx.send(frame) => r.map_err(|_| self.inactive(id)),
            _ = self.token.cancelled() => Err(self.inactive(id)),
        }
    }

    fn on_frame(&self, frame: Decoded, cfg: &ReadConfig) {
        match frame {
            Decoded::Response(resp) if resp.event => trace!(id = resp.id, "heartbeat response"),
            Decoded::Response(resp) => {
                let id = resp.id;
                if !self.pending.complete(resp) {
                    debug!(id, "late response dropped: no pending request");
                }
            }
            Decoded::ResponseTooLarge {
                id,
                serialization,
                event,
                len,
                max,
            } => {
                warn!(id, len, max, "response exceeds payload limit, body skipped");
                if event {
                    return;
                }
                let msg = format!("Data length too large: {len}, max payload: {max}");
                let body = (cfg.error_body)(serialization, &msg);
                let resp = Response::new(id, serialization, Status::CLIENT_ERROR, body);
                if !self.pending.complete(resp) {
                    debug!(id, "late response dropped: no pending request");
                }
            }
            Decoded::Request(req) if req.event => self.on_event(req),
            Decoded::Request(req) => {
                debug!(id = req.id, "request on a client connection dropped");
            }
        }
    }

    fn on_event(&self, req: Request) {
        if req.broken.is_some() || req.body.len() > MAX_EVENT_BODY {
            warn!(id = req.id, len = req.body.len(), "oversized event dropped");
        } else if req.is_readonly_event() {
            info!(peer = %self.addr, "provider is read-only, no new requests on this connection");
            self.readonly.store(true, Ordering::Release);
        } else if req.is_writable_event() {
            self.readonly.store(false, Ordering::Release);
        } else if req.two_way {
            let _ = self
                .tx
                .try_send(Outgoing::response(Response::heartbeat(&req)));
        }
    }
}

#[derive(Debug)]
struct ReadConfig {
    heartbeat: Duration,
    heartbeat_timeout: Duration,
    payload: i64,
    error_body: fn(u8, &str) -> Bytes,
}

async fn read_loop<R: AsyncRead + Unpin>(conn: Arc<Connection>, mut rd: R, cfg: ReadConfig) {
    let reason = read_frames(&conn, &mut rd, &cfg).await;
    conn.close();
    let failed = conn.pending.fail_all(|id| conn.inactive(id));
    debug!(reason, failed, "connection closed");
}

async fn read_frames<R: AsyncRead + Unpin>(
    conn: &Connection,
    rd: &mut R,
    cfg: &ReadConfig,
) -> &'static str {
    let mut buf = BytesMut::with_capacity(READ_BUF);
    let mut decoder = Decoder::new(cfg.payload);
    let mut idle = IdleTicker::new(cfg.heartbeat);
    loop {
        reserve_read(&mut buf);
        tokio::select! {
            biased;
            _ = conn.token.cancelled() => return "closed locally",
            r = rd.read_buf(&mut buf) => match r {
                Ok(0) => return "closed by peer",
                Ok(_) => {
                    idle.touch();
                    loop {
                        match decoder.decode(&mut buf) {
                            Ok(Some(frame)) => conn.on_frame(frame, cfg),
                            Ok(None) => break,
                            Err(e) => {
                                warn!(peer = %conn.addr, error = %e, "undecodable data, closing connection");
                                return "decode error";
                            }
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    // Only TLS reports this: an alert from the server (for instance
                    // one refusing this client's certificate) or a corrupt record.
                    warn!(peer = %conn.addr, error = %e, "TLS connection failed");
                    return "TLS error";
                }
                Err(e) => {
                    debug!(error = %e, "read failed");
                    return "read error";
                }
            },
            idle_for = idle.tick() => {
                if !cfg.heartbeat_timeout.is_zero() && idle_for >= cfg.heartbeat_timeout {
                    warn!(peer = %conn.addr, idle_ms = idle_for.as_millis() as u64, "no data within heartbeat timeout, closing connection");
                    return "heartbeat timeout";
                }
                if idle_for >= cfg.heartbeat {
                    let id = next_id();
                    trace!(id, "sending heartbeat");
                    let _ = conn.tx.try_send(Outgoing::request(Request::heartbeat(id)));
                }
            }
        }
    }
}
