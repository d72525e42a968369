//! The extension registry: Java's SPI, the Rust way.
//!
//! Each extension point (protocol, registry, cluster, load balance, router, filter,
//! serialization...) has one typed table, [`ExtensionTable<dyn Point>`], mapping names
//! to implementations. Built-ins are registered when the table is built (by the crate
//! that defines the point); users add theirs with one call. "Adaptive" selection picks
//! the implementation named by a URL parameter at call time, falling back to the
//! point's default. An unknown name is an error listing the known names.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::Url;

/// A name that no implementation is registered under.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExtensionError {
    /// Unknown name for a point.
    #[error("no {point} extension named \"{name}\" (known: {})", known.join(", "))]
    Unknown {
        /// The extension point.
        point: &'static str,
        /// The name asked for.
        name: String,
        /// The registered names.
        known: Vec<String>,
    },
}

type Wrapper<T> = Arc<dyn Fn(Arc<T>) -> Arc<T> + Send + Sync>;

/// The named implementations of one extension point.
///
/// ```
/// use rubbo_common::ExtensionTable;
/// use std::sync::Arc;
///
/// trait Greeting: Send + Sync { fn text(&self) -> String; }
/// struct En; impl Greeting for En { fn text(&self) -> String { "hello".into() } }
/// struct Fr; impl Greeting for Fr { fn text(&self) -> String { "bonjour".into() } }
///
/// let mut table: ExtensionTable<dyn Greeting> = ExtensionTable::new("greeting", "en");
/// table.register("en", Arc::new(En));
/// table.register("fr", Arc::new(Fr));
///
/// let url = rubbo_common::Url::parse("x://h?greeting=fr").unwrap();
/// assert_eq!(table.select(&url, "greeting").unwrap().text(), "bonjour");
/// assert_eq!(table.get_default().unwrap().text(), "hello");
/// let err = table.get("de").err().unwrap();
/// assert_eq!(err.to_string(), "no greeting extension named \"de\" (known: en, fr)");
/// ```
pub struct ExtensionTable<T: ?Sized> {
    point: &'static str,
    default: &'static str,
    entries: BTreeMap<String, Arc<T>>,
    wrappers: Vec<Wrapper<T>>,
}

impl<T: ?Sized> Clone for ExtensionTable<T> {
    fn clone(&self) -> Self {
        ExtensionTable {
            point: self.point,
            default: self.default,
            entries: self.entries.clone(),
            wrappers: self.wrappers.clone(),
        }
    }
}

impl<T: ?Sized> fmt::Debug for ExtensionTable<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExtensionTable")
            .field("point", &self.point)
            .field("default", &self.default)
            .field("names", &self.entries.keys().collect::<Vec<_>>())
            .field("wrappers", &self.wrappers.len())
            .finish()
    }
}

impl<T: ?Sized> ExtensionTable<T> {
    /// An empty table for `point` whose default implementation is named `default`.
    pub fn new(point: &'static str, default: &'static str) -> Self {
        ExtensionTable {
            point,
            default,
            entries: BTreeMap::new(),
            wrappers: Vec::new(),
        }
    }

    /// Registers (or replaces) the implementation called `name`.
    pub fn register(&mut self, name: impl Into<String>, ext: Arc<T>) -> &mut Self {
        self.entries.insert(name.into(), ext);
        self
    }

    /// Builder-style [`register`](Self::register).
    pub fn with(mut self, name: impl Into<String>, ext: Arc<T>) -> Self {
        self.register(name, ext);
        self
    }

    /// Adds a wrapper applied to every implementation handed out (Java's wrapper
    /// extensions). Wrappers apply in registration order: the first is innermost.
    pub fn add_wrapper(&mut self, wrapper: impl Fn(Arc<T>) -> Arc<T> + Send + Sync + 'static) {
        self.wrappers.push(Arc::new(wrapper));
    }

    /// The extension point's name.
    pub fn point(&self) -> &'static str {
        self.point
    }

    /// The default implementation's name.
    pub fn default_name(&self) -> &'static str {
        self.default
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.entries.keys().cloned().collect()
    }

    /// Whether `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    /// The implementation called `name`, wrapped.
    pub fn get(&self, name: &str) -> Result<Arc<T>, ExtensionError> {
        let ext = self
            .entries
            .get(name)
            .cloned()
            .ok_or_else(|| ExtensionError::Unknown {
                point: self.point,
                name: name.to_owned(),
                known: self.names(),
            })?;
        Ok(self.wrappers.iter().fold(ext, |e, w| w(e)))
    }

    /// The default implementation.
    pub fn get_default(&self) -> Result<Arc<T>, ExtensionError> {
        self.get(self.default)
    }

    /// Adaptive selection: the implementation named by `url`'s parameter `key`, or the
    /// default when the parameter is absent or empty.
    pub fn select(&self, url: &Url, key: &str) -> Result<Arc<T>, ExtensionError> {
        self.get(url.get_param_or(key, self.default))
    }

    /// Adaptive selection with method-level override (`{method}.{key}` beats `key`).
    pub fn select_for_method(
        &self,
        url: &Url,
        method: &str,
        key: &str,
    ) -> Result<Arc<T>, ExtensionError> {
        let name = url
            .get_method_param(method, key)
            .filter(|v| !v.is_empty())
            .unwrap_or(self.default);
        self.get(name)
    }
}
