//! One server connection: reader loop, event handling, dispatch to the handler.

use std::any::Any;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::BytesMut;
use futures::future::BoxFuture;
use rubbo_common::executor::{Admitted, Executions, Exhausted, Running};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, error, trace, warn};

use super::inflight::InFlightGuard;
use super::{ConnHandle, ConnectionInfo, Handler, ServerShared};
use crate::codec::event::MAX_EVENT_BODY;
use crate::config::max_payload;
use crate::idle::{IdleTicker, READ_BUF, reserve_read};
use crate::span::in_span;
use crate::writer::{Outgoing, WriterStop, run_writer};
use crate::{Decoded, Decoder, Dispatch, ErrorBodyFn, Request, Response, Status};

static NEXT_CONN_ID: AtomicU64 = AtomicU64::new(1);

pub(super) fn spawn(shared: &Arc<ServerShared>, stream: TcpStream, peer: SocketAddr) {
    if let Err(e) = stream.set_nodelay(true) {
        debug!(error = %e, "TCP_NODELAY not set");
    }
    let local = match stream.local_addr() {
        Ok(a) => a,
        Err(e) => {
            debug!(error = %e, %peer, "accepted socket unusable");
            return;
        }
    };
    match shared.config.tls.clone() {
        None => {
            let (rd, wr) = stream.into_split();
            start(shared, rd, wr, peer, local);
        }
        Some(tls) => {
            // The handshake runs in its own task, so a slow or silent client holds up
            // no one else; it is bounded by the acceptor's handshake timeout.
            let s = shared.clone();
            let span = tracing::debug_span!("tls", %peer);
            shared.tracker.spawn(in_span(span, async move {
                let accepted = tokio::select! {
                    _ = s.hard.cancelled() => return,
                    r = tls.accept(stream, peer) => r,
                };
                match accepted {
                    Ok(stream) => {
                        let (rd, wr) = tokio::io::split(stream);
                        start(&s, rd, wr, peer, local);
                    }
                    Err(e) => warn!(%peer, error = %e, "TLS handshake failed, connection closed"),
                }
            }));
        }
    }
}

/// Starts the reader and writer of an accepted (and, with TLS, handshaken) connection.
fn start<R, W>(shared: &Arc<ServerShared>, rd: R, wr: W, peer: SocketAddr, local: SocketAddr)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let info = ConnectionInfo {
        id: NEXT_CONN_ID.fetch_add(1, Ordering::Relaxed),
        peer,
        local,
        endpoints: Arc::new(rubbo_common::Peer {
            remote: peer,
            local,
        }),
    };
    let (tx, rx) = mpsc::channel(shared.config.write_queue.max(1));
    let close = shared.hard.child_token();
    let drain = CancellationToken::new();
    shared.conns.lock().insert(
        info.id,
        ConnHandle {
            tx: tx.clone(),
            drain: drain.clone(),
        },
    );
    let span = tracing::debug_span!("connection", id = info.id, %peer);
    let stop = WriterStop {
        close: close.clone(),
        drain: Some(drain.clone()),
    };
    shared.tracker.spawn(in_span(
        span.clone(),
        run_writer(
            wr,
            rx,
            stop,
            None,
            Some({
                let s = shared.clone();
                Arc::new(move || s.inflight.count())
            }),
        ),
    ));
    let calls = Arc::new(CallContext {
        handler: shared.handler.clone(),
        info: info.clone(),
        tx: tx.clone(),
        error_body: shared.config.error_body,
        max_payload: max_payload(shared.config.payload),
    });
    let id = info.id;
    let conn = ServerConn {
        shared: shared.clone(),
        info,
        tx,
        calls,
        close,
        drain,
        spawn_next: AtomicU32::new(0),
    };
    debug!(id, %peer, "accepted connection");
    shared.tracker.spawn(in_span(span, async move {
        let reason = conn.read_loop(rd).await;
        conn.shared.conns.lock().remove(&conn.info.id);
        debug!(reason, "connection closed");
    }));
}

struct ServerConn {
    shared: Arc<ServerShared>,
    info: ConnectionInfo,
    tx: mpsc::Sender<Outgoing>,
    calls: Arc<CallContext>,
    close: CancellationToken,
    drain: CancellationToken,
    /// Requests still to run in their own task after a slow handler (see
    /// [`INLINE_BUDGET`]).
    spawn_next: AtomicU32,
}

impl ServerConn {
    async fn read_loop<R: AsyncRead + Unpin>(&self, mut rd: R) -> &'static str {
        let cfg = &self.shared.config;
        let mut buf = BytesMut::with_capacity(READ_BUF);
        let mut decoder = Decoder::new(cfg.payload);
        let check_every = if cfg.heartbeat_timeout.is_zero() {
            Duration::ZERO
        } else if cfg.heartbeat.is_zero() {
            cfg.heartbeat_timeout / 3
        } else {
            cfg.heartbeat.min(cfg.heartbeat_timeout)
        };
        let mut idle = IdleTicker::new(check_every);
        loop {
            reserve_read(&mut buf);
            tokio::select! {
                biased;
                _ = self.close.cancelled() => return "closed",
                _ = self.drain.cancelled() => return "server shutdown",
                r = rd.read_buf(&mut buf) => match r {
                    Ok(0) => {
                        self.close.cancel();
                        return "closed by peer";
                    }
                    Ok(_) => {
                        idle.touch();
                        loop {
                            match decoder.decode(&mut buf) {
                                Ok(Some(frame)) => self.on_frame(frame).await,
                                Ok(None) => break,
                                Err(e) => {
                                    warn!(peer = %self.info.peer, error = %e, "undecodable data, closing connection");
                                    self.close.cancel();
                                    return "decode error";
                                }
                            }
                        }
                    }
                    Err(e) => {
                        debug!(error = %e, "read failed");
                        self.close.cancel();
                        return "read error";
                    }
                },
                idle_for = idle.tick() => {
                    if idle_for >= cfg.heartbeat_timeout {
                        warn!(peer = %self.info.peer, idle_ms = idle_for.as_millis() as u64, "idle connection closed");
                        self.close.cancel();
                        return "idle timeout";
                    }
                }
            }
        }
    }

    async fn on_frame(&self, frame: Decoded) {
        match frame {
            Decoded::Request(req) if req.event => self.on_event(req).await,
            Decoded::Request(req) => self.dispatch(req).await,
            Decoded::Response(resp) if resp.event => trace!(id = resp.id, "heartbeat response"),
            Decoded::Response(resp) => debug!(id = resp.id, "unexpected response dropped"),
            Decoded::ResponseTooLarge { id, .. } => debug!(id, "unexpected response dropped"),
        }
    }

    async fn on_event(&self, req: Request) {
        if req.broken.is_some() || req.body.len() > MAX_EVENT_BODY {
            warn!(id = req.id, len = req.body.len(), "oversized event dropped");
        } else if req.is_heartbeat() {
            trace!(id = req.id, two_way = req.two_way, "heartbeat");
            if req.two_way {
                let _ = self
                    .tx
                    .send(Outgoing::response(Response::heartbeat(&req)))
                    .await;
            }
        } else {
            debug!(id = req.id, "readonly/writable event from consumer ignored");
        }
    }

    async fn dispatch(&self, req: Request) {
        let cfg = &self.shared.config;
        let admitted = match &self.shared.executions {
            None => None,
            Some(pool) => match admit(pool).await {
                Ok(admitted) => Some(admitted),
                Err(exhausted) => return self.reject_exhausted(req, exhausted).await,
            },
        };
        let call = Call {
            conn: self.calls.clone(),
            _guard: self.shared.inflight.enter(),
            admitted,
            req,
        };
        match cfg.dispatch {
            Dispatch::All => self.dispatch_all(call).await,
            Dispatch::Direct => {
                tokio::select! {
                    _ = call.run() => {}
                    _ = self.close.cancelled() => {}
                }
            }
        }
    }

    /// `Dispatch::All`: the handler's future is polled once here, on the reader; a
    /// call it does not end at once (it waits for something) goes on in a task of its
    /// own, as does every call while this connection's handler is slow to poll (see
    /// [`INLINE_BUDGET`]) and a call queued for a slot of the server's bound.
    ///
    /// A task per request costs more than most handlers: its allocation, and waking
    /// another runtime thread to steal it, which on a loaded or virtualized host costs
    /// more than the call itself.
    async fn dispatch_all(&self, call: Call) {
        if self.spawn_next.load(Ordering::Relaxed) > 0 {
            self.spawn_next.fetch_sub(1, Ordering::Relaxed);
            return spawn_call(call.run());
        }
        let mut handling = match call.start() {
            Started::Queued(call) => return spawn_call(call.run()),
            Started::Answered(frame) => {
                return frame
                    .into_iter()
                    .for_each(|f| send_or_spawn(&self.calls, f));
            }
            Started::Handling(handling) => handling,
        };
        let started = std::time::Instant::now();
        let polled = std::future::poll_fn(|cx| Poll::Ready(handling.poll_once(cx))).await;
        let took = started.elapsed();
        if took > INLINE_BUDGET {
            debug!(
                id = handling.id,
                took_us = took.as_micros() as u64,
                "slow handler: the next requests of this connection run in tasks"
            );
            self.spawn_next.store(SPAWN_AFTER_SLOW, Ordering::Relaxed);
        }
        match polled {
            Poll::Ready(handled) => {
                let Some(frame) = handling.answer(handled) else {
                    return;
                };
                if let Err(mpsc::error::TrySendError::Full(frame)) = self.calls.tx.try_send(frame) {
                    // Waits for room holding the call's place in the server's bound,
                    // as a call in a task does: answers waiting for a slow writer
                    // stay bounded.
                    spawn_call(async move {
                        let conn = handling.conn.clone();
                        send_waiting((conn, Some(frame))).await;
                        drop(handling);
                    });
                }
            }
            Poll::Pending => spawn_call(handling.finish()),
        }
    }
}

/// A first poll of a handler's future longer than this makes the reader of its
/// connection run the next [`SPAWN_AFTER_SLOW`] requests in tasks of their own, so a
/// handler that computes for long (or blocks) does not hold up the requests behind it
/// and several of them can run on several runtime threads.
const INLINE_BUDGET: Duration = Duration::from_micros(200);

/// Requests run in their own task after a slow first poll, before polling on the
/// reader is tried again.
const SPAWN_AFTER_SLOW: u32 = 1024;

/// Spawns the rest of a call, in the connection's span when that is recorded.
fn spawn_call<F: Future<Output = ()> + Send + 'static>(call: F) {
    let span = tracing::Span::current();
    if span.is_disabled() {
        tokio::spawn(call);
    } else {
        tokio::spawn(call.instrument(span));
    }
}

/// Queues a response for the writer at once when there is room, else waits for room
/// in a task (the reader never waits for the writer). For the rare answers written
/// before a handler ran (it panicked building its future).
fn send_or_spawn(conn: &Arc<CallContext>, frame: Outgoing) {
    if let Err(mpsc::error::TrySendError::Full(frame)) = conn.tx.try_send(frame) {
        let tx = conn.tx.clone();
        spawn_call(async move {
            let _ = tx.send(frame).await;
        });
    }
}

/// Times the reader lets the runtime run other tasks before it refuses a request.
const ADMIT_YIELDS: usize = 16;

/// A place in the bound for one request. A call that was spawned has taken its place
/// even before it first runs, so a burst of quick calls read together would fill the
/// bound that Java's threads, running while the I/O thread reads, never fill: when it
/// is full, the reader yields a few times (the spawned calls run and end) before it
/// refuses. A bound full of calls that are really running still refuses at once, in
/// microseconds.
async fn admit(pool: &Arc<Executions>) -> Result<Admitted, Exhausted> {
    for _ in 0..ADMIT_YIELDS {
        if let Some(admitted) = pool.admit_if_free() {
            return Ok(admitted);
        }
        tokio::task::yield_now().await;
    }
    pool.try_admit()
}

impl ServerConn {
    /// Answers a request over the bound at once: status 100 with Java's text (a
    /// one-way request is dropped). Logged at most once a second, every one counted.
    async fn reject_exhausted(&self, req: Request, exhausted: Exhausted) {
        if exhausted.should_log() {
            let bound = exhausted.bound();
            warn!(
                id = req.id,
                peer = %self.info.peer,
                threads = bound.threads,
                queues = bound.queues,
                rejected = exhausted.rejected(),
                "thread pool is exhausted, request rejected"
            );
        }
        if !req.two_way {
            return;
        }
        let local = self.info.local;
        let text = exhausted.message("dubbo", &local.ip().to_string(), local.port());
        let body = (self.shared.config.error_body)(req.serialization, &text);
        let status = Status::SERVER_THREADPOOL_EXHAUSTED_ERROR;
        let resp = Response::new(req.id, req.serialization, status, body);
        let _ = self.tx.send(Outgoing::response(resp)).await;
    }
}

/// What every request of one connection shares: one `Arc` per request instead of a
/// copy of each field.
struct CallContext {
    handler: Arc<dyn Handler>,
    info: ConnectionInfo,
    tx: mpsc::Sender<Outgoing>,
    error_body: ErrorBodyFn,
    max_payload: Option<usize>,
}

/// One request on its way through the handler: small, as it is a task of its own.
struct Call {
    conn: Arc<CallContext>,
    _guard: InFlightGuard,
    /// Its place in the server's bound, if it has one.
    admitted: Option<Admitted>,
    req: Request,
}

/// A call after [`Call::start`].
enum Started {
    /// It waits for a slot of the server's bound: run it as it was.
    Queued(Call),
    /// The handler panicked building its future: the answer (none for a one-way call).
    Answered(Option<Outgoing>),
    /// The handler's future, to poll.
    Handling(Handling),
}

/// A call whose handler's future exists.
struct Handling {
    conn: Arc<CallContext>,
    _guard: InFlightGuard,
    /// Its slot in the server's bound, if it has one.
    _running: Option<Running>,
    id: i64,
    serialization: u8,
    two_way: bool,
    future: BoxFuture<'static, Option<Response>>,
}

type Handled = Result<Option<Response>, Box<dyn Any + Send>>;

impl Call {
    /// Runs the whole call: waits for a slot, runs the handler, queues the answer.
    async fn run(self) {
        let Call {
            conn,
            _guard,
            admitted,
            req,
        } = self;
        // A queued call waits here for a running one to end.
        let running = match admitted {
            Some(admitted) => Some(admitted.run().await),
            None => None,
        };
        let handling = match Self::handle(conn, _guard, running, req) {
            Ok(handling) => handling,
            Err(frame) => return send_waiting(frame).await,
        };
        handling.finish().await;
    }

    /// Takes a free slot and builds the handler's future, without waiting.
    fn start(self) -> Started {
        let Call {
            conn,
            _guard,
            admitted,
            req,
        } = self;
        let running = match admitted.map(Admitted::try_run) {
            None => None,
            Some(Ok(running)) => Some(running),
            Some(Err(admitted)) => {
                return Started::Queued(Call {
                    conn,
                    _guard,
                    admitted: Some(admitted),
                    req,
                });
            }
        };
        match Self::handle(conn, _guard, running, req) {
            Ok(handling) => Started::Handling(handling),
            Err((_, frame)) => Started::Answered(frame),
        }
    }

    /// The handler's future, or the answer when building it panicked.
    fn handle(
        conn: Arc<CallContext>,
        guard: InFlightGuard,
        running: Option<Running>,
        req: Request,
    ) -> Result<Handling, (Arc<CallContext>, Option<Outgoing>)> {
        let (id, serialization, two_way) = (req.id, req.serialization, req.two_way);
        // The handler may panic while building its future or while it runs: either
        // way the caller gets an error response.
        match std::panic::catch_unwind(AssertUnwindSafe(|| conn.handler.handle(req, &conn.info))) {
            Ok(future) => Ok(Handling {
                conn,
                _guard: guard,
                _running: running,
                id,
                serialization,
                two_way,
                future,
            }),
            Err(panic) => {
                let frame = answer(&conn, id, serialization, two_way, Err(panic));
                Err((conn, frame))
            }
        }
    }
}

impl Handling {
    /// Polls the handler's future once, catching a panic.
    fn poll_once(&mut self, cx: &mut Context<'_>) -> Poll<Handled> {
        match std::panic::catch_unwind(AssertUnwindSafe(|| self.future.as_mut().poll(cx))) {
            Ok(Poll::Ready(resp)) => Poll::Ready(Ok(resp)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }

    /// The frame that answers the call (none for a one-way call).
    fn answer(&self, handled: Handled) -> Option<Outgoing> {
        answer(
            &self.conn,
            self.id,
            self.serialization,
            self.two_way,
            handled,
        )
    }

    /// Runs the handler's future to its end and queues the answer.
    async fn finish(mut self) {
        let handled = std::future::poll_fn(|cx| self.poll_once(cx)).await;
        let frame = self.answer(handled);
        send_waiting((self.conn.clone(), frame)).await;
    }
}

/// Queues `frame` on its connection's writer, waiting for room when the queue is
/// full; waiting is boxed so every request's task stays small.
async fn send_waiting((conn, frame): (Arc<CallContext>, Option<Outgoing>)) {
    let Some(frame) = frame else { return };
    if let Err(mpsc::error::TrySendError::Full(frame)) = conn.tx.try_send(frame) {
        let queued: Pin<Box<dyn Future<Output = _> + Send + '_>> = Box::pin(conn.tx.send(frame));
        let _ = queued.await;
    }
}

/// The frame answering a call the handler ended with `handled`: its response, or
/// status 80 when it panicked, or status 25 when the response is over the payload
/// limit; none for a one-way call.
fn answer(
    conn: &CallContext,
    id: i64,
    ser: u8,
    two_way: bool,
    handled: Handled,
) -> Option<Outgoing> {
    let mut resp = match handled {
        Ok(Some(resp)) if two_way => resp,
        Ok(Some(_)) => {
            debug!(id, "response to a one-way request dropped");
            return None;
        }
        Ok(None) => {
            if two_way {
                debug!(id, "handler gave no response to a two-way request");
            }
            return None;
        }
        Err(panic) => {
            let msg = panic_message(&*panic);
            error!(id, panic = msg, "handler panicked");
            if !two_way {
                return None;
            }
            let text = format!("Unexpected error in server handler: {msg}");
            Response::new(id, ser, Status::SERVER_ERROR, (conn.error_body)(ser, &text))
        }
    };
    resp.id = id;
    if let Some(max) = conn.max_payload {
        if resp.body.len() > max {
            let len = resp.body.len();
            warn!(
                id,
                len, max, "response exceeds payload limit, sending status 25"
            );
            let text = format!("Data length too large: {len}, max payload: {max}");
            let body = (conn.error_body)(resp.serialization, &text);
            resp = Response::new(id, resp.serialization, Status::SERIALIZATION_ERROR, body);
        }
    }
    Some(Outgoing::response(resp))
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("non-string panic payload")
}
