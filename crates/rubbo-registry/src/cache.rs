//! `RegistryCache`: the local file with the last address lists of every subscription.
//!
//! Same place and format as Java Dubbo's `AbstractRegistry` cache: by default
//! `~/.dubbo/dubbo-registry-{application}-{host}-{port}.cache` (registry URL `file=`
//! overrides, `file.cache=false` disables), a Java properties file whose keys are service
//! keys and whose values are the space-separated full strings of the last URLs
//! notified, every category included (`empty://` too).
//!
//! Updates only record the lists; the file is rendered and written later, off the
//! caller's path, by a blocking task (temp file + rename, so a reader never sees a
//! half-written file). The file is read when the cache is opened.

use std::collections::BTreeMap;
use std::fmt;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rubbo_common::Url;
use rubbo_common::keys::{APPLICATION_KEY, FILE_KEY, FileCache};
use tracing::{debug, warn};

use crate::RegistryError;
use crate::category::list_category;

/// The least time between two background writes of the file.
const WRITE_INTERVAL: Duration = Duration::from_millis(500);

/// The registry cache file of one registry. Cheap to clone (shared).
#[derive(Clone)]
pub struct RegistryCache {
    path: Arc<PathBuf>,
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    /// service key -> cached value.
    entries: BTreeMap<String, Entry>,
    dirty: bool,
    writing: bool,
}

#[derive(Clone)]
enum Entry {
    /// As read from the file.
    Raw(String),
    /// category -> last list, rendered when written.
    Lists(BTreeMap<String, Vec<Url>>),
}

impl fmt::Debug for RegistryCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryCache")
            .field("path", &self.path)
            .field("entries", &self.inner.lock().entries.len())
            .finish()
    }
}

impl RegistryCache {
    /// The cache of the registry at `registry_url`: the `file` parameter, or
    /// `~/.dubbo/dubbo-registry-{application}-{host}-{port}.cache`. `None` when
    /// `file.cache=false`.
    pub fn for_registry(registry_url: &Url) -> Option<RegistryCache> {
        if !registry_url.param::<FileCache>() {
            return None;
        }
        let path = match registry_url.get_param(FILE_KEY).filter(|f| !f.is_empty()) {
            Some(file) => PathBuf::from(file),
            None => {
                let home =
                    std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
                let app = registry_url.get_param_or(APPLICATION_KEY, "");
                let address = registry_url.address().replace(':', "-");
                home.join(".dubbo")
                    .join(format!("dubbo-registry-{app}-{address}.cache"))
            }
        };
        Some(RegistryCache::open(path))
    }

    /// Opens the cache at `path`, loading what it holds (a missing or unreadable file is
    /// an empty cache; the latter is logged).
    pub fn open(path: impl Into<PathBuf>) -> RegistryCache {
        let path = path.into();
        let mut entries = BTreeMap::new();
        match std::fs::read(&path) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                for (k, v) in parse_properties(&text) {
                    entries.insert(k, Entry::Raw(v));
                }
                debug!(path = %path.display(), entries = entries.len(), "registry cache loaded");
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => warn!(path = %path.display(), error = %e, "registry cache unreadable"),
        }
        RegistryCache {
            path: Arc::new(path),
            inner: Arc::new(Mutex::new(Inner {
                entries,
                ..Inner::default()
            })),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The cached URLs of subscription `subscription` (keyed by its service key), every
    /// category, `empty://` included. Unparseable entries are skipped with a log.
    pub fn get(&self, subscription: &Url) -> Vec<Url> {
        let key = subscription.service_key();
        let entry = self.inner.lock().entries.get(&key).cloned();
        match entry {
            None => Vec::new(),
            Some(Entry::Lists(lists)) => lists.into_values().flatten().collect(),
            Some(Entry::Raw(raw)) => raw
                .split_whitespace()
                .filter_map(|s| match Url::parse(s) {
                    Ok(u) => Some(u),
                    Err(e) => {
                        warn!(path = %self.path.display(), error = %e, "skipping bad url in registry cache");
                        None
                    }
                })
                .collect(),
        }
    }

    /// Records `urls`, the new whole list of their category for `subscription`, and
    /// schedules a write of the file.
    pub fn update(&self, subscription: &Url, urls: &[Url]) {
        let Some(first) = urls.first() else { return };
        let category = list_category(first).to_owned();
        let key = subscription.service_key();
        let spawn = {
            let mut inner = self.inner.lock();
            let entry = inner
                .entries
                .entry(key)
                .or_insert_with(|| Entry::Lists(BTreeMap::new()));
            if let Entry::Raw(_) = entry {
                *entry = Entry::Lists(BTreeMap::new());
            }
            if let Entry::Lists(lists) = entry {
                lists.insert(category, urls.to_vec());
            }
            inner.dirty = true;
            !std::mem::replace(&mut inner.writing, true)
        };
        if spawn {
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => {
                    let this = self.clone();
                    handle.spawn_blocking(move || this.write_loop(WRITE_INTERVAL));
                }
                Err(_) => self.write_loop(Duration::ZERO),
            }
        }
    }

    /// Writes until no update is pending, at most one write per `interval` (a busy
    /// registry rewrites a large file only so often).
    fn write_loop(&self, interval: Duration) {
        loop {
            let snapshot = {
                let mut inner = self.inner.lock();
                inner.dirty = false;
                inner.entries.clone()
            };
            if let Err(e) = self.write_file(&snapshot) {
                warn!(path = %self.path.display(), error = %e, "cannot write registry cache");
            }
            {
                let mut inner = self.inner.lock();
                if !inner.dirty {
                    inner.writing = false;
                    return;
                }
            }
            std::thread::sleep(interval);
        }
    }

    /// Writes the file now, with whatever is recorded.
    pub fn flush(&self) -> Result<(), RegistryError> {
        let snapshot = self.inner.lock().entries.clone();
        self.write_file(&snapshot)
    }

    fn write_file(&self, entries: &BTreeMap<String, Entry>) -> Result<(), RegistryError> {
        let mut text = String::from("#Dubbo Registry Cache\n");
        for (key, entry) in entries {
            let value = match entry {
                Entry::Raw(raw) => raw.clone(),
                Entry::Lists(lists) => {
                    let mut v = String::new();
                    for url in lists.values().flatten() {
                        if !v.is_empty() {
                            v.push(' ');
                        }
                        let _ = write!(v, "{url}");
                    }
                    v
                }
            };
            escape_into(&mut text, key, true);
            text.push('=');
            escape_into(&mut text, &value, false);
            text.push('\n');
        }
        let err = |source| RegistryError::Cache {
            path: (*self.path).clone(),
            source,
        };
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let mut tmp_name = self.path.as_os_str().to_owned();
        tmp_name.push(format!(".{}.tmp", std::process::id()));
        let tmp = PathBuf::from(tmp_name);
        let mut file = std::fs::File::create(&tmp).map_err(err)?;
        file.write_all(text.as_bytes()).map_err(err)?;
        file.sync_all().map_err(err)?;
        drop(file);
        std::fs::rename(&tmp, &*self.path).map_err(err)?;
        debug!(path = %self.path.display(), entries = entries.len(), "registry cache written");
        Ok(())
    }
}

/// Java `Properties.store` escaping (`escape_space` for keys), `\uXXXX` beyond ASCII.
pub(crate) fn escape_into(out: &mut String, s: &str, escape_space: bool) {
    for (i, c) in s.chars().enumerate() {
        match c {
            ' ' if escape_space || i == 0 => out.push_str("\\ "),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\x0c' => out.push_str("\\f"),
            '=' | ':' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c if (' '..='~').contains(&c) => out.push(c),
            c => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{unit:04X}");
                }
            }
        }
    }
}

/// Parses a Java properties file (the subset `Properties.store` writes, plus line
/// continuations).
pub(crate) fn parse_properties(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut logical = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if logical.is_empty() && (trimmed.is_empty() || trimmed.starts_with(['#', '!'])) {
            continue;
        }
        logical.push_str(trimmed);
        let trailing = logical.chars().rev().take_while(|&c| c == '\\').count();
        if trailing % 2 == 1 {
            logical.pop();
            continue;
        }
        out.push(split_pair(&logical));
        logical.clear();
    }
    if !logical.is_empty() {
        out.push(split_pair(&logical));
    }
    out
}

fn split_pair(line: &str) -> (String, String) {
    let mut escaped = false;
    let mut split = line.len();
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if matches!(c, '=' | ':' | ' ' | '\t' | '\x0c') {
            split = i;
            break;
        }
    }
    let key = &line[..split];
    let mut rest = line[split..].trim_start_matches([' ', '\t', '\x0c']);
    if let Some(r) = rest.strip_prefix(['=', ':']) {
        rest = r.trim_start_matches([' ', '\t', '\x0c']);
    }
    (unescape(key), unescape(rest))
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut units: Vec<u16> = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            flush_units(&mut out, &mut units);
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                match u16::from_str_radix(&hex, 16) {
                    Ok(unit) => units.push(unit),
                    Err(_) => {
                        flush_units(&mut out, &mut units);
                        out.push_str(&hex);
                    }
                }
            }
            Some(other) => {
                flush_units(&mut out, &mut units);
                out.push(match other {
                    't' => '\t',
                    'n' => '\n',
                    'r' => '\r',
                    'f' => '\x0c',
                    o => o,
                });
            }
            None => {}
        }
    }
    flush_units(&mut out, &mut units);
    out
}

fn flush_units(out: &mut String, units: &mut Vec<u16>) {
    if !units.is_empty() {
        out.push_str(&String::from_utf16_lossy(units));
        units.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_escaping_round_trips() {
        let mut s = String::new();
        escape_into(&mut s, "g/a.B:1.0 x", true);
        assert_eq!(s, "g/a.B\\:1.0\\ x");
        let mut v = String::new();
        escape_into(&mut v, "dubbo://h:1/a?x=é&y=😀", false);
        assert_eq!(v, "dubbo\\://h\\:1/a?x\\=\\u00E9&y\\=\\uD83D\\uDE00");
        let parsed = parse_properties(&format!("#c\n{s}={v}\n"));
        assert_eq!(
            parsed,
            vec![(
                "g/a.B:1.0 x".to_owned(),
                "dubbo://h:1/a?x=é&y=😀".to_owned()
            )]
        );
    }

    #[test]
    fn update_get_and_file_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/dubbo-registry-test.cache");
        let cache = RegistryCache::open(&path);
        let sub =
            Url::parse("consumer://h/a.B?interface=a.B&version=1.0&category=providers,routers")
                .unwrap();
        let p1 = Url::parse("dubbo://1.1.1.1:20880/a.B?interface=a.B&version=1.0").unwrap();
        let p2 = Url::parse("dubbo://1.1.1.2:20880/a.B?interface=a.B&version=1.0").unwrap();
        cache.update(&sub, &[p1.clone(), p2.clone()]);
        cache.update(&sub, &[crate::empty_url(&sub, "routers")]);
        cache.flush().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("a.B\\:1.0=dubbo\\://1.1.1.1\\:20880"),
            "{text}"
        );
        let reopened = RegistryCache::open(&path);
        let got = reopened.get(&sub);
        assert_eq!(got.len(), 3);
        assert!(got.contains(&p1) && got.contains(&p2));
        assert!(got.iter().any(crate::is_empty_url));
        // No temp file left behind.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[tokio::test]
    async fn updates_are_written_in_the_background() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bg.cache");
        let cache = RegistryCache::open(&path);
        let sub = Url::parse("consumer://h/a.B?interface=a.B").unwrap();
        for port in 1..=50u16 {
            let p = Url::parse(&format!("dubbo://1.1.1.1:{port}/a.B?interface=a.B")).unwrap();
            cache.update(&sub, &[p]);
        }
        // The last update lands in the file, without a flush, within a bounded time.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if text.contains("1.1.1.1\\:50/") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "cache file: {text}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[test]
    fn default_path_and_disable() {
        let url = Url::parse("zookeeper://127.0.0.1:2181?application=demo").unwrap();
        let cache = RegistryCache::for_registry(&url).unwrap();
        assert!(
            cache
                .path()
                .ends_with(".dubbo/dubbo-registry-demo-127.0.0.1-2181.cache")
        );
        assert!(RegistryCache::for_registry(&url.with_param("file.cache", "false")).is_none());
    }
}
