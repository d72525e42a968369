//! Collects the sources and resolves each key by precedence (see the crate docs).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use crate::schema::{self, Kind};
use crate::{Config, ConfigError, Entry, Source};

/// Collects configuration sources; [`load`](Self::load) resolves them into a
/// [`Config`]. Each source may be added in any order: precedence is by kind (code,
/// `--set`, environment, the config center's application then global externalized
/// configuration, YAML, properties, defaults), then later over earlier.
#[derive(Debug, Clone, Default)]
pub struct ConfigLoader {
    code: Vec<(String, String)>,
    set: Vec<(String, String)>,
    env: Option<HashMap<String, String>>,
    yaml: Vec<(String, Entry)>,
    properties: Vec<(String, Entry)>,
    external: Vec<(String, Entry)>,
    app_external: Vec<(String, Entry)>,
    defaults: Vec<(String, String)>,
}

/// Splits a `--set` argument `KEY=VALUE` (the value may contain `=`; the key is
/// trimmed and must not be empty).
pub fn parse_set_arg(arg: &str) -> Result<(String, String), ConfigError> {
    match arg.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
        _ => Err(ConfigError::BadSet {
            arg: arg.to_owned(),
        }),
    }
}

impl ConfigLoader {
    /// Reads a file: YAML for `.yml` / `.yaml`, Java properties for `.properties`.
    pub fn file(self, path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default();
        let read = || {
            std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
                path: name.clone(),
                source,
            })
        };
        match ext.to_ascii_lowercase().as_str() {
            "yml" | "yaml" => {
                let text = read()?;
                self.yaml(&name, &text)
            }
            "properties" => {
                let text = read()?;
                self.properties(&name, &text)
            }
            _ => Err(ConfigError::UnknownFileKind { path: name }),
        }
    }

    /// Adds YAML text; `name` is what errors and sources call it.
    pub fn yaml(mut self, name: &str, text: &str) -> Result<Self, ConfigError> {
        let pairs = crate::yaml::flatten(text).map_err(|(line, message)| ConfigError::Syntax {
            path: name.to_owned(),
            line,
            message,
        })?;
        self.yaml.extend(pairs.into_iter().map(|(k, value, line)| {
            let source = Source::File {
                path: name.to_owned(),
                line,
            };
            (k, Entry { value, source })
        }));
        Ok(self)
    }

    /// Adds Java properties text; `name` is what errors and sources call it.
    pub fn properties(mut self, name: &str, text: &str) -> Result<Self, ConfigError> {
        let pairs =
            crate::properties::parse(text).map_err(|(line, message)| ConfigError::Syntax {
                path: name.to_owned(),
                line,
                message,
            })?;
        self.properties
            .extend(pairs.into_iter().map(|(k, value, line)| {
                let source = Source::File {
                    path: name.to_owned(),
                    line,
                };
                (k, Entry { value, source })
            }));
        Ok(self)
    }

    /// Adds the externalized configuration the config center holds under `key` in
    /// `group` (Java properties text): the global one (`dubbo.properties` in group
    /// `dubbo`), or with `app` the application's (the same key in the application's
    /// group). As in Java's `Environment`, both beat the files and lose to the
    /// environment (the application's beats the global one); code and `--set` beat
    /// them too.
    pub fn config_center_properties(
        mut self,
        key: &str,
        group: &str,
        app: bool,
        text: &str,
    ) -> Result<Self, ConfigError> {
        let name = format!("config center {group}/{key}");
        let pairs =
            crate::properties::parse(text).map_err(|(line, message)| ConfigError::Syntax {
                path: name.clone(),
                line,
                message,
            })?;
        let entries = pairs.into_iter().map(|(k, value, line)| {
            let source = Source::ConfigCenter {
                entry: format!("{group}/{key}"),
                line,
                application: app,
            };
            (k, Entry { value, source })
        });
        if app {
            self.app_external.extend(entries);
        } else {
            self.external.extend(entries);
        }
        Ok(self)
    }

    /// Uses these environment variables (replacing any given before).
    pub fn env_vars(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Self {
        self.env = Some(vars.into_iter().collect());
        self
    }

    /// Uses the process's environment (variables that are not UTF-8 are skipped).
    pub fn process_env(self) -> Self {
        self.env_vars(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        )
    }

    /// A `--set KEY=VALUE` value.
    pub fn set(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.set.push((key.into(), value.into()));
        self
    }

    /// A `--set` argument, `KEY=VALUE`.
    pub fn set_arg(self, arg: &str) -> Result<Self, ConfigError> {
        let (k, v) = parse_set_arg(arg)?;
        Ok(self.set(k, v))
    }

    /// A value set by the program itself: the strongest source.
    pub fn code(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.code.push((key.into(), value.into()));
        self
    }

    /// A default: the weakest source.
    pub fn default_value(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.defaults.push((key.into(), value.into()));
        self
    }

    /// Resolves every key, type-checks the known ones and warns about unknown ones.
    pub fn load(self) -> Result<Config, ConfigError> {
        let mut tree: BTreeMap<String, Entry> = BTreeMap::new();
        let plain =
            |tree: &mut BTreeMap<String, Entry>, pairs: Vec<(String, String)>, s: Source| {
                for (k, value) in pairs {
                    let source = s.clone();
                    tree.insert(k, Entry { value, source });
                }
            };
        plain(&mut tree, self.defaults, Source::Default);
        tree.extend(self.properties);
        tree.extend(self.yaml);
        tree.extend(self.external);
        tree.extend(self.app_external);
        if let Some(env) = &self.env {
            let names: BTreeSet<String> = tree
                .keys()
                .chain(self.set.iter().map(|(k, _)| k))
                .chain(self.code.iter().map(|(k, _)| k))
                .cloned()
                .collect();
            for key in env_keys(&names, env) {
                let found = crate::env::candidates(&key)
                    .into_iter()
                    .find_map(|var| env.get(&var).map(|v| (var, v.clone())));
                if let Some((var, value)) = found {
                    let source = Source::Env { var };
                    tree.insert(key, Entry { value, source });
                }
            }
        }
        plain(&mut tree, self.set, Source::Set);
        plain(&mut tree, self.code, Source::Code);
        Config::from_tree(tree)
    }
}

/// The keys the environment is consulted for: every attribute of the single sections,
/// every attribute of each id or interface another source names, the keys other
/// sources name, and variables spelled as `dubbo.` keys.
fn env_keys(names: &BTreeSet<String>, env: &HashMap<String, String>) -> BTreeSet<String> {
    let mut keys: BTreeSet<String> = names.clone();
    for (prefix, kind) in schema::SINGLE {
        for attr in schema::attributes(*kind) {
            keys.insert(format!("{prefix}.{attr}"));
        }
    }
    for name in names {
        let Some(p) = schema::parse(name) else {
            continue;
        };
        let prefix = match (p.kind, &p.method) {
            (_, _) if p.id.is_empty() => continue,
            (Kind::Registry, _) => format!("dubbo.registries.{}", p.id),
            (Kind::Protocol, _) => format!("dubbo.protocols.{}", p.id),
            (Kind::Service, _) => format!("dubbo.services.{}", p.id),
            (Kind::Reference, _) => format!("dubbo.references.{}", p.id),
            (Kind::Method, Some((m, true))) => format!("dubbo.services.{}.methods.{m}", p.id),
            (Kind::Method, Some((m, false))) => {
                format!("dubbo.references.{}.methods.{m}", p.id)
            }
            _ => continue,
        };
        for attr in schema::attributes(p.kind) {
            keys.insert(format!("{prefix}.{attr}"));
        }
    }
    keys.extend(env.keys().filter(|k| k.starts_with("dubbo.")).cloned());
    keys
}
