//! [`RouteRecorder`]: what a router chain did for its last calls (Java's
//! `RouterSnapshotNode` and `RouterSnapshotSwitcher`), kept only while enabled.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use rubbo_common::BoxInvoker;

/// How many routings are kept (Java's `RouterSnapshotSwitcher` keeps 32).
pub const RECENT_ROUTES: usize = 32;

/// How many addresses a step lists (Java's `RouterSnapshotNode` shows 5).
const SHOWN: usize = 5;

/// Records the routings of a [`RouterChain`](super::RouterChain) while enabled: each
/// routing as Java's `RouterSnapshotNode` prints it, the last [`RECENT_ROUTES`]
/// kept. Off (the default), a call pays one relaxed atomic load; on, it pays the
/// text and a short lock, as Java warns ("performance degradation").
#[derive(Debug, Default)]
pub struct RouteRecorder {
    enabled: AtomicBool,
    recent: Mutex<VecDeque<String>>,
}

impl RouteRecorder {
    /// Whether routings are recorded.
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Starts or stops recording; stopping forgets what was recorded.
    pub fn set_enabled(&self, enabled: bool) {
        self.enabled.store(enabled, Ordering::Relaxed);
        if !enabled {
            self.recent.lock().clear();
        }
    }

    /// The recorded routings, oldest first.
    pub fn recent(&self) -> Vec<String> {
        self.recent.lock().iter().cloned().collect()
    }

    pub(super) fn push(&self, text: String) {
        let mut recent = self.recent.lock();
        if recent.len() == RECENT_ROUTES {
            recent.pop_front();
        }
        recent.push_back(text);
    }
}

/// One router's step: its name, what it was given and what it kept.
pub(super) struct Step {
    pub(super) name: String,
    pub(super) input: Vec<String>,
    pub(super) input_len: usize,
    pub(super) output: Vec<String>,
    pub(super) output_len: usize,
}

/// The first addresses of `invokers`.
pub(super) fn addresses<'a>(invokers: impl Iterator<Item = &'a BoxInvoker>) -> Vec<String> {
    invokers
        .take(SHOWN + 1)
        .map(|i| i.url().address())
        .collect()
}

fn list(addrs: &[String], len: usize) -> String {
    if len == 0 {
        return "Empty".to_owned();
    }
    let mut s = addrs[..addrs.len().min(SHOWN)].join(",");
    if len > SHOWN {
        s.push_str("...");
    }
    s
}

fn node(out: &mut String, step: &Step) {
    let _ = write!(
        out,
        "[ {} Invokers: {} -> {} ] {} -> {}",
        step.name,
        step.input_len,
        step.output_len,
        list(&step.input, step.input_len),
        list(&step.output, step.output_len)
    );
}

/// The text of one routing: a time and the service, the whole chain as the parent
/// node, each router a child node below it.
pub(super) fn render(service: &str, method: &str, parent: &Step, steps: &[Step]) -> String {
    let mut out = format!("[{}] Service: {service} Method: {method}\n", now_utc());
    node(&mut out, parent);
    for s in steps {
        out.push_str("\n  ");
        node(&mut out, s);
    }
    out
}

/// `yyyy-MM-dd HH:mm:ss.SSS` in UTC.
fn now_utc() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil-from-days.
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:03}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str, input: &[&str], output: &[&str]) -> Step {
        Step {
            name: name.into(),
            input: input.iter().map(|s| s.to_string()).collect(),
            input_len: input.len(),
            output: output.iter().map(|s| s.to_string()).collect(),
            output_len: output.len(),
        }
    }

    #[test]
    fn renders_as_java_prints_router_snapshot_nodes() {
        let parent = step("Parent", &["a:1", "b:2"], &["b:2"]);
        let tag = step("tag", &["a:1", "b:2"], &["b:2"]);
        let empty = step("condition", &[], &[]);
        let text = render("org.x.S", "hello", &parent, &[tag, empty]);
        let mut lines = text.lines();
        let head = lines.next().unwrap();
        assert!(head.starts_with('[') && head.ends_with("] Service: org.x.S Method: hello"));
        assert_eq!(
            lines.next(),
            Some("[ Parent Invokers: 2 -> 1 ] a:1,b:2 -> b:2")
        );
        assert_eq!(
            lines.next(),
            Some("  [ tag Invokers: 2 -> 1 ] a:1,b:2 -> b:2")
        );
        assert_eq!(
            lines.next(),
            Some("  [ condition Invokers: 0 -> 0 ] Empty -> Empty")
        );
    }

    #[test]
    fn keeps_the_last_32_and_forgets_them_when_disabled() {
        let r = RouteRecorder::default();
        assert!(!r.is_enabled());
        r.set_enabled(true);
        for i in 0..40 {
            r.push(i.to_string());
        }
        let recent = r.recent();
        assert_eq!(recent.len(), RECENT_ROUTES);
        assert_eq!(recent.first().map(String::as_str), Some("8"));
        r.set_enabled(false);
        assert!(r.recent().is_empty());
    }

    #[test]
    fn formats_utc_time() {
        let t = now_utc();
        assert_eq!(t.len(), "2026-12-04 17:00:00.123".len(), "{t}");
        assert!(t.starts_with("20"), "{t}");
    }
}
