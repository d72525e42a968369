//! `accesslog`: one line per served call, to `tracing` or to a file (Java's
//! `AccessLogFilter` and `AccessLogData`).

mod line;
mod writer;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::SystemTime;

use parking_lot::Mutex;
use rubbo_common::filter::Activate;
use rubbo_common::keys::ACCESS_LOG_KEY;
use rubbo_common::{BoxInvoker, Filter, Invocation, InvokeFuture, Invoker};

use crate::support::delegate_to_next;
use line::{Entry, service_label};
pub use writer::LOG_TARGET;
use writer::{Destination, Sink};

/// Logs every call a provider serves, one line each, in Java's layout:
///
/// ```text
/// [2025-01-31 09:15:02.12300] -> [2025-01-31 09:15:02.12500] 127.0.0.1:52044 -> 127.0.0.1:20880 - g/org.rubbo.Greeter:1.0.0 greet(java.lang.String) ["world"]
/// ```
///
/// that is, when the call arrived and when it ended, the consumer's and the provider's
/// addresses, `group/interface:version` (group and version left out when empty), the
/// method with its Java parameter types and the arguments as JSON. Times are in **UTC**
/// (Java writes local time), with Java's five fraction digits of which the last two
/// are always `0` (millisecond precision).
///
/// Provider side, when the URL has `accesslog`: `true` or `default` logs to `tracing`
/// at info with target [`LOG_TARGET`] (`dubbo.accesslog`) and the service as field
/// `service`; `false` logs nothing; any other value is a file path, appended to (its
/// directory is created). Java 3.3 writes to a file only with
/// `accesslog.fixed.path=false`; Rubbo always honours the path. Java also renames the
/// file daily; Rubbo leaves rotation to the operator.
///
/// The call never waits for the log: it hands its entry to a bounded channel (5000
/// lines, Java's buffer size) and one writer per destination, shared by every service
/// exported through the same filter table that logs there, formats and appends in
/// batches. When the writer falls behind, lines are dropped and counted, and a warning
/// with the count is logged at most every 5 s (and once more when the writer ends).
/// A file that cannot be opened is logged once, as an error; its lines are dropped and
/// the calls go on. The writer ends when the last service logging there is gone.
#[derive(Debug, Default, Clone)]
pub struct AccessLogFilter {
    /// The writer of each destination, while some service logs there.
    sinks: Arc<Mutex<HashMap<Destination, Weak<Sink>>>>,
}

impl AccessLogFilter {
    /// The writer of `dest`, started if none runs.
    fn sink(&self, dest: Destination) -> Arc<Sink> {
        let mut sinks = self.sinks.lock();
        sinks.retain(|_, s| s.strong_count() > 0);
        if let Some(sink) = sinks.get(&dest).and_then(Weak::upgrade) {
            return sink;
        }
        let sink = Arc::new(Sink::start(dest.clone()));
        sinks.insert(dest, Arc::downgrade(&sink));
        sink
    }
}

impl Filter for AccessLogFilter {
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        let dest = match next.url().get_param(ACCESS_LOG_KEY).map(str::trim) {
            None | Some("") => return next,
            Some(v) if v.eq_ignore_ascii_case("false") => return next,
            Some(v) if v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("default") => {
                Destination::Log
            }
            Some(path) => Destination::File(PathBuf::from(path)),
        };
        let url = next.url();
        let service = service_label(
            url.group(),
            url.service_interface().unwrap_or(""),
            url.version(),
        )
        .into();
        Arc::new(AccessLog {
            sink: self.sink(dest),
            service,
            next,
        })
    }

    fn activate(&self) -> Activate {
        Activate::provider(0).when_keys(&[ACCESS_LOG_KEY])
    }
}

#[derive(Debug)]
struct AccessLog {
    next: BoxInvoker,
    sink: Arc<Sink>,
    /// `group/interface:version` of the service.
    service: Arc<str>,
}

impl Invoker for AccessLog {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let pending = Pending {
            entry: Some(Entry {
                service: self.service.clone(),
                method: inv.method_arc(),
                types: (!inv.parameter_types().is_empty())
                    .then(|| Arc::from(inv.parameter_types())),
                args: inv.arguments().clone(),
                peer: inv.peer(),
                invoked: SystemTime::now(),
                done: SystemTime::UNIX_EPOCH,
            }),
            sink: self.sink.clone(),
        };
        let call = self.next.invoke(inv);
        Box::pin(async move {
            let _logged_when_done = pending;
            call.await
        })
    }

    delegate_to_next!();
}

/// A call's entry, handed to the writer when the call ends: answered, failed or
/// dropped (Java logs in a `finally`).
struct Pending {
    entry: Option<Entry>,
    sink: Arc<Sink>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(mut entry) = self.entry.take() {
            entry.done = SystemTime::now();
            self.sink.push(entry);
        }
    }
}
