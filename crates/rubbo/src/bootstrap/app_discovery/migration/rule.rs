//! Java's dynamic migration rule (`MigrationRule` and `SubMigrationRule`): the YAML
//! read from the config center at `{app}.migration` in group
//! `DUBBO_SERVICEDISCOVERY_MIGRATION`, or from the local `dubbo-migration.yaml`.
//!
//! ```yaml
//! key: demo-consumer
//! step: APPLICATION_FIRST      # FORCE_INTERFACE | APPLICATION_FIRST | FORCE_APPLICATION
//! threshold: 1.0               # float; -1 (unset): the application's, else 0.0
//! proportion: 60               # int, percent of APPLICATION_FIRST calls that may go app-level
//! delay: 0                     # int, seconds to wait before comparing addresses
//! force: false                 # switch without the address comparison
//! interfaces:                  # by display service key (`interface[:version]`)
//!   - serviceKey: org.apache.dubbo.demo.DemoService:1.0.0
//!     step: FORCE_APPLICATION
//! applications:                # by provider application (from the mapping)
//!   - serviceKey: demo-provider
//!     step: FORCE_INTERFACE
//! ```
//!
//! Every value is read as Java does (`X.valueOf(value.toString())`): a step must be
//! spelled exactly, a threshold must be a float and a proportion or delay an integer,
//! else the whole rule is refused; `force` is true only for `true` (any case).
//! Each getter looks at the interface sub-rule, then the provider applications' sub-rules,
//! then the rule itself, then the reference's parameters (`migration.step`,
//! `migration.threshold`, `migration.promotion`, `migration.delay`, `migration.force`),
//! then (for the step) the application's setting, then `APPLICATION_FIRST`.

use serde_yaml_ng::Value;

use super::{MIGRATION_STEP_KEY, MIGRATION_THRESHOLD_KEY, Step};
use rubbo_common::RpcError;

/// The reference parameter of the share of `APPLICATION_FIRST` calls that may take
/// the application level (Java's `migration.promotion`).
pub(crate) const MIGRATION_PROMOTION_KEY: &str = "migration.promotion";
/// The reference parameter of the delay before comparing addresses, in seconds.
pub(crate) const MIGRATION_DELAY_KEY: &str = "migration.delay";
/// The reference parameter of `force`.
pub(crate) const MIGRATION_FORCE_KEY: &str = "migration.force";

/// The settings one rule (or sub-rule) may give.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Settings {
    pub(crate) step: Option<Step>,
    pub(crate) threshold: Option<f32>,
    pub(crate) proportion: Option<i32>,
    pub(crate) delay: Option<i32>,
    pub(crate) force: Option<bool>,
}

/// One entry of `interfaces:` or `applications:`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SubRule {
    /// The display service key (interfaces) or the application name (applications).
    pub(crate) service_key: Option<String>,
    pub(crate) settings: Settings,
}

/// A parsed rule; [`MigrationRule::default`] is Java's initial rule (nothing set).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct MigrationRule {
    pub(crate) key: Option<String>,
    pub(crate) settings: Settings,
    pub(crate) interfaces: Vec<SubRule>,
    pub(crate) applications: Vec<SubRule>,
}

/// What a rule is read for: one reference.
#[derive(Debug, Clone, Default)]
pub(crate) struct Target {
    /// Java's display service key: `interface`, or `interface:version`.
    pub(crate) display_key: String,
    /// The reference's parameters.
    pub(crate) params: Vec<(String, String)>,
    /// The application's step (`dubbo.application.migration.step`, or
    /// `dubbo.application.service-discovery.migration`).
    pub(crate) global_step: Option<String>,
    /// The provider applications of the interface (the mapping, or `provided-by`).
    pub(crate) provider_apps: Vec<String>,
}

impl Target {
    fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        other => serde_yaml_ng::to_string(other)
            .ok()
            .map(|s| s.trim().to_owned()),
    }
}

fn strict_step(s: &str) -> Result<Step, String> {
    match s {
        "FORCE_INTERFACE" => Ok(Step::ForceInterface),
        "APPLICATION_FIRST" => Ok(Step::ApplicationFirst),
        "FORCE_APPLICATION" => Ok(Step::ForceApplication),
        other => Err(format!(
            "step {other}: expected FORCE_INTERFACE, APPLICATION_FIRST or FORCE_APPLICATION"
        )),
    }
}

/// Java's `Float.valueOf` (surrounding blanks allowed, as Java's).
fn java_float(s: &str) -> Result<f32, String> {
    let t = s.trim();
    let t = t.strip_suffix(['f', 'F', 'd', 'D']).unwrap_or(t);
    t.parse::<f32>()
        .map_err(|_| format!("threshold {s}: not a number"))
}

/// Java's `Integer.valueOf` (no blanks, no fraction).
fn java_int(name: &str, s: &str) -> Result<i32, String> {
    s.parse::<i32>()
        .map_err(|_| format!("{name} {s}: not an integer"))
}

impl Settings {
    fn from_map(map: &serde_yaml_ng::Mapping) -> Result<Settings, String> {
        let get = |k: &str| map.get(k).and_then(text);
        Ok(Settings {
            step: get("step").map(|s| strict_step(&s)).transpose()?,
            threshold: get("threshold").map(|s| java_float(&s)).transpose()?,
            proportion: get("proportion")
                .map(|s| java_int("proportion", &s))
                .transpose()?,
            delay: get("delay").map(|s| java_int("delay", &s)).transpose()?,
            force: get("force").map(|s| s.eq_ignore_ascii_case("true")),
        })
    }
}

fn sub_rules(v: Option<&Value>) -> Result<Vec<SubRule>, String> {
    let Some(Value::Sequence(items)) = v else {
        return Ok(Vec::new());
    };
    items
        .iter()
        .map(|item| {
            let map = item
                .as_mapping()
                .ok_or_else(|| "a sub-rule is not a mapping".to_owned())?;
            Ok(SubRule {
                service_key: map.get("serviceKey").and_then(text),
                settings: Settings::from_map(map)?,
            })
        })
        .collect()
}

impl MigrationRule {
    /// Parses the YAML as Java's `MigrationRule.parse`; the error says why it is refused.
    pub(crate) fn parse(text_: &str) -> Result<MigrationRule, String> {
        let doc: Value = serde_yaml_ng::from_str(text_).map_err(|e| e.to_string())?;
        let map = doc
            .as_mapping()
            .ok_or_else(|| "the rule is not a mapping".to_owned())?;
        let key = match map.get("key") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err("key is not a string".to_owned()),
        };
        Ok(MigrationRule {
            key,
            settings: Settings::from_map(map)?,
            interfaces: sub_rules(map.get("interfaces"))?,
            applications: sub_rules(map.get("applications"))?,
        })
    }

    /// The first value `f` finds in the interface's sub-rule, then in a provider
    /// application's (Java's `getValue`).
    fn sub_value<T>(&self, t: &Target, f: impl Fn(&Settings) -> Option<T>) -> Option<T> {
        let by_key = |rules: &[SubRule], key: &str| {
            // Java keeps the last entry of a key.
            rules
                .iter()
                .rev()
                .find(|r| r.service_key.as_deref() == Some(key))
                .and_then(|r| f(&r.settings))
        };
        if let Some(v) = by_key(&self.interfaces, &t.display_key) {
            return Some(v);
        }
        t.provider_apps
            .iter()
            .find_map(|app| by_key(&self.applications, app))
    }

    /// The step for `t`.
    pub(crate) fn step(&self, t: &Target) -> Result<Step, RpcError> {
        if let Some(s) = self.sub_value(t, |s| s.step).or(self.settings.step) {
            return Ok(s);
        }
        match t.param(MIGRATION_STEP_KEY).or(t.global_step.as_deref()) {
            Some(s) => Step::parse(s),
            None => Ok(Step::ApplicationFirst),
        }
    }

    /// The threshold for `t`; negative: not set (the application's, else 0.0, apply).
    pub(crate) fn threshold(&self, t: &Target) -> f32 {
        self.sub_value(t, |s| s.threshold)
            .or(self.settings.threshold)
            .or_else(|| {
                t.param(MIGRATION_THRESHOLD_KEY)
                    .and_then(|v| java_float(v).ok())
            })
            .unwrap_or(-1.0)
    }

    /// The percentage of `APPLICATION_FIRST` calls that may take the application level.
    pub(crate) fn proportion(&self, t: &Target) -> i32 {
        self.sub_value(t, |s| s.proportion)
            .or(self.settings.proportion)
            .or_else(|| {
                t.param(MIGRATION_PROMOTION_KEY)
                    .and_then(|v| v.parse().ok())
            })
            .unwrap_or(100)
    }

    /// Seconds to wait before comparing the addresses of a forced step.
    pub(crate) fn delay(&self, t: &Target) -> i32 {
        self.sub_value(t, |s| s.delay)
            .or(self.settings.delay)
            .or_else(|| t.param(MIGRATION_DELAY_KEY).and_then(|v| v.parse().ok()))
            .unwrap_or(0)
    }

    /// Whether a forced step switches without comparing addresses.
    pub(crate) fn force(&self, t: &Target) -> bool {
        self.sub_value(t, |s| s.force)
            .or(self.settings.force)
            .or_else(|| {
                t.param(MIGRATION_FORCE_KEY)
                    .map(|v| v.eq_ignore_ascii_case("true"))
            })
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target {
            display_key: "org.demo.Greeter:1.0.0".into(),
            provider_apps: vec!["p1".into(), "p2".into()],
            ..Target::default()
        }
    }

    #[test]
    fn javas_fields_and_their_precedence() {
        let rule = MigrationRule::parse(
            "key: c\nstep: FORCE_APPLICATION\nthreshold: 0.5\nproportion: 60\ndelay: 2\nforce: TRUE\n\
             interfaces:\n  - serviceKey: org.demo.Greeter:1.0.0\n    threshold: \"0.8\"\n\
             applications:\n  - serviceKey: p2\n    step: FORCE_INTERFACE\n    proportion: 10\n",
        )
        .unwrap();
        let t = target();
        assert_eq!(rule.key.as_deref(), Some("c"));
        // The application sub-rule wins over the rule's step; the interface's over both.
        assert_eq!(rule.step(&t).unwrap(), Step::ForceInterface);
        assert!((rule.threshold(&t) - 0.8).abs() < 1e-6);
        assert_eq!(rule.proportion(&t), 10);
        assert_eq!(rule.delay(&t), 2);
        assert!(rule.force(&t));
        // Another interface with no mapped application: the rule's own values.
        let other = Target {
            display_key: "x.Y".into(),
            ..Target::default()
        };
        assert_eq!(rule.step(&other).unwrap(), Step::ForceApplication);
        assert!((rule.threshold(&other) - 0.5).abs() < 1e-6);
    }

    #[test]
    fn without_a_rule_the_reference_then_the_application_then_application_first() {
        let init = MigrationRule::default();
        let mut t = target();
        assert_eq!(init.step(&t).unwrap(), Step::ApplicationFirst);
        assert!(init.threshold(&t) < 0.0, "unset");
        assert_eq!(init.proportion(&t), 100);
        assert!(!init.force(&t));
        t.global_step = Some("FORCE_APPLICATION".into());
        assert_eq!(init.step(&t).unwrap(), Step::ForceApplication);
        t.params
            .push((MIGRATION_STEP_KEY.into(), "FORCE_INTERFACE".into()));
        t.params.push((MIGRATION_THRESHOLD_KEY.into(), "2".into()));
        assert_eq!(init.step(&t).unwrap(), Step::ForceInterface);
        assert!((init.threshold(&t) - 2.0).abs() < 1e-6);
        // A rule's step beats the reference's parameter.
        let rule = MigrationRule::parse("step: APPLICATION_FIRST").unwrap();
        assert_eq!(rule.step(&t).unwrap(), Step::ApplicationFirst);
    }

    #[test]
    fn values_java_refuses_refuse_the_rule() {
        for bad in [
            "step: force_application",
            "step: SOMETIMES",
            "threshold: half",
            "proportion: 1.5",
            "delay: soon",
            "interfaces:\n  - just-a-string",
            "- a list",
            "step: [",
        ] {
            assert!(MigrationRule::parse(bad).is_err(), "{bad}");
        }
        let r = MigrationRule::parse("force: nope\nthreshold: 1").unwrap();
        assert_eq!(r.settings.force, Some(false), "Boolean.valueOf");
        assert_eq!(r.settings.threshold, Some(1.0));
    }
}
