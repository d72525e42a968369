//! `--config FILE` and `--set KEY=VALUE` (both repeatable, before or after the
//! subcommand): Java's property tree for every command, mapped onto the commands'
//! own flags where they overlap.
//!
//! Precedence, strongest first: an explicit flag (`demo --loadbalance`), `--set`,
//! the environment (`DUBBO_CONSUMER_TIMEOUT`), the `--config` files (later ones
//! winning), the command's own defaults.
//!
//! | flag or setting | key |
//! |---|---|
//! | `demo --loadbalance` | `dubbo.consumer.loadbalance` |
//! | `demo --cluster` | `dubbo.consumer.cluster` |
//! | demo's call timeout (2000 ms) | `dubbo.consumer.timeout` |
//! | `invoke`: parameters the URL does not set | `dubbo.consumer.*`, `dubbo.references.<interface>.*` |

use std::path::PathBuf;

use anyhow::{Context, Result};
use rubbo::config::{Config, ConfigLoader};

/// The loader for `--config` files and `--set` arguments, under the process's
/// environment; the caller adds its flags (explicit ones as code, defaults as
/// defaults) and loads.
pub(crate) fn loader(files: &[PathBuf], sets: &[String]) -> Result<ConfigLoader> {
    let mut loader = Config::loader();
    for f in files {
        loader = loader
            .file(f)
            .with_context(|| format!("--config {}", f.display()))?;
    }
    for s in sets {
        loader = loader.set_arg(s)?;
    }
    Ok(loader.process_env())
}

/// Loads `loader`'s configuration with the config center's externalized
/// configuration (`dubbo.properties` there, or in the registry serving as config
/// center) laid in at Java's precedence: [`rubbo::load_config`], on a runtime of its
/// own, since the commands start theirs after the configuration is known.
pub(crate) fn resolve(loader: ConfigLoader) -> Result<Config> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a runtime to load the configuration")?;
    let config = runtime.block_on(rubbo::load_config(loader))?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::loader;

    #[test]
    fn set_arguments_and_flags_rank_as_documented() {
        let dir = std::env::temp_dir().join(format!("rubbo-cli-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("app.yml");
        std::fs::write(
            &file,
            "dubbo:\n  consumer:\n    loadbalance: random\n    cluster: failfast\n    timeout: 100\n",
        )
        .unwrap();
        let sets = ["dubbo.consumer.loadbalance=roundrobin".to_owned()];
        let config = loader(&[file], &sets)
            .unwrap()
            // An explicit flag is code: it beats --set.
            .code("dubbo.consumer.cluster", "failover")
            .default_value("dubbo.consumer.timeout", "2000")
            .load()
            .unwrap();
        let p = &config.consumer().params;
        assert_eq!(p["loadbalance"], "roundrobin");
        assert_eq!(p["cluster"], "failover");
        assert_eq!(p["timeout"], "100");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_set_without_equals_is_an_error() {
        let err = loader(&[], &["dubbo.consumer.timeout".to_owned()]).unwrap_err();
        assert!(err.to_string().contains("KEY=VALUE"), "{err}");
    }
}
