//! The per-connection writer task: batches queued frames into one write.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{debug, trace};

use crate::client::pending::Pending;
use crate::{HEADER_LEN, Header, Request, Response};

/// Frames taken from the queue per write at most.
const MAX_BATCH: usize = 512;
const INITIAL_BUF: usize = 64 * 1024;
/// A write buffer grown beyond this is released after use.
const KEEP_BUF: usize = 4 * 1024 * 1024;

/// A frame queued for the writer: header plus body, no allocation besides the body.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub(crate) header: Header,
    pub(crate) body: Bytes,
}

impl Outgoing {
    pub(crate) fn request(req: Request) -> Self {
        Outgoing {
            header: req.header(),
            body: req.body,
        }
    }

    pub(crate) fn response(resp: Response) -> Self {
        Outgoing {
            header: resp.header(),
            body: resp.body,
        }
    }

    fn awaits_reply(&self) -> bool {
        self.header.is_request() && self.header.is_two_way() && !self.header.is_event()
    }
}

/// What ends a writer.
#[derive(Debug)]
pub(crate) struct WriterStop {
    /// Stop at once; cancelled by the writer itself on a write error.
    pub(crate) close: CancellationToken,
    /// Write what is queued, shut the socket's write side down, stop.
    pub(crate) drain: Option<CancellationToken>,
}

/// Runs until the queue's senders are gone, `close` fires, or `drain` fires and the
/// queue was flushed. Marks written two-way requests as sent in `pending`.
pub(crate) async fn run_writer<W: AsyncWrite + Unpin>(
    mut io: W,
    mut rx: mpsc::Receiver<Outgoing>,
    stop: WriterStop,
    pending: Option<Arc<Pending>>,
    busy: Option<Arc<dyn Fn() -> usize + Send + Sync>>,
) {
    let mut batch: Vec<Outgoing> = Vec::with_capacity(MAX_BATCH);
    let mut buf = BytesMut::with_capacity(INITIAL_BUF);
    // Ids of the written two-way requests, for `pending`.
    let mut sent: Vec<i64> = Vec::new();
    let drain = stop.drain.clone().unwrap_or_default();
    loop {
        let n = tokio::select! {
            biased;
            _ = stop.close.cancelled() => return,
            n = rx.recv_many(&mut batch, MAX_BATCH) => n,
            _ = drain.cancelled(), if stop.drain.is_some() => {
                while let Ok(f) = rx.try_recv() {
                    batch.push(f);
                }
                if !batch.is_empty() && write_batch(&mut io, &mut buf, &mut batch, None, &mut sent).await.is_err() {
                    return;
                }
                let _ = io.shutdown().await;
                return;
            }
        };
        if n == 0 {
            let _ = io.shutdown().await;
            return;
        }
        let outstanding = match (&busy, &pending) {
            (Some(b), _) => b(),
            (None, Some(p)) => p.len(),
            _ => 0,
        };
        if outstanding > batch.len() && batch.len() < MAX_BATCH {
            tokio::task::yield_now().await;
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(f) => batch.push(f),
                    Err(_) => break,
                }
            }
        }
        if let Err(e) =
            write_batch(&mut io, &mut buf, &mut batch, pending.as_deref(), &mut sent).await
        {
            debug!(error = %e, "write failed, closing connection");
            stop.close.cancel();
            return;
        }
        if buf.capacity() > KEEP_BUF {
            buf = BytesMut::with_capacity(INITIAL_BUF);
        }
    }
}

async fn write_batch<W: AsyncWrite + Unpin>(
    io: &mut W,
    buf: &mut BytesMut,
    batch: &mut Vec<Outgoing>,
    pending: Option<&Pending>,
    sent: &mut Vec<i64>,
) -> std::io::Result<()> {
    buf.clear();
    for f in batch.iter() {
        buf.reserve(HEADER_LEN + f.body.len());
        f.header.encode(buf);
        buf.extend_from_slice(&f.body);
    }
    trace!(frames = batch.len(), bytes = buf.len(), "write batch");
    io.write_all(buf).await?;
    if let Some(p) = pending {
        sent.extend(
            batch
                .iter()
                .filter(|f| f.awaits_reply())
                .map(|f| f.header.id),
        );
        p.mark_sent(sent);
    }
    batch.clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use parking_lot::Mutex;

    use super::*;

    /// Records the size of every write call.
    #[derive(Clone, Default)]
    struct Recorder {
        writes: Arc<Mutex<Vec<usize>>>,
        shut: Arc<Mutex<bool>>,
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.writes.lock().push(buf.len());
            Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            *self.shut.lock() = true;
            Poll::Ready(Ok(()))
        }
    }

    fn frame(id: i64) -> Outgoing {
        Outgoing::request(Request::new(id, 2, Bytes::from_static(b"abc")))
    }

    #[tokio::test]
    async fn queued_frames_go_out_in_one_write_and_are_marked_sent() {
        let (tx, rx) = mpsc::channel(1024);
        let pending = Arc::new(Pending::new());
        let mut waiting = Vec::new();
        for id in 0..100 {
            let (otx, orx) = tokio::sync::oneshot::channel();
            pending
                .insert(id, otx, std::time::Duration::from_secs(60), None)
                .expect("unbounded");
            waiting.push(orx);
            tx.send(frame(id)).await.unwrap();
        }
        drop(tx);
        let rec = Recorder::default();
        let stop = WriterStop {
            close: CancellationToken::new(),
            drain: None,
        };
        run_writer(rec.clone(), rx, stop, Some(pending.clone()), None).await;
        assert_eq!(
            *rec.writes.lock(),
            vec![100 * (HEADER_LEN + 3)],
            "one write for 100 frames"
        );
        assert!(*rec.shut.lock());
        for id in 0..100 {
            assert!(pending.remove(id).unwrap().sent, "request {id} marked sent");
        }
    }

    #[tokio::test]
    async fn drain_flushes_queued_frames_then_shuts_down() {
        let (tx, rx) = mpsc::channel(1024);
        for id in 0..10 {
            tx.send(frame(id)).await.unwrap();
        }
        let drain = CancellationToken::new();
        drain.cancel();
        let rec = Recorder::default();
        let stop = WriterStop {
            close: CancellationToken::new(),
            drain: Some(drain),
        };
        run_writer(rec.clone(), rx, stop, None, None).await;
        let total: usize = rec.writes.lock().iter().sum();
        assert_eq!(total, 10 * (HEADER_LEN + 3));
        assert!(*rec.shut.lock());
        drop(tx);
    }
}
