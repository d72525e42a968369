//! The ZooKeeper session: connects, watches the session state and starts a new session
//! when the old one expires. Everyone else reads the current client from a watch
//! channel whose generation grows with each new session.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tracing::{debug, info, warn};
use zookeeper_client::{Client, SessionState};

/// The client of one session and its generation (1 for the first session).
#[derive(Clone, Debug)]
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) generation: u64,
}

/// Shared session state.
#[derive(Debug)]
pub(crate) struct SessionShared {
    pub(crate) connect_string: String,
    pub(crate) session_timeout: Duration,
    auth: Option<String>,
    pub(crate) conn: watch::Sender<Option<Conn>>,
    pub(crate) connected: AtomicBool,
    /// The last connect attempt failed and no session has been made since: waiting
    /// for a first read is pointless until one is.
    unreachable: AtomicBool,
}

impl SessionShared {
    pub(crate) fn new(
        connect_string: String,
        session_timeout: Duration,
        auth: Option<String>,
    ) -> Arc<Self> {
        Arc::new(SessionShared {
            connect_string,
            session_timeout,
            auth,
            conn: watch::channel(None).0,
            connected: AtomicBool::new(false),
            unreachable: AtomicBool::new(false),
        })
    }

    /// Whether there is no session and the last attempt to make one failed.
    pub(crate) fn unreachable(&self) -> bool {
        self.unreachable.load(Ordering::SeqCst) && self.current().is_none()
    }

    /// The current client, if a session is established.
    pub(crate) fn current(&self) -> Option<Conn> {
        self.conn.borrow().clone()
    }

    /// Waits for the first session whose generation is above `*last` and moves `*last`
    /// to it; `None` when the session owner is gone. What registers ephemeral nodes
    /// calls this in a loop to write them again in each new session.
    pub(crate) async fn next_session(
        rx: &mut watch::Receiver<Option<Conn>>,
        last: &mut u64,
    ) -> Option<Conn> {
        loop {
            rx.changed().await.ok()?;
            let conn = rx.borrow_and_update().clone();
            if let Some(conn) = conn.filter(|c| c.generation > *last) {
                *last = conn.generation;
                return Some(conn);
            }
        }
    }

    /// Runs forever: connect, serve the session until it ends, connect again.
    pub(crate) async fn run(self: Arc<Self>) {
        let mut generation = 0u64;
        let mut backoff = Duration::from_millis(50);
        let mut failures = 0u64;
        loop {
            let mut connector = Client::connector()
                .with_session_timeout(self.session_timeout)
                .with_fail_eagerly();
            if let Some(auth) = &self.auth {
                connector = connector.with_auth("digest", auth.as_bytes());
            }
            let bound = self.session_timeout + Duration::from_secs(1);
            let result = tokio::time::timeout(bound, connector.connect(&self.connect_string)).await;
            let client = match result {
                Ok(Ok(client)) => client,
                Ok(Err(e)) => {
                    self.unreachable.store(true, Ordering::SeqCst);
                    failures += 1;
                    if failures == 1 || failures % 60 == 0 {
                        warn!(zookeeper = %self.connect_string, error = %e, failures, "cannot connect to zookeeper; retrying");
                    } else {
                        debug!(zookeeper = %self.connect_string, error = %e, retry_in = ?backoff, "zookeeper connect failed");
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
                Err(_) => {
                    self.unreachable.store(true, Ordering::SeqCst);
                    debug!(zookeeper = %self.connect_string, "zookeeper connect timed out");
                    continue;
                }
            };
            backoff = Duration::from_millis(50);
            failures = 0;
            self.unreachable.store(false, Ordering::SeqCst);
            generation += 1;
            info!(zookeeper = %self.connect_string, session = %client.session_id(), generation,
                timeout = ?client.session_timeout(), "zookeeper session established");
            let mut states = client.state_watcher();
            self.connected.store(true, Ordering::SeqCst);
            self.conn.send_replace(Some(Conn { client, generation }));
            loop {
                match states.changed().await {
                    SessionState::Disconnected => {
                        self.connected.store(false, Ordering::SeqCst);
                        warn!(zookeeper = %self.connect_string, "zookeeper disconnected; reconnecting");
                    }
                    SessionState::SyncConnected | SessionState::ConnectedReadOnly => {
                        self.connected.store(true, Ordering::SeqCst);
                        info!(zookeeper = %self.connect_string, "zookeeper reconnected");
                    }
                    state => {
                        warn!(zookeeper = %self.connect_string, ?state, "zookeeper session ended; starting a new one");
                        break;
                    }
                }
            }
            self.connected.store(false, Ordering::SeqCst);
            self.conn.send_replace(None);
        }
    }
}
