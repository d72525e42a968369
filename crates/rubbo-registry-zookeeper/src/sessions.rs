//! ZooKeeper sessions shared by address: a registry and a config center on the same
//! ZooKeeper use one session, as Java's `ZookeeperTransporter` shares one client per
//! address (`use-as-config-center`).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use rubbo_common::Url;
use rubbo_common::keys::{BACKUP_KEY, SESSION_KEY, SessionTimeout, ZkSessionExpire};
use rubbo_registry::{RegistryError, RegistryResult};
use tokio::task::JoinHandle;

use crate::session::SessionShared;

/// One running session; the last holder dropping it ends the session.
pub(crate) struct SessionOwner {
    pub(crate) shared: Arc<SessionShared>,
    task: JoinHandle<()>,
}

impl Drop for SessionOwner {
    fn drop(&mut self) {
        self.task.abort();
        self.shared.conn.send_replace(None);
    }
}

/// What identifies a session: the servers, the credentials, the timeout.
#[derive(Debug, Clone)]
pub(crate) struct SessionParams {
    pub(crate) connect_string: String,
    pub(crate) session_timeout: Duration,
    pub(crate) auth: Option<String>,
}

impl SessionParams {
    /// From a `zookeeper://[user:pass@]host:port?backup=..&session=..` URL.
    pub(crate) fn of(url: &Url) -> RegistryResult<Self> {
        let host = url
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| RegistryError::Config(format!("no zookeeper address in {url}")))?;
        let port = if url.port() == 0 { 2181 } else { url.port() };
        let mut connect_string = format!("{host}:{port}");
        if let Some(backup) = url.get_param(BACKUP_KEY).filter(|b| !b.is_empty()) {
            connect_string.push(',');
            connect_string.push_str(backup);
        }
        let session_timeout = match url.get_param(SESSION_KEY) {
            Some(_) => url.param::<SessionTimeout>(),
            None => url.param::<ZkSessionExpire>(),
        };
        let auth = url
            .username()
            .filter(|u| !u.is_empty())
            .map(|u| match url.password() {
                Some(p) => format!("{u}:{p}"),
                None => u.to_owned(),
            });
        Ok(SessionParams {
            connect_string,
            session_timeout,
            auth,
        })
    }

    fn key(&self) -> String {
        match &self.auth {
            Some(a) => format!("{a}@{}", self.connect_string),
            None => self.connect_string.clone(),
        }
    }
}

/// The ZooKeeper sessions of one application, by address and credentials. Give the
/// same set to the [registry factory](crate::ZookeeperRegistryFactory::with_sessions)
/// and the [config center factory](crate::ZookeeperDynamicConfigurationFactory::with_sessions)
/// and a registry and a config center on the same ZooKeeper share one session. A
/// session ends when the last registry or config center using it is dropped or
/// destroyed.
#[derive(Clone, Default)]
pub struct ZookeeperSessions {
    map: Arc<Mutex<HashMap<String, Weak<SessionOwner>>>>,
}

impl fmt::Debug for ZookeeperSessions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let map = self.map.lock();
        let live: Vec<&String> = map
            .iter()
            .filter(|(_, w)| w.strong_count() > 0)
            .map(|(k, _)| k)
            .collect();
        f.debug_struct("ZookeeperSessions")
            .field("live", &live)
            .finish()
    }
}

impl ZookeeperSessions {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many sessions are in use now.
    pub fn live(&self) -> usize {
        self.map
            .lock()
            .values()
            .filter(|w| w.strong_count() > 0)
            .count()
    }

    /// The session of `params`, started (in the current runtime) when none is live.
    pub(crate) fn get(&self, params: &SessionParams) -> Arc<SessionOwner> {
        let key = params.key();
        let mut map = self.map.lock();
        if let Some(owner) = map.get(&key).and_then(Weak::upgrade) {
            return owner;
        }
        map.retain(|_, w| w.strong_count() > 0);
        let shared = SessionShared::new(
            params.connect_string.clone(),
            params.session_timeout,
            params.auth.clone(),
        );
        let task = tokio::spawn(shared.clone().run());
        let owner = Arc::new(SessionOwner { shared, task });
        map.insert(key, Arc::downgrade(&owner));
        owner
    }
}
