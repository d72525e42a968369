//! One access log entry and its line, in Java's `AccessLogData.getLogMessage` layout.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rubbo_common::descriptor::split_names;
use rubbo_common::{Arguments, Peer, Value};

/// What a call leaves for the writer: taken cheaply on the call path (shared strings,
/// the arguments as they are), formatted by the writer.
#[derive(Debug)]
pub(crate) struct Entry {
    /// `group/interface:version`, group and version left out when empty.
    pub(crate) service: Arc<str>,
    pub(crate) method: Arc<str>,
    /// The JVM parameter descriptor (`Ljava/lang/String;I`).
    pub(crate) types: Option<Arc<str>>,
    pub(crate) args: Arguments,
    pub(crate) peer: Option<Peer>,
    pub(crate) invoked: SystemTime,
    pub(crate) done: SystemTime,
}

impl Entry {
    /// Writes the line (without line separator) into `out`, which is cleared first:
    ///
    /// `[in] -> [out] remoteIp:port -> localIp:port - group/interface:version method(types) args`
    ///
    /// `in` and `out` are when the call arrived and when it ended, as
    /// `yyyy-MM-dd HH:mm:ss.SSSSS` in UTC; `types` are Java class names separated by
    /// `,`; `args` is the arguments as a JSON array, left out when there are none (the
    /// space before it is always there, as in Java).
    pub(crate) fn write_line(&self, out: &mut String) {
        out.clear();
        out.push('[');
        write_time(out, self.invoked);
        out.push_str("] -> [");
        write_time(out, self.done);
        out.push_str("] ");
        let (remote, local) = match self.peer {
            Some(p) => (Some(p.remote), Some(p.local)),
            None => (None, None),
        };
        write_addr(out, remote);
        out.push_str(" -> ");
        write_addr(out, local);
        out.push_str(" - ");
        out.push_str(&self.service);
        out.push(' ');
        out.push_str(&self.method);
        out.push('(');
        if let Some(types) = self.types.as_deref() {
            match split_names(types) {
                Some(names) => out.push_str(&names.join(",")),
                None => out.push_str(types),
            }
        }
        out.push_str(") ");
        if !self.args.is_empty() {
            match self.args.to_values() {
                Ok(values) => write_seq(out, values.iter(), write_json),
                Err(e) => {
                    let _ = write!(out, "<arguments not decoded: {e}>");
                }
            }
        }
    }
}

/// `group/interface:version` as Java's access log prints the service.
pub(crate) fn service_label(group: Option<&str>, interface: &str, version: Option<&str>) -> String {
    let mut s = String::new();
    if let Some(g) = group.filter(|g| !g.is_empty()) {
        s.push_str(g);
        s.push('/');
    }
    s.push_str(interface);
    if let Some(v) = version.filter(|v| !v.is_empty()) {
        s.push(':');
        s.push_str(v);
    }
    s
}

/// `ip:port`, the IP without brackets as Java's `getHostAddress`; `null:0` when the
/// call came without a peer (not over a connection).
fn write_addr(out: &mut String, addr: Option<SocketAddr>) {
    match addr {
        Some(a) => {
            let _ = write!(out, "{}:{}", a.ip(), a.port());
        }
        None => out.push_str("null:0"),
    }
}

/// `t` as `yyyy-MM-dd HH:mm:ss.SSSSS`, in UTC.
///
/// Java formats a `java.util.Date` (millisecond precision) with the pattern
/// `yyyy-MM-dd HH:mm:ss.SSSSS`, so its last two fraction digits are always `0`; so are
/// ours. No workspace crate formats dates (no `chrono`, no `time`), and a local time
/// zone would need the platform's zone database, so the time is UTC, computed here
/// from the days since the epoch (the civil-from-days algorithm).
pub(crate) fn write_time(out: &mut String, t: SystemTime) {
    let ms = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis().min(i64::MAX as u128) as i64);
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let secs = ms_of_day / 1000;
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:03}00",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        ms_of_day % 1000
    );
}

/// The proleptic Gregorian date of `days` since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    // Count from 0000-03-01, so that the leap day is the last day of a year.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// A value as JSON, close to what Java's `JsonUtils.toJson` gives for the decoded
/// arguments: objects as their fields (no class), maps as objects (keys as strings),
/// lists as arrays, binary as an array of numbers, dates as epoch milliseconds, a
/// back-reference as `{"$ref":n}`.
fn write_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Long(i) | Value::Date(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Double(d) if d.is_finite() => {
            let _ = write!(out, "{d:?}");
        }
        Value::Double(_) => out.push_str("null"),
        Value::String(s) => write_json_str(out, s),
        Value::Binary(b) => write_seq(out, b.iter(), |out, byte| {
            let _ = write!(out, "{}", *byte as i8);
        }),
        Value::List(l) => write_seq(out, l.items.iter(), write_json),
        Value::Map(m) => {
            out.push('{');
            for (i, (k, v)) in m.entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                match k {
                    Value::String(s) => write_json_str(out, s),
                    other => {
                        let mut key = String::new();
                        write_json(&mut key, other);
                        write_json_str(out, &key);
                    }
                }
                out.push(':');
                write_json(out, v);
            }
            out.push('}');
        }
        Value::Object(o) => {
            out.push('{');
            for (i, (k, v)) in o.fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_str(out, k);
                out.push(':');
                write_json(out, v);
            }
            out.push('}');
        }
        Value::Ref(n) => {
            let _ = write!(out, "{{\"$ref\":{n}}}");
        }
    }
}

fn write_seq<T>(
    out: &mut String,
    items: impl Iterator<Item = T>,
    mut each: impl FnMut(&mut String, T),
) {
    out.push('[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        each(out, item);
    }
    out.push(']');
}

fn write_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use rubbo_hessian2::Object;
    use std::time::Duration;

    fn time(s: &str) -> String {
        let mut out = String::new();
        let ms: u64 = s.parse().unwrap();
        write_time(&mut out, UNIX_EPOCH + Duration::from_millis(ms));
        out
    }

    #[test]
    fn times_are_utc_with_java_fraction_width() {
        assert_eq!(time("0"), "1970-01-01 00:00:00.00000");
        // 2000-02-29 23:59:59.999 UTC: a leap day.
        assert_eq!(time("951868799999"), "2000-02-29 23:59:59.99900");
        // 2024-12-31 12:34:56.007 UTC.
        assert_eq!(time("1735648496007"), "2024-12-31 12:34:56.00700");
    }

    #[test]
    fn the_line_follows_java_layout() {
        let entry = Entry {
            service: service_label(Some("g"), "org.rubbo.Greeter", Some("1.0.0")).into(),
            method: "greet".into(),
            types: Some("Ljava/lang/String;I".into()),
            args: Arguments::Values(vec![
                Value::from("a\"b"),
                Value::Int(7),
                Value::Object(Object::new("org.rubbo.P").with_field("n", Value::Null)),
            ]),
            peer: Some(Peer {
                remote: "127.0.0.1:50000".parse().unwrap(),
                local: "[::1]:20880".parse().unwrap(),
            }),
            invoked: UNIX_EPOCH,
            done: UNIX_EPOCH + Duration::from_millis(1),
        };
        let mut line = String::new();
        entry.write_line(&mut line);
        assert_eq!(
            line,
            "[1970-01-01 00:00:00.00000] -> [1970-01-01 00:00:00.00100] 127.0.0.1:50000 -> ::1:20880 \
             - g/org.rubbo.Greeter:1.0.0 greet(java.lang.String,int) [\"a\\\"b\",7,{\"n\":null}]"
        );
        let bare = Entry {
            service: service_label(None, "S", Some("")).into(),
            types: None,
            args: Arguments::none(),
            peer: None,
            ..entry
        };
        bare.write_line(&mut line);
        assert!(line.ends_with("] null:0 -> null:0 - S greet() "), "{line}");
    }
}
