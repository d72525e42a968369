//! [`LogLevelSwitch`]: how `switchLogLevel` changes the level of the application's
//! `tracing` subscriber, through a `tracing_subscriber::reload` handle.

use tracing::level_filters::LevelFilter;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::reload::Handle;

/// Sets the level the application logs at. The application registers one with
/// [`Qos::with_log_levels`](crate::Qos::with_log_levels); implemented for the
/// `tracing_subscriber::reload` handles of a [`LevelFilter`] and of an
/// [`EnvFilter`] (whose directives the new level replaces).
///
/// ```
/// use tracing_subscriber::{filter::LevelFilter, prelude::*, reload};
///
/// let (filter, handle) = reload::Layer::new(LevelFilter::INFO);
/// let _subscriber = tracing_subscriber::registry().with(filter);
/// let switch: std::sync::Arc<dyn rubbo_qos::LogLevelSwitch> = std::sync::Arc::new(handle);
/// switch.set_level(LevelFilter::DEBUG).unwrap();
/// ```
pub trait LogLevelSwitch: Send + Sync + 'static {
    /// Logs at `level` from now on; the error says why it could not.
    fn set_level(&self, level: LevelFilter) -> Result<(), String>;
}

impl<S: 'static> LogLevelSwitch for Handle<LevelFilter, S> {
    fn set_level(&self, level: LevelFilter) -> Result<(), String> {
        self.reload(level).map_err(|e| e.to_string())
    }
}

impl<S: 'static> LogLevelSwitch for Handle<EnvFilter, S> {
    fn set_level(&self, level: LevelFilter) -> Result<(), String> {
        self.reload(EnvFilter::default().add_directive(level.into()))
            .map_err(|e| e.to_string())
    }
}

/// A level as Java's `switchLogLevel` reads it: `0`-`6` (ALL, TRACE, DEBUG, INFO,
/// WARN, ERROR, OFF) or the name, in any case. `ALL` is `TRACE`, the finest there is.
pub(crate) fn parse(arg: &str) -> Option<LevelFilter> {
    Some(match arg.to_ascii_uppercase().as_str() {
        "0" | "ALL" | "1" | "TRACE" => LevelFilter::TRACE,
        "2" | "DEBUG" => LevelFilter::DEBUG,
        "3" | "INFO" => LevelFilter::INFO,
        "4" | "WARN" => LevelFilter::WARN,
        "5" | "ERROR" => LevelFilter::ERROR,
        "6" | "OFF" => LevelFilter::OFF,
        _ => return None,
    })
}

/// The registered switch, in [`Qos`](crate::Qos) (which is `Debug`).
#[derive(Clone)]
pub(crate) struct Registered(pub(crate) std::sync::Arc<dyn LogLevelSwitch>);

impl std::fmt::Debug for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogLevelSwitch")
    }
}
