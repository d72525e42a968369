//! The router chain.

use std::fmt;
use std::sync::{Arc, Weak};

use arc_swap::{ArcSwap, ArcSwapOption};
use rubbo_common::{BoxInvoker, Invocation, Url};

use super::condition::RuleScope;
use super::snapshot::{self, Step};
use super::{
    Candidates, ConditionRule, ConditionRuleRouter, MockRouter, RouteMeta, RouteRecorder, Router,
    TagRouter, TagRule,
};
use crate::ClusterError;

/// The routers of one reference, in priority order, with handles on the built-in rule
/// routers so rules can be replaced while calls go on.
///
/// ```
/// use rubbo_cluster::RouterChain;
/// let chain = RouterChain::builtin();
/// chain.set_rule("org.demo.Greeter::.condition-router",
///     "scope: service\nkey: \"org.demo.Greeter::\"\nconditions:\n  - => host = 10.0.0.1").unwrap();
/// chain.set_rule("demo-provider.tag-router", "tags:\n  - name: gray\n    addresses: [10.0.0.2]").unwrap();
/// chain.remove_rule("demo-provider.tag-router");
/// ```
pub struct RouterChain {
    routers: ArcSwap<Vec<Arc<dyn Router>>>,
    meta: ArcSwapOption<MetaCache>,
    tag: Arc<TagRouter>,
    service: Arc<ConditionRuleRouter>,
    app: Arc<ConditionRuleRouter>,
    recorder: RouteRecorder,
}

impl fmt::Debug for RouterChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self
            .routers
            .load()
            .iter()
            .map(|r| r.name().to_owned())
            .collect();
        f.debug_struct("RouterChain")
            .field("routers", &names)
            .finish()
    }
}

impl Default for RouterChain {
    fn default() -> Self {
        Self::builtin()
    }
}

impl RouterChain {
    /// The built-in chain: mock, tag, service condition, application condition.
    pub fn builtin() -> Self {
        let tag = Arc::new(TagRouter::new());
        let service = Arc::new(ConditionRuleRouter::service());
        let app = Arc::new(ConditionRuleRouter::application());
        let routers: Vec<Arc<dyn Router>> = vec![
            Arc::new(MockRouter),
            tag.clone(),
            service.clone(),
            app.clone(),
        ];
        RouterChain {
            routers: ArcSwap::from_pointee(routers),
            meta: ArcSwapOption::empty(),
            tag,
            service,
            app,
            recorder: RouteRecorder::default(),
        }
    }

    /// The recorder of this chain's routings (Java's router snapshot), off until
    /// enabled.
    pub fn recorder(&self) -> &RouteRecorder {
        &self.recorder
    }

    /// The routers' names, in the order they run.
    pub fn router_names(&self) -> Vec<String> {
        self.routers
            .load()
            .iter()
            .map(|r| r.name().to_owned())
            .collect()
    }

    /// Adds a router, keeping priority order (ties: insertion order).
    pub fn add_router(&self, router: Arc<dyn Router>) {
        self.routers.rcu(|old| {
            let mut v: Vec<Arc<dyn Router>> = old.as_ref().clone();
            v.push(router.clone());
            v.sort_by_key(|r| r.priority());
            v
        });
    }

    /// The tag router.
    pub fn tag_router(&self) -> &Arc<TagRouter> {
        &self.tag
    }

    /// The service-scope condition router.
    pub fn service_router(&self) -> &Arc<ConditionRuleRouter> {
        &self.service
    }

    /// The application-scope condition router.
    pub fn app_router(&self) -> &Arc<ConditionRuleRouter> {
        &self.app
    }

    /// Sets a condition rule on the router of its scope.
    pub fn set_condition_rule(&self, rule: ConditionRule) {
        match rule.scope {
            RuleScope::Service => self.service.set_rule(Some(rule)),
            RuleScope::Application => self.app.set_rule(Some(rule)),
        }
    }

    /// Sets a tag rule.
    pub fn set_tag_rule(&self, rule: Option<TagRule>) {
        self.tag.set_rule(rule);
    }

    /// Applies a rule from the config center by its key: `*.condition-router` (scope
    /// read from the rule) or `*.tag-router`. An empty text removes the rule.
    pub fn set_rule(&self, key: &str, content: &str) -> Result<(), ClusterError> {
        if content.trim().is_empty() {
            self.remove_rule(key);
            return Ok(());
        }
        if key.ends_with(".tag-router") {
            self.tag.set_rule(Some(TagRule::from_yaml(content)?));
        } else {
            self.set_condition_rule(ConditionRule::from_yaml(content)?);
        }
        Ok(())
    }

    /// Removes the rule stored under `key` (a service key `a:b:c.condition-router`
    /// clears the service router, another `.condition-router` the application router).
    pub fn remove_rule(&self, key: &str) {
        if key.ends_with(".tag-router") {
            self.tag.set_rule(None);
        } else if let Some(k) = key.strip_suffix(".condition-router") {
            if k.contains(':') {
                self.service.set_rule(None);
            } else {
                self.app.set_rule(None);
            }
        }
    }

    fn meta_for(&self, list: &Arc<Vec<BoxInvoker>>) -> Arc<RouteMeta> {
        if let Some(cache) = self.meta.load().as_ref() {
            // The weak handle keeps the allocation, so an equal pointer is this list.
            if std::ptr::eq(cache.list.as_ptr(), Arc::as_ptr(list)) {
                return cache.meta.clone();
            }
        }
        let meta = Arc::new(RouteMeta::of(list));
        self.meta.store(Some(Arc::new(MetaCache {
            list: Arc::downgrade(list),
            meta: meta.clone(),
        })));
        meta
    }

    /// Routes a directory snapshot for one call, skipping unavailable invokers. When
    /// nothing is filtered out, the snapshot itself is returned (no copy).
    pub fn route_list(
        &self,
        list: &Arc<Vec<BoxInvoker>>,
        consumer: &Url,
        invocation: &Invocation,
    ) -> Arc<Vec<BoxInvoker>> {
        let meta = self.meta_for(list);
        let routers = self.routers.load();
        let mut c = Candidates::with_meta(list, &meta);
        c.retain(|i| i.is_available());
        if self.recorder.is_enabled() {
            c = self.route_recorded(&routers, c, consumer, invocation);
        } else {
            for r in routers.iter() {
                if c.is_empty() {
                    break;
                }
                c = r.route(c, consumer, invocation);
            }
        }
        if c.is_full() {
            list.clone()
        } else {
            Arc::new(c.to_vec())
        }
    }

    /// Routes `invokers` for one call, skipping unavailable ones.
    pub fn route(
        &self,
        invokers: &[BoxInvoker],
        consumer: &Url,
        invocation: &Invocation,
    ) -> Vec<BoxInvoker> {
        let routers = self.routers.load();
        let mut c = Candidates::new(invokers);
        c.retain(|i| i.is_available());
        if self.recorder.is_enabled() {
            c = self.route_recorded(&routers, c, consumer, invocation);
        } else {
            for r in routers.iter() {
                if c.is_empty() {
                    break;
                }
                c = r.route(c, consumer, invocation);
            }
        }
        c.to_vec()
    }

    /// Routes as the unrecorded path does, noting each router's input and output.
    fn route_recorded<'a>(
        &self,
        routers: &[Arc<dyn Router>],
        mut c: Candidates<'a>,
        consumer: &Url,
        invocation: &Invocation,
    ) -> Candidates<'a> {
        let input = snapshot::addresses(c.iter());
        let input_len = c.len();
        let mut steps = Vec::with_capacity(routers.len());
        for r in routers {
            if c.is_empty() {
                break;
            }
            let before = snapshot::addresses(c.iter());
            let before_len = c.len();
            c = r.route(c, consumer, invocation);
            steps.push(Step {
                name: r.name().to_owned(),
                input: before,
                input_len: before_len,
                output: snapshot::addresses(c.iter()),
                output_len: c.len(),
            });
        }
        let parent = Step {
            name: "Parent".to_owned(),
            input,
            input_len,
            output: snapshot::addresses(c.iter()),
            output_len: c.len(),
        };
        self.recorder.push(snapshot::render(
            &consumer.service_key(),
            invocation.method(),
            &parent,
            &steps,
        ));
        c
    }
}

struct MetaCache {
    list: Weak<Vec<BoxInvoker>>,
    meta: Arc<RouteMeta>,
}
