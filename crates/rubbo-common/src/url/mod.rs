//! The Dubbo URL: the configuration bus between every layer.
//!
//! `protocol://username:password@host:port/path?key=value&key=value`, parsed exactly as
//! Java Dubbo's `URLStrParser` does, including its irregular forms.
//!
//! A [`Url`] is one small allocation, as compact as Dubbo 3's `URLAddress` + `URLParam`:
//! the address base (protocol, credentials, path) and the parameter core (every
//! parameter but the per-instance `pid` and `timestamp`) are shared, interned `Arc`s
//! (see [`UrlParams`]); the host, the port and the per-instance values are kept inline.
//! Cloning a `Url` costs one reference-count increment; a derived URL (`with_param`,
//! `with_host`...) shares whatever it did not change.

mod encode;
mod intern;
mod packed;
mod params;
mod parse;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

pub use encode::{decode, encode};
pub use params::UrlParams;

use crate::keys::{self, Param, StrParam};
use intern::{intern, share_base};

/// Why a string is not a URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// `://` (or `:/`) at the very start: a protocol separator with no protocol.
    #[error("url missing protocol: \"{0}\"")]
    MissingProtocol(String),
    /// `proto://:secret@host`: Java rejects a password without a username.
    #[error("invalid url, password without username: \"{0}\"")]
    PasswordWithoutUsername(String),
    /// The text after the last `:` of the host part is not a port number.
    #[error("invalid port \"{port}\" in url \"{url}\"")]
    BadPort {
        /// The whole URL.
        url: String,
        /// The text that should have been a port.
        port: String,
    },
    /// An IPv6 host opened with `[` and never closed.
    #[error("unterminated IPv6 bracket in url \"{0}\"")]
    UnterminatedBracket(String),
    /// A `%` escape that is truncated or not hexadecimal.
    #[error("bad percent escape at byte {1} of \"{0}\"")]
    BadEscape(String, usize),
}

/// A parsed, immutable Dubbo URL. See the [module docs](self).
///
/// ```
/// use rubbo_common::Url;
///
/// let url: Url = "dubbo://10.0.0.1:20880/org.demo.Greeter?version=1.0.0&group=g1&sayHello.timeout=500&timeout=3000"
///     .parse()
///     .unwrap();
/// assert_eq!(url.protocol(), Some("dubbo"));
/// assert_eq!(url.address(), "10.0.0.1:20880");
/// assert_eq!(url.service_key(), "g1/org.demo.Greeter:1.0.0");
/// assert_eq!(url.get_method_param("sayHello", "timeout"), Some("500"));
/// assert_eq!(url.get_method_param("other", "timeout"), Some("3000"));
///
/// // Derivation shares the unchanged half.
/// let moved = url.with_host("10.0.0.2");
/// assert_eq!(moved.to_string(),
///     "dubbo://10.0.0.2:20880/org.demo.Greeter?group=g1&sayHello.timeout=500&timeout=3000&version=1.0.0");
/// ```
#[derive(Clone)]
pub struct Url {
    inner: Arc<Inner>,
}

/// The shared address base, and the parameters (which also hold the host and port).
#[derive(Clone)]
struct Inner {
    base: Arc<AddrBase>,
    params: UrlParams,
}

/// The parts of an address that the providers of one service share.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct AddrBase {
    protocol: Option<Arc<str>>,
    username: Option<Box<str>>,
    password: Option<Box<str>>,
    path: Option<Arc<str>>,
}

impl Url {
    /// Parses a URL in its plain ("decoded") form, as Java's `URL.valueOf` does:
    /// parameter values are taken as written, not percent-decoded.
    pub fn parse(s: &str) -> Result<Url, UrlError> {
        parse::parse_decoded(s)
    }

    /// Parses a URL that was encoded whole with [`encode`], such as a provider node name
    /// in ZooKeeper (Java's `URLStrParser.parseEncodedStr`). Each parameter key and value
    /// is decoded once, so an `export=` value that was encoded twice comes out encoded once.
    pub fn parse_encoded(s: &str) -> Result<Url, UrlError> {
        parse::parse_encoded(s)
    }

    /// A URL with just a protocol, host and port.
    pub fn new(protocol: &str, host: &str, port: u16) -> Url {
        Url::from_parts(
            share_base(AddrBase {
                protocol: Some(intern(protocol)),
                ..Default::default()
            }),
            UrlParams::from_map_at(Default::default(), Some(host), port),
        )
    }

    fn from_parts(base: Arc<AddrBase>, params: UrlParams) -> Url {
        Url {
            inner: Arc::new(Inner { base, params }),
        }
    }

    /// The protocol (`dubbo`, `tri`, `zookeeper`...), if any.
    pub fn protocol(&self) -> Option<&str> {
        self.inner.base.protocol.as_deref()
    }

    /// The user name, if any.
    pub fn username(&self) -> Option<&str> {
        self.inner.base.username.as_deref()
    }

    /// The password, if any.
    pub fn password(&self) -> Option<&str> {
        self.inner.base.password.as_deref()
    }

    /// The host (an IPv6 host without its brackets), if any.
    pub fn host(&self) -> Option<&str> {
        self.inner.params.host()
    }

    /// The port; 0 when absent.
    pub fn port(&self) -> u16 {
        self.inner.params.port()
    }

    /// The path without its leading `/` (normally the interface name), if any.
    pub fn path(&self) -> Option<&str> {
        self.inner.base.path.as_deref()
    }

    /// `host:port` (`[v6]:port` for IPv6), or just the host when the port is 0.
    pub fn address(&self) -> String {
        let host = self.host().unwrap_or("");
        let mut out = String::with_capacity(host.len() + 8);
        push_host(&mut out, host);
        if self.port() > 0 {
            out.push(':');
            out.push_str(&self.port().to_string());
        }
        out
    }

    /// The parameter set.
    pub fn params(&self) -> &UrlParams {
        &self.inner.params
    }

    /// The value of parameter `key`. Keys registered by old providers as
    /// `default.{key}` are found under `key` too.
    pub fn get_param(&self, key: &str) -> Option<&str> {
        self.inner.params.get(key)
    }

    /// The value of `key`, or `default` when absent or empty.
    pub fn get_param_or<'a>(&'a self, key: &str, default: &'a str) -> &'a str {
        self.get_param(key)
            .filter(|v| !v.is_empty())
            .unwrap_or(default)
    }

    /// `key` as a boolean (`true`, case-insensitive), or `default` when absent.
    pub fn get_bool(&self, key: &str, default: bool) -> bool {
        self.get_param(key)
            .map_or(default, |v| v.trim().eq_ignore_ascii_case("true"))
    }

    /// `key` as an integer, or `default` when absent or not a number.
    pub fn get_int(&self, key: &str, default: i64) -> i64 {
        self.get_param(key)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(default)
    }

    /// `key` as a duration in milliseconds, or `default_ms` when absent or not a number.
    /// Negative values count as zero.
    pub fn get_duration_ms(&self, key: &str, default_ms: u64) -> Duration {
        let ms = self
            .get_param(key)
            .and_then(|v| v.trim().parse::<i64>().ok())
            .map_or(default_ms, |v| v.max(0).unsigned_abs());
        Duration::from_millis(ms)
    }

    /// The method-level value of `key` for `method`: `{method}.{key}` if present, else
    /// `key`. This is the lookup every layer uses (see [`crate::resolve`] for the
    /// whole precedence order).
    pub fn get_method_param(&self, method: &str, key: &str) -> Option<&str> {
        self.inner
            .params
            .get_method(method, key)
            .filter(|v| !v.is_empty())
            .or_else(|| self.get_param(key))
    }

    /// Whether any parameter is method-level (`{method}.{key}`): when not,
    /// [`get_method_param`](Self::get_method_param) is `get_param` for every method.
    ///
    /// ```
    /// use rubbo_common::Url;
    /// assert!(!Url::parse("dubbo://h:1/S?timeout=250").unwrap().has_method_params());
    /// assert!(Url::parse("dubbo://h:1/S?echo.timeout=250").unwrap().has_method_params());
    /// ```
    pub fn has_method_params(&self) -> bool {
        self.inner.params.has_method_params()
    }

    /// Method-level boolean (see [`get_method_param`](Self::get_method_param)).
    pub fn get_method_bool(&self, method: &str, key: &str, default: bool) -> bool {
        self.get_method_param(method, key)
            .map_or(default, |v| v.trim().eq_ignore_ascii_case("true"))
    }

    /// Method-level integer (see [`get_method_param`](Self::get_method_param)).
    pub fn get_method_int(&self, method: &str, key: &str, default: i64) -> i64 {
        self.get_method_param(method, key)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(default)
    }

    /// Method-level duration in milliseconds (see [`get_method_param`](Self::get_method_param)).
    pub fn get_method_duration_ms(&self, method: &str, key: &str, default_ms: u64) -> Duration {
        let ms = self
            .get_method_param(method, key)
            .and_then(|v| v.trim().parse::<i64>().ok())
            .map_or(default_ms, |v| v.max(0).unsigned_abs());
        Duration::from_millis(ms)
    }

    /// A typed parameter with its default (linkerd's `Param` style).
    ///
    /// ```
    /// use rubbo_common::{keys::{Retries, Timeout}, Url};
    /// let url = Url::parse("dubbo://h:1/S?timeout=250").unwrap();
    /// assert_eq!(url.param::<Timeout>().as_millis(), 250);
    /// assert_eq!(url.param::<Retries>(), 2);
    /// ```
    pub fn param<P: Param>(&self) -> P::Value {
        self.get_param(P::KEY)
            .and_then(P::parse)
            .unwrap_or_else(P::default_value)
    }

    /// A typed method-level parameter with its default.
    ///
    /// ```
    /// use rubbo_common::{keys::Retries, Url};
    /// let url = Url::parse("dubbo://h:1/S?retries=5&echo.retries=0").unwrap();
    /// assert_eq!(url.method_param::<Retries>("echo"), 0);
    /// assert_eq!(url.method_param::<Retries>("other"), 5);
    /// ```
    pub fn method_param<P: Param>(&self, method: &str) -> P::Value {
        self.get_method_param(method, P::KEY)
            .and_then(P::parse)
            .unwrap_or_else(P::default_value)
    }

    /// A string parameter with its default (absent or empty gives the default).
    ///
    /// ```
    /// use rubbo_common::{keys::Dispatcher, Url};
    /// assert_eq!(Url::parse("dubbo://h:1/S?dispatcher=direct").unwrap().str_param::<Dispatcher>(), "direct");
    /// assert_eq!(Url::parse("dubbo://h:1/S").unwrap().str_param::<Dispatcher>(), "all");
    /// ```
    pub fn str_param<P: StrParam>(&self) -> &str {
        self.get_param_or(P::KEY, P::DEFAULT)
    }

    /// A method-level string parameter with its default (absent or empty gives the
    /// default).
    pub fn method_str_param<P: StrParam>(&self, method: &str) -> &str {
        self.get_method_param(method, P::KEY)
            .filter(|v| !v.is_empty())
            .unwrap_or(P::DEFAULT)
    }

    /// The service interface: parameter `interface`, else the path.
    pub fn service_interface(&self) -> Option<&str> {
        self.get_param(keys::INTERFACE_KEY)
            .filter(|s| !s.is_empty())
            .or_else(|| self.path())
    }

    /// The service group (`group`), if set.
    pub fn group(&self) -> Option<&str> {
        self.get_param(keys::GROUP_KEY).filter(|s| !s.is_empty())
    }

    /// The service version (`version`), if set.
    pub fn version(&self) -> Option<&str> {
        self.get_param(keys::VERSION_KEY).filter(|s| !s.is_empty())
    }

    /// The service key `{group}/{interface}:{version}` (group and version omitted when
    /// empty), as Java's `URL.getServiceKey`.
    pub fn service_key(&self) -> String {
        crate::service_key(
            self.group(),
            self.service_interface().unwrap_or(""),
            self.version(),
        )
    }

    /// The side (`provider` / `consumer`), if set.
    pub fn side(&self) -> Option<&str> {
        self.get_param(keys::SIDE_KEY)
    }

    /// Java's `toFullString`: parameters sorted by key, values written as they are.
    pub fn to_full_string(&self) -> String {
        self.to_string()
    }

    /// The URL without parameters (`protocol://user:pass@host:port/path`).
    pub fn to_identity_string(&self) -> String {
        let mut out = String::new();
        self.write_body(&mut out);
        out
    }

    fn write_body(&self, out: &mut String) {
        let b = &*self.inner.base;
        if let Some(p) = b.protocol.as_deref().filter(|p| !p.is_empty()) {
            out.push_str(p);
            out.push_str("://");
        }
        if let Some(u) = b.username.as_deref().filter(|u| !u.is_empty()) {
            out.push_str(u);
            if let Some(pw) = b.password.as_deref().filter(|p| !p.is_empty()) {
                out.push(':');
                out.push_str(pw);
            }
            out.push('@');
        }
        if let Some(h) = self.host().filter(|h| !h.is_empty()) {
            push_host(out, h);
            if self.port() > 0 {
                out.push(':');
                out.push_str(&self.port().to_string());
            }
        }
        if let Some(p) = b.path.as_deref().filter(|p| !p.is_empty()) {
            out.push('/');
            out.push_str(p);
        }
    }

    // ---- derivation (each returns a new URL sharing what did not change) ----

    fn with_base(&self, f: impl FnOnce(&mut AddrBase)) -> Url {
        let mut base = (*self.inner.base).clone();
        f(&mut base);
        Url::from_parts(share_base(base), self.inner.params.clone())
    }

    fn with_map(&self, f: impl FnOnce(&mut std::collections::BTreeMap<Arc<str>, Arc<str>>)) -> Url {
        let mut map = self.inner.params.to_map();
        f(&mut map);
        Url::from_parts(
            self.inner.base.clone(),
            UrlParams::from_map_at(map, self.host(), self.port()),
        )
    }

    /// This URL with another protocol.
    pub fn with_protocol(&self, protocol: &str) -> Url {
        self.with_base(|a| a.protocol = Some(intern(protocol)))
    }

    /// This URL with another host.
    pub fn with_host(&self, host: &str) -> Url {
        self.with_address(host, self.port())
    }

    /// This URL with another port.
    pub fn with_port(&self, port: u16) -> Url {
        Url::from_parts(
            self.inner.base.clone(),
            self.inner.params.at(self.host(), port),
        )
    }

    /// This URL at another host and port: the address base and the parameter core are
    /// shared with `self`, so the new URL is one small allocation (the host, port and
    /// per-instance values inline). Equal, and hashing equal, to the URL parsed from
    /// the same text.
    ///
    /// ```
    /// use rubbo_common::Url;
    /// let template = Url::parse("dubbo://10.0.0.1:20880/org.demo.Greeter?side=provider&version=1.0.0").unwrap();
    /// let moved = template.with_address("10.0.0.2", 20881);
    /// assert!(moved.shares_params_with(&template));
    /// assert_eq!(moved, Url::parse("dubbo://10.0.0.2:20881/org.demo.Greeter?version=1.0.0&side=provider").unwrap());
    /// ```
    pub fn with_address(&self, host: &str, port: u16) -> Url {
        Url::from_parts(
            self.inner.base.clone(),
            self.inner.params.at(Some(host), port),
        )
    }

    /// This URL with another path (leading `/` trimmed).
    pub fn with_path(&self, path: &str) -> Url {
        let path = path.trim_start_matches('/');
        self.with_base(|a| a.path = (!path.is_empty()).then(|| intern(path)))
    }

    /// This URL with other credentials.
    pub fn with_credentials(&self, username: Option<&str>, password: Option<&str>) -> Url {
        self.with_base(|a| {
            a.username = username.map(Into::into);
            a.password = password.map(Into::into);
        })
    }

    /// This URL with `key=value` added or replaced. An empty key is ignored, as in Java.
    pub fn with_param(&self, key: &str, value: impl AsRef<str>) -> Url {
        if key.is_empty() {
            return self.clone();
        }
        let value = value.as_ref();
        if self.get_param(key) == Some(value) {
            return self.clone();
        }
        self.with_map(|m| {
            m.insert(intern(key), intern(value));
        })
    }

    /// This URL with `key` set to `value` encoded by [`encode`] (Java's
    /// `addParameterAndEncoded`, used for `export=` / `refer=`).
    pub fn with_param_encoded(&self, key: &str, value: &str) -> Url {
        self.with_param(key, encode(value))
    }

    /// The value of `key` decoded with [`decode`] (Java's `getParameterAndDecoded`).
    pub fn get_param_decoded(&self, key: &str) -> Result<Option<String>, UrlError> {
        self.get_param(key).map(decode).transpose()
    }

    /// This URL with every pair of `params` added or replaced.
    pub fn with_params<K: AsRef<str>, V: AsRef<str>>(
        &self,
        params: impl IntoIterator<Item = (K, V)>,
    ) -> Url {
        self.with_map(|m| {
            for (k, v) in params {
                if !k.as_ref().is_empty() {
                    m.insert(intern(k.as_ref()), intern(v.as_ref()));
                }
            }
        })
    }

    /// This URL with the pairs of `params` added only where the key is absent.
    pub fn with_params_if_absent<K: AsRef<str>, V: AsRef<str>>(
        &self,
        params: impl IntoIterator<Item = (K, V)>,
    ) -> Url {
        self.with_map(|m| {
            for (k, v) in params {
                if !k.as_ref().is_empty() && !m.contains_key(k.as_ref()) {
                    m.insert(intern(k.as_ref()), intern(v.as_ref()));
                }
            }
        })
    }

    /// This URL without the given keys.
    pub fn without_params(&self, keys: &[&str]) -> Url {
        if !keys.iter().any(|k| self.get_param(k).is_some()) {
            return self.clone();
        }
        self.with_map(|m| {
            for k in keys {
                m.remove(*k);
            }
        })
    }

    /// Whether two URLs share the same parameter allocation and per-instance values, so
    /// that their parameters are equal (a cheap identity check used by tests and caches).
    pub fn shares_params_with(&self, other: &Url) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner) || self.inner.params.same_as(&other.inner.params)
    }
}

fn push_host(out: &mut String, host: &str) {
    if host.contains(':') && !host.starts_with('[') {
        out.push('[');
        out.push_str(host);
        out.push(']');
    } else {
        out.push_str(host);
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let params = self.params();
        let mut out = String::with_capacity(64 + params.len() * 24);
        self.write_body(&mut out);
        let mut first = true;
        for (k, v) in params.iter() {
            out.push(if first { '?' } else { '&' });
            first = false;
            out.push_str(k);
            out.push('=');
            out.push_str(v.trim());
        }
        f.write_str(&out)
    }
}

impl fmt::Debug for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Url({self})")
    }
}

impl PartialEq for Url {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
            || (self.inner.base == other.inner.base
                && self.host() == other.host()
                && self.port() == other.port()
                && self.inner.params == other.inner.params)
    }
}

impl Eq for Url {}

impl std::hash::Hash for Url {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.base.hash(state);
        self.host().hash(state);
        self.port().hash(state);
        self.inner.params.hash(state);
    }
}

impl FromStr for Url {
    type Err = UrlError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Url::parse(s)
    }
}
