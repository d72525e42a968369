//! The typed sections built from the tree.

use std::collections::BTreeMap;

use crate::schema::url_key;

/// `dubbo.application.*`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApplicationConfig {
    /// `name`: the application name.
    pub name: Option<String>,
    /// Every attribute set (kebab case, `parameters.<key>` kept), `name` included.
    pub attributes: BTreeMap<String, String>,
}

/// `dubbo.registry.*` or `dubbo.registries.<id>.*`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegistryConfig {
    /// The id; `None` for `dubbo.registry`.
    pub id: Option<String>,
    /// `address`: one or several (`|` or `;` separated) registry addresses.
    pub address: Option<String>,
    /// Every attribute set (kebab case).
    pub attributes: BTreeMap<String, String>,
}

impl RegistryConfig {
    /// The registry URLs, as Java's `ConfigValidationUtils.loadRegistries` builds
    /// them: the address split at `|` / `;`, `protocol://` put in front of an address
    /// without a scheme, `username`/`password` as user info, and the other attributes
    /// (`group`, `timeout`, `check`, `register`, `parameters.*`...) as URL parameters.
    /// `N/A` addresses are left out.
    pub fn urls(&self) -> Vec<String> {
        let Some(address) = &self.address else {
            return Vec::new();
        };
        let attr = |k: &str| self.attributes.get(k).map(String::as_str);
        let params: Vec<String> = self
            .attributes
            .iter()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "id" | "default" | "address" | "protocol" | "port" | "username" | "password"
                )
            })
            .map(|(k, v)| {
                let k = k.strip_prefix("parameters.").unwrap_or(k);
                format!("{k}={v}")
            })
            .collect();
        address
            .split(['|', ';'])
            .map(str::trim)
            .filter(|a| !a.is_empty() && !a.eq_ignore_ascii_case("N/A"))
            .map(|a| {
                let mut url = match (a.contains("://"), attr("protocol")) {
                    (false, Some(p)) => format!("{p}://{a}"),
                    // Java defaults the registry protocol to `dubbo`.
                    (false, None) => format!("dubbo://{a}"),
                    (true, _) => a.to_owned(),
                };
                if let (Some(user), Some((scheme, rest))) =
                    (attr("username"), url.split_once("://"))
                {
                    if !rest.contains('@') {
                        let pass = attr("password")
                            .map(|p| format!(":{p}"))
                            .unwrap_or_default();
                        url = format!("{scheme}://{user}{pass}@{rest}");
                    }
                }
                if !params.is_empty() {
                    let sep = if url.contains('?') { '&' } else { '?' };
                    url = format!("{url}{sep}{}", params.join("&"));
                }
                url
            })
            .collect()
    }
}

/// `dubbo.protocol.*` or `dubbo.protocols.<id>.*`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProtocolConfig {
    /// The id; `None` for `dubbo.protocol`.
    pub id: Option<String>,
    /// `name`; when absent the id (Java's compatibility rule), else `dubbo`.
    pub name: String,
    /// `port`; `None` when absent or `-1` (the protocol's default).
    pub port: Option<u16>,
    /// `host`: the address to bind and advertise.
    pub host: Option<String>,
    /// Every attribute set (kebab case).
    pub attributes: BTreeMap<String, String>,
}

/// `dubbo.provider.*` or `dubbo.consumer.*`: defaults for every service or reference.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DefaultsConfig {
    /// `host` (provider: the address to bind and advertise).
    pub host: Option<String>,
    /// The URL parameters they give (`timeout`, `retries`, `check`, ...).
    pub params: BTreeMap<String, String>,
}

/// One method of a service or reference (`methods.<name>.*`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MethodConfig {
    /// The method name.
    pub name: String,
    /// `timeout` in milliseconds.
    pub timeout: Option<i64>,
    /// `retries`.
    pub retries: Option<i64>,
    /// `loadbalance`.
    pub loadbalance: Option<String>,
    /// `mock`.
    pub mock: Option<String>,
    /// Every URL parameter it gives, without the method prefix.
    pub params: BTreeMap<String, String>,
}

/// One service (`dubbo.services.<interface>.*`) or reference
/// (`dubbo.references.<interface>.*`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServiceConfig {
    /// The interface name.
    pub interface: String,
    /// The URL parameters it gives.
    pub params: BTreeMap<String, String>,
    /// Its methods.
    pub methods: Vec<MethodConfig>,
}

impl ServiceConfig {
    /// Its URL parameters with the methods' as `{method}.{key}`, as Java's
    /// `appendParameters(map, method, method.getName())` writes them.
    pub fn url_params(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .params
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for m in &self.methods {
            out.extend(
                m.params
                    .iter()
                    .map(|(k, v)| (format!("{}.{k}", m.name), v.clone())),
            );
        }
        out
    }
}

/// `dubbo.config-center.*` or `dubbo.metadata-report.*`: carried for the config
/// center and metadata report work, not applied yet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CenterConfig {
    /// `address`.
    pub address: Option<String>,
    /// Every attribute set (kebab case).
    pub attributes: BTreeMap<String, String>,
}

/// `dubbo.ssl.*` (Java's `SslConfig`): one per application, for every server and
/// client it opens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SslConfig {
    /// Every attribute set (kebab case: `server-key-cert-chain-path`...).
    pub attributes: BTreeMap<String, String>,
}

impl SslConfig {
    /// The `server-*` attributes that are set, as the URL parameters a provider URL
    /// carries to its protocol (same names).
    pub fn server_params(&self) -> Vec<(String, String)> {
        self.params("server-")
    }

    /// The `client-*` attributes that are set, as the URL parameters a consumer URL
    /// carries to its protocol (same names).
    pub fn client_params(&self) -> Vec<(String, String)> {
        self.params("client-")
    }

    fn params(&self, side: &str) -> Vec<(String, String)> {
        self.attributes
            .iter()
            .filter(|(k, v)| k.starts_with(side) && !v.trim().is_empty())
            .map(|(k, v)| (k.clone(), v.trim().to_owned()))
            .collect()
    }
}

/// Adds a URL parameter for `attr` (if it is one).
pub(crate) fn put_param(params: &mut BTreeMap<String, String>, attr: &str, value: &str) {
    if let Some(k) = url_key(attr) {
        params.insert(k, value.trim().to_owned());
    }
}

/// `value` as an integer (already type-checked).
pub(crate) fn int(value: &str) -> Option<i64> {
    value.trim().parse().ok()
}
