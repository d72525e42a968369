//! Connection sharing: one shared connection per address, or N exclusive ones.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures::future::try_join_all;
use parking_lot::Mutex;

use super::{ExchangeClient, Inner};
use crate::{ClientConfig, RemotingError, Response};

/// A set of clients to one address used round-robin (`connections=N`).
///
/// Cheap to clone. [`pick`](Clients::pick) skips unavailable members when it can.
#[derive(Debug, Clone)]
pub struct Clients {
    clients: Arc<[ExchangeClient]>,
    next: Arc<AtomicUsize>,
}

impl Clients {
    /// Wraps existing clients; errors on an empty list.
    pub fn new(clients: Vec<ExchangeClient>) -> Result<Self, RemotingError> {
        if clients.is_empty() {
            return Err(RemotingError::InvalidConfig("no clients".into()));
        }
        Ok(Clients {
            clients: clients.into(),
            next: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Opens `n` (at least 1) exclusive connections to `addr`.
    pub async fn connect(
        addr: &str,
        n: usize,
        config: ClientConfig,
    ) -> Result<Self, RemotingError> {
        let all = (0..n.max(1)).map(|_| ExchangeClient::connect(addr, config.clone()));
        Clients::new(try_join_all(all).await?)
    }

    /// The next client in round-robin order, skipping unavailable ones when
    /// another is available.
    pub fn pick(&self) -> &ExchangeClient {
        let n = self.clients.len();
        if n == 1 {
            // the only member either way: skip the availability check (locks) and
            // the shared counter
            return &self.clients[0];
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        (0..n)
            .map(|i| &self.clients[(start + i) % n])
            .find(|c| c.is_available())
            .unwrap_or(&self.clients[start])
    }

    /// [`ExchangeClient::request`] on the next client.
    pub fn request(
        &self,
        body: Bytes,
        serialization: u8,
        timeout: Duration,
    ) -> impl Future<Output = Result<Response, RemotingError>> + Send + 'static {
        self.pick().request(body, serialization, timeout)
    }

    /// [`ExchangeClient::request_until`] on the next client.
    pub fn request_until(
        &self,
        body: Bytes,
        serialization: u8,
        timeout: Duration,
        deadline: Option<std::time::Instant>,
    ) -> impl Future<Output = Result<Response, RemotingError>> + Send + 'static {
        self.pick()
            .request_until(body, serialization, timeout, deadline)
    }

    /// [`ExchangeClient::send_oneway`] on the next client.
    pub async fn send_oneway(&self, body: Bytes, serialization: u8) -> Result<(), RemotingError> {
        self.pick().send_oneway(body, serialization).await
    }

    /// `true` when any member is available.
    pub fn is_available(&self) -> bool {
        self.clients.iter().any(ExchangeClient::is_available)
    }

    /// The members.
    pub fn clients(&self) -> &[ExchangeClient] {
        &self.clients
    }

    /// Closes every member (for every holder of these clients).
    pub fn close(&self) {
        self.clients.iter().for_each(ExchangeClient::close);
    }
}

/// Hands out clients per provider address.
///
/// With `connections == 0` (Dubbo's default) every caller for one address gets the
/// same shared, multiplexed connection; the pool keeps only a weak reference, so the
/// connection closes when the last holder drops its [`Clients`]. With
/// `connections == N > 0` the caller gets N exclusive connections used
/// round-robin, as Java's `connections=N`.
///
/// Release a shared client by dropping it: [`ExchangeClient::close`] closes it for
/// every holder.
///
/// ```
/// # use rubbo_remoting::*;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// # let h = handler_fn(|_r: Request, _c: ConnectionInfo| async { None });
/// # let server = Server::bind("127.0.0.1:0", ServerConfig::default(), h).await?;
/// let pool = ConnectionPool::new(ClientConfig::default());
/// let addr = server.local_addr().to_string();
/// let a = pool.get(&addr, 0).await?;
/// let b = pool.get(&addr, 0).await?;
/// assert_eq!(a.pick().local_addr(), b.pick().local_addr()); // one shared connection
/// let own = pool.get(&addr, 2).await?;
/// assert_eq!(own.clients().len(), 2);
/// # Ok::<(), RemotingError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct ConnectionPool {
    inner: Arc<PoolInner>,
}

#[derive(Debug)]
struct PoolInner {
    config: ClientConfig,
    shared: Mutex<HashMap<String, Weak<Inner>>>,
}

impl ConnectionPool {
    /// A pool whose connections use `config`.
    pub fn new(config: ClientConfig) -> Self {
        ConnectionPool {
            inner: Arc::new(PoolInner {
                config,
                shared: Mutex::default(),
            }),
        }
    }

    /// Clients for `addr`: the shared connection when `connections == 0`, else
    /// `connections` exclusive ones.
    pub async fn get(&self, addr: &str, connections: usize) -> Result<Clients, RemotingError> {
        if connections == 0 {
            Clients::new(vec![self.shared(addr).await?])
        } else {
            Clients::connect(addr, connections, self.inner.config.clone()).await
        }
    }

    /// The shared client for `addr`, connecting it if no live one exists.
    pub async fn shared(&self, addr: &str) -> Result<ExchangeClient, RemotingError> {
        if let Some(c) = self.lookup(addr) {
            return Ok(c);
        }
        let fresh = ExchangeClient::connect(addr, self.inner.config.clone()).await?;
        let mut map = self.inner.shared.lock();
        map.retain(|_, w| w.strong_count() > 0);
        if let Some(c) = map
            .get(addr)
            .and_then(ExchangeClient::upgrade)
            .filter(|c| !c.is_closed())
        {
            // lost a race with another caller: use theirs, `fresh` closes on drop
            return Ok(c);
        }
        map.insert(addr.to_owned(), fresh.downgrade());
        Ok(fresh)
    }

    /// Number of live shared clients.
    pub fn shared_count(&self) -> usize {
        self.inner
            .shared
            .lock()
            .values()
            .filter(|w| w.strong_count() > 0)
            .count()
    }

    fn lookup(&self, addr: &str) -> Option<ExchangeClient> {
        self.inner
            .shared
            .lock()
            .get(addr)
            .and_then(ExchangeClient::upgrade)
            .filter(|c| !c.is_closed())
    }
}
