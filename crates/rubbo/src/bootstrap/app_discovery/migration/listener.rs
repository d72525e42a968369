//! The dynamic migration rule of one application (Java's `MigrationRuleListener`):
//! listens to `{app}.migration` in group `DUBBO_SERVICEDISCOVERY_MIGRATION` of the
//! config center and moves every reference of the application to the step the rule
//! gives it, one rule at a time, in the order they came. An empty or deleted rule
//! brings back the initial step (the reference's, else the application's, else
//! `APPLICATION_FIRST`); the same text again changes nothing; a rule that does not
//! parse is logged with its key and the previous rule stays.
//!
//! The local rule file (`dubbo-migration.yaml`, or `dubbo.migration.file`) is read
//! only with `dubbo.migration-file.enable=true`, as Java, and applied
//! `dubbo.application.migration.delay` milliseconds (default 60000) after the start,
//! only if the config center has given no rule by then.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use rubbo_registry::{ConfigChangeEvent, SharedConfigListener, SharedDynamicConfiguration};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::invoker::MigrationInvoker;
use super::rule::MigrationRule;

/// The config center group of migration rules.
pub(crate) const MIGRATION_GROUP: &str = "DUBBO_SERVICEDISCOVERY_MIGRATION";
/// The suffix of the rule key (`{app}.migration`).
pub(crate) const MIGRATION_SUFFIX: &str = ".migration";
/// Java's default wait before the local rule file applies, in milliseconds.
pub(crate) const DEFAULT_LOCAL_DELAY_MS: u64 = 60_000;

/// The local rule file, as Java's `Environment.loadMigrationRule` finds it.
#[derive(Debug, Clone, Default)]
pub(crate) struct LocalRule {
    /// `dubbo.migration-file.enable`.
    pub(crate) enabled: bool,
    /// `dubbo.migration.file` (default `dubbo-migration.yaml`, relative to the
    /// working directory).
    pub(crate) path: Option<String>,
    /// `dubbo.application.migration.delay`, in milliseconds.
    pub(crate) delay_ms: Option<u64>,
}

impl LocalRule {
    /// The file's text, when enabled and readable.
    fn read(&self) -> Option<String> {
        if !self.enabled {
            return None;
        }
        let path = self
            .path
            .clone()
            .filter(|p| !p.trim().is_empty())
            .or_else(|| std::env::var("dubbo.migration.file").ok())
            .filter(|p| !p.trim().is_empty())
            .unwrap_or_else(|| "dubbo-migration.yaml".to_owned());
        match std::fs::read_to_string(&path) {
            Ok(text) if !text.trim().is_empty() => {
                info!(path = %path, "local migration rule read");
                Some(text)
            }
            Ok(_) => None,
            Err(e) => {
                warn!(path = %path, error = %e, "local migration rule not read (ignored)");
                None
            }
        }
    }
}

/// The rule in force and the references it moves.
#[derive(Debug)]
pub(crate) struct RuleListener {
    key: String,
    /// The last text seen (`None`: no rule, Java's `INIT`).
    raw: Mutex<Option<String>>,
    rule: Mutex<Arc<MigrationRule>>,
    /// Bumped at each new rule, so a reference made meanwhile catches up.
    generation: AtomicU64,
    handlers: Mutex<Vec<Weak<MigrationInvoker>>>,
    tx: mpsc::UnboundedSender<Option<String>>,
    closing: CancellationToken,
    listening: Mutex<Option<(SharedDynamicConfiguration, SharedConfigListener)>>,
}

impl RuleListener {
    /// Listens for application `app` on `cc` (if any) and `local`; the rule there now
    /// is in force when this returns.
    pub(crate) async fn start(
        app: &str,
        cc: Option<SharedDynamicConfiguration>,
        local: &LocalRule,
    ) -> Arc<RuleListener> {
        let (tx, rx) = mpsc::unbounded_channel();
        let this = Arc::new(RuleListener {
            key: format!("{app}{MIGRATION_SUFFIX}"),
            raw: Mutex::new(None),
            rule: Mutex::new(Arc::new(MigrationRule::default())),
            generation: AtomicU64::new(0),
            handlers: Mutex::new(Vec::new()),
            tx,
            closing: CancellationToken::new(),
            listening: Mutex::new(None),
        });
        if let Some(cc) = cc {
            let tx = this.tx.clone();
            let listener: SharedConfigListener = Arc::new(move |e: ConfigChangeEvent| {
                let _ = tx.send(Some(e.content));
            });
            info!(key = %this.key, group = MIGRATION_GROUP, "listening for migration rules");
            match cc
                .add_listener(&this.key, MIGRATION_GROUP, listener.clone())
                .await
            {
                Ok(content) => {
                    this.set_raw(content);
                }
                Err(e) => {
                    warn!(key = %this.key, group = MIGRATION_GROUP, error = %e, "cannot listen for migration rules");
                }
            }
            *this.listening.lock() = Some((cc, listener));
        }
        tokio::spawn(Self::run(Arc::downgrade(&this), rx, this.closing.clone()));
        if let Some(text) = local.read() {
            let delay = Duration::from_millis(local.delay_ms.unwrap_or(DEFAULT_LOCAL_DELAY_MS));
            let weak = Arc::downgrade(&this);
            let closing = this.closing.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = closing.cancelled() => {}
                    () = tokio::time::sleep(delay) => {
                        if let Some(this) = weak.upgrade() {
                            if this.raw.lock().is_none() {
                                let _ = this.tx.send(Some(text));
                            }
                        }
                    }
                }
            });
        }
        this
    }

    /// The rule key (`{app}.migration`).
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// The rule in force, with its generation.
    pub(crate) fn rule(&self) -> (Arc<MigrationRule>, u64) {
        let r = self.rule.lock().clone();
        (r, self.generation.load(Ordering::Acquire))
    }

    /// Takes `raw` (`None` or blank: no rule). Whether it differs from the last text.
    pub(crate) fn set_raw(&self, raw: Option<String>) -> bool {
        let raw = raw.filter(|r| !r.trim().is_empty());
        let mut last = self.raw.lock();
        if *last == raw {
            return false;
        }
        *last = raw.clone();
        drop(last);
        let rule = match &raw {
            None => MigrationRule::default(),
            Some(text) => match MigrationRule::parse(text) {
                Ok(r) => r,
                Err(e) => {
                    warn!(key = %self.key, group = MIGRATION_GROUP, error = %e, "bad migration rule ignored; the previous rule stays");
                    return true;
                }
            },
        };
        info!(key = %self.key, withdrawn = raw.is_none(), "migration rule in force");
        *self.rule.lock() = Arc::new(rule);
        self.generation.fetch_add(1, Ordering::AcqRel);
        true
    }

    /// Adds a reference the rules move.
    pub(crate) fn add(&self, invoker: &Arc<MigrationInvoker>) {
        let mut h = self.handlers.lock();
        h.retain(|w| w.strong_count() > 0);
        h.push(Arc::downgrade(invoker));
    }

    async fn run(
        this: Weak<RuleListener>,
        mut rx: mpsc::UnboundedReceiver<Option<String>>,
        closing: CancellationToken,
    ) {
        loop {
            let raw = tokio::select! {
                () = closing.cancelled() => break,
                r = rx.recv() => match r {
                    Some(r) => r,
                    None => break,
                },
            };
            let Some(me) = this.upgrade() else { break };
            if !me.set_raw(raw) {
                continue;
            }
            let (rule, _) = me.rule();
            let handlers: Vec<Arc<MigrationInvoker>> = me
                .handlers
                .lock()
                .iter()
                .filter_map(Weak::upgrade)
                .collect();
            drop(me);
            let moves = handlers.iter().map(|h| {
                let rule = rule.clone();
                async move {
                    if let Err(e) = h.migrate(&rule, None).await {
                        warn!(error = %e, "migration failed; the previous step stays");
                    }
                }
            });
            futures::future::join_all(moves).await;
        }
    }

    /// Stops listening.
    pub(crate) fn close(&self) {
        self.closing.cancel();
        if let Some((cc, l)) = self.listening.lock().take() {
            cc.remove_listener(&self.key, MIGRATION_GROUP, &l);
        }
        self.handlers.lock().clear();
    }
}
