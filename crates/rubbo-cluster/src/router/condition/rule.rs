//! The YAML condition rule (`configVersion` v3.0 strings, v3.1 multi-destination).

use rubbo_common::{Invocation, Url};
use serde_yaml_ng::Value as Yaml;

use super::Condition;
use crate::router::Candidates;
use crate::{ClusterError, Rand};

/// Whether a rule applies to one service or to a whole application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleScope {
    /// `scope: service` (key `{interface}:{version}:{group}`).
    Service,
    /// `scope: application` (key = the application name).
    Application,
}

/// A weighted then-part of a v3.1 condition.
#[derive(Debug, Clone)]
pub struct Destination {
    /// Providers passing this then-expression form the destination.
    pub condition: Condition,
    /// Relative weight, default 100.
    pub weight: u32,
}

/// A v3.1 condition: `from.match` (when) and weighted `to` destinations.
#[derive(Debug, Clone)]
pub struct MultiDestCondition {
    /// The when-part.
    pub from: Condition,
    /// The destinations.
    pub to: Vec<Destination>,
}

impl MultiDestCondition {
    pub(crate) fn route<'a>(
        &self,
        candidates: Candidates<'a>,
        consumer: &Url,
        invocation: &Invocation,
        force: bool,
        rand: &Rand,
    ) -> Candidates<'a> {
        if !self.from.matches_when(consumer, invocation) {
            return candidates;
        }
        let subsets: Vec<(Candidates<'a>, u32)> = self
            .to
            .iter()
            .map(|d| (d.condition.then_filter(&candidates, consumer), d.weight))
            .filter(|(c, w)| !c.is_empty() && *w > 0)
            .collect();
        if subsets.is_empty() {
            if force {
                let mut empty = candidates;
                empty.clear();
                return empty;
            }
            return candidates;
        }
        let total: u32 = subsets.iter().map(|(_, w)| w).sum();
        let mut offset = rand.below(total as usize) as u32;
        for (c, w) in &subsets {
            if offset < *w {
                return c.clone();
            }
            offset -= w;
        }
        candidates
    }
}

/// A condition routing rule as stored in the config center (Java's
/// `ConditionRouterRule` / `MultiDestConditionRouterRule`).
///
/// ```
/// use rubbo_cluster::router::{ConditionRule, RuleScope};
/// let rule = ConditionRule::from_yaml(r#"
/// configVersion: v3.0
/// scope: service
/// force: true
/// runtime: true
/// enabled: true
/// key: "org.apache.dubbo.demo.DemoService::"
/// conditions:
///   - method = sayHello => host = 192.168.1.*
///   - arguments[0] = 1~100 & application = web => region = hz
/// "#).unwrap();
/// assert_eq!(rule.scope, RuleScope::Service);
/// assert!(rule.force && rule.is_valid());
/// assert_eq!(rule.conditions.len(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct ConditionRule {
    /// `configVersion`.
    pub config_version: Option<String>,
    /// `scope`.
    pub scope: RuleScope,
    /// `key`.
    pub key: Option<String>,
    /// `force` (default false): allow an empty result.
    pub force: bool,
    /// `runtime` (default true).
    pub runtime: bool,
    /// `enabled` (default true).
    pub enabled: bool,
    /// `priority` (default 0).
    pub priority: i32,
    /// `dynamic` (default false).
    pub dynamic: bool,
    /// v3.0 conditions, applied in order.
    pub conditions: Vec<Condition>,
    /// v3.1 conditions, applied in order.
    pub multi_dest: Vec<MultiDestCondition>,
}

fn invalid(reason: impl Into<String>) -> ClusterError {
    ClusterError::InvalidYaml {
        kind: "condition",
        reason: reason.into(),
    }
}

pub(crate) fn yaml_bool(map: &Yaml, key: &str, default: bool) -> bool {
    match map.get(key) {
        Some(Yaml::Bool(b)) => *b,
        Some(Yaml::String(s)) => s.trim().eq_ignore_ascii_case("true"),
        _ => default,
    }
}

pub(crate) fn yaml_str(map: &Yaml, key: &str) -> Option<String> {
    match map.get(key)? {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Number(n) => Some(n.to_string()),
        Yaml::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// `v3.1` -> (3, 1); unparsable versions compare as lowest.
fn version_tuple(v: &str) -> (u32, u32) {
    let v = v.trim().trim_start_matches(['v', 'V']);
    let mut it = v.split('.').map(|p| p.trim().parse::<u32>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

impl ConditionRule {
    /// A v3.0 rule holding `conditions` (handy for code-configured routes).
    pub fn new(conditions: Vec<Condition>, force: bool) -> Self {
        ConditionRule {
            config_version: Some("v3.0".into()),
            scope: RuleScope::Service,
            key: None,
            force,
            runtime: true,
            enabled: true,
            priority: 0,
            dynamic: false,
            conditions,
            multi_dest: Vec::new(),
        }
    }

    /// Whether the rule can route: it has at least one condition.
    pub fn is_valid(&self) -> bool {
        !self.conditions.is_empty() || !self.multi_dest.is_empty()
    }

    /// Parses the YAML rule. Versions above v3.1 are rejected.
    pub fn from_yaml(text: &str) -> Result<Self, ClusterError> {
        let doc: Yaml = serde_yaml_ng::from_str(text).map_err(|e| invalid(e.to_string()))?;
        if !doc.is_mapping() {
            return Err(invalid("the rule is not a mapping"));
        }
        let config_version = yaml_str(&doc, "configVersion");
        let version = config_version.as_deref().map_or((0, 0), version_tuple);
        if version > (3, 1) {
            return Err(invalid(format!(
                "configVersion {} is not supported (at most v3.1)",
                config_version.as_deref().unwrap_or("")
            )));
        }
        let scope = match yaml_str(&doc, "scope").as_deref() {
            Some("application") => RuleScope::Application,
            _ => RuleScope::Service,
        };
        let mut rule = ConditionRule {
            config_version,
            scope,
            key: yaml_str(&doc, "key"),
            force: yaml_bool(&doc, "force", false),
            runtime: yaml_bool(&doc, "runtime", true),
            enabled: yaml_bool(&doc, "enabled", true),
            priority: yaml_str(&doc, "priority")
                .and_then(|p| p.trim().parse().ok())
                .unwrap_or(0),
            dynamic: yaml_bool(&doc, "dynamic", false),
            conditions: Vec::new(),
            multi_dest: Vec::new(),
        };
        let items = match doc.get("conditions") {
            Some(Yaml::Sequence(items)) => items,
            None | Some(Yaml::Null) => return Ok(rule),
            Some(other) => {
                return Err(invalid(format!(
                    "conditions: expected a list, got {other:?}"
                )));
            }
        };
        for item in items {
            match item {
                Yaml::String(s) if version < (3, 1) => rule.conditions.push(Condition::parse(s)?),
                Yaml::Mapping(_) if version == (3, 1) => {
                    rule.multi_dest.push(parse_multi_dest(item)?)
                }
                other => {
                    return Err(invalid(format!(
                        "unexpected condition {other:?} for configVersion {:?}",
                        rule.config_version
                    )));
                }
            }
        }
        Ok(rule)
    }
}

fn parse_multi_dest(item: &Yaml) -> Result<MultiDestCondition, ClusterError> {
    let from = item
        .get("from")
        .and_then(|f| yaml_str(f, "match"))
        .unwrap_or_default();
    let from = Condition::parse(&format!("{from} => "))?;
    let mut to = Vec::new();
    if let Some(Yaml::Sequence(dests)) = item.get("to") {
        for d in dests {
            let m = yaml_str(d, "match").unwrap_or_default();
            let weight = yaml_str(d, "weight")
                .and_then(|w| w.trim().parse().ok())
                .unwrap_or(100);
            let condition = Condition::parse(&format!("=> {m}"))?;
            if !condition.then_is_empty() {
                to.push(Destination { condition, weight });
            }
        }
    }
    Ok(MultiDestCondition { from, to })
}
