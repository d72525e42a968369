//! The instances of one application, followed incrementally as Curator's
//! `PathChildrenCache` (under Java's `CuratorFrameworkServiceDiscovery`) does, so that a
//! change to one of many instances costs one read, not one per instance.
//!
//! On ZooKeeper 3.6+ one persistent recursive watch on `/services/{app}` (added before
//! the children are listed, as the interface-level registry's category watch: see
//! `events.rs`) names each instance node created, changed or deleted; only that node is
//! read again. No watch is left per instance node (a data watch costs the client about
//! 1 KB per node). Events during a reconnection can be lost (ZOOKEEPER-4698) and the
//! client does not add persistent watches again on a reconnection: after
//! `Disconnected` then `SyncConnected` the watch is added again and every child read
//! again.
//!
//! On an older server (`addWatch` unimplemented) the children are listed with a
//! one-shot watch; only the children not known yet are read, each with a data watch;
//! when a data watch fires, only that child is read again.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rubbo_common::BoxFuture;
use rubbo_metadata::{InstanceList, MetadataInterner, ServiceInstance};
use tokio::sync::watch;
use tracing::{debug, info, warn};
use zookeeper_client::{
    AddWatchMode, Client, Error as ZkError, EventType, OneshotWatcher, PersistentWatcher,
};

use super::child_table::ChildTable;
use super::{Inner, back_off, connected};
use crate::session::Conn;
use crate::watch_mode::{Seen, WatchMode, classify};

/// A fired data watch: the child, the generation of the read that set it, the event.
type DataEvent = (String, u64, EventType);

/// A known child of `/services/{app}`.
struct Child {
    /// The generation of the read whose data watch is current; older watches that fire
    /// are ignored.
    generation: u64,
    /// `None` when the node does not parse (skipped, kept so it is not read again
    /// until it changes). Shared with the lists published, so that an instance that
    /// did not change keeps its `Arc` from one list to the next.
    instance: Option<Arc<ServiceInstance>>,
}

/// What one session knows of an application's instances.
struct AppState {
    app: String,
    path: String,
    children: ChildTable<Child>,
    data_watches: FuturesUnordered<BoxFuture<'static, DataEvent>>,
    generation: u64,
    /// The metadata texts the instances read share (keys, revisions, endpoints...).
    interner: MetadataInterner,
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
            children: ChildTable::default(),
            data_watches: FuturesUnordered::new(),
            generation: 0,
            interner: MetadataInterner::default(),
        }
    }

    /// Lists the children with a watch, forgets the ones gone and reads the new ones.
    async fn list(&mut self, inner: &Inner, client: &Client) -> Result<OneshotWatcher, ZkError> {
        client.mkdir(&self.path, &inner.modes.persistent).await?;
        let (names, _, watcher) = client.get_and_watch_children(&self.path).await?;
        let mut names: Vec<String> = names;
        names.sort_unstable();
        self.children
            .retain(|name| names.binary_search_by(|n| n.as_str().cmp(name)).is_ok());
        for name in names {
            if !self.children.contains_key(&name) {
                self.read(inner, client, name).await?;
            }
        }
        Ok(watcher)
    }

    /// Lists the children (no watch: the persistent watch covers them), forgets the
    /// ones gone and reads the new ones, each without a watch.
    async fn list_plain(&mut self, inner: &Inner, client: &Client) -> Result<(), ZkError> {
        let mut names = client.list_children(&self.path).await?;
        names.sort_unstable();
        self.children
            .retain(|name| names.binary_search_by(|n| n.as_str().cmp(name)).is_ok());
        for name in names {
            if !self.children.contains_key(&name) {
                self.read_plain(inner, client, name).await?;
            }
        }
        Ok(())
    }

    /// Reads one child without a watch; a child gone meanwhile is forgotten.
    async fn read_plain(
        &mut self,
        inner: &Inner,
        client: &Client,
        name: String,
    ) -> Result<(), ZkError> {
        let path = format!("{}/{name}", self.path);
        inner.instance_reads.fetch_add(1, Ordering::Relaxed);
        match client.get_data(&path).await {
            Ok((data, _)) => {
                let instance = parse(&path, &data, &mut self.interner);
                self.children.insert(
                    name,
                    Child {
                        generation: 0,
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

    /// Reads one child with a data watch; a child gone meanwhile is forgotten.
    async fn read(&mut self, inner: &Inner, client: &Client, name: String) -> Result<(), ZkError> {
        let path = format!("{}/{name}", self.path);
        inner.instance_reads.fetch_add(1, Ordering::Relaxed);
        match client.get_and_watch_data(&path).await {
            Ok((data, _, watcher)) => {
                let instance = parse(&path, &data, &mut self.interner);
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

    /// The instances, ordered by id.
    fn instances(&self) -> Vec<Arc<ServiceInstance>> {
        let mut out: Vec<Arc<ServiceInstance>> = self
            .children
            .values()
            .filter_map(|c| c.instance.clone())
            .collect();
        out.sort_by(|a, b| a.cmp_id(b));
        out
    }

    /// Waits for the children watch, a current data watch (whose child is read again
    /// here), a new session or the end of the followers.
    async fn next(
        &mut self,
        inner: &Inner,
        client: &Client,
        children: &mut BoxFuture<'static, EventType>,
        tx: &watch::Sender<InstanceList>,
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

/// The instance a node holds, its metadata texts shared through `interner` with the
/// application's other instances; `None` (logged) when it does not parse.
fn parse(path: &str, data: &[u8], interner: &mut MetadataInterner) -> Option<Arc<ServiceInstance>> {
    match ServiceInstance::from_curator_json_shared(data, interner) {
        Ok(i) => Some(Arc::new(i)),
        Err(e) => {
            warn!(node = %path, error = %e, "skipping an instance node");
            None
        }
    }
}

/// How following with a persistent watch ended.
enum Persistent {
    /// As [`Next`].
    Next(Next),
    /// The server does not know `addWatch` (before 3.6).
    Unsupported,
}

/// Follows the application in one session with a persistent recursive watch.
async fn follow_persistent(
    inner: &Inner,
    state: &mut AppState,
    client: &Client,
    tx: &watch::Sender<InstanceList>,
    listed: &watch::Sender<bool>,
    rx: &mut watch::Receiver<Option<Conn>>,
    failures: &mut u32,
) -> Result<Persistent, ZkError> {
    loop {
        // The first `addWatch` of the discovery goes alone (an old server closes the
        // connection after refusing it).
        let probe = if inner.watch.unknown() {
            Some(inner.watch.probe.lock().await)
        } else {
            None
        };
        if !inner.watch.use_persistent() {
            return Ok(Persistent::Unsupported);
        }
        client.mkdir(&state.path, &inner.modes.persistent).await?;
        let mut watcher = match client
            .watch(&state.path, AddWatchMode::PersistentRecursive)
            .await
        {
            Ok(w) => {
                if probe.is_some() {
                    inner.watch.set_supported(true);
                }
                w
            }
            Err(ZkError::Unimplemented) if inner.watch.mode == WatchMode::Auto => {
                info!(node = %state.path, zookeeper = %inner.address, "zookeeper does not support persistent watches (before 3.6); a watch per instance node");
                inner.watch.set_supported(false);
                return Ok(Persistent::Unsupported);
            }
            Err(e) => return Err(e),
        };
        drop(probe);
        state.list_plain(inner, client).await?;
        publish(tx, state.instances());
        listed.send_if_modified(|l| !std::mem::replace(l, true));
        *failures = 0;
        match follow_events(inner, state, client, &mut watcher, tx, rx).await? {
            // Reconnected: events may be lost, so every child is read again.
            None => state.children.clear(),
            Some(next) => return Ok(Persistent::Next(next)),
        }
    }
}

/// Applies the persistent watch's events until the session changes (`Some`) or the
/// connection comes back after a loss (`None`: watch and list again).
async fn follow_events(
    inner: &Inner,
    state: &mut AppState,
    client: &Client,
    watcher: &mut PersistentWatcher,
    tx: &watch::Sender<InstanceList>,
    rx: &mut watch::Receiver<Option<Conn>>,
) -> Result<Option<Next>, ZkError> {
    let mut disconnected = false;
    loop {
        let event = tokio::select! {
            changed = rx.changed() => {
                return Ok(Some(if changed.is_err() { Next::Closed } else { Next::Session }));
            }
            () = tx.closed() => return Ok(Some(Next::Closed)),
            event = watcher.changed() => event,
        };
        let mut seen = classify(&state.path, event, true);
        // This batch: each child to its last event, present (`true`) or deleted. A new
        // map per batch: a burst does not keep its memory.
        let mut batch: BTreeMap<String, bool> = BTreeMap::new();
        let (mut relist, mut ended) = (false, false);
        loop {
            match seen {
                Seen::Child(name, present) => {
                    batch.insert(name, present);
                }
                Seen::Disconnected => disconnected = true,
                Seen::Connected => {
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
            match futures::FutureExt::now_or_never(watcher.changed()) {
                Some(event) => seen = classify(&state.path, event, true),
                None => break,
            }
        }
        if !batch.is_empty() {
            debug!(app = %state.app, changed = batch.len(), "instance nodes changed");
            for (name, present) in batch {
                if present {
                    state.read_plain(inner, client, name).await?;
                } else {
                    state.children.remove(&name);
                }
            }
            publish(tx, state.instances());
        }
        if ended {
            // Never poll this watcher again: wait for the next session.
            return Ok(Some(Next::Session));
        }
        if relist {
            debug!(app = %state.app, "reconnected: watching and reading the instances again");
            return Ok(None);
        }
    }
}

fn publish(tx: &watch::Sender<InstanceList>, list: Vec<Arc<ServiceInstance>>) {
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
    tx: watch::Sender<InstanceList>,
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
    tx: &watch::Sender<InstanceList>,
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
            match follow_persistent(
                inner,
                &mut state,
                &conn.client,
                tx,
                listed,
                &mut rx,
                &mut failures,
            )
            .await?
            {
                Persistent::Next(next) => return Ok(next),
                Persistent::Unsupported => {}
            }
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
