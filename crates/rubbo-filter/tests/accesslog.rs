//! `accesslog`: lines in a file, a writer that cannot keep up, a file that cannot be
//! opened; against a mock service, no sockets.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use rubbo_common::{Invocation, Peer, Value};
use rubbo_filter::{ACCESS_LOG_TARGET, AccessLogFilter};
use support::{MockInvoker, wrap};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};

const BOUND: Duration = Duration::from_secs(20);

fn greet() -> Invocation {
    let mut inv = Invocation::new("org.rubbo.Greeter", "greet")
        .with_parameter_types("Ljava/lang/String;I")
        .with_arguments(vec![Value::from("world"), Value::Int(7)]);
    inv.set_peer(Peer {
        remote: "127.0.0.1:50001".parse().unwrap(),
        local: "127.0.0.1:20880".parse().unwrap(),
    });
    inv
}

/// Polls `f` until it gives `Some`, for at most [`BOUND`].
fn poll<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + BOUND;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `yyyy-MM-dd HH:mm:ss.SSS00`.
fn is_java_time(s: &str) -> bool {
    let pattern = "dddd-dd-dd dd:dd:dd.ddd00";
    s.len() == pattern.len()
        && s.chars().zip(pattern.chars()).all(|(c, p)| match p {
            'd' => c.is_ascii_digit(),
            p => c == p,
        })
}

#[test]
fn a_call_leaves_one_line_with_javas_fields_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs").join("access.log");
    let mock = MockInvoker::new(&format!(
        "dubbo://127.0.0.1:20880/org.rubbo.Greeter?group=g&version=1.0.0&accesslog={}",
        path.display()
    ));
    let invoker = wrap(&AccessLogFilter::default(), &mock);
    futures::executor::block_on(invoker.invoke(greet())).unwrap();
    assert_eq!(mock.call_count(), 1, "the call reaches the service");

    let read = || std::fs::read_to_string(&path).unwrap_or_default();
    let text = poll("the access log line", || {
        let t = read();
        t.ends_with('\n').then_some(t)
    });
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    let line = lines[0];
    // [in] -> [out] remote -> local - service method(types) args
    let (times, rest) = line.split_at(line.find("] 127").unwrap() + 1);
    let (arrived, ended) = times.split_once(" -> ").unwrap();
    for t in [arrived, ended] {
        let inner = t
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .unwrap();
        assert!(is_java_time(inner), "{t} in {line}");
    }
    assert!(arrived <= ended, "{line}");
    assert_eq!(
        rest,
        " 127.0.0.1:50001 -> 127.0.0.1:20880 - g/org.rubbo.Greeter:1.0.0 greet(java.lang.String,int) [\"world\",7]"
    );

    // A second call appends a second line, after the first.
    let mut other = Invocation::new("org.rubbo.Greeter", "ping");
    other.set_peer(greet().peer().unwrap());
    futures::executor::block_on(invoker.invoke(other)).unwrap();
    let text = poll("the second line", || {
        let t = read();
        (t.lines().count() >= 2).then_some(t)
    });
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0], line);
    assert!(
        lines[1].ends_with(" - g/org.rubbo.Greeter:1.0.0 ping() "),
        "{}",
        lines[1]
    );
}

/// What the test subscriber saw.
#[derive(Default)]
struct Seen {
    lines: u64,
    drop_warnings: u64,
    dropped: u64,
    open_errors: u64,
}

/// A `tracing` layer that records access log lines and drop warnings, and holds every
/// access log line until `open` (a writer that cannot keep up).
#[derive(Clone, Default)]
struct Capture {
    seen: Arc<Mutex<Seen>>,
    gate: Arc<(Mutex<bool>, Condvar)>,
}

impl Capture {
    fn open(&self) {
        *self.gate.0.lock() = true;
        self.gate.1.notify_all();
    }

    fn hold(&self) {
        let (open, cv) = &*self.gate;
        let mut open = open.lock();
        let deadline = Instant::now() + BOUND;
        while !*open && Instant::now() < deadline {
            cv.wait_until(&mut open, deadline);
        }
    }
}

#[derive(Default)]
struct Fields {
    dropped: Option<u64>,
    message: String,
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "dropped" {
            self.dropped = Some(value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        if event.metadata().target() == ACCESS_LOG_TARGET {
            self.hold();
            self.seen.lock().lines += 1;
        } else if let Some(n) = fields.dropped {
            let mut seen = self.seen.lock();
            seen.drop_warnings += 1;
            seen.dropped += n;
        } else if *event.metadata().level() == tracing::Level::ERROR
            && fields.message.contains("cannot open the access log")
        {
            self.seen.lock().open_errors += 1;
        }
    }
}

#[test]
fn a_writer_that_cannot_keep_up_never_blocks_calls_and_drops_are_reported() {
    const CALLS: u64 = 10_000;
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let mock = MockInvoker::new("dubbo://127.0.0.1:20880/org.rubbo.Greeter?accesslog=true");
    let (done_tx, done_rx) = mpsc::channel();
    let calls_mock = mock.clone();
    // The calls run on their own thread, so that a blocking push fails the test
    // instead of hanging it.
    std::thread::spawn(move || {
        let _default = tracing::subscriber::set_default(subscriber);
        let invoker = wrap(&AccessLogFilter::default(), &calls_mock);
        let start = Instant::now();
        let mut slowest = Duration::ZERO;
        for _ in 0..CALLS {
            let t = Instant::now();
            futures::executor::block_on(invoker.invoke(greet())).unwrap();
            slowest = slowest.max(t.elapsed());
        }
        let _ = done_tx.send((start.elapsed(), slowest));
        // The invoker (the last sender) goes when the thread ends.
    });
    let (total, slowest) = done_rx
        .recv_timeout(BOUND)
        .expect("10 000 calls blocked behind a stuck access log writer");
    assert_eq!(mock.call_count() as u64, CALLS);
    assert!(
        slowest < Duration::from_secs(2),
        "one call waited {slowest:?} (all: {total:?})"
    );
    {
        let seen = capture.seen.lock();
        assert!(seen.lines <= 1, "the writer is stuck on its first line");
        assert!(
            seen.drop_warnings >= 1 && seen.dropped >= 1,
            "the first drop is reported at once"
        );
        assert!(
            seen.drop_warnings <= 2,
            "warnings are rate-limited: {}",
            seen.drop_warnings
        );
    }

    // Unstick the writer: it writes what it holds, then, its senders gone, reports the
    // remaining drops and ends. Every call is accounted for: logged or dropped.
    capture.open();
    let (lines, dropped) = poll("every line written or reported dropped", || {
        let seen = capture.seen.lock();
        (seen.lines + seen.dropped == CALLS).then_some((seen.lines, seen.dropped))
    });
    assert!(
        lines <= 5001,
        "at most the buffer plus one in hand: {lines}"
    );
    assert!(dropped >= CALLS - 5001, "{dropped}");
}

#[test]
fn a_file_that_cannot_be_opened_is_logged_once_and_calls_still_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = dir.path().join("plain-file");
    std::fs::write(&not_a_dir, b"x").unwrap();
    let path = not_a_dir.join("access.log");
    let capture = Capture::default();
    capture.open();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let _default = tracing::subscriber::set_default(subscriber);

    let mock = MockInvoker::new(&format!(
        "dubbo://127.0.0.1:20880/org.rubbo.Greeter?accesslog={}",
        path.display()
    ));
    let invoker = wrap(&AccessLogFilter::default(), &mock);
    for _ in 0..100 {
        futures::executor::block_on(invoker.invoke(greet())).unwrap();
    }
    poll("the open error", || {
        (capture.seen.lock().open_errors > 0).then_some(())
    });
    for _ in 0..100 {
        futures::executor::block_on(invoker.invoke(greet())).unwrap();
    }
    assert_eq!(mock.call_count(), 200);
    assert_eq!(capture.seen.lock().open_errors, 1, "logged once");
    assert_eq!(capture.seen.lock().lines, 0);
    assert!(!path.exists());
}
