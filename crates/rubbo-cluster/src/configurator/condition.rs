//! The v3.0 `match` condition of an override item (Java's `ConditionMatch`,
//! `ParamMatch`, `AddressMatch` and `ListStringMatch`).

use serde_yaml_ng::Value as Yaml;

use crate::ClusterError;
use crate::router::condition::rule::yaml_str;
use crate::router::tag::StringMatch;
use crate::router::{is_match_glob_pattern, match_ip_expression};
use rubbo_common::Url;
use rubbo_common::keys::{ANY_VALUE, ANYHOST_VALUE};

/// Java's `AddressMatch`: the first of `cird`, `wildcard`, `exact` set decides.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AddressMatch {
    /// An IP expression (`NetUtils.matchIpExpression`: CIDR, `*` and ranges per
    /// segment, optional `:port`), or the address itself.
    pub cird: Option<String>,
    /// A glob (`*` alone or `0.0.0.0`: anything).
    pub wildcard: Option<String>,
    /// The address itself.
    pub exact: Option<String>,
}

impl AddressMatch {
    /// Java's `AddressMatch.isMatch`; `input` is a host or `host:port`.
    pub fn is_match(&self, input: &str) -> bool {
        if let Some(c) = &self.cird {
            let (host, port) = match input.rsplit_once(':') {
                Some((h, p)) if !h.contains(':') => (h, p.parse().unwrap_or(0)),
                _ => (input, 0),
            };
            return input == c || match_ip_expression(c, host, port);
        }
        if let Some(w) = &self.wildcard {
            return w == ANYHOST_VALUE || w == ANY_VALUE || is_match_glob_pattern(w, input);
        }
        if let Some(e) = &self.exact {
            return input == e;
        }
        false
    }
}

/// Java's `ParamMatch`: URL parameter `key` matches `value`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParamMatch {
    /// The URL parameter.
    pub key: String,
    /// What its value must match.
    pub value: StringMatch,
}

/// Java's `ConditionMatch`: every part given must hold.
///
/// ```
/// use rubbo_cluster::configurator::{AddressMatch, ConditionMatch};
/// use rubbo_common::Url;
///
/// let m = ConditionMatch {
///     provider_address: Some(AddressMatch { cird: Some("10.0.0.0/8".into()), ..Default::default() }),
///     ..Default::default()
/// };
/// let p = Url::parse("dubbo://10.1.2.3:20880/a.B").unwrap();
/// assert!(m.is_match("192.168.0.1", &p, None));
/// let q = Url::parse("dubbo://192.168.1.1:20880/a.B").unwrap();
/// assert!(!m.is_match("192.168.0.1", &q, None));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConditionMatch {
    /// The applying side's host (the consumer's own address, or the provider's).
    pub address: Option<AddressMatch>,
    /// The provider's `ip:port`.
    pub provider_address: Option<AddressMatch>,
    /// One of these must match the service key.
    pub service: Option<Vec<StringMatch>>,
    /// One of these must match the application.
    pub app: Option<Vec<StringMatch>>,
    /// All of these must match URL parameters.
    pub param: Vec<ParamMatch>,
}

impl ConditionMatch {
    /// Java's `ConditionMatch.isMatch(host, url)`; `application` is the applying
    /// side's (the URL's `application` in Java's merged consumer URL).
    pub fn is_match(&self, host: &str, url: &Url, application: Option<&str>) -> bool {
        if self.address.as_ref().is_some_and(|a| !a.is_match(host)) {
            return false;
        }
        if self
            .provider_address
            .as_ref()
            .is_some_and(|a| !a.is_match(&url.address()))
        {
            return false;
        }
        let one_of =
            |list: &[StringMatch], input: Option<&str>| list.iter().any(|m| m.is_match(input));
        if self
            .service
            .as_ref()
            .is_some_and(|l| !one_of(l, Some(&url.service_key())))
        {
            return false;
        }
        if self.app.as_ref().is_some_and(|l| !one_of(l, application)) {
            return false;
        }
        self.param
            .iter()
            .all(|p| p.value.is_match(url.get_param(&p.key)))
    }

    /// The `match` of a YAML config item; `None` when absent.
    pub(crate) fn from_yaml(v: Option<&Yaml>) -> Result<Option<Self>, ClusterError> {
        let m = match v {
            None | Some(Yaml::Null) => return Ok(None),
            Some(m @ Yaml::Mapping(_)) => m,
            Some(other) => {
                return Err(invalid(format!("match: expected a mapping, got {other:?}")));
            }
        };
        let address = |key: &str| -> Result<Option<AddressMatch>, ClusterError> {
            match m.get(key) {
                None | Some(Yaml::Null) => Ok(None),
                Some(a @ Yaml::Mapping(_)) => Ok(Some(AddressMatch {
                    cird: yaml_str(a, "cird"),
                    wildcard: yaml_str(a, "wildcard"),
                    exact: yaml_str(a, "exact"),
                })),
                Some(other) => Err(invalid(format!(
                    "match.{key}: expected a mapping, got {other:?}"
                ))),
            }
        };
        let one_of = |key: &str| -> Result<Option<Vec<StringMatch>>, ClusterError> {
            match m.get(key) {
                None | Some(Yaml::Null) => Ok(None),
                Some(l @ Yaml::Mapping(_)) => match l.get("oneof") {
                    Some(Yaml::Sequence(items)) => {
                        Ok(Some(items.iter().map(StringMatch::from_yaml).collect()))
                    }
                    None | Some(Yaml::Null) => Ok(Some(Vec::new())),
                    Some(other) => Err(invalid(format!(
                        "match.{key}.oneof: expected a list, got {other:?}"
                    ))),
                },
                Some(other) => Err(invalid(format!(
                    "match.{key}: expected a mapping, got {other:?}"
                ))),
            }
        };
        let param = match m.get("param") {
            None | Some(Yaml::Null) => Vec::new(),
            Some(Yaml::Sequence(items)) => items
                .iter()
                .map(|p| {
                    let key = yaml_str(p, "key")
                        .ok_or_else(|| invalid("match.param: an item has no key"))?;
                    let value = p
                        .get("value")
                        .map(StringMatch::from_yaml)
                        .unwrap_or_default();
                    Ok(ParamMatch { key, value })
                })
                .collect::<Result<_, ClusterError>>()?,
            Some(other) => {
                return Err(invalid(format!(
                    "match.param: expected a list, got {other:?}"
                )));
            }
        };
        Ok(Some(ConditionMatch {
            address: address("address")?,
            provider_address: address("providerAddress")?,
            service: one_of("service")?,
            app: one_of("app")?,
            param,
        }))
    }
}

fn invalid(reason: impl Into<String>) -> ClusterError {
    ClusterError::InvalidYaml {
        kind: "override",
        reason: reason.into(),
    }
}
