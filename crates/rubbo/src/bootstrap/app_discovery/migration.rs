//! Migration between interface-level and application-level discovery on the consumer
//! (Java's `MigrationRuleListener`, `MigrationRuleHandler`, `MigrationInvoker` and
//! `DefaultMigrationAddressComparator`): `FORCE_INTERFACE`, `APPLICATION_FIRST`
//! (Java's default: application level while its address count is at least
//! `threshold` times the interface level's, default 0.0) and `FORCE_APPLICATION`.
//! The step comes from the dynamic rule (`{app}.migration` in the config center, or
//! the local `dubbo-migration.yaml`), else the reference's `migration.step`, else the
//! application's (`dubbo.application.migration.step`, or
//! `dubbo.application.service-discovery.migration`), else `APPLICATION_FIRST`; a new
//! rule moves every reference at run time.

pub(crate) mod invoker;
pub(crate) mod listener;
pub(crate) mod rule;

use rubbo_common::RpcError;

use super::super::config_err;

/// The reference (or application) parameter of the step.
pub(crate) const MIGRATION_STEP_KEY: &str = "migration.step";
/// The application attribute of the step (Java's
/// `dubbo.application.service-discovery.migration`).
pub(crate) const SERVICE_DISCOVERY_MIGRATION_KEY: &str = "service-discovery.migration";
/// The reference (or application) parameter of the threshold.
pub(crate) const MIGRATION_THRESHOLD_KEY: &str = "migration.threshold";
/// The application attribute of the wait before the local rule file applies, in
/// milliseconds (Java's `dubbo.application.migration.delay`).
pub(crate) const LOCAL_RULE_DELAY_KEY: &str = "migration.delay";
/// Whether the local rule file is read (Java's system property).
pub(crate) const MIGRATION_FILE_ENABLE_KEY: &str = "dubbo.migration-file.enable";
/// The local rule file (Java's system property, else environment variable).
pub(crate) const MIGRATION_FILE_KEY: &str = "dubbo.migration.file";

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
