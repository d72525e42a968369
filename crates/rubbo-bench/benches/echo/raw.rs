//! Baseline (a): the least an RPC framework must do, on raw tokio TCP.
//!
//! Frames are `u32 length | u64 request id | payload` (big-endian). The server reads
//! frames off one connection, spawns a task per request (where a framework would run
//! the handler) and hands the reply to a writer task that batches writes. The client
//! multiplexes: a request id and a pending map of oneshot senders, a writer task that
//! batches frames and a reader task that completes the pending calls, like a real RPC
//! client. Both sides set `TCP_NODELAY`.
//!
//! The writers coalesce by default: woken by the first queued frame, and when more calls
//! are outstanding on their side than frames queued, they yield to the scheduler once
//! before draining the queue, so one `write` carries the frames of every task that ran
//! meanwhile; a lone call is written at once. `RUBBO_BENCH_RAW_COALESCE=0` turns that off
//! (then a write carries about 1.4 frames at 256 in flight, as `rubbo-remoting`'s writer
//! does today).

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use anyhow::{Context, ensure};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::load::EchoClient;

/// Frames to write: request id and payload.
type Outbound = mpsc::UnboundedSender<(u64, Bytes)>;
type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Bytes>>>>;

const HEADER: usize = 12;
const READ_CHUNK: usize = 64 * 1024;
const MAX_FRAME: usize = 16 * 1024 * 1024;
const WRITE_BATCH: usize = 512;

/// The echo server; aborted on drop.
#[derive(Debug)]
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

pub(crate) async fn serve(coalesce: bool) -> io::Result<Server> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let accept = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(connection(stream, coalesce.then(Arc::default)));
        }
    });
    Ok(Server { addr, accept })
}

/// Serves one connection; `outstanding` counts requests read and not yet answered.
async fn connection(stream: TcpStream, outstanding: Option<Arc<AtomicUsize>>) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let (rd, wr) = stream.into_split();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(writer(wr, rx, outstanding.clone(), true));
    read_frames(rd, |id, payload| {
        if let Some(o) = &outstanding {
            o.fetch_add(1, Ordering::Relaxed);
        }
        let tx = tx.clone();
        // One task per request: the handler's home in any framework.
        tokio::spawn(async move {
            let _ = tx.send((id, payload));
        });
    })
    .await
}

/// Reads frames until EOF, handing each `(id, payload)` to `on_frame` (payloads are
/// zero-copy slices of the read buffer).
async fn read_frames(
    mut rd: OwnedReadHalf,
    mut on_frame: impl FnMut(u64, Bytes),
) -> io::Result<()> {
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    loop {
        while buf.len() >= HEADER {
            let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
            if !(8..=MAX_FRAME).contains(&len) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "bad frame length",
                ));
            }
            if buf.len() < 4 + len {
                buf.reserve(4 + len - buf.len());
                break;
            }
            buf.advance(4);
            let id = buf.get_u64();
            on_frame(id, buf.split_to(len - 8).freeze());
        }
        if buf.capacity() - buf.len() < READ_CHUNK / 4 {
            buf.reserve(READ_CHUNK);
        }
        if rd.read_buf(&mut buf).await? == 0 {
            return Ok(());
        }
    }
}

/// Drains the queue into one buffer per wake-up and writes it with one syscall. With an
/// `outstanding` count (coalescing on) that exceeds the frames queued, first yields once
/// to the scheduler to collect more; `answers` means the frames written settle that many
/// outstanding calls (server side).
async fn writer(
    mut wr: OwnedWriteHalf,
    mut rx: mpsc::UnboundedReceiver<(u64, Bytes)>,
    outstanding: Option<Arc<AtomicUsize>>,
    answers: bool,
) -> io::Result<()> {
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    let mut out = BytesMut::with_capacity(READ_CHUNK);
    while rx.recv_many(&mut batch, WRITE_BATCH).await > 0 {
        let more_coming = outstanding
            .as_ref()
            .is_some_and(|o| o.load(Ordering::Relaxed) > batch.len());
        if more_coming && batch.len() < WRITE_BATCH {
            // Let the tasks that are about to queue frames run first, so that one write
            // carries many frames (without this, about one frame per syscall).
            tokio::task::yield_now().await;
            while batch.len() < WRITE_BATCH {
                match rx.try_recv() {
                    Ok(f) => batch.push(f),
                    Err(_) => break,
                }
            }
        }
        let frames = batch.len();
        for (id, payload) in batch.drain(..) {
            out.put_u32((payload.len() + 8) as u32);
            out.put_u64(id);
            out.put_slice(&payload);
        }
        wr.write_all(&out).await?;
        out.clear();
        if let Some(o) = outstanding.as_ref().filter(|_| answers) {
            o.fetch_sub(frames, Ordering::Relaxed);
        }
    }
    wr.shutdown().await
}

/// A multiplexing client on one connection; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Client {
    inner: Arc<Inner>,
    payload: Bytes,
}

#[derive(Debug)]
struct Inner {
    next_id: AtomicU64,
    pending: Pending,
    tx: Outbound,
    /// Calls sent and not yet answered, when the writer coalesces.
    outstanding: Option<Arc<AtomicUsize>>,
}

impl Client {
    pub(crate) async fn connect(
        addr: SocketAddr,
        payload: Bytes,
        coalesce: bool,
    ) -> io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (rd, wr) = stream.into_split();
        let (tx, rx) = mpsc::unbounded_channel();
        let pending: Pending = Arc::default();
        let outstanding: Option<Arc<AtomicUsize>> = coalesce.then(Arc::default);
        tokio::spawn(writer(wr, rx, outstanding.clone(), false));
        let completions = pending.clone();
        let settled = outstanding.clone();
        tokio::spawn(read_frames(rd, move |id, payload| {
            if let Some(done) = completions.lock().remove(&id) {
                if let Some(o) = &settled {
                    o.fetch_sub(1, Ordering::Relaxed);
                }
                let _ = done.send(payload);
            }
        }));
        Ok(Client {
            inner: Arc::new(Inner {
                next_id: AtomicU64::new(0),
                pending,
                tx,
                outstanding,
            }),
            payload,
        })
    }
}

impl EchoClient for Client {
    async fn echo(&self) -> anyhow::Result<()> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (done, reply) = oneshot::channel();
        self.inner.pending.lock().insert(id, done);
        if let Some(o) = &self.inner.outstanding {
            o.fetch_add(1, Ordering::Relaxed);
        }
        self.inner
            .tx
            .send((id, self.payload.clone()))
            .ok()
            .context("raw connection writer gone")?;
        let reply = reply.await.context("raw connection closed")?;
        ensure!(reply == self.payload, "raw echo returned other bytes");
        Ok(())
    }
}
