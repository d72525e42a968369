//! What `/proc` says about a process (this one, `"self"`, or a child by pid): its
//! on-CPU time (the first field of every thread's `schedstat`, nanoseconds) and its
//! resident memory (`VmRSS`, and the peak `VmHWM`). Linux only.

use std::time::Duration;

use anyhow::Context;

/// On-CPU time of every thread of process `pid` (a number or `"self"`).
pub(crate) fn cpu(pid: &str) -> anyhow::Result<Duration> {
    let mut total = 0u64;
    let dir = format!("/proc/{pid}/task");
    for task in std::fs::read_dir(&dir).with_context(|| format!("reading {dir}"))? {
        // A thread may exit between listing and reading: skip it.
        let Ok(text) = std::fs::read_to_string(task?.path().join("schedstat")) else {
            continue;
        };
        total += text
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .context("schedstat without a run time")?;
    }
    Ok(Duration::from_nanos(total))
}

/// Resident memory of a process, in bytes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rss {
    /// `VmRSS`: now.
    pub(crate) now: u64,
    /// `VmHWM`: the peak since the process started.
    pub(crate) peak: u64,
    /// `RssAnon`: the anonymous part of `VmRSS` (heap, stacks), when read.
    pub(crate) anon: u64,
    /// `RssFile`: the file-backed part of `VmRSS` (the executable's and the
    /// libraries' pages), when read.
    pub(crate) file: u64,
}

pub(crate) fn rss(pid: &str) -> anyhow::Result<Rss> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    let field = |name: &str| -> anyhow::Result<u64> {
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .with_context(|| format!("{path} has no {name}"))?;
        let kib: u64 = line
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .with_context(|| format!("{path}: {name}{line}"))?;
        Ok(kib * 1024)
    };
    Ok(Rss {
        now: field("VmRSS:")?,
        peak: field("VmHWM:")?,
        anon: field("RssAnon:")?,
        file: field("RssFile:")?,
    })
}

/// The first three fields of `/proc/loadavg`.
pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}
