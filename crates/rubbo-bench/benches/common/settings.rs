//! Settings from the environment, shared by the bench targets (`echo`, `stream`):
//! included by each with `#[path]`, since bench targets share no module otherwise.

use std::str::FromStr;

/// `name` parsed, or `default` when it is not set.
pub(crate) fn env<T: FromStr>(name: &str, default: T) -> anyhow::Result<T>
where
    T::Err: std::fmt::Display,
{
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .map_err(|e| anyhow::anyhow!("{name}={v}: {e}")),
        Err(_) => Ok(default),
    }
}

/// `name` (else `default`) as a comma-separated list, each item parsed.
pub(crate) fn env_list<T: FromStr>(name: &str, default: &str) -> anyhow::Result<Vec<T>>
where
    T::Err: std::fmt::Display,
{
    let v = std::env::var(name).unwrap_or_else(|_| default.to_owned());
    v.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            s.trim()
                .parse()
                .map_err(|e| anyhow::anyhow!("{name}={v}: {e}"))
        })
        .collect()
}
