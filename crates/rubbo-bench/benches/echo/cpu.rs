//! On-CPU time of this process: the sum over its threads of the first field of
//! `/proc/self/task/*/schedstat` (nanoseconds; Linux only, `None` elsewhere).
//!
//! CPU time per call is the contention-proof figure: on a machine shared with other
//! work, req/s follows the CPU share the process gets, CPU per call does not.

use std::time::Duration;

pub(crate) fn process_cpu() -> Option<Duration> {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let path = task.ok()?.path().join("schedstat");
        // A thread may exit between listing and reading: skip it.
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        total += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}
