//! The watch loop of one category of one subscription.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use rubbo_common::Url;
use rubbo_common::keys::{CHECK_KEY, INTERFACE_KEY};

use rubbo_registry::{RegistryError, RegistryResult, SharedListener, notify_safely};
use tokio::sync::{oneshot, watch};
use tracing::{debug, warn};
use zookeeper_client::{Error as ZkError, EventType};

use crate::children::{ChildCache, ChildUpdate};
use crate::events::{Outcome, retry_first, watch_category_events};
use crate::paths;
use crate::registry::{Inner, WatchMode};
use crate::session::Conn;

/// Watches the children of `path`: with a persistent watch ([`crate::events`]) unless
/// the registry says otherwise or the server does not support it; else with the
/// one-shot loop below.
///
/// The one-shot loop lists the children of `path` with a watch, delivers the
/// category's list when it changed, waits for the watch (or a new session) and starts
/// again. The first outcome is reported on `first` (if any); a failure there ends the
/// task.
pub(crate) async fn watch_category(
    inner: Arc<Inner>,
    path: String,
    cache: ChildCache,
    listener: SharedListener,
    first: Option<oneshot::Sender<RegistryResult<()>>>,
) {
    if !inner.use_persistent_watch() {
        return watch_children(inner, path, cache, listener, first).await;
    }
    let fallback = inner.watch.mode == WatchMode::Auto;
    match watch_category_events(
        inner.clone(),
        path.clone(),
        cache,
        listener.clone(),
        first,
        fallback,
    )
    .await
    {
        Outcome::Closed => {}
        Outcome::Unsupported(cache, first) => {
            watch_children(inner, path, cache, listener, first).await;
        }
    }
}

/// The one-shot child watch loop (ZooKeeper before 3.6, or `zk.watch=oneshot`).
async fn watch_children(
    inner: Arc<Inner>,
    path: String,
    mut cache: ChildCache,
    listener: SharedListener,
    mut first: Option<oneshot::Sender<RegistryResult<()>>>,
) {
    let mut rx = inner.session.conn.subscribe();
    let mut dir_generation = 0;
    let mut retries = 0;
    loop {
        let Some(conn) = next_conn(&inner, &mut rx, &mut first).await else {
            return;
        };
        let listed = async {
            if dir_generation != conn.generation {
                conn.client.mkdir(&path, &inner.modes.persistent).await?;
                dir_generation = conn.generation;
            }
            conn.client.get_and_watch_children(&path).await
        }
        .await;
        match listed {
            Ok((children, _, watcher)) => {
                let update = cache.update_names(&children);
                deliver(&path, &listener, update, first.is_some());
                // Freed after the delivery: 20,000 names of 1 KB take a few tenths of a
                // millisecond to free, which the listener need not wait for.
                drop(children);
                if let Some(tx) = first.take() {
                    let _ = tx.send(Ok(()));
                }
                tokio::select! {
                    event = watcher.changed() => {
                        if event.event_type == EventType::Session {
                            // The session ended: wait for the next one.
                            if rx.changed().await.is_err() {
                                return;
                            }
                        } else if !inner.notify_delay.is_zero() {
                            tokio::time::sleep(inner.notify_delay).await;
                        }
                    }
                    changed = rx.changed() => {
                        if changed.is_err() {
                            return;
                        }
                    }
                }
            }
            Err(e) if first.is_some() && retry_first(&e, &mut retries).await => {}
            Err(e) => {
                if !retry_later(&inner, &path, e, &mut rx, &mut first).await {
                    return;
                }
            }
        }
    }
}

/// The current session's connection, waiting for one. `None` ends the task: the
/// registry closed, or there is no session while the first outcome is still owed (it
/// is reported as unavailable).
pub(crate) async fn next_conn(
    inner: &Inner,
    rx: &mut watch::Receiver<Option<Conn>>,
    first: &mut Option<oneshot::Sender<RegistryResult<()>>>,
) -> Option<Conn> {
    loop {
        if let Some(conn) = rx.borrow_and_update().clone() {
            return Some(conn);
        }
        if let Some(tx) = first.take() {
            let _ = tx.send(Err(RegistryError::unavailable(
                inner.address.clone(),
                "no zookeeper session",
            )));
            return None;
        }
        rx.changed().await.ok()?;
    }
}

/// After watching `path` failed: reports the error as the first outcome when one is
/// owed (`false`: the task ends); else logs it and waits 500 ms, or less if a new
/// session comes, before the caller tries again (`true`).
pub(crate) async fn retry_later(
    inner: &Inner,
    path: &str,
    e: ZkError,
    rx: &mut watch::Receiver<Option<Conn>>,
    first: &mut Option<oneshot::Sender<RegistryResult<()>>>,
) -> bool {
    let e = inner.zk_error(format!("watch {path}"), e);
    if let Some(tx) = first.take() {
        let _ = tx.send(Err(e));
        return false;
    }
    warn!(path, error = %e, "watching registry path failed; retrying");
    tokio::select! {
        _ = rx.changed() => {}
        _ = tokio::time::sleep(Duration::from_millis(500)) => {}
    }
    true
}

/// Delivers a category's list when it changed (or is the first), unless there is
/// nothing to deliver (empty protection).
pub(crate) fn deliver(path: &str, listener: &SharedListener, update: ChildUpdate, first: bool) {
    if (update.changed || first) && !update.urls.is_empty() {
        debug!(
            path,
            urls = update.urls.len(),
            added = update.added,
            removed = update.removed,
            "notify"
        );
        notify_safely(&**listener, update.urls);
    }
}

/// Aborts its task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// An `interface=*` subscription (Java's "any" subscription): watches the services under
/// the root and subscribes `listener` to the categories of each one as it appears. The
/// listener receives each service's lists separately.
pub(crate) async fn watch_services(
    inner: Arc<Inner>,
    url: Url,
    listener: SharedListener,
    mut first: Option<oneshot::Sender<RegistryResult<()>>>,
) {
    let mut rx = inner.session.conn.subscribe();
    let mut known: HashSet<String> = HashSet::new();
    let mut tasks: Vec<AbortOnDrop> = Vec::new();
    loop {
        let Some(conn) = next_conn(&inner, &mut rx, &mut first).await else {
            return;
        };
        let root = inner.root.clone();
        let listed = async {
            conn.client.mkdir(&root, &inner.modes.persistent).await?;
            conn.client.list_and_watch_children(&root).await
        }
        .await;
        match listed {
            Ok((children, watcher)) => {
                for child in children {
                    if crate::nodes::NOT_SERVICES.contains(&child.as_str())
                        || known.contains(&child)
                    {
                        continue;
                    }
                    let Ok(service) = rubbo_common::url::decode(&child) else {
                        warn!(node = child, "skipping undecodable service node");
                        continue;
                    };
                    known.insert(child);
                    let target = url
                        .with_path(&service)
                        .with_params([(INTERFACE_KEY, service.as_str()), (CHECK_KEY, "false")]);
                    debug!(service, "subscribing to a new service");
                    for (category, path) in paths::categories_paths(&inner.root, &target) {
                        let cache = ChildCache::new(target.clone(), &category)
                            .with_empty_protection(inner.empty_protection);
                        tasks.push(AbortOnDrop(tokio::spawn(watch_category(
                            inner.clone(),
                            path,
                            cache,
                            listener.clone(),
                            None,
                        ))));
                    }
                }
                if let Some(tx) = first.take() {
                    let _ = tx.send(Ok(()));
                }
                tokio::select! {
                    event = watcher.changed() => {
                        if event.event_type == EventType::Session && rx.changed().await.is_err() {
                            return;
                        }
                    }
                    changed = rx.changed() => {
                        if changed.is_err() {
                            return;
                        }
                    }
                }
            }
            Err(e) => {
                if !retry_later(&inner, &inner.root, e, &mut rx, &mut first).await {
                    return;
                }
            }
        }
    }
}
