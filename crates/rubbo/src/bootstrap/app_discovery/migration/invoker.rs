//! One reference that can move between interface-level and application-level
//! discovery at run time (Java's `MigrationInvoker`, `MigrationRuleHandler` and
//! `DefaultMigrationAddressComparator`).
//!
//! Each step keeps the side(s) it needs: `FORCE_INTERFACE` the interface-level
//! cluster, `FORCE_APPLICATION` the application-level one, `APPLICATION_FIRST` both,
//! each call taking the application level while its address count is at least
//! `threshold` times the interface level's (Java's default threshold 0.0: as soon as
//! it has one address), and falling back to the interface level when it has none or
//! is not available. A move first makes the new side (its first address list is
//! there when it is made), then switches, then retires the old side once its calls
//! in flight are done, so no call fails because of the move. A forced step is taken
//! only when the new side's addresses pass the same comparison, or with `force`;
//! else the previous step stays (Java's "probably not satisfy the threshold").

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::RwLock;
use rubbo_cluster::Directory;
use rubbo_common::{BoxFuture, BoxInvoker, Invocation, InvokeFuture, Invoker, RpcError, Url};
use tokio::sync::Notify;
use tracing::{debug, info, warn};

use super::Step;
use super::rule::{MigrationRule, Target};

/// How long a retired side waits for its calls in flight before it is destroyed.
const RETIRE_WAIT: Duration = Duration::from_secs(30);

/// Which discovery a side reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// The interface-level registry nodes.
    Interface,
    /// The application instances and their metadata.
    Application,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Interface => "interface",
            Level::Application => "application",
        }
    }
}

/// One side of a migration: a cluster invoker and its directory (or directories).
#[derive(Debug)]
pub(crate) struct Side {
    pub(crate) invoker: BoxInvoker,
    pub(crate) directories: Vec<Arc<dyn Directory>>,
    in_flight: Arc<InFlight>,
}

impl Side {
    /// Over `invoker`, whose addresses are those of `directories`.
    pub(crate) fn new(invoker: BoxInvoker, directories: Vec<Arc<dyn Directory>>) -> Self {
        Side {
            invoker,
            directories,
            in_flight: Arc::default(),
        }
    }

    /// Java's `getAddressSize`: every provider the directories hold.
    pub(crate) fn addresses(&self) -> usize {
        self.directories
            .iter()
            .map(|d| d.all_invokers().len())
            .sum()
    }

    fn invoke(&self, invocation: Invocation) -> InvokeFuture {
        let guard = InFlight::enter(&self.in_flight);
        let call = self.invoker.invoke(invocation);
        Box::pin(async move {
            let _guard = guard;
            call.await
        })
    }

    /// Destroys the side once its calls in flight are done (bounded).
    fn retire(self: Arc<Self>, level: Level, service: String) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            self.invoker.destroy();
            return;
        };
        let run = async move {
            let drained = tokio::time::timeout(RETIRE_WAIT, self.in_flight.drained())
                .await
                .is_ok();
            if !drained {
                warn!(service = %service, level = level.name(), "calls still in flight after {RETIRE_WAIT:?}: the old side is destroyed anyway");
            }
            self.invoker.destroy();
            debug!(service = %service, level = level.name(), "old discovery side destroyed");
        };
        handle.spawn(run);
    }
}

/// Counts the calls in flight on one side.
#[derive(Debug, Default)]
struct InFlight {
    n: AtomicUsize,
    idle: Notify,
}

struct Guard(Arc<InFlight>);

impl InFlight {
    fn enter(this: &Arc<InFlight>) -> Guard {
        this.n.fetch_add(1, Ordering::AcqRel);
        Guard(this.clone())
    }

    async fn drained(&self) {
        loop {
            let idle = self.idle.notified();
            if self.n.load(Ordering::Acquire) == 0 {
                return;
            }
            idle.await;
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.0.n.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Makes the sides of one reference.
pub(crate) trait SideMaker: Send + Sync + fmt::Debug + 'static {
    /// A new side of `level`; with `check` it fails when it has no provider.
    fn make(&self, level: Level, check: bool) -> BoxFuture<'_, Result<Side, RpcError>>;

    /// The provider applications of the interface (for `applications:` sub-rules).
    fn provider_apps(&self) -> BoxFuture<'_, Vec<String>>;
}

#[derive(Debug, Default)]
struct State {
    /// The step in force (`None` before the first migration).
    step: Option<Step>,
    /// The threshold the step was taken with (Java's `currentThreshold`).
    threshold: f32,
    /// The share of `APPLICATION_FIRST` calls that may go application-level.
    proportion: u64,
    interface: Option<Arc<Side>>,
    application: Option<Arc<Side>>,
    /// Java's `currentAvailableInvoker` for the forced steps.
    current: Option<Level>,
}

/// The reference: see the [module docs](self).
pub(crate) struct MigrationInvoker {
    url: Url,
    maker: Box<dyn SideMaker>,
    target: Target,
    /// The application's threshold (`dubbo.application.migration.threshold`).
    default_threshold: f32,
    state: RwLock<State>,
    /// One migration at a time (Java's handler lock).
    migrating: tokio::sync::Mutex<()>,
    calls: AtomicU64,
    /// 0 unset, 1 interface, 2 application: to log each change once.
    chosen: AtomicU8,
    destroyed: AtomicBool,
}

impl fmt::Debug for MigrationInvoker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.read();
        f.debug_struct("MigrationInvoker")
            .field("service", &self.target.display_key)
            .field("step", &st.step)
            .field("interface", &st.interface.is_some())
            .field("application", &st.application.is_some())
            .finish()
    }
}

impl MigrationInvoker {
    /// A reference at `url` for `target`; no side until [`migrate`](Self::migrate).
    pub(crate) fn new(
        url: Url,
        maker: Box<dyn SideMaker>,
        target: Target,
        default_threshold: f32,
    ) -> Self {
        MigrationInvoker {
            url,
            maker,
            target,
            default_threshold,
            state: RwLock::new(State {
                proportion: 100,
                ..State::default()
            }),
            migrating: tokio::sync::Mutex::new(()),
            calls: AtomicU64::new(0),
            chosen: AtomicU8::new(0),
            destroyed: AtomicBool::new(false),
        }
    }

    /// The step in force.
    pub(crate) fn step(&self) -> Option<Step> {
        self.state.read().step
    }

    /// Java's `MigrationRuleHandler.doMigrate`: moves to the step `rule` gives this
    /// reference. `first`: the reference is being made, so its sides are made with
    /// the reference's `check`, and a failure is returned (later ones are logged and
    /// the previous step stays). Whether the step was taken.
    pub(crate) async fn migrate(
        &self,
        rule: &MigrationRule,
        first: Option<bool>,
    ) -> Result<bool, RpcError> {
        let _one = self.migrating.lock().await;
        if self.destroyed.load(Ordering::Acquire) {
            return Ok(false);
        }
        let mut target = self.target.clone();
        if !rule.applications.is_empty() {
            target.provider_apps = self.maker.provider_apps().await;
        }
        let step = rule.step(&target)?;
        let threshold = rule.threshold(&target);
        let proportion = u64::try_from(rule.proportion(&target).clamp(0, 100)).unwrap_or(100);
        {
            let mut st = self.state.write();
            if st.step == Some(step) && st.threshold.to_bits() == threshold.to_bits() {
                st.proportion = proportion;
                return Ok(true);
            }
        }
        let from = self.step();
        let service = self.target.display_key.clone();
        let taken = match step {
            Step::ApplicationFirst => self.to_application_first(first).await?,
            Step::ForceInterface => {
                self.to_forced(Level::Interface, rule, &target, threshold, first)
                    .await?
            }
            Step::ForceApplication => {
                self.to_forced(Level::Application, rule, &target, threshold, first)
                    .await?
            }
        };
        if taken {
            let mut st = self.state.write();
            st.step = Some(step);
            st.threshold = threshold;
            st.proportion = proportion;
            info!(service = %service, from = ?from, to = ?step, "migration step taken");
        } else {
            warn!(service = %service, from = ?from, to = ?step, threshold, "migration step not taken: the new addresses do not pass the threshold (publish the rule again, or with force: true); the previous step stays");
        }
        Ok(taken)
    }

    /// Makes the side of `level` unless it is there.
    async fn ensure(&self, level: Level, first: Option<bool>) -> Result<(), RpcError> {
        let there = {
            let st = self.state.read();
            match level {
                Level::Interface => st.interface.is_some(),
                Level::Application => st.application.is_some(),
            }
        };
        if there {
            return Ok(());
        }
        let side = Arc::new(self.maker.make(level, first.unwrap_or(false)).await?);
        debug!(service = %self.target.display_key, level = level.name(), addresses = side.addresses(), "discovery side made");
        let mut st = self.state.write();
        match level {
            Level::Interface => st.interface = Some(side),
            Level::Application => st.application = Some(side),
        }
        Ok(())
    }

    async fn to_application_first(&self, first: Option<bool>) -> Result<bool, RpcError> {
        let a = self.ensure(Level::Interface, None).await;
        let b = self.ensure(Level::Application, None).await;
        match (a, b) {
            (Err(e), Err(f)) => {
                if first.is_some() {
                    return Err(e);
                }
                warn!(service = %self.target.display_key, interface_error = %e, application_error = %f, "APPLICATION_FIRST: neither discovery can be read");
                return Ok(false);
            }
            (Err(e), Ok(())) | (Ok(()), Err(e)) => {
                debug!(service = %self.target.display_key, error = %e, "APPLICATION_FIRST with one discovery only");
            }
            (Ok(()), Ok(())) => {}
        }
        let mut st = self.state.write();
        st.current = None;
        if first == Some(true) {
            let available = st
                .interface
                .as_ref()
                .is_some_and(|s| s.invoker.is_available())
                || st
                    .application
                    .as_ref()
                    .is_some_and(|s| s.invoker.is_available());
            if !available {
                return Err(RpcError::no_provider(
                    "no provider available at interface or application level (check=true; set check=false to start without one)",
                ));
            }
        }
        Ok(true)
    }

    /// `FORCE_INTERFACE` (`to` = interface) or `FORCE_APPLICATION`: Java's
    /// `migrateToForce{Interface,Application}Invoker`.
    async fn to_forced(
        &self,
        to: Level,
        rule: &MigrationRule,
        target: &Target,
        threshold: f32,
        first: Option<bool>,
    ) -> Result<bool, RpcError> {
        let from = match to {
            Level::Interface => Level::Application,
            Level::Application => Level::Interface,
        };
        if let Err(e) = self.ensure(to, first).await {
            if first.is_some() {
                return Err(e);
            }
            warn!(service = %self.target.display_key, level = to.name(), error = %e, "discovery side not made");
            return Ok(false);
        }
        let has_old = self.side(from).is_some();
        if has_old {
            let delay = rule.delay(target);
            if delay > 0 {
                tokio::time::sleep(Duration::from_secs(u64::try_from(delay).unwrap_or(0))).await;
            }
            let force = rule.force(target);
            let pass = force || {
                let st = self.state.read();
                match (&st.interface, &st.application) {
                    (Some(i), Some(a)) => {
                        let (new, old) = match to {
                            Level::Interface => (i, a),
                            Level::Application => (a, i),
                        };
                        should_migrate(new.addresses(), old.addresses(), self.threshold(threshold))
                    }
                    _ => true,
                }
            };
            if !pass {
                // Java drops the side it just made when the step stays on the other
                // forced step.
                let stays_on_other = matches!(
                    (self.step(), from),
                    (Some(Step::ForceApplication), Level::Application)
                        | (Some(Step::ForceInterface), Level::Interface)
                );
                if stays_on_other {
                    if let Some(side) = self.take(to) {
                        side.retire(to, self.target.display_key.clone());
                    }
                }
                return Ok(false);
            }
        }
        let old = {
            let mut st = self.state.write();
            st.current = Some(to);
            match from {
                Level::Interface => st.interface.take(),
                Level::Application => st.application.take(),
            }
        };
        if let Some(old) = old {
            old.retire(from, self.target.display_key.clone());
        }
        Ok(true)
    }

    fn side(&self, level: Level) -> Option<Arc<Side>> {
        let st = self.state.read();
        match level {
            Level::Interface => st.interface.clone(),
            Level::Application => st.application.clone(),
        }
    }

    fn take(&self, level: Level) -> Option<Arc<Side>> {
        let mut st = self.state.write();
        match level {
            Level::Interface => st.interface.take(),
            Level::Application => st.application.take(),
        }
    }

    /// The threshold in force: the rule's (or the reference's) when not negative,
    /// else the application's.
    fn threshold(&self, rule: f32) -> f32 {
        if rule >= 0.0 {
            rule
        } else {
            self.default_threshold
        }
    }

    /// The side a call takes now, with its level.
    fn pick(&self) -> Option<(Arc<Side>, Level)> {
        let st = self.state.read();
        let interface = || st.interface.clone().map(|s| (s, Level::Interface));
        let application = || st.application.clone().map(|s| (s, Level::Application));
        match st.step {
            Some(Step::ApplicationFirst) => {
                if st.proportion < 100 {
                    let n = self.calls.fetch_add(1, Ordering::Relaxed) % 100;
                    if n >= st.proportion {
                        return interface().or_else(application);
                    }
                }
                let (Some(i), Some(a)) = (&st.interface, &st.application) else {
                    return interface().or_else(application);
                };
                let new = a.addresses();
                let old = i.addresses();
                let yes = should_migrate(new, old, self.threshold(st.threshold))
                    && a.invoker.is_available();
                let code = if yes { 2 } else { 1 };
                if self.chosen.swap(code, Ordering::Relaxed) != code {
                    info!(
                        service = %self.target.display_key,
                        application_addresses = new,
                        interface_addresses = old,
                        level = if yes { "application" } else { "interface" },
                        "APPLICATION_FIRST: discovery level chosen"
                    );
                }
                if yes { application() } else { interface() }
            }
            _ => match st.current {
                Some(Level::Application) => application().or_else(interface),
                _ => interface().or_else(application),
            },
        }
    }

    /// Whether the side of `level` is there.
    #[cfg(test)]
    pub(crate) fn has(&self, level: Level) -> bool {
        self.side(level).is_some()
    }
}

/// Java's `DefaultMigrationAddressComparator.shouldMigrate`: the new side has an
/// address, and either the old one has none or new/old reaches `threshold`.
pub(crate) fn should_migrate(new: usize, old: usize, threshold: f32) -> bool {
    if new == 0 {
        return false;
    }
    if old == 0 {
        return true;
    }
    #[allow(clippy::cast_precision_loss)]
    let ratio = new as f32 / old as f32;
    ratio >= threshold
}

impl Invoker for MigrationInvoker {
    fn invoke(&self, invocation: Invocation) -> InvokeFuture {
        match self.pick() {
            Some((side, _)) => side.invoke(invocation),
            None => Box::pin(std::future::ready(Err(RpcError::no_provider(format!(
                "no discovery side for {} (destroyed?)",
                self.target.display_key
            ))))),
        }
    }

    fn url(&self) -> &Url {
        &self.url
    }

    fn is_available(&self) -> bool {
        let st = self.state.read();
        let up = |s: &Option<Arc<Side>>| s.as_ref().is_some_and(|s| s.invoker.is_available());
        match (st.step, st.current) {
            (Some(Step::ApplicationFirst), _) | (_, None) => {
                up(&st.interface) || up(&st.application)
            }
            (_, Some(Level::Interface)) => up(&st.interface),
            (_, Some(Level::Application)) => up(&st.application),
        }
    }

    fn destroy(&self) {
        self.destroyed.store(true, Ordering::Release);
        let (i, a) = {
            let mut st = self.state.write();
            (st.interface.take(), st.application.take())
        };
        for s in [i, a].into_iter().flatten() {
            s.invoker.destroy();
        }
    }
}
