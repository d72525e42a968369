//! Live governance rules from the config center for one reference: override rules at
//! application and service scope (Java's `ConsumerConfigurationListener` and
//! `ReferenceConfigurationListener`), condition routes (`ServiceStateRouter`,
//! `AppStateRouter`) and the tag route of the provider application
//! (`TagStateRouter`), each fed into the reference's replaceable sets.
//!
//! Keys, in group `dubbo` (Java's `DynamicConfiguration.DEFAULT_GROUP`):
//! `{app}.configurators`, `{interface}:{version}:{group}.configurators`,
//! `{interface}:{version}:{group}.condition-router`, `{app}.condition-router`,
//! `{provider app}.tag-router`. A deleted (or empty) key withdraws its rule; a rule
//! that does not parse is logged with its key and the reason, and the previous rule
//! stays.

use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use rubbo_cluster::configurator::{RuleSide, parse_rules};
use rubbo_cluster::router::{ConditionRule, ConditionRuleRouter, TagRule};
use rubbo_cluster::{Configurators, RouterChain};
use rubbo_common::Url;
use rubbo_registry::{
    CONDITION_ROUTER_SUFFIX, CONFIGURATORS_SUFFIX, ConfigChangeEvent, DEFAULT_GROUP,
    SharedConfigListener, SharedDynamicConfiguration, TAG_ROUTER_SUFFIX, rule_key,
};
use tracing::{info, warn};

/// The override rule sets of one reference, laid over provider URLs in Java's order:
/// the registry's `configurators` category, then the application's rules, then the
/// service's (so service scope beats application scope, and both beat the registry).
#[derive(Debug, Clone, Default)]
pub(super) struct RuleSets {
    pub(super) registry: Arc<Configurators>,
    pub(super) app: Arc<Configurators>,
    pub(super) service: Arc<Configurators>,
}

impl RuleSets {
    /// `url` re-shaped for the consumer at `host` of `application`.
    pub(super) fn configure(&self, url: &Url, host: &str, application: Option<&str>) -> Url {
        let side = RuleSide::Consumer { host, application };
        let url = self.registry.configure(url, side);
        let url = self.app.configure(&url, side);
        self.service.configure(&url, side)
    }
}

/// Called after an override rule changed, to list the providers again.
pub(super) type Changed = Arc<dyn Fn() + Send + Sync>;

/// What one key feeds.
#[derive(Clone)]
pub(super) enum Target {
    Overrides(Arc<Configurators>, Changed),
    Condition(Arc<ConditionRuleRouter>),
    Tag(Arc<RouterChain>),
}

impl Target {
    /// Adds a listener applying `key`'s changes (group `dubbo`) to this target, and
    /// applies its content now.
    pub(super) async fn listen(
        &self,
        cc: &SharedDynamicConfiguration,
        key: &str,
    ) -> SharedConfigListener {
        let t = self.clone();
        let listener: SharedConfigListener = Arc::new(move |e: ConfigChangeEvent| {
            t.apply(&e.key, &e.content);
        });
        match cc.add_listener(key, DEFAULT_GROUP, listener.clone()).await {
            Ok(Some(content)) => self.apply(key, &content),
            Ok(None) => {}
            Err(e) => warn!(key, error = %e, "cannot listen to rule key"),
        }
        listener
    }

    /// Applies `content` (empty: the rule is withdrawn) read under `key`.
    fn apply(&self, key: &str, content: &str) {
        let withdrawn = content.trim().is_empty();
        match self {
            Target::Overrides(set, changed) => {
                if withdrawn {
                    set.replace(Vec::new());
                } else {
                    match parse_rules(content) {
                        Ok(rules) => set.replace(rules),
                        Err(e) => {
                            warn!(key, error = %e, "bad override rule ignored; the previous rule stays");
                            return;
                        }
                    }
                }
                info!(key, rules = set.len(), "override rules applied");
                changed();
            }
            Target::Condition(router) => {
                if withdrawn {
                    router.set_rule(None);
                } else {
                    match ConditionRule::from_yaml(content) {
                        Ok(rule) => router.set_rule(Some(rule)),
                        Err(e) => {
                            warn!(key, error = %e, "bad condition route ignored; the previous rule stays");
                            return;
                        }
                    }
                }
                info!(key, withdrawn, "condition route applied");
            }
            Target::Tag(chain) => {
                if withdrawn {
                    chain.set_tag_rule(None);
                } else {
                    match TagRule::from_yaml(content) {
                        Ok(rule) => chain.set_tag_rule(Some(rule)),
                        Err(e) => {
                            warn!(key, error = %e, "bad tag route ignored; the previous rule stays");
                            return;
                        }
                    }
                }
                info!(key, withdrawn, "tag route applied");
            }
        }
    }
}

/// The config center listeners of one reference; [`close`](Self::close) removes them.
pub(super) struct Governance {
    cc: SharedDynamicConfiguration,
    chain: Arc<RouterChain>,
    listening: Mutex<Vec<(String, SharedConfigListener)>>,
    tag: Mutex<Option<(String, SharedConfigListener)>>,
}

impl fmt::Debug for Governance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<String> = self
            .listening
            .lock()
            .iter()
            .map(|(k, _)| k.clone())
            .collect();
        f.debug_struct("Governance")
            .field("keys", &keys)
            .field("tag", &self.tag.lock().as_ref().map(|(k, _)| k.clone()))
            .finish()
    }
}

impl Governance {
    /// Listens to the rule keys of `consumer` (application `application`) and applies
    /// what they hold now.
    pub(super) async fn start(
        cc: SharedDynamicConfiguration,
        consumer: &Url,
        application: Option<&str>,
        sets: &RuleSets,
        chain: Arc<RouterChain>,
        changed: Changed,
    ) -> Arc<Self> {
        let this = Arc::new(Governance {
            cc,
            chain: chain.clone(),
            listening: Mutex::new(Vec::new()),
            tag: Mutex::new(None),
        });
        let service = rule_key(consumer);
        let mut keys = Vec::new();
        if let Some(app) = application.filter(|a| !a.is_empty()) {
            keys.push((
                format!("{app}{CONFIGURATORS_SUFFIX}"),
                Target::Overrides(sets.app.clone(), changed.clone()),
            ));
        }
        keys.push((
            format!("{service}{CONFIGURATORS_SUFFIX}"),
            Target::Overrides(sets.service.clone(), changed),
        ));
        keys.push((
            format!("{service}{CONDITION_ROUTER_SUFFIX}"),
            Target::Condition(chain.service_router().clone()),
        ));
        if let Some(app) = application.filter(|a| !a.is_empty()) {
            keys.push((
                format!("{app}{CONDITION_ROUTER_SUFFIX}"),
                Target::Condition(chain.app_router().clone()),
            ));
        }
        for (key, target) in keys {
            let listener = this.listen(&key, target).await;
            this.listening.lock().push((key, listener));
        }
        this
    }

    /// Adds a listener applying `key`'s changes to `target`, and applies its content now.
    async fn listen(&self, key: &str, target: Target) -> SharedConfigListener {
        target.listen(&self.cc, key).await
    }

    /// Follows the tag route of provider application `app` (`{app}.tag-router`),
    /// leaving the previous application's.
    pub(super) async fn follow_provider_app(&self, app: &str) {
        let key = format!("{app}{TAG_ROUTER_SUFFIX}");
        if self.tag.lock().as_ref().is_some_and(|(k, _)| *k == key) {
            return;
        }
        if let Some((old, l)) = self.tag.lock().take() {
            self.cc.remove_listener(&old, DEFAULT_GROUP, &l);
            self.chain.set_tag_rule(None);
        }
        let listener = self.listen(&key, Target::Tag(self.chain.clone())).await;
        *self.tag.lock() = Some((key, listener));
    }

    /// Removes every listener.
    pub(super) fn close(&self) {
        for (key, l) in self.listening.lock().drain(..) {
            self.cc.remove_listener(&key, DEFAULT_GROUP, &l);
        }
        if let Some((key, l)) = self.tag.lock().take() {
            self.cc.remove_listener(&key, DEFAULT_GROUP, &l);
        }
    }
}
