//! Override rules as the config center stores them (Java's `ConfigParser`): the v3.0
//! YAML (`configs` items) or the legacy JSON array of `override://` URL strings, turned
//! into the `override://` URLs a [`Configurators`](super::Configurators) set applies.

use rubbo_common::Url;
use rubbo_common::keys::{self, ANYHOST_VALUE};
use serde_yaml_ng::Value as Yaml;

use super::{ConditionMatch, Configurator};
use crate::ClusterError;
use crate::router::condition::rule::{yaml_bool, yaml_str};

/// Category of service-scope rule URLs (Java's `DYNAMIC_CONFIGURATORS_CATEGORY`).
pub const DYNAMIC_CONFIGURATORS_CATEGORY: &str = "dynamicconfigurators";
/// Category of application-scope rule URLs (`APP_DYNAMIC_CONFIGURATORS_CATEGORY`).
pub const APP_DYNAMIC_CONFIGURATORS_CATEGORY: &str = "appdynamicconfigurators";

fn invalid(reason: impl Into<String>) -> ClusterError {
    ClusterError::InvalidYaml {
        kind: "override",
        reason: reason.into(),
    }
}

fn yaml_list(map: &Yaml, key: &str) -> Result<Vec<String>, ClusterError> {
    match map.get(key) {
        None | Some(Yaml::Null) => Ok(Vec::new()),
        Some(Yaml::Sequence(items)) => items
            .iter()
            .map(|i| match i {
                Yaml::String(s) => Ok(s.clone()),
                Yaml::Number(n) => Ok(n.to_string()),
                other => Err(invalid(format!("{key}: expected strings, got {other:?}"))),
            })
            .collect(),
        Some(other) => Err(invalid(format!("{key}: expected a list, got {other:?}"))),
    }
}

/// `[group/]interface[:version]` as URL path and query start (Java's `appendService`).
fn service_part(service: &str) -> Result<String, ClusterError> {
    if service.is_empty() {
        return Err(invalid("service field in configuration is empty"));
    }
    let mut query = String::new();
    let mut name = service;
    if let Some(i) = name.find('/').filter(|&i| i > 0) {
        query.push_str(&format!("group={}&", &name[..i]));
        name = &name[i + 1..];
    }
    if let Some(j) = name.find(':').filter(|&j| j > 0) {
        query.push_str(&format!("version={}&", &name[j + 1..]));
        name = &name[..j];
    }
    Ok(format!("{name}?{query}"))
}

/// Parses an override rule, as Java's `ConfigParser.parseConfigurators`: a JSON array
/// of URL strings is taken as it is; otherwise the YAML rule gives one URL per item and
/// address (and per application, or per service at application scope).
///
/// ```
/// use rubbo_cluster::configurator::parse_configurators;
/// let urls = parse_configurators(r#"
/// configVersion: v3.0
/// scope: service
/// key: g1/org.demo.Greeter:1.0.0
/// enabled: true
/// configs:
///   - side: consumer
///     parameters: {timeout: 6000}
/// "#).unwrap();
/// assert_eq!(urls.len(), 1);
/// let u = &urls[0];
/// assert_eq!(u.protocol(), Some("override"));
/// assert_eq!(u.host(), Some("0.0.0.0"));
/// assert_eq!(u.path(), Some("org.demo.Greeter"));
/// assert_eq!(u.get_param("group"), Some("g1"));
/// assert_eq!(u.get_param("version"), Some("1.0.0"));
/// assert_eq!(u.get_param("timeout"), Some("6000"));
/// assert_eq!(u.get_param("category"), Some("dynamicconfigurators"));
/// assert_eq!(u.get_param("enabled"), Some("true"));
/// assert_eq!(u.get_param("configVersion"), Some("v3.0"));
/// ```
pub fn parse_configurators(raw: &str) -> Result<Vec<Url>, ClusterError> {
    Ok(parse(raw)?.into_iter().map(|(u, _)| u).collect())
}

/// Parses an override rule as [`parse_configurators`] does, keeping each item's v3.0
/// `match` condition with its rules (Java's `MATCH_CONDITION` URL attribute); URLs of
/// another protocol than `override://` / `absent://` are left out.
///
/// ```
/// use rubbo_cluster::configurator::{RuleSide, parse_rules};
/// use rubbo_common::Url;
/// let rules = parse_rules(r#"
/// configVersion: v3.0
/// key: org.demo.Greeter
/// configs:
///   - side: consumer
///     match:
///       param:
///         - key: region
///           value: {exact: hz}
///     parameters: {timeout: 6000}
/// "#).unwrap();
/// let on = RuleSide::Consumer { host: "10.0.0.9", application: None };
/// let hz = Url::parse("dubbo://10.0.0.1:20880/org.demo.Greeter?region=hz").unwrap();
/// let sh = Url::parse("dubbo://10.0.0.2:20880/org.demo.Greeter?region=sh").unwrap();
/// assert_eq!(rules[0].configure(&hz, on).get_param("timeout"), Some("6000"));
/// assert_eq!(rules[0].configure(&sh, on).get_param("timeout"), None);
/// ```
pub fn parse_rules(raw: &str) -> Result<Vec<Configurator>, ClusterError> {
    Ok(parse(raw)?
        .into_iter()
        .filter_map(|(u, m)| Configurator::from_url(&u).map(|c| c.with_condition(m)))
        .collect())
}

fn parse(raw: &str) -> Result<Vec<(Url, Option<ConditionMatch>)>, ClusterError> {
    if let Ok(list) = serde_json::from_str::<Vec<String>>(raw.trim()) {
        if !list.is_empty() {
            return list
                .iter()
                .map(|u| {
                    Url::parse(u)
                        .map(|u| (u, None))
                        .map_err(|e| invalid(format!("bad url {u}: {e}")))
                })
                .collect();
        }
    }
    let doc: Yaml = serde_yaml_ng::from_str(raw).map_err(|e| invalid(e.to_string()))?;
    if !doc.is_mapping() {
        return Err(invalid("the rule is not a mapping"));
    }
    let key = yaml_str(&doc, "key").unwrap_or_default();
    let config_version = yaml_str(&doc, "configVersion").unwrap_or_default();
    let enabled = yaml_bool(&doc, "enabled", true);
    let application = yaml_str(&doc, "scope").as_deref() == Some("application");
    let items = match doc.get("configs") {
        Some(Yaml::Sequence(items)) => items.clone(),
        None | Some(Yaml::Null) => Vec::new(),
        Some(other) => return Err(invalid(format!("configs: expected a list, got {other:?}"))),
    };
    let mut urls = Vec::new();
    for item in &items {
        if !item.is_mapping() {
            return Err(invalid(format!("configs: item {item:?} is not a mapping")));
        }
        let mut addresses = yaml_list(item, "addresses")?;
        if addresses.is_empty() {
            addresses.push(ANYHOST_VALUE.to_owned());
        }
        let side = yaml_str(item, "side");
        let condition = ConditionMatch::from_yaml(item.get("match"))?;
        let mut params = format!("category={DYNAMIC_CONFIGURATORS_CATEGORY}");
        if let Some(side) = &side {
            params.push_str(&format!("&side={side}"));
        }
        let parameters = match item.get("parameters") {
            Some(Yaml::Mapping(m)) if !m.is_empty() => m,
            _ => {
                return Err(invalid(
                    "configs: please specify at least one parameter you want to change (parameters)",
                ));
            }
        };
        for (k, v) in parameters {
            let (Some(k), Some(v)) = (scalar(k), scalar(v)) else {
                return Err(invalid(format!("parameters: {k:?}: {v:?} is not a scalar")));
            };
            params.push_str(&format!("&{k}={v}"));
        }
        let provider_addresses = yaml_list(item, "providerAddresses")?;
        if !provider_addresses.is_empty() {
            params.push_str(&format!(
                "&{}={}",
                keys::OVERRIDE_PROVIDERS_KEY,
                provider_addresses.join(",")
            ));
        } else if side.as_deref() == Some(keys::PROVIDER_SIDE) {
            params.push_str(&format!(
                "&{}={}",
                keys::OVERRIDE_PROVIDERS_KEY,
                addresses.join(",")
            ));
        }
        // Java: a `general` (or untyped) item follows the rule's `enabled`, another
        // type its own.
        let item_enabled = match yaml_str(item, "type").as_deref() {
            None | Some("general") => enabled,
            Some(_) => yaml_bool(item, "enabled", true),
        };
        for addr in &addresses {
            if application {
                let mut services = yaml_list(item, "services")?;
                if services.is_empty() {
                    services.push(keys::ANY_VALUE.to_owned());
                }
                for s in &services {
                    let text = format!(
                        "override://{addr}/{}{params}&application={key}&enabled={item_enabled}\
                         &category={APP_DYNAMIC_CONFIGURATORS_CATEGORY}&configVersion={config_version}",
                        service_part(s)?
                    );
                    urls.push((parse_url(&text)?, condition.clone()));
                }
            } else {
                let base = format!(
                    "override://{addr}/{}{params}&enabled={item_enabled}&configVersion={config_version}",
                    service_part(&key)?
                );
                let apps = yaml_list(item, "applications")?;
                if apps.is_empty() {
                    urls.push((parse_url(&base)?, condition.clone()));
                } else {
                    for app in &apps {
                        urls.push((
                            parse_url(&format!("{base}&application={app}"))?,
                            condition.clone(),
                        ));
                    }
                }
            }
        }
    }
    Ok(urls)
}

fn scalar(v: &Yaml) -> Option<String> {
    match v {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Number(n) => Some(n.to_string()),
        Yaml::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn parse_url(text: &str) -> Result<Url, ClusterError> {
    Url::parse(text).map_err(|e| invalid(format!("bad rule url {text}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn application_scope_gives_one_url_per_service_and_address() {
        let urls = parse_configurators(
            "configVersion: v3.0\nscope: application\nkey: web\nenabled: false\nconfigs:\n  - addresses: [10.0.0.1, 10.0.0.2]\n    services: [a.B, g/c.D:2]\n    parameters:\n      retries: 3\n",
        )
        .unwrap();
        assert_eq!(urls.len(), 4);
        let u = &urls[1];
        assert_eq!(u.host(), Some("10.0.0.1"));
        assert_eq!(u.path(), Some("c.D"));
        assert_eq!(u.get_param("group"), Some("g"));
        assert_eq!(u.get_param("version"), Some("2"));
        assert_eq!(u.get_param("application"), Some("web"));
        assert_eq!(u.get_param("enabled"), Some("false"));
        // The later `category` wins, as in Java's URL.valueOf.
        assert_eq!(u.get_param("category"), Some("appdynamicconfigurators"));
        assert_eq!(u.get_param("retries"), Some("3"));
    }

    #[test]
    fn provider_side_lists_provider_addresses_and_apps_split() {
        let urls = parse_configurators(
            "configVersion: v3.0\nkey: a.B\nconfigs:\n  - side: provider\n    addresses: [1.2.3.4:20880]\n    applications: [x, y]\n    parameters: {weight: 200}\n",
        )
        .unwrap();
        assert_eq!(urls.len(), 2);
        assert_eq!(
            urls[0].get_param("providerAddresses"),
            Some("1.2.3.4:20880")
        );
        assert_eq!(urls[1].get_param("application"), Some("y"));
        assert_eq!(urls[0].port(), 20880);
    }

    #[test]
    fn legacy_json_list_and_bad_rules() {
        let urls = parse_configurators(
            r#"["override://0.0.0.0/a.B?timeout=1", "override://10.0.0.1/a.B?weight=2"]"#,
        )
        .unwrap();
        assert_eq!(urls.len(), 2);
        assert_eq!(urls[1].get_param("weight"), Some("2"));
        let no_params =
            parse_configurators("key: a.B\nconfigs:\n  - side: consumer\n").unwrap_err();
        assert!(no_params.to_string().contains("parameter"), "{no_params}");
        assert!(parse_configurators("key: a.B\nconfigs: [x").is_err());
        assert!(
            parse_configurators("configs:\n  - parameters: {timeout: 1}\n").is_err(),
            "no key"
        );
        assert!(parse_configurators("key: a.B\nconfigs: 3\n").is_err());
    }
}
