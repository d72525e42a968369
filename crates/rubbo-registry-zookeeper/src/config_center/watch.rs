//! The data watch of one listened key: reads the node with a one-shot watch, reports
//! what changed, and reads again after each event, disconnection or new session.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rubbo_registry::{ConfigChangeEvent, ConfigChangeType, SharedConfigListener, process_safely};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tracing::{debug, info};
use zookeeper_client::{Client, Error as ZkError, EventType, OneshotWatcher};

use super::Inner;
use crate::session::{Conn, SessionShared};

/// The listeners of one key and the task watching it (ended on drop).
pub(crate) struct KeyWatch {
    listeners: Arc<Mutex<Vec<SharedConfigListener>>>,
    last: Arc<Mutex<Option<String>>>,
    task: JoinHandle<()>,
}

impl Drop for KeyWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl KeyWatch {
    /// Starts watching `path`. The receiver gets the content first read (`None`:
    /// absent), unless no session comes first.
    pub(crate) fn start(
        inner: Arc<Inner>,
        path: String,
        key: String,
        group: String,
    ) -> (Self, oneshot::Receiver<Option<String>>) {
        let listeners = Arc::new(Mutex::new(Vec::new()));
        let last = Arc::new(Mutex::new(None));
        let (tx, rx) = oneshot::channel();
        let task = tokio::spawn(
            Task {
                session: inner.session.clone(),
                path,
                key,
                group,
                listeners: listeners.clone(),
                last: last.clone(),
            }
            .run(tx),
        );
        (
            KeyWatch {
                listeners,
                last,
                task,
            },
            rx,
        )
    }

    pub(crate) fn add(&self, listener: SharedConfigListener) {
        self.listeners.lock().push(listener);
    }

    pub(crate) fn remove(&self, drop_it: impl Fn(&SharedConfigListener) -> bool) {
        self.listeners.lock().retain(|l| !drop_it(l));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.listeners.lock().is_empty()
    }

    /// The content last read (`None`: absent or not read yet).
    pub(crate) fn last(&self) -> Option<String> {
        self.last.lock().clone()
    }
}

struct Task {
    session: Arc<SessionShared>,
    path: String,
    key: String,
    group: String,
    listeners: Arc<Mutex<Vec<SharedConfigListener>>>,
    last: Arc<Mutex<Option<String>>>,
}

/// Reads `path` and leaves a watch on it (on the data, or on its creation).
async fn read_and_watch(
    client: &Client,
    path: &str,
) -> Result<(Option<String>, OneshotWatcher), ZkError> {
    loop {
        match client.get_and_watch_data(path).await {
            Ok((data, _, watcher)) => {
                return Ok((Some(String::from_utf8_lossy(&data).into_owned()), watcher));
            }
            Err(ZkError::NoNode) => match client.check_and_watch_stat(path).await? {
                (None, watcher) => return Ok((None, watcher)),
                // Created in between: read it.
                (Some(_), _) => continue,
            },
            Err(e) => return Err(e),
        }
    }
}

impl Task {
    async fn run(self, first: oneshot::Sender<Option<String>>) {
        let mut first = Some(first);
        let mut rx = self.session.conn.subscribe();
        let mut backoff = Duration::from_millis(50);
        loop {
            let conn = rx.borrow_and_update().clone();
            let Some(conn) = conn else {
                if rx.changed().await.is_err() {
                    return;
                }
                continue;
            };
            let (content, watcher) = match read_and_watch(&conn.client, &self.path).await {
                Ok(read) => read,
                Err(e) => {
                    debug!(path = %self.path, error = %e, retry_in = ?backoff, "config read failed; retrying");
                    tokio::select! {
                        () = tokio::time::sleep(backoff) => {}
                        changed = rx.changed() => if changed.is_err() { return },
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            };
            backoff = Duration::from_millis(50);
            let delivered_first = match first.take() {
                Some(tx) => {
                    *self.last.lock() = content.clone();
                    tx.send(content.clone()).is_ok()
                }
                None => false,
            };
            if !delivered_first {
                self.report(content);
            }
            tokio::select! {
                event = watcher.changed() => {
                    if event.event_type == EventType::Session {
                        // Disconnected or expired: read again once connected.
                        self.wait_connected(&mut rx).await;
                    }
                }
                changed = rx.changed() => if changed.is_err() { return },
            }
        }
    }

    /// Waits (polling the session state, bounded by each step) until the session is
    /// connected again or a new one starts.
    async fn wait_connected(&self, rx: &mut watch::Receiver<Option<Conn>>) {
        use std::sync::atomic::Ordering;
        while !self.session.connected.load(Ordering::SeqCst) {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = rx.changed() => return,
            }
        }
    }

    /// Reports `now` to the listeners when it differs from the content last known.
    fn report(&self, now: Option<String>) {
        let change_type = {
            let mut last = self.last.lock();
            let t = match (last.as_deref(), now.as_deref()) {
                (None, None) => return,
                (Some(a), Some(b)) if a == b => return,
                (None, Some(_)) => ConfigChangeType::Added,
                (Some(_), Some(_)) => ConfigChangeType::Modified,
                (Some(_), None) => ConfigChangeType::Deleted,
            };
            last.clone_from(&now);
            t
        };
        info!(key = %self.key, group = %self.group, change = ?change_type, "config changed");
        let event = ConfigChangeEvent {
            key: self.key.clone(),
            group: self.group.clone(),
            content: now.unwrap_or_default(),
            change_type,
        };
        let listeners = self.listeners.lock().clone();
        for l in listeners {
            process_safely(&*l, event.clone());
        }
    }
}
