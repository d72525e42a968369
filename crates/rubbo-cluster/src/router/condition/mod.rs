//! The condition router: `when => then` rules (Java's `ConditionStateRouter`,
//! `ListenableStateRouter`, `MultiDestConditionRouter`).

mod expr;
pub(crate) mod rule;

use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use rubbo_common::keys::{Enabled, Force, Priority, RULE_KEY};
use rubbo_common::{Invocation, Url};

use super::{Candidates, Router};
use crate::Rand;
pub use expr::Condition;
pub use rule::{ConditionRule, Destination, MultiDestCondition, RuleScope};

/// Routes by a replaceable [`ConditionRule`]: each of its conditions narrows the list in
/// turn. With no rule (or a disabled or invalid one) it passes everything.
///
/// ```
/// use rubbo_cluster::router::{ConditionRule, ConditionRuleRouter};
///
/// let router = ConditionRuleRouter::service();
/// router.set_rule(Some(ConditionRule::from_yaml(
///     "configVersion: v3.0\nscope: service\nkey: \"org.demo.Greeter::\"\nconditions:\n  - method = find* => host = 10.0.0.1",
/// ).unwrap()));
/// assert!(router.rule().is_some());
/// ```
pub struct ConditionRuleRouter {
    name: &'static str,
    priority: i32,
    rule: ArcSwapOption<ConditionRule>,
    rand: Rand,
}

impl fmt::Debug for ConditionRuleRouter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConditionRuleRouter")
            .field("name", &self.name)
            .field("rule", &self.rule.load())
            .finish()
    }
}

impl ConditionRuleRouter {
    /// A router with no rule yet.
    pub fn new(name: &'static str, priority: i32) -> Self {
        ConditionRuleRouter {
            name,
            priority,
            rule: ArcSwapOption::empty(),
            rand: Rand::thread(),
        }
    }

    /// The service-scope router (`{interface}:{version}:{group}.condition-router`,
    /// priority 140).
    pub fn service() -> Self {
        Self::new("service-condition", 140)
    }

    /// The application-scope router (`{consumer app}.condition-router`, priority 150).
    pub fn application() -> Self {
        Self::new("app-condition", 150)
    }

    /// Uses `rand` for weighted destination choice (v3.1 rules).
    pub fn with_rand(mut self, rand: Rand) -> Self {
        self.rand = rand;
        self
    }

    /// Replaces the rule (`None` removes it). Calls in flight keep the old one.
    pub fn set_rule(&self, rule: Option<ConditionRule>) {
        self.rule.store(rule.map(Arc::new));
    }

    /// The current rule.
    pub fn rule(&self) -> Option<Arc<ConditionRule>> {
        self.rule.load_full()
    }
}

impl Router for ConditionRuleRouter {
    fn name(&self) -> &str {
        self.name
    }

    fn priority(&self) -> i32 {
        self.priority
    }

    fn route<'a>(
        &self,
        mut candidates: Candidates<'a>,
        consumer: &Url,
        invocation: &Invocation,
    ) -> Candidates<'a> {
        let guard = self.rule.load();
        let Some(rule) = guard.as_deref() else {
            return candidates;
        };
        if !rule.enabled || !rule.is_valid() {
            return candidates;
        }
        for condition in &rule.conditions {
            if candidates.is_empty() {
                break;
            }
            candidates = condition.route(candidates, consumer, invocation, rule.force);
        }
        for condition in &rule.multi_dest {
            if candidates.is_empty() {
                break;
            }
            candidates = condition.route(candidates, consumer, invocation, rule.force, &self.rand);
        }
        candidates
    }
}

/// A single condition used as a router on its own (Java's `ConditionStateRouter`
/// built from a `condition://` URL's `rule`).
///
/// ```
/// use rubbo_cluster::router::SingleConditionRouter;
/// use rubbo_common::Url;
/// let url = Url::parse("condition://0.0.0.0/org.demo.Greeter?rule=host%20%3D%2010.0.0.1%20%3D%3E%20host%20%3D%2010.0.0.2&force=true&priority=5").unwrap();
/// let router = SingleConditionRouter::from_url(&url).unwrap();
/// assert_eq!(router.condition().to_string(), "host = 10.0.0.1 => host = 10.0.0.2");
/// ```
#[derive(Debug, Clone)]
pub struct SingleConditionRouter {
    condition: Condition,
    force: bool,
    priority: i32,
    enabled: bool,
}

impl SingleConditionRouter {
    /// A router for `condition`.
    pub fn new(condition: Condition, force: bool, priority: i32) -> Self {
        SingleConditionRouter {
            condition,
            force,
            priority,
            enabled: true,
        }
    }

    /// From a `condition://` URL: `rule` (URL-encoded), `force` (false), `priority`
    /// (0), `enabled` (true).
    pub fn from_url(url: &Url) -> Result<Self, crate::ClusterError> {
        let raw = url.get_param(RULE_KEY).unwrap_or("");
        let rule = rubbo_common::url::decode(raw).unwrap_or_else(|_| raw.to_owned());
        Ok(SingleConditionRouter {
            condition: Condition::parse(&rule)?,
            force: url.param::<Force>(),
            priority: url.param::<Priority>() as i32,
            enabled: url.param::<Enabled>(),
        })
    }

    /// The condition.
    pub fn condition(&self) -> &Condition {
        &self.condition
    }
}

impl Router for SingleConditionRouter {
    fn name(&self) -> &str {
        "condition"
    }

    fn priority(&self) -> i32 {
        self.priority
    }

    fn route<'a>(&self, c: Candidates<'a>, consumer: &Url, inv: &Invocation) -> Candidates<'a> {
        if !self.enabled {
            return c;
        }
        self.condition.route(c, consumer, inv, self.force)
    }
}
