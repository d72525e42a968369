//! The event-driven watch of one category (ZooKeeper 3.6+): a persistent recursive
//! watch names each child created or deleted, so a push costs the change, not the
//! list.
//!
//! Per category path: the watch is added first, then the children are listed (plain,
//! no one-shot watch: the two do not mix on one path, ZOOKEEPER-4466) and the cache
//! updated in full. Each event after that is a set operation on the cache, so an event
//! that came before the list is harmless. Events during a reconnection can be lost
//! (ZOOKEEPER-4698), and zookeeper-client 0.11.2 does not set persistent watches again
//! on a reconnection (its `resend_watches` sends only the one-shot ones): after
//! `Disconnected` then `SyncConnected` the watch is added again and the children are
//! listed again in full. When the session ends, the loop waits for the next session and
//! starts over; the watcher is never polled after its terminal event (it would panic).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use rubbo_registry::{RegistryResult, SharedListener};
use tokio::sync::{oneshot, watch};
use tracing::{debug, info};
use zookeeper_client::{AddWatchMode, Error as ZkError, PersistentWatcher};

use crate::children::ChildCache;
use crate::registry::Inner;
use crate::session::Conn;
use crate::subscription::{deliver, next_conn, retry_later};
use crate::watch_mode::{Seen, classify};

/// How the event-driven loop ended.
pub(crate) enum Outcome {
    /// The registry is gone.
    Closed,
    /// The server does not know persistent watches: watch with one-shot child
    /// watches instead, from this state.
    Unsupported(ChildCache, Option<oneshot::Sender<RegistryResult<()>>>),
}

/// Follows `path` with a persistent recursive watch until the registry closes, or
/// returns the cache when the server does not support it (and `fallback` allows).
pub(crate) async fn watch_category_events(
    inner: Arc<Inner>,
    path: String,
    mut cache: ChildCache,
    listener: SharedListener,
    mut first: Option<oneshot::Sender<RegistryResult<()>>>,
    fallback: bool,
) -> Outcome {
    let mut rx = inner.session.conn.subscribe();
    let mut dir_generation = 0;
    let mut retries = 0;
    loop {
        let Some(conn) = next_conn(&inner, &mut rx, &mut first).await else {
            return Outcome::Closed;
        };
        // The first `addWatch` of the registry goes alone (see `WatchSupport::probe`).
        let probe = if inner.persistent_watch_unknown() {
            Some(inner.watch.probe.lock().await)
        } else {
            None
        };
        if fallback && !inner.use_persistent_watch() {
            return Outcome::Unsupported(cache, first);
        }
        let set_up = async {
            if dir_generation != conn.generation {
                conn.client.mkdir(&path, &inner.modes.persistent).await?;
                dir_generation = conn.generation;
            }
            let watcher = conn
                .client
                .watch(&path, AddWatchMode::PersistentRecursive)
                .await?;
            let children = conn.client.list_children(&path).await?;
            Ok::<_, ZkError>((watcher, children))
        }
        .await;
        let (mut watcher, children) = match set_up {
            Ok(done) => {
                if probe.is_some() {
                    inner.set_persistent_watch(true);
                }
                drop(probe);
                done
            }
            Err(ZkError::Unimplemented) if fallback => {
                info!(path, zookeeper = %inner.address, "zookeeper does not support persistent watches (before 3.6); watching children one change at a time");
                inner.set_persistent_watch(false);
                return Outcome::Unsupported(cache, first);
            }
            Err(e) if first.is_some() && retry_first(&e, &mut retries).await => {
                drop(probe);
                continue;
            }
            Err(e) => {
                drop(probe);
                if !retry_later(&inner, &path, e, &mut rx, &mut first).await {
                    return Outcome::Closed;
                }
                continue;
            }
        };
        let update = cache.update_names(&children);
        deliver(&path, &listener, update, first.is_some());
        drop(children);
        if let Some(tx) = first.take() {
            let _ = tx.send(Ok(()));
        }
        match follow(&inner, &path, &mut cache, &listener, &mut watcher, &mut rx).await {
            Followed::Closed => return Outcome::Closed,
            Followed::Again => {}
        }
    }
}

/// Whether a failed first listing is worth another try, after a pause: the connection
/// was lost (an old server closes it after refusing `addWatch`), a few times.
pub(crate) async fn retry_first(e: &ZkError, retries: &mut u32) -> bool {
    if !matches!(e, ZkError::ConnectionLoss) || *retries >= 5 {
        return false;
    }
    *retries += 1;
    tokio::time::sleep(Duration::from_millis(50 << *retries)).await;
    true
}

enum Followed {
    Closed,
    /// The session changed, or the connection came back: start over.
    Again,
}

/// Applies the watch's events to the cache until the session changes or the
/// connection comes back after a loss.
async fn follow(
    inner: &Inner,
    path: &str,
    cache: &mut ChildCache,
    listener: &SharedListener,
    watcher: &mut PersistentWatcher,
    rx: &mut watch::Receiver<Option<Conn>>,
) -> Followed {
    let mut disconnected = false;
    loop {
        let event = tokio::select! {
            changed = rx.changed() => {
                return if changed.is_err() { Followed::Closed } else { Followed::Again };
            }
            event = watcher.changed() => event,
        };
        let mut seen = classify(path, event, false);
        if matches!(seen, Seen::Child(..)) && !inner.notify_delay.is_zero() {
            // A burst (a provider restarting, many starting at once) is delivered once.
            tokio::time::sleep(inner.notify_delay).await;
        }
        // This batch: each name to its last event, created (`true`) or deleted. A new
        // map per batch: a burst of thousands does not keep its memory.
        let mut pending: HashMap<String, bool> = HashMap::new();
        let mut relist = false;
        let mut ended = false;
        loop {
            match seen {
                Seen::Child(name, created) => {
                    pending.insert(name, created);
                }
                Seen::Disconnected => disconnected = true,
                Seen::Connected => {
                    // Events during the reconnection may be lost (ZOOKEEPER-4698).
                    relist |= disconnected;
                    disconnected = false;
                }
                Seen::Ended => {
                    ended = true;
                    break;
                }
                Seen::Other => {}
            }
            // What is already queued joins this batch.
            match watcher.changed().now_or_never() {
                Some(event) => seen = classify(path, event, false),
                None => break,
            }
        }
        if !pending.is_empty() {
            let (mut created, mut deleted) = (Vec::new(), Vec::new());
            for (name, is_created) in pending {
                if is_created {
                    created.push(name);
                } else {
                    deleted.push(name);
                }
            }
            let update = cache.apply(&created, &deleted);
            deliver(path, listener, update, false);
        }
        if ended {
            // The session module starts a new one; never poll this watcher again.
            return if rx.changed().await.is_err() {
                Followed::Closed
            } else {
                Followed::Again
            };
        }
        if relist {
            // Add the watch again and list: see the module docs.
            debug!(path, "reconnected: watching and listing the children again");
            return Followed::Again;
        }
    }
}
