//! `CachedDynamicConfiguration`: a config center with a local cache file of the keys
//! it was asked for, so that an application started while its config center is
//! unreachable (`check=false`) runs with the last rules and externalized configuration
//! it saw, as the registry cache file ([`RegistryCache`](crate::RegistryCache)) does for
//! address lists.
//!
//! The file is a Java properties file, `{group}/{key}` = content, by default
//! `~/.dubbo/dubbo-config-center-{application}-{host}-{port}.cache` (config center URL
//! parameter `cache.file` overrides it, `file.cache=false` disables it). It is read when
//! the cache is opened and rewritten (temp file + rename) after every change seen.
//!
//! While the config center is reachable every read and listener goes to it and its
//! answers are recorded. When it is not, [`get_config`](DynamicConfiguration::get_config)
//! and [`add_listener`](DynamicConfiguration::add_listener) answer from the file; once
//! it is reachable again each key served from the file is read again, and its listeners
//! hear of a difference (a rule changed or deleted meanwhile) once.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use cancel::Cancel;
use parking_lot::Mutex;
use rubbo_common::keys::{APPLICATION_KEY, FileCache};
use rubbo_common::{BoxFuture, Url};
use tracing::{debug, info, warn};

use super::{
    ConfigChangeEvent, ConfigChangeType, ConfigItem, DynamicConfiguration, SharedConfigListener,
    SharedDynamicConfiguration, process_safely, same_config_listener,
};
use crate::cache::{escape_into, parse_properties};
use crate::{RegistryError, RegistryResult};

/// URL parameter naming the cache file of a config center.
pub const CACHE_FILE_KEY: &str = "cache.file";

/// How often a config center found unreachable is checked for coming back, to read
/// the keys served from the file again.
const RECHECK: Duration = Duration::from_millis(500);

mod cancel {
    //! A cancellation flag woken by `close`.
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use tokio::sync::Notify;

    #[derive(Debug, Default, Clone)]
    pub(super) struct Cancel(Arc<(AtomicBool, Notify)>);

    impl Cancel {
        pub(super) fn cancel(&self) {
            self.0.0.store(true, Ordering::SeqCst);
            self.0.1.notify_waiters();
        }
        pub(super) fn is_cancelled(&self) -> bool {
            self.0.0.load(Ordering::SeqCst)
        }
        /// Waits `d`, or less when cancelled meanwhile.
        pub(super) async fn sleep(&self, d: std::time::Duration) {
            let notified = self.0.1.notified();
            if self.is_cancelled() {
                return;
            }
            let _ = tokio::time::timeout(d, notified).await;
        }
    }
}

/// The cache file's contents, shared by the wrapper and its listeners.
struct File {
    path: PathBuf,
    entries: Mutex<BTreeMap<String, String>>,
    /// Serializes writes; each writes the entries as they are then.
    writing: std::sync::Mutex<()>,
}

/// The cache files open in this process, by path: two config centers of one
/// application (the externalized configuration read at start, then the rules) share
/// one set of entries and one writer, so neither writes the file without the other's
/// keys and no two writes race on the temp file.
static OPEN: std::sync::LazyLock<Mutex<HashMap<PathBuf, Weak<File>>>> =
    std::sync::LazyLock::new(Mutex::default);

impl File {
    fn open(path: PathBuf) -> Arc<Self> {
        let mut open = OPEN.lock();
        open.retain(|_, f| f.strong_count() > 0);
        if let Some(file) = open.get(&path).and_then(Weak::upgrade) {
            return file;
        }
        let file = Self::read(path.clone());
        open.insert(path, Arc::downgrade(&file));
        file
    }

    fn read(path: PathBuf) -> Arc<Self> {
        let mut entries = BTreeMap::new();
        match std::fs::read(&path) {
            Ok(bytes) => {
                entries.extend(parse_properties(&String::from_utf8_lossy(&bytes)));
                debug!(path = %path.display(), entries = entries.len(), "config center cache loaded");
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => warn!(path = %path.display(), error = %e, "config center cache unreadable"),
        }
        Arc::new(File {
            path,
            entries: Mutex::new(entries),
            writing: std::sync::Mutex::new(()),
        })
    }

    fn get(&self, entry: &str) -> Option<String> {
        self.entries.lock().get(entry).cloned()
    }

    /// Records `content` (`None`: absent) for `entry` and writes the file if it changed.
    fn record(self: &Arc<Self>, entry: &str, content: Option<&str>) {
        let changed = {
            let mut entries = self.entries.lock();
            match content {
                Some(c) if entries.get(entry).map(String::as_str) != Some(c) => {
                    entries.insert(entry.to_owned(), c.to_owned());
                    true
                }
                None => entries.remove(entry).is_some(),
                _ => false,
            }
        };
        if !changed {
            return;
        }
        let this = self.clone();
        let write = move || {
            if let Err(e) = this.write() {
                warn!(path = %this.path.display(), error = %e, "cannot write config center cache");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(h) => drop(h.spawn_blocking(write)),
            Err(_) => write(),
        }
    }

    fn write(&self) -> Result<(), RegistryError> {
        let _one = self
            .writing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut text = String::from("#Rubbo Config Center Cache\n");
        for (k, v) in self.entries.lock().iter() {
            escape_into(&mut text, k, true);
            text.push('=');
            escape_into(&mut text, v, false);
            text.push('\n');
        }
        let err = |source| RegistryError::Cache {
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let mut tmp = self.path.as_os_str().to_owned();
        tmp.push(format!(".{}.tmp", std::process::id()));
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, text.as_bytes()).map_err(err)?;
        std::fs::rename(&tmp, &self.path).map_err(err)?;
        Ok(())
    }
}

/// `(key, group)` -> the content answered from the file for it.
type Stale = Arc<Mutex<BTreeMap<(String, String), Option<String>>>>;

/// One listener as given and as registered with the inner config center.
struct Listening {
    key: String,
    group: String,
    given: SharedConfigListener,
    wrapped: SharedConfigListener,
}

/// A config center with a local cache file. See the [module docs](self).
///
/// ```
/// use std::sync::Arc;
/// use rubbo_registry::{CachedDynamicConfiguration, DynamicConfiguration, MemoryDynamicConfiguration};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = std::env::temp_dir().join(format!("rubbo-cc-doc-{}", std::process::id()));
/// let path = dir.join("cc.cache");
/// let inner = Arc::new(MemoryDynamicConfiguration::new());
/// let cc = CachedDynamicConfiguration::new(inner.clone(), &path);
/// inner.publish_config("demo.configurators", "dubbo", "rule").await.unwrap();
/// assert_eq!(cc.get_config("demo.configurators", "dubbo").await.unwrap().as_deref(), Some("rule"));
/// cc.flush().unwrap();
/// assert!(std::fs::read_to_string(&path).unwrap().contains("dubbo/demo.configurators=rule"));
/// # let _ = std::fs::remove_dir_all(dir);
/// # });
/// ```
pub struct CachedDynamicConfiguration {
    inner: SharedDynamicConfiguration,
    file: Arc<File>,
    listening: Arc<Mutex<Vec<Listening>>>,
    /// Entries answered from the file while unreachable, with the content given.
    stale: Stale,
    /// Whether the recheck task runs (cleared by it when nothing is left to check).
    rechecking: Arc<AtomicBool>,
    closed: Cancel,
}

impl fmt::Debug for CachedDynamicConfiguration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedDynamicConfiguration")
            .field("inner", &self.inner)
            .field("file", &self.file.path)
            .finish()
    }
}

fn entry_name(key: &str, group: &str) -> String {
    format!("{group}/{key}")
}

impl CachedDynamicConfiguration {
    /// `inner` with the cache file at `path`.
    pub fn new(inner: SharedDynamicConfiguration, path: impl AsRef<Path>) -> Self {
        CachedDynamicConfiguration {
            inner,
            file: File::open(path.as_ref().to_path_buf()),
            listening: Arc::default(),
            stale: Arc::default(),
            rechecking: Arc::default(),
            closed: Cancel::default(),
        }
    }

    /// `inner` with the cache file its URL names (see the [module docs](self)), for
    /// the application `application`; `inner` itself when `file.cache=false`.
    pub fn wrap(
        inner: SharedDynamicConfiguration,
        application: &str,
    ) -> SharedDynamicConfiguration {
        let url = inner.url().clone();
        if !url.param::<FileCache>() {
            return inner;
        }
        let path = match url.get_param(CACHE_FILE_KEY).filter(|f| !f.is_empty()) {
            Some(f) => PathBuf::from(f),
            None => default_path(&url, application),
        };
        Arc::new(CachedDynamicConfiguration::new(inner, path))
    }

    /// The cache file.
    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// Writes the file now.
    pub fn flush(&self) -> Result<(), RegistryError> {
        self.file.write()
    }

    /// Starts (once) the task that, when the config center is reachable again, reads
    /// every key served from the file and tells its listeners what differs.
    fn recheck_later(&self) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.rechecking.swap(true, Ordering::SeqCst) {
            return;
        }
        let rechecking = self.rechecking.clone();
        let inner = self.inner.clone();
        let file = self.file.clone();
        let stale = self.stale.clone();
        let listening = self.listening.clone();
        let closed = self.closed.clone();
        handle.spawn(async move {
            loop {
                while !inner.is_available() {
                    closed.sleep(RECHECK).await;
                    if closed.is_cancelled() {
                        rechecking.store(false, Ordering::SeqCst);
                        return;
                    }
                }
                let served = {
                    let mut stale = stale.lock();
                    if stale.is_empty() {
                        // Cleared under the lock: a key served from the file after
                        // this point starts the task again.
                        rechecking.store(false, Ordering::SeqCst);
                        return;
                    }
                    std::mem::take(&mut *stale)
                };
                recheck(&*inner, &file, &listening, served).await;
            }
        });
    }
}

/// Reads again each key `served` from the file and tells its listeners what differs.
async fn recheck(
    inner: &dyn DynamicConfiguration,
    file: &Arc<File>,
    listening: &Mutex<Vec<Listening>>,
    served: BTreeMap<(String, String), Option<String>>,
) {
    for ((key, group), given) in served {
        let now = match inner.get_config(&key, &group).await {
            Ok(now) => now,
            Err(e) => {
                warn!(key, group, error = %e, "config center back but the key could not be read again");
                continue;
            }
        };
        file.record(&entry_name(&key, &group), now.as_deref());
        if now == given {
            continue;
        }
        info!(
            key,
            group, "config center back: the key differs from the cached content"
        );
        let event = ConfigChangeEvent {
            key: key.clone(),
            group: group.clone(),
            content: now.clone().unwrap_or_default(),
            change_type: match (&given, &now) {
                (_, None) => ConfigChangeType::Deleted,
                (None, Some(_)) => ConfigChangeType::Added,
                (Some(_), Some(_)) => ConfigChangeType::Modified,
            },
        };
        let targets: Vec<SharedConfigListener> = listening
            .lock()
            .iter()
            .filter(|l| l.key == key && l.group == group)
            .map(|l| l.given.clone())
            .collect();
        for l in targets {
            process_safely(&*l, event.clone());
        }
    }
}

impl CachedDynamicConfiguration {
    fn group<'a>(&'a self, group: &'a str) -> &'a str {
        if group.is_empty() {
            self.inner.default_group()
        } else {
            group
        }
    }
}

/// `~/.dubbo/dubbo-config-center-{application}-{host}-{port}.cache`.
fn default_path(url: &Url, application: &str) -> PathBuf {
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    let app = if application.is_empty() {
        url.get_param_or(APPLICATION_KEY, "")
    } else {
        application
    };
    let address = url.address().replace([':', ','], "-");
    home.join(".dubbo")
        .join(format!("dubbo-config-center-{app}-{address}.cache"))
}

impl DynamicConfiguration for CachedDynamicConfiguration {
    fn url(&self) -> &Url {
        self.inner.url()
    }

    fn default_group(&self) -> &str {
        self.inner.default_group()
    }

    fn is_available(&self) -> bool {
        self.inner.is_available()
    }

    fn get_config_item<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, RegistryResult<Option<ConfigItem>>> {
        self.inner.get_config_item(key, group)
    }

    fn get_config<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, RegistryResult<Option<String>>> {
        Box::pin(async move {
            let group = self.group(group);
            let name = entry_name(key, group);
            if self.inner.is_available() {
                match self.inner.get_config(key, group).await {
                    Ok(now) => {
                        self.file.record(&name, now.as_deref());
                        return Ok(now);
                    }
                    Err(e) if self.file.get(&name).is_none() => return Err(e),
                    Err(e) => {
                        warn!(key, group, error = %e, "config center read failed: the cached content is used")
                    }
                }
            }
            let cached = self.file.get(&name);
            info!(key, group, found = cached.is_some(), path = %self.file.path.display(), "config center unreachable: answered from the cache file");
            Ok(cached)
        })
    }

    fn publish_config<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
        content: &'a str,
    ) -> BoxFuture<'a, RegistryResult<()>> {
        self.inner.publish_config(key, group, content)
    }

    fn publish_config_cas<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
        content: &'a str,
        expected: Option<i64>,
    ) -> BoxFuture<'a, RegistryResult<bool>> {
        self.inner.publish_config_cas(key, group, content, expected)
    }

    fn remove_config<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, RegistryResult<bool>> {
        self.inner.remove_config(key, group)
    }

    fn add_listener<'a>(
        &'a self,
        key: &'a str,
        group: &'a str,
        listener: SharedConfigListener,
    ) -> BoxFuture<'a, RegistryResult<Option<String>>> {
        Box::pin(async move {
            let group = self.group(group).to_owned();
            let name = entry_name(key, &group);
            let file = self.file.clone();
            let stale = self.stale.clone();
            let given = listener.clone();
            let stale_key = (key.to_owned(), group.clone());
            let wrapped: SharedConfigListener = Arc::new(move |e: ConfigChangeEvent| {
                let content =
                    (e.change_type != ConfigChangeType::Deleted).then_some(e.content.as_str());
                file.record(&name, content);
                // Heard from the config center itself: no longer stale.
                stale.lock().remove(&stale_key);
                process_safely(&*given, e);
            });
            self.listening.lock().push(Listening {
                key: key.to_owned(),
                group: group.clone(),
                given: listener,
                wrapped: wrapped.clone(),
            });
            let name = entry_name(key, &group);
            let got = self.inner.add_listener(key, &group, wrapped).await;
            match got {
                Ok(now) if self.inner.is_available() => {
                    self.file.record(&name, now.as_deref());
                    Ok(now)
                }
                other => {
                    if let Err(e) = &other {
                        warn!(key, group, error = %e, "listening to the config center failed");
                    }
                    let cached = self.file.get(&name);
                    info!(key, group, found = cached.is_some(), path = %self.file.path.display(), "config center unreachable: listening, the cached content is used meanwhile");
                    self.stale
                        .lock()
                        .insert((key.to_owned(), group.clone()), cached.clone());
                    self.recheck_later();
                    Ok(cached)
                }
            }
        })
    }

    fn remove_listener(&self, key: &str, group: &str, listener: &SharedConfigListener) {
        let group = self.group(group).to_owned();
        let mut removed = Vec::new();
        self.listening.lock().retain(|l| {
            let hit = l.key == key && l.group == group && same_config_listener(&l.given, listener);
            if hit {
                removed.push(l.wrapped.clone());
            }
            !hit
        });
        for w in removed {
            self.inner.remove_listener(key, &group, &w);
        }
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.closed.cancel();
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::MemoryDynamicConfiguration;

    /// A memory config center that can be made unreachable: reads fail and listeners
    /// get nothing back while it is down (as ZooKeeper's with `check=false`).
    #[derive(Debug, Default)]
    struct Flaky {
        mem: MemoryDynamicConfiguration,
        up: AtomicBool,
    }

    impl DynamicConfiguration for Flaky {
        fn url(&self) -> &Url {
            self.mem.url()
        }
        fn default_group(&self) -> &str {
            self.mem.default_group()
        }
        fn is_available(&self) -> bool {
            self.up.load(Ordering::SeqCst)
        }
        fn get_config_item<'a>(
            &'a self,
            key: &'a str,
            group: &'a str,
        ) -> BoxFuture<'a, RegistryResult<Option<ConfigItem>>> {
            Box::pin(async move {
                if !self.is_available() {
                    return Err(RegistryError::unavailable("flaky", "down"));
                }
                self.mem.get_config_item(key, group).await
            })
        }
        fn publish_config<'a>(
            &'a self,
            key: &'a str,
            group: &'a str,
            content: &'a str,
        ) -> BoxFuture<'a, RegistryResult<()>> {
            self.mem.publish_config(key, group, content)
        }
        fn publish_config_cas<'a>(
            &'a self,
            key: &'a str,
            group: &'a str,
            content: &'a str,
            expected: Option<i64>,
        ) -> BoxFuture<'a, RegistryResult<bool>> {
            self.mem.publish_config_cas(key, group, content, expected)
        }
        fn remove_config<'a>(
            &'a self,
            key: &'a str,
            group: &'a str,
        ) -> BoxFuture<'a, RegistryResult<bool>> {
            self.mem.remove_config(key, group)
        }
        fn add_listener<'a>(
            &'a self,
            key: &'a str,
            group: &'a str,
            listener: SharedConfigListener,
        ) -> BoxFuture<'a, RegistryResult<Option<String>>> {
            Box::pin(async move {
                let now = self.mem.add_listener(key, group, listener).await?;
                Ok(now.filter(|_| self.is_available()))
            })
        }
        fn remove_listener(&self, key: &str, group: &str, listener: &SharedConfigListener) {
            self.mem.remove_listener(key, group, listener)
        }
        fn close(&self) -> BoxFuture<'_, ()> {
            self.mem.close()
        }
    }

    async fn wait_for(what: &str, f: impl Fn() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !f() {
            assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    type Seen = Arc<Mutex<Vec<(ConfigChangeType, String)>>>;

    fn recorder() -> (SharedConfigListener, Seen) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let l: SharedConfigListener = Arc::new(move |e: ConfigChangeEvent| {
            s.lock().push((e.change_type, e.content));
        });
        (l, seen)
    }

    /// Start with the config center down: the last content seen comes from the file;
    /// when it is back, what changed meanwhile (deleted, modified) reaches the listeners.
    #[tokio::test]
    async fn unreachable_at_start_serves_the_file_then_the_fresh_rules() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cc.cache");
        // A first run sees two keys, with newlines and `=` in their content.
        {
            let up = Arc::new(Flaky::default());
            up.up.store(true, Ordering::SeqCst);
            up.publish_config("a.configurators", "dubbo", "configs:\n  - x=1\n")
                .await
                .unwrap();
            up.publish_config("b.tag-router", "dubbo", "tags: []")
                .await
                .unwrap();
            up.publish_config("dubbo.properties", "web", "dubbo.x=1")
                .await
                .unwrap();
            let cc = CachedDynamicConfiguration::new(up.clone(), &path);
            let (l, _) = recorder();
            assert!(
                cc.add_listener("a.configurators", "dubbo", l.clone())
                    .await
                    .unwrap()
                    .is_some()
            );
            assert!(
                cc.add_listener("b.tag-router", "", l)
                    .await
                    .unwrap()
                    .is_some()
            );
            assert!(
                cc.get_config("dubbo.properties", "web")
                    .await
                    .unwrap()
                    .is_some()
            );
            cc.flush().unwrap();
        }
        // The second run starts with the config center down; on it meanwhile, `a` is
        // gone and `b` changed.
        let down = Arc::new(Flaky::default());
        down.publish_config("b.tag-router", "dubbo", "tags: [x]")
            .await
            .unwrap();
        let cc = CachedDynamicConfiguration::new(down.clone(), &path);
        let (la, seen_a) = recorder();
        let (lb, seen_b) = recorder();
        assert_eq!(
            cc.add_listener("a.configurators", "dubbo", la)
                .await
                .unwrap()
                .as_deref(),
            Some("configs:\n  - x=1\n"),
            "served from the file"
        );
        assert_eq!(
            cc.add_listener("b.tag-router", "dubbo", lb)
                .await
                .unwrap()
                .as_deref(),
            Some("tags: []")
        );
        assert_eq!(
            cc.get_config("dubbo.properties", "web")
                .await
                .unwrap()
                .as_deref(),
            Some("dubbo.x=1"),
            "externalized configuration too"
        );
        assert_eq!(cc.get_config("missing", "dubbo").await.unwrap(), None);
        assert!(seen_a.lock().is_empty() && seen_b.lock().is_empty());
        down.up.store(true, Ordering::SeqCst);
        wait_for("a deleted", || {
            seen_a
                .lock()
                .iter()
                .any(|(t, _)| *t == ConfigChangeType::Deleted)
        })
        .await;
        wait_for("b modified", || {
            seen_b
                .lock()
                .iter()
                .any(|(t, c)| *t == ConfigChangeType::Modified && c == "tags: [x]")
        })
        .await;
        // The file follows: a gone, b fresh; later changes are recorded as they come.
        down.publish_config("b.tag-router", "dubbo", "tags: [y]")
            .await
            .unwrap();
        cc.flush().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("a.configurators"), "{text}");
        assert!(text.contains("dubbo/b.tag-router=tags\\: [y]"), "{text}");
        cc.close().await;
    }

    #[test]
    fn the_default_path_names_app_and_address() {
        let url = Url::parse("zookeeper://10.0.0.1:2181").unwrap();
        let p = default_path(&url, "web");
        assert!(
            p.ends_with(".dubbo/dubbo-config-center-web-10.0.0.1-2181.cache"),
            "{p:?}"
        );
    }
}
