//! Which transport a new connection goes to: the HTTP/2 client preface (prior
//! knowledge) goes native, anything else to hyper with the bytes read replayed.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// The HTTP/2 client connection preface (RFC 9113 §3.4).
pub(crate) const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// What a connection began with.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Sniffed {
    /// The whole HTTP/2 preface (consumed).
    Preface,
    /// Something else: these bytes (a prefix of the preface, or bytes that differ
    /// from it), to be read again by whoever serves the connection.
    Other(Bytes),
}

/// Reads until the bytes are the whole preface or differ from it (or the peer
/// closes): never more than the preface's 24 bytes.
pub(crate) async fn sniff<IO: AsyncRead + Unpin>(io: &mut IO) -> io::Result<Sniffed> {
    let mut buf = [0u8; PREFACE.len()];
    let mut n = 0;
    while n < PREFACE.len() {
        let read = io.read(&mut buf[n..]).await?;
        if read == 0 {
            break;
        }
        n += read;
        if buf[..n] != PREFACE[..n] {
            break;
        }
    }
    if n == PREFACE.len() && buf == *PREFACE {
        Ok(Sniffed::Preface)
    } else {
        Ok(Sniffed::Other(Bytes::copy_from_slice(&buf[..n])))
    }
}

/// An I/O object that reads `prefix` before its own bytes.
#[derive(Debug)]
pub(crate) struct Rewind<T> {
    prefix: Bytes,
    io: T,
}

impl<T> Rewind<T> {
    /// `io`, with `prefix` read first.
    pub(crate) fn new(prefix: Bytes, io: T) -> Self {
        Rewind { prefix, io }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Rewind<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.prefix.has_remaining() {
            let n = this.prefix.len().min(buf.remaining());
            buf.put_slice(&this.prefix[..n]);
            this.prefix.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Rewind<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
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
    async fn the_preface_is_consumed_and_anything_else_is_replayed() {
        let (mut a, mut b) = tokio::io::duplex(64);
        a.write_all(PREFACE).await.unwrap();
        a.write_all(b"rest").await.unwrap();
        assert_eq!(sniff(&mut b).await.unwrap(), Sniffed::Preface);
        let mut rest = [0u8; 4];
        b.read_exact(&mut rest).await.unwrap();
        assert_eq!(&rest, b"rest");

        let (mut a, mut b) = tokio::io::duplex(64);
        a.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        let Sniffed::Other(prefix) = sniff(&mut b).await.unwrap() else {
            panic!("HTTP/1 taken for the preface")
        };
        assert_eq!(&prefix[..], b"GET / HTTP/1.1\r\n", "what one read gave");
        let mut r = Rewind::new(prefix, b);
        let mut line = [0u8; 16];
        r.read_exact(&mut line).await.unwrap();
        assert_eq!(&line, b"GET / HTTP/1.1\r\n");

        // A prefix of the preface, then the peer closes.
        let (mut a, mut b) = tokio::io::duplex(64);
        a.write_all(&PREFACE[..5]).await.unwrap();
        drop(a);
        assert_eq!(
            sniff(&mut b).await.unwrap(),
            Sniffed::Other(Bytes::from_static(&PREFACE[..5]))
        );
    }
}
