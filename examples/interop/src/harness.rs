//! Helpers the interop binaries share: writing a rule through Java's own
//! `DynamicConfiguration`, polling a condition with a bound, and waiting for the
//! signal that stops a provider.

use std::path::Path;
use std::time::{Duration, Instant};

/// Writes (`Some(content)`) or deletes `key` in `group` (Java's default group
/// `dubbo` when `None`) through the Java harness's `RuleWriter` (`run-java.sh` at
/// `rule_writer`), so that the path and bytes are what a Java application writes.
/// Bounded at 90 s; the error names what `RuleWriter` printed.
pub async fn java_rule(
    rule_writer: &Path,
    zk: &str,
    key: &str,
    group: Option<&str>,
    content: Option<&str>,
) -> Result<(), String> {
    let mut cmd = tokio::process::Command::new(rule_writer);
    cmd.arg("RuleWriter")
        .arg("--zk")
        .arg(zk)
        .arg("--key")
        .arg(key);
    if let Some(g) = group {
        cmd.arg("--group").arg(g);
    }
    let file = match content {
        Some(c) => {
            let path = std::env::temp_dir().join(format!(
                "interop-rule-{}-{}.yaml",
                std::process::id(),
                key.replace([':', '/'], "_")
            ));
            std::fs::write(&path, c).map_err(|e| format!("write {}: {e}", path.display()))?;
            cmd.arg("--file").arg(&path);
            Some(path)
        }
        None => {
            cmd.arg("--delete");
            None
        }
    };
    cmd.kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(90), cmd.output()).await;
    if let Some(f) = file {
        let _ = std::fs::remove_file(f);
    }
    let out = out
        .map_err(|_| "RuleWriter did not finish within 90 s".to_owned())?
        .map_err(|e| format!("cannot run RuleWriter: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let want = if content.is_some() {
        "WROTE "
    } else {
        "DELETED "
    };
    if out.status.success() && stdout.contains(want) {
        Ok(())
    } else {
        Err(format!(
            "RuleWriter exited {}: {} {}",
            out.status,
            stdout.trim(),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ))
    }
}

/// Polls `cond` every `every` until it holds (`true`) or `within` passes (`false`).
pub async fn eventually<F, Fut>(within: Duration, every: Duration, mut cond: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    loop {
        if cond().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(every).await;
    }
}

/// Waits for SIGTERM or Ctrl-C (Ctrl-C only where there is no SIGTERM), what stops
/// an interop provider so that it shuts down gracefully.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
