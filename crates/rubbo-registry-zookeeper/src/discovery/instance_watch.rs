//! The instances of one application, followed incrementally as Curator's
//! `PathChildrenCache` (under Java's `CuratorFrameworkServiceDiscovery`) does: the
//! children of `/services/{app}` are listed with a watch; only the children not known
//! yet are read, each with a data watch; when a data watch fires, only that child is
//! read again. A change to one of many instances costs one read, not one per instance.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rubbo_common::BoxFuture;
use rubbo_metadata::ServiceInstance;
use tokio::sync::watch;
use tracing::{debug, warn};
use zookeeper_client::{Client, Error as ZkError, EventType, OneshotWatcher};

use super::{Inner, back_off, connected};
use crate::session::Conn;

/// A fired data watch: the child, the generation of the read that set it, the event.
type DataEvent = (String, u64, EventType);

/// A known child of `/services/{app}`.
struct Child {
    /// The generation of the read whose data watch is current; older watches that fire
    /// are ignored.
    generation: u64,
    /// `None` when the node does not parse (skipped, kept so it is not read again
    /// until it changes). Shared with the lists published (not a copy per list).
    instance: Option<Arc<ServiceInstance>>,
}

/// What one session knows of an application's instances.
struct AppState {
    app: String,
    path: String,
    children: BTreeMap<String, Child>,
    data_watches: FuturesUnordered<BoxFuture<'static, DataEvent>>,
    generation: u64,
}

/// How a wait for the next event ended.
enum Next {
    /// The children may have changed: list them again.
    Children,
    /// The session ended, or a new one started: start over in the next one.
    Session,
    /// Nobody follows the instances any more.
    Closed,
}

impl AppState {
    fn new(app: &str, path: &str) -> Self {
        AppState {
            app: app.to_owned(),
            path: path.to_owned(),
            children: BTreeMap::new(),
            data_watches: FuturesUnordered::new(),
            generation: 0,
        }
    }

    /// Lists the children with a watch, forgets the ones gone and reads the new ones.
    async fn list(&mut self, inner: &Inner, client: &Client) -> Result<OneshotWatcher, ZkError> {
        client.mkdir(&self.path, &inner.modes.persistent).await?;
        let (names, _, watcher) = client.get_and_watch_children(&self.path).await?;
        let mut names: Vec<String> = names;
        names.sort_unstable();
        self.children
            .retain(|name, _| names.binary_search(name).is_ok());
        for name in names {
            if !self.children.contains_key(&name) {
                self.read(inner, client, name).await?;
            }
        }
        Ok(watcher)
    }

    /// Reads one child with a data watch; a child gone meanwhile is forgotten.
    async fn read(&mut self, inner: &Inner, client: &Client, name: String) -> Result<(), ZkError> {
        let path = format!("{}/{name}", self.path);
        inner.instance_reads.fetch_add(1, Ordering::Relaxed);
        match client.get_and_watch_data(&path).await {
            Ok((data, _, watcher)) => {
                let instance = match ServiceInstance::from_curator_json(&data) {
                    Ok(i) => Some(Arc::new(i)),
                    Err(e) => {
                        warn!(node = %path, error = %e, "skipping an instance node");
                        None
                    }
                };
                self.generation += 1;
                let generation = self.generation;
                let key = name.clone();
                self.data_watches.push(Box::pin(async move {
                    (key, generation, watcher.changed().await.event_type)
                }));
                self.children.insert(
                    name,
                    Child {
                        generation,
                        instance,
                    },
                );
                Ok(())
            }
            Err(ZkError::NoNode) => {
                self.children.remove(&name);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// The instances, ordered by id (each shared, not copied).
    fn instances(&self) -> Vec<Arc<ServiceInstance>> {
        let mut out: Vec<Arc<ServiceInstance>> = self
            .children
            .values()
            .filter_map(|c| c.instance.clone())
            .collect();
        out.sort_by_cached_key(|i| i.id());
        out
    }

    /// Waits for the children watch, a current data watch (whose child is read again
    /// here), a new session or the end of the followers.
    async fn next(
        &mut self,
        inner: &Inner,
        client: &Client,
        children: &mut BoxFuture<'static, EventType>,
        tx: &watch::Sender<Arc<Vec<Arc<ServiceInstance>>>>,
        rx: &mut watch::Receiver<Option<Conn>>,
    ) -> Result<Next, ZkError> {
        loop {
            let child_event = &mut *children;
            let data_event = async {
                if self.data_watches.is_empty() {
                    std::future::pending::<()>().await;
                }
                self.data_watches.next().await
            };
            let fired = tokio::select! {
                event = child_event => {
                    return Ok(if event == EventType::Session { Next::Session } else { Next::Children });
                }
                event = data_event => event,
                changed = rx.changed() => {
                    return Ok(if changed.is_err() { Next::Closed } else { Next::Session });
                }
                () = tx.closed() => return Ok(Next::Closed),
            };
            let Some((name, generation, event)) = fired else {
                continue;
            };
            if event == EventType::Session {
                return Ok(Next::Session);
            }
            let current = self
                .children
                .get(&name)
                .is_some_and(|c| c.generation == generation);
            if current {
                debug!(app = %self.app, child = %name, ?event, "instance node changed");
                self.read(inner, client, name).await?;
                publish(tx, self.instances());
            }
        }
    }
}

fn publish(tx: &watch::Sender<Arc<Vec<Arc<ServiceInstance>>>>, list: Vec<Arc<ServiceInstance>>) {
    tx.send_if_modified(|old| {
        let changed = **old != list;
        if changed {
            *old = Arc::new(list);
        }
        changed
    });
}

/// Follows `app` for every receiver of `tx` (the shared watch of `app` in
/// `inner.app_watches`); leaves the table when the last receiver is gone, checked under
/// the table's lock so that a receiver added meanwhile is served.
pub(super) async fn follow_shared(
    inner: Arc<Inner>,
    app: String,
    tx: watch::Sender<Arc<Vec<Arc<ServiceInstance>>>>,
    listed: watch::Sender<bool>,
) {
    loop {
        follow_instances(&inner, &app, &tx, &listed).await;
        let mut watches = inner.app_watches.lock();
        if tx.receiver_count() == 0 {
            if watches.get(&app).is_some_and(|w| w.tx.same_channel(&tx)) {
                watches.remove(&app);
            }
            return;
        }
    }
}

/// Keeps `tx` equal to the instances under `/services/{app}`, reading only what
/// changed, starting over in each new session, with a backoff after failures, until
/// every receiver is gone.
async fn follow_instances(
    inner: &Inner,
    app: &str,
    tx: &watch::Sender<Arc<Vec<Arc<ServiceInstance>>>>,
    listed: &watch::Sender<bool>,
) {
    let path = format!("{}/{app}", inner.services_root);
    let mut rx = inner.session.conn.subscribe();
    let mut failures = 0u32;
    loop {
        let Some(conn) = connected(&mut rx, tx).await else {
            return;
        };
        // Watches do not outlive their session: a new one starts from nothing.
        let mut state = AppState::new(app, &path);
        let ended = async {
            loop {
                let watcher = state.list(inner, &conn.client).await?;
                let mut watcher: BoxFuture<'static, EventType> =
                    Box::pin(async move { watcher.changed().await.event_type });
                publish(tx, state.instances());
                listed.send_if_modified(|l| !std::mem::replace(l, true));
                failures = 0;
                match state
                    .next(inner, &conn.client, &mut watcher, tx, &mut rx)
                    .await?
                {
                    Next::Children => continue,
                    other => return Ok::<Next, ZkError>(other),
                }
            }
        };
        match ended.await {
            Ok(Next::Closed) => return,
            Ok(_) => {
                // A terminated session: wait for the channel to move on.
                if rx.borrow().as_ref().map(|c| c.generation) == Some(conn.generation)
                    && rx.changed().await.is_err()
                {
                    return;
                }
            }
            Err(e) => {
                failures += 1;
                if failures == 1 {
                    warn!(node = %path, error = %e, "cannot read the instances; retrying");
                }
                if !back_off(failures, tx).await {
                    return;
                }
            }
        }
    }
}
