//! How a ZooKeeper client of this crate watches many nodes under one path (the
//! registry's categories, the discovery's applications), from the URL's `zk.watch`
//! ([`ZkWatch`]), and what it learned of the server.

use std::sync::atomic::{AtomicU8, Ordering};

use rubbo_common::Url;
use rubbo_common::keys::{ZK_WATCH_KEY, ZkWatch};
use zookeeper_client::{EventType, SessionState, WatchedEvent};

/// How nodes are watched, from the URL's `zk.watch` ([`ZkWatch`]):
///
/// - `auto` (default): a persistent recursive watch (ZooKeeper 3.6+), whose events
///   name each child created or deleted, so a push costs the change; when the server
///   answers that it does not know the request (3.4, 3.5), one-shot watches, as
///   `oneshot`.
/// - `persistent`: the persistent watch only (an older server is an error).
/// - `oneshot`: one-shot watches (what Java Dubbo's Curator client does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchMode {
    Auto,
    Persistent,
    Oneshot,
}

const UNKNOWN: u8 = 0;
const SUPPORTED: u8 = 1;
const UNSUPPORTED: u8 = 2;

/// The watch mode and whether the server has persistent watches.
#[derive(Debug)]
pub(crate) struct WatchSupport {
    pub(crate) mode: WatchMode,
    /// [`UNKNOWN`], [`SUPPORTED`] or [`UNSUPPORTED`], from the first `addWatch`.
    persistent: AtomicU8,
    /// Held by the first `addWatch` while support is unknown: an old server closes the
    /// connection after refusing it, which would fail the requests sent alongside.
    pub(crate) probe: tokio::sync::Mutex<()>,
}

impl WatchSupport {
    /// From `url`'s `zk.watch`; an unknown value is an error naming the known ones.
    pub(crate) fn of(url: &Url) -> Result<Self, String> {
        let mode = match url.str_param::<ZkWatch>() {
            "auto" => WatchMode::Auto,
            "persistent" => WatchMode::Persistent,
            "oneshot" => WatchMode::Oneshot,
            other => {
                return Err(format!(
                    "{ZK_WATCH_KEY}={other}: expected auto, persistent or oneshot"
                ));
            }
        };
        Ok(WatchSupport {
            mode,
            persistent: AtomicU8::new(UNKNOWN),
            probe: tokio::sync::Mutex::new(()),
        })
    }

    /// Whether persistent watches are used (else one-shot ones).
    pub(crate) fn use_persistent(&self) -> bool {
        match self.mode {
            WatchMode::Oneshot => false,
            WatchMode::Persistent => true,
            WatchMode::Auto => self.persistent.load(Ordering::SeqCst) != UNSUPPORTED,
        }
    }

    /// Whether it is not known yet if the server has persistent watches.
    pub(crate) fn unknown(&self) -> bool {
        self.mode == WatchMode::Auto && self.persistent.load(Ordering::SeqCst) == UNKNOWN
    }

    /// Records whether the server has persistent watches.
    pub(crate) fn set_supported(&self, supported: bool) {
        let v = if supported { SUPPORTED } else { UNSUPPORTED };
        self.persistent.store(v, Ordering::SeqCst);
    }
}

/// What one event of a persistent recursive watch on a path means for its children
/// (the registry's category nodes, the discovery's instance nodes).
pub(crate) enum Seen {
    /// A child of the path there (`true`: created, or changed when data changes
    /// count) or gone (`false`).
    Child(String, bool),
    Disconnected,
    Connected,
    /// The session ended: the watcher must not be polled again.
    Ended,
    Other,
}

/// What `event` of the watch on `path` means; `data`: a child's data changing counts
/// (instance nodes carry their instance; category nodes are their names only).
pub(crate) fn classify(path: &str, event: WatchedEvent, data: bool) -> Seen {
    match event.event_type {
        EventType::Session => match event.session_state {
            SessionState::Disconnected => Seen::Disconnected,
            SessionState::SyncConnected | SessionState::ConnectedReadOnly => Seen::Connected,
            s if s.is_terminated() => Seen::Ended,
            _ => Seen::Other,
        },
        EventType::NodeCreated | EventType::NodeDeleted => child(path, &event),
        EventType::NodeDataChanged if data => child(path, &event),
        _ => Seen::Other,
    }
}

/// The child of `path` that `event` names, there or gone; else [`Seen::Other`] (the
/// path itself, or a node deeper down).
fn child(path: &str, event: &WatchedEvent) -> Seen {
    let name = event
        .path
        .strip_prefix(path)
        .and_then(|rest| rest.strip_prefix('/'))
        .filter(|name| !name.is_empty() && !name.contains('/'));
    match name {
        Some(name) => Seen::Child(name.to_owned(), event.event_type != EventType::NodeDeleted),
        None => Seen::Other,
    }
}
