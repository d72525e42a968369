//! Fewer, larger writes on a busy HTTP/2 connection.
//!
//! hyper runs each HTTP/2 stream in its own task, and each finished response (or a
//! new request, on the client) wakes the connection task. Tokio runs a task woken by
//! the running one next, so the connection task writes every response on its own:
//! one `writev` (and one TCP segment) per call, which is most of a busy server's CPU
//! time. [`Coalesce`] makes the connection task yield once before it writes while
//! other calls of the connection are still being worked on: the tasks already
//! runnable queue their frames first, and one write carries them all. The bytes on
//! the wire are the same; a lone call is written at once.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Calls of one connection being worked on; see [`Coalesce`].
#[derive(Debug, Default)]
pub(crate) struct Busy(AtomicUsize);

impl Busy {
    /// Counts one call as being worked on until the guard drops.
    pub(crate) fn enter(self: &Arc<Self>) -> BusyGuard {
        self.0.fetch_add(1, Ordering::Relaxed);
        BusyGuard(self.clone())
    }

    /// Counts one call as [`enter`](Self::enter) does, unless `max` calls (0: no
    /// bound) are counted already: then nothing is counted and the count is the error.
    pub(crate) fn try_enter(self: &Arc<Self>, max: usize) -> Result<BusyGuard, usize> {
        let before = self.0.fetch_add(1, Ordering::Relaxed);
        if max > 0 && before >= max {
            self.0.fetch_sub(1, Ordering::Relaxed);
            return Err(before);
        }
        Ok(BusyGuard(self.clone()))
    }

    fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// One call counted by [`Busy::enter`].
#[derive(Debug)]
pub(crate) struct BusyGuard(Arc<Busy>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// An I/O object whose writes wait for one turn of the scheduler while more than
/// `quiet` calls of its connection are being worked on (at most one turn per write).
#[derive(Debug)]
pub(crate) struct Coalesce<T> {
    io: T,
    busy: Arc<Busy>,
    /// How many calls being worked on still count as quiet (the client's own call is
    /// one of them while its request is written).
    quiet: usize,
    /// This write already waited its turn.
    yielded: bool,
}

impl<T> Coalesce<T> {
    pub(crate) fn new(io: T, busy: Arc<Busy>, quiet: usize) -> Self {
        Coalesce {
            io,
            busy,
            quiet,
            yielded: false,
        }
    }

    /// `Pending` (after waking the task) if this write should wait for one turn.
    fn wait_turn(&mut self, cx: &mut Context<'_>) -> bool {
        if self.yielded || self.busy.count() <= self.quiet {
            self.yielded = false;
            return false;
        }
        self.yielded = true;
        // Woken by itself while it runs, the task goes to the back of the run queue.
        cx.waker().wake_by_ref();
        true
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Coalesce<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Coalesce<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.wait_turn(cx) {
            return Poll::Pending;
        }
        Pin::new(&mut this.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.wait_turn(cx) {
            return Poll::Pending;
        }
        Pin::new(&mut this.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_write_waits_one_turn_only_while_other_calls_are_busy() {
        let busy = Arc::new(Busy::default());
        let (a, mut b) = tokio::io::duplex(64);
        let mut io = Coalesce::new(a, busy.clone(), 0);
        // Quiet: written at the first poll.
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(matches!(
            Pin::new(&mut io).poll_write(&mut cx, b"x"),
            Poll::Ready(Ok(1))
        ));
        // Busy: the first poll waits its turn, the next one writes.
        let guard = busy.enter();
        assert!(Pin::new(&mut io).poll_write(&mut cx, b"y").is_pending());
        assert!(matches!(
            Pin::new(&mut io).poll_write(&mut cx, b"y"),
            Poll::Ready(Ok(1))
        ));
        drop(guard);
        assert_eq!(busy.count(), 0);
        // A bound refuses the call over it and counts nothing for it.
        let one = busy.try_enter(1).unwrap();
        assert_eq!(busy.try_enter(1).unwrap_err(), 1);
        assert_eq!(busy.count(), 1);
        drop(one);
        assert!(busy.try_enter(0).is_ok(), "0: no bound");
        assert_eq!(busy.count(), 0);
        io.write_all(b"z").await.unwrap();
        let mut got = [0u8; 3];
        tokio::io::AsyncReadExt::read_exact(&mut b, &mut got)
            .await
            .unwrap();
        assert_eq!(&got, b"xyz");
    }
}
