//! Where access log lines go: one bounded channel and one writer per destination,
//! shared by every service that logs there.
//!
//! The writer is a plain thread, not a tokio task: appending to a file blocks, and
//! blocking a runtime worker would stall the calls it serves; a thread also needs no
//! runtime where the service is exported. It is owned by the senders: when the last
//! [`Sink`] is dropped (every service logging there is gone), its channel closes and
//! the thread writes what is left, reports the last drops and ends.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{self, Receiver, error::TrySendError};
use tracing::{Dispatch, dispatcher, error, info, warn};

use super::line::Entry;

/// The `tracing` target of access log lines when `accesslog=true` (Java's logger name,
/// `dubbo.accesslog`, without the service suffix: the service is a field).
pub const LOG_TARGET: &str = "dubbo.accesslog";

/// Lines waiting for the writer, per destination (Java's `LOG_MAX_BUFFER`).
pub(crate) const CAPACITY: usize = 5000;

/// Lines written between two flushes at most.
const BATCH: usize = 512;

/// Drops are reported at most once per interval (Java's `LOG_OUTPUT_INTERVAL`, 5 s).
const WARN_INTERVAL: Duration = Duration::from_secs(5);

/// Where the lines of an `accesslog` value go.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Destination {
    /// `accesslog=true` / `default`: `tracing` at info, target [`LOG_TARGET`].
    Log,
    /// Any other value: a file, appended to.
    File(PathBuf),
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Destination::Log => f.write_str(LOG_TARGET),
            Destination::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// The sending end of one destination's writer.
#[derive(Debug)]
pub(crate) struct Sink {
    tx: mpsc::Sender<Entry>,
    drops: Arc<Drops>,
}

impl Sink {
    /// Starts the writer of `dest`. The writer logs where the caller's `tracing`
    /// subscriber is (the default one, usually the global one).
    pub(crate) fn start(dest: Destination) -> Sink {
        let (tx, rx) = mpsc::channel(CAPACITY);
        let drops = Arc::new(Drops::new(dest.to_string()));
        let dispatch: Dispatch = dispatcher::get_default(Dispatch::clone);
        let writer_drops = drops.clone();
        let spawned = thread::Builder::new()
            .name("rubbo-accesslog".into())
            .spawn(move || {
                dispatcher::with_default(&dispatch, || write_all(&dest, rx, &writer_drops));
            });
        if let Err(e) = spawned {
            // The receiver went with the closure: lines are dropped from now on.
            error!(destination = %drops.dest, error = %e, "cannot start the access log writer; its lines are dropped");
        }
        Sink { tx, drops }
    }

    /// Hands `entry` to the writer without waiting: when the writer is behind and the
    /// channel full, the entry is dropped and counted.
    pub(crate) fn push(&self, entry: Entry) {
        match self.tx.try_send(entry) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.drops.count.fetch_add(1, Ordering::Relaxed);
                self.drops.report(false);
            }
            // The writer is gone: its file could not be opened (logged once).
            Err(TrySendError::Closed(_)) => {}
        }
    }
}

/// The lines a destination dropped and not yet reported.
#[derive(Debug)]
struct Drops {
    dest: String,
    count: AtomicU64,
    epoch: Instant,
    /// When drops were last reported: ms since `epoch`, plus 1; 0 = never.
    last_report: AtomicU64,
}

impl Drops {
    fn new(dest: String) -> Drops {
        Drops {
            dest,
            count: AtomicU64::new(0),
            epoch: Instant::now(),
            last_report: AtomicU64::new(0),
        }
    }

    /// Logs the drops not yet reported, unless reported less than [`WARN_INTERVAL`]
    /// ago (`last`: the final report, always made).
    fn report(&self, last: bool) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        if !last {
            let now = u64::try_from(self.epoch.elapsed().as_millis())
                .unwrap_or(u64::MAX)
                .saturating_add(1);
            let before = self.last_report.load(Ordering::Relaxed);
            let interval = u64::try_from(WARN_INTERVAL.as_millis()).unwrap_or(u64::MAX);
            if before != 0 && now.saturating_sub(before) < interval {
                return;
            }
            if self
                .last_report
                .compare_exchange(before, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
            {
                return;
            }
        }
        let dropped = self.count.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            warn!(destination = %self.dest, dropped, "access log writer behind: lines dropped");
        }
    }
}

/// Where the writer writes.
enum Output {
    Log,
    File(BufWriter<File>),
}

impl Output {
    fn open(dest: &Destination) -> io::Result<Output> {
        match dest {
            Destination::Log => Ok(Output::Log),
            Destination::File(path) => Ok(Output::File(BufWriter::new(open_append(path)?))),
        }
    }

    fn write(&mut self, entry: &Entry, line: &str) -> io::Result<()> {
        match self {
            Output::Log => {
                info!(target: LOG_TARGET, service = %entry.service, "{line}");
                Ok(())
            }
            Output::File(w) => {
                w.write_all(line.as_bytes())?;
                w.write_all(b"\n")
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Log => Ok(()),
            Output::File(w) => w.flush(),
        }
    }
}

/// Opens `path` for appending, creating it and its directory (as Java does).
fn open_append(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    OpenOptions::new().create(true).append(true).open(path)
}

/// The writer: formats and writes what arrives, flushing after each batch, until every
/// sender is gone.
fn write_all(dest: &Destination, mut rx: Receiver<Entry>, drops: &Drops) {
    let mut out = match Output::open(dest) {
        Ok(out) => out,
        Err(e) => {
            error!(destination = %dest, error = %e, "cannot open the access log; its lines are dropped");
            return;
        }
    };
    let mut line = String::new();
    let mut failing = false;
    let mut note = |result: io::Result<()>| match result {
        Ok(()) => failing = false,
        Err(e) if !failing => {
            failing = true;
            error!(destination = %dest, error = %e, "cannot write the access log");
        }
        Err(_) => {}
    };
    while let Some(first) = rx.blocking_recv() {
        let mut next = Some(first);
        let mut written = 0;
        while let Some(entry) = next {
            entry.write_line(&mut line);
            note(out.write(&entry, &line));
            written += 1;
            next = if written < BATCH {
                rx.try_recv().ok()
            } else {
                None
            };
        }
        note(out.flush());
        drops.report(false);
    }
    drops.report(true);
}
