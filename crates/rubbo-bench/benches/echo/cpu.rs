//! On-CPU time of this process, or of some of its threads: the first field of
//! `/proc/self/task/*/schedstat` (nanoseconds; Linux only, `None` elsewhere).
//!
//! CPU time per call is the contention-proof figure: on a machine shared with other
//! work, req/s follows the CPU share the process gets, CPU per call does not.

use std::time::Duration;

/// The names (`comm`) of the Triple cells' server and client runtime threads; each
/// cell's CPU time is split by these prefixes.
pub(crate) const SERVER_THREADS: &str = "tri-server";
pub(crate) const CLIENT_THREADS: &str = "tri-client";

pub(crate) fn process_cpu() -> Option<Duration> {
    threads_cpu(|_| true)
}

/// On-CPU time of the threads whose name starts with `prefix`.
pub(crate) fn named_cpu(prefix: &str) -> Option<Duration> {
    threads_cpu(|name| name.starts_with(prefix))
}

fn threads_cpu(wanted: impl Fn(&str) -> bool) -> Option<Duration> {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let dir = task.ok()?.path();
        // A thread may exit between listing and reading: skip it.
        let Ok(name) = std::fs::read_to_string(dir.join("comm")) else {
            continue;
        };
        if !wanted(name.trim_end()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(dir.join("schedstat")) else {
            continue;
        };
        total += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}
