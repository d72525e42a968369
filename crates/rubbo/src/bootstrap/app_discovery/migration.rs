//! Migration between interface-level and application-level discovery on the consumer
//! (Java's `MigrationInvoker` with `DefaultMigrationAddressComparator`):
//! `FORCE_INTERFACE`, `APPLICATION_FIRST` (application level while its address count
//! is at least `threshold` times the interface level's, default 1.0; with no
//! interface-level address, application level as soon as it has one) and
//! `FORCE_APPLICATION`. The step is set globally
//! (`dubbo.application.service-discovery.migration`, or `migration.step`) or per
//! reference (`migration.step`); the dynamic rule of the config center is not read yet.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use rubbo_cluster::Directory;
use rubbo_common::{BoxInvoker, Invocation, InvokeFuture, Invoker, RpcError, Url};
use tracing::info;

use super::super::config_err;

/// The reference (or application) parameter of the step.
pub(crate) const MIGRATION_STEP_KEY: &str = "migration.step";
/// The application attribute of the step (Java's
/// `dubbo.application.service-discovery.migration`).
pub(crate) const SERVICE_DISCOVERY_MIGRATION_KEY: &str = "service-discovery.migration";
/// The reference (or application) parameter of the threshold.
pub(crate) const MIGRATION_THRESHOLD_KEY: &str = "migration.threshold";

/// A migration step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Interface level only.
    ForceInterface,
    /// Both; application level when it covers the interface level by the threshold.
    ApplicationFirst,
    /// Application level only.
    ForceApplication,
}

impl Step {
    /// Parses Java's names (case-insensitive).
    pub(crate) fn parse(s: &str) -> Result<Step, RpcError> {
        match s.trim().to_ascii_uppercase().as_str() {
            "FORCE_INTERFACE" => Ok(Step::ForceInterface),
            "APPLICATION_FIRST" => Ok(Step::ApplicationFirst),
            "FORCE_APPLICATION" => Ok(Step::ForceApplication),
            other => Err(config_err(format!(
                "{MIGRATION_STEP_KEY}={other}: expected FORCE_INTERFACE, APPLICATION_FIRST or FORCE_APPLICATION"
            ))),
        }
    }
}

/// One side of a migration: the reference and its directory (or directories).
#[derive(Debug)]
pub(crate) struct Side {
    pub(crate) invoker: BoxInvoker,
    pub(crate) directories: Vec<Arc<dyn Directory>>,
}

impl Side {
    fn addresses(&self) -> usize {
        self.directories
            .iter()
            .map(|d| d.all_invokers().len())
            .sum()
    }
}

/// `APPLICATION_FIRST`: each call goes to the side chosen by the address counts now.
#[derive(Debug)]
pub(crate) struct MigrationInvoker {
    pub(crate) interface: Side,
    pub(crate) application: Side,
    pub(crate) threshold: f64,
    /// 0 unset, 1 interface, 2 application: to log each switch once.
    chosen: AtomicU8,
}

impl MigrationInvoker {
    /// Over both sides.
    pub(crate) fn new(interface: Side, application: Side, threshold: f64) -> Self {
        MigrationInvoker {
            interface,
            application,
            threshold,
            chosen: AtomicU8::new(0),
        }
    }

    /// Whether application level serves now (Java's `shouldMigrate`).
    pub(crate) fn prefers_application(&self) -> bool {
        let new = self.application.addresses();
        let old = self.interface.addresses();
        let yes = if new == 0 {
            false
        } else if old == 0 {
            true
        } else {
            #[allow(clippy::cast_precision_loss)]
            let ratio = new as f64 / old as f64;
            ratio >= self.threshold
        };
        let code = if yes { 2 } else { 1 };
        if self.chosen.swap(code, Ordering::Relaxed) != code {
            info!(
                service = %self.interface.invoker.url().service_key(),
                application_addresses = new,
                interface_addresses = old,
                threshold = self.threshold,
                level = if yes { "application" } else { "interface" },
                "APPLICATION_FIRST: discovery level chosen"
            );
        }
        yes
    }

    fn current(&self) -> &BoxInvoker {
        if self.prefers_application() {
            &self.application.invoker
        } else {
            &self.interface.invoker
        }
    }
}

impl Invoker for MigrationInvoker {
    fn invoke(&self, invocation: Invocation) -> InvokeFuture {
        self.current().invoke(invocation)
    }
    fn url(&self) -> &Url {
        self.interface.invoker.url()
    }
    fn is_available(&self) -> bool {
        self.interface.invoker.is_available() || self.application.invoker.is_available()
    }
    fn destroy(&self) {
        self.interface.invoker.destroy();
        self.application.invoker.destroy();
    }
}
