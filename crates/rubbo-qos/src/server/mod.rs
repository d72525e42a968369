//! [`QosServer`]: one TCP port for both forms. The first byte tells them apart, as
//! Java's `QosProcessHandler`: `G` or `P` is HTTP/1.1, anything else (or nothing
//! within half a second, when the logo is written) is telnet.

mod http;
mod prefixed;
pub(crate) mod telnet;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::QosError;
use crate::command::Qos;
use prefixed::Prefixed;

/// How long a new connection may stay silent before the telnet logo is written
/// (Java's welcome delay).
const WELCOME_DELAY: Duration = Duration::from_millis(500);

/// How long [`QosServer::shutdown`] waits for open sessions.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// What Java writes to a foreign peer it refuses (`ForeignHostPermitHandler`).
pub const FOREIGN_REFUSED: &str =
    "\r\nForeign Ip Not Permitted, Consider Config It In Whitelist.\r\n";

/// A running QoS server. Dropping it stops accepting and ends the sessions.
#[derive(Debug)]
pub struct QosServer {
    addr: SocketAddr,
    closing: CancellationToken,
    tasks: TaskTracker,
}

impl QosServer {
    /// Binds `qos.host` (unset: 127.0.0.1) on `qos.port` and serves `qos`.
    pub async fn bind(qos: Qos) -> Result<QosServer, QosError> {
        let host = qos.config().host.clone();
        let host = host.as_deref().unwrap_or("127.0.0.1");
        let ip: IpAddr = host
            .parse()
            .map_err(|_| QosError::BadHost(host.to_owned()))?;
        let listener = TcpListener::bind((ip, qos.config().port)).await?;
        Self::from_listener(listener, qos)
    }

    /// Serves `qos` on a bound listener (within a tokio runtime).
    pub fn from_listener(listener: TcpListener, qos: Qos) -> Result<QosServer, QosError> {
        let addr = listener.local_addr()?;
        let closing = CancellationToken::new();
        let tasks = TaskTracker::new();
        info!(addr = %addr, "qos server bound");
        let accept = {
            let closing = closing.clone();
            let tasks = tasks.clone();
            async move {
                loop {
                    let accepted = tokio::select! {
                        _ = closing.cancelled() => break,
                        a = listener.accept() => a,
                    };
                    let (stream, peer) = match accepted {
                        Ok(a) => a,
                        Err(e) => {
                            warn!(error = %e, "qos accept failed");
                            // A transient failure (out of descriptors): pause, go on.
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let _ = stream.set_nodelay(true);
                    let qos = qos.clone();
                    let token = closing.child_token();
                    let span = info_span!("qos connection", peer = %peer);
                    tasks.spawn(
                        async move {
                            if let Err(e) = serve(&qos, stream, peer.ip(), token).await {
                                debug!(error = %e, "qos connection ended");
                            }
                        }
                        .instrument(span),
                    );
                }
            }
        };
        tasks.spawn(accept);
        Ok(QosServer {
            addr,
            closing,
            tasks,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting; sessions end once the command they run (if any) answered.
    pub fn close(&self) {
        self.closing.cancel();
        self.tasks.close();
    }

    /// [`close`](Self::close), then waits (at most 5 s) for the sessions to end.
    pub async fn shutdown(&self) {
        self.close();
        if tokio::time::timeout(CLOSE_WAIT, self.tasks.wait())
            .await
            .is_err()
        {
            warn!(left = self.tasks.len(), "qos sessions still open");
        }
    }
}

impl Drop for QosServer {
    fn drop(&mut self) {
        self.close();
    }
}

impl Qos {
    /// Serves one connection from `peer` (HTTP or telnet, told by its first byte)
    /// until it ends. [`QosServer`] calls this for each accepted socket; call it
    /// directly to serve another transport, or to present a peer address.
    pub async fn serve_connection<S>(&self, io: S, peer: IpAddr) -> Result<(), QosError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        serve(self, io, peer, CancellationToken::new()).await
    }
}

async fn serve<S>(
    qos: &Qos,
    mut io: S,
    peer: IpAddr,
    closing: CancellationToken,
) -> Result<(), QosError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    if !qos.config().connection_permitted(peer) {
        info!(peer = %peer, "qos foreign peer refused");
        io.write_all(FOREIGN_REFUSED.as_bytes()).await?;
        let _ = io.shutdown().await;
        return Ok(());
    }
    let mut first = [0u8; 1];
    let got = tokio::select! {
        _ = closing.cancelled() => return Ok(()),
        r = tokio::time::timeout(WELCOME_DELAY, io.read(&mut first)) => r,
    };
    let first = match got {
        Err(_) => None,
        Ok(Ok(0)) => return Ok(()),
        Ok(Ok(_)) => Some(first[0]),
        Ok(Err(e)) => return Err(e.into()),
    };
    match first {
        Some(b @ (b'G' | b'P')) => {
            let qos = qos.clone();
            let svc = service_fn(move |req| http::handle(qos.clone(), peer, req));
            let conn = hyper::server::conn::http1::Builder::new()
                .keep_alive(false)
                .serve_connection(TokioIo::new(Prefixed::new(vec![b], io)), svc);
            tokio::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => r.map_err(|e| QosError::Io(std::io::Error::other(e)))?,
                _ = closing.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(CLOSE_WAIT, conn).await;
                }
            }
            Ok(())
        }
        other => Ok(telnet::session(qos.clone(), peer, io, other, closing).await?),
    }
}
