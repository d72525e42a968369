//! `count`, `invoke` and `select`, `switchLogLevel`, and the router snapshot
//! commands (`getRouterSnapshot`, `enableRouterSnapshot`, `disableRouterSnapshot`,
//! `getEnabledRouterSnapshot`, `getRecentRouterSnapshot`).

use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;

use super::services::pattern;
use crate::QosError;
use crate::host::{LocalService, MethodSignature, QosHost};
use crate::log_level::{self, LogLevelSwitch};

/// A table as Java's `TelnetUtils.toTable` draws one (cells short enough not to wrap):
/// `+---+` rules, `| cell |` rows, lines ending `\r\n`.
fn telnet_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = header
        .iter()
        .enumerate()
        .map(|(j, h)| {
            rows.iter()
                .map(|r| r[j].chars().count())
                .chain([h.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let rule: String = widths.iter().fold("+".to_owned(), |mut s, w| {
        s.push_str(&"-".repeat(w + 2));
        s.push('+');
        s
    }) + "\r\n";
    let row = |cells: &mut dyn Iterator<Item = &str>| {
        let mut s = "|".to_owned();
        for (cell, w) in cells.zip(&widths) {
            s.push(' ');
            s.push_str(cell);
            s.push_str(&" ".repeat(w - cell.chars().count()));
            s.push_str(" |");
        }
        s + "\r\n"
    };
    let mut out = rule.clone();
    out.push_str(&row(&mut header.iter().copied()));
    out.push_str(&rule);
    for r in rows {
        out.push_str(&row(&mut r.iter().map(String::as_str)));
    }
    out.push_str(&rule);
    out
}

/// `count <service> [method] [times]` (Java's `CountTelnet`): each method's calls
/// that ended, failed, in flight, and the average and longest response time, from
/// the provider-side statistics the metrics keep. `times` is checked as Java
/// checks it; the table is printed once.
pub(super) fn count(host: &dyn QosHost, args: &[String]) -> String {
    let Some(service) = args.first() else {
        return "Please input service name, eg: \r\ncount XxxService\r\ncount XxxService \
                xxxMethod\r\ncount XxxService xxxMethod 10\r\nor \"cd XxxService\" firstly."
            .to_owned();
    };
    let mut method = args.get(1).map(String::as_str);
    let times = match method {
        Some(m) if m.parse::<i64>().is_ok() => {
            method = None;
            m
        }
        _ => args.get(2).map_or("1", String::as_str),
    };
    if times.parse::<i64>().is_err() {
        return format!("Illegal times {times}, must be integer.");
    }
    let Some(svc) = host
        .local_services()
        .into_iter()
        .find(|s| s.is_named(service))
    else {
        return format!("No such service {service}");
    };
    let mut names: Vec<&str> = Vec::new();
    match method {
        Some(m) => {
            if !svc.methods.iter().any(|s| s.name == m) {
                return format!("No such method {m} in class {}", svc.interface);
            }
            names.push(m);
        }
        None => {
            for s in &svc.methods {
                if !names.contains(&s.name.as_str()) {
                    names.push(&s.name);
                }
            }
        }
    }
    let mut rows = Vec::new();
    for name in names {
        let Some(c) = host.method_count(&svc.service_key, name) else {
            return "No call statistics are kept: count reads the metrics, enable them \
                    (dubbo.metrics.enabled=true)."
                .to_owned();
        };
        rows.push(vec![
            name.to_owned(),
            c.total.to_string(),
            c.failed.to_string(),
            c.active.to_string(),
            format!("{}ms", c.average_ms),
            format!("{}ms", c.max_ms),
        ]);
    }
    telnet_table(
        &["method", "total", "failed", "active", "average", "max"],
        &rows,
    )
}

/// The state `invoke` leaves for `select` in a telnet session: the overloads it could
/// not choose between, and the call.
#[derive(Debug, Default)]
pub struct Session {
    pending: Mutex<Option<Pending>>,
}

#[derive(Debug, Clone)]
struct Pending {
    message: String,
    service: LocalService,
    methods: Vec<MethodSignature>,
}

impl Session {
    fn pending(&self) -> Option<Pending> {
        self.pending.lock().ok().and_then(|p| p.clone())
    }

    fn set(&self, p: Pending) {
        if let Ok(mut slot) = self.pending.lock() {
            *slot = Some(p);
        }
    }
}

/// What `invoke Svc.method(args)` names.
#[derive(Debug)]
struct Call {
    service: String,
    method: String,
    args: Vec<Value>,
}

fn parse_call(message: &str) -> Result<Call, String> {
    let i = match message.find('(') {
        Some(i) if message.ends_with(')') => i,
        _ => return Err("Invalid parameters, format: service.method(args)".to_owned()),
    };
    let target = message[..i].trim();
    let param = message[i + 1..message.len() - 1].trim();
    let (service, method) = match target.rfind('.') {
        Some(d) => (target[..d].trim(), target[d + 1..].trim()),
        None => ("", target),
    };
    if service.is_empty() {
        return Err(
            "If you want to invoke like [invoke sayHello(\"xxxx\")], please execute cd command \
             first, or you can execute it like [invoke IHelloService.sayHello(\"xxxx\")]"
                .to_owned(),
        );
    }
    let args: Vec<Value> = serde_json::from_str(&format!("[{param}]"))
        .map_err(|e| format!("Invalid json argument, cause: {e}"))?;
    Ok(Call {
        service: service.to_owned(),
        method: method.to_owned(),
        args,
    })
}

const INTEGRAL: &[&str] = &[
    "byte",
    "short",
    "int",
    "long",
    "java.lang.Byte",
    "java.lang.Short",
    "java.lang.Integer",
    "java.lang.Long",
    "java.math.BigInteger",
];
const DECIMAL: &[&str] = &[
    "float",
    "double",
    "java.lang.Float",
    "java.lang.Double",
    "java.math.BigDecimal",
    "java.lang.Number",
];
const PRIMITIVES: &[&str] = &[
    "boolean", "byte", "short", "int", "long", "float", "double", "char",
];

/// Whether a JSON argument may be passed as Java type `ty` (Java's
/// `InvokeTelnet.isMatch`, by JSON kind; a string may be an enum, an object without
/// `class` matches anything).
fn arg_matches(ty: &str, v: &Value) -> bool {
    if ty == "java.lang.Object" {
        return true;
    }
    match v {
        Value::Null => !PRIMITIVES.contains(&ty),
        Value::Bool(_) => ty == "boolean" || ty == "java.lang.Boolean",
        Value::Number(n) => {
            DECIMAL.contains(&ty) || ((n.is_i64() || n.is_u64()) && INTEGRAL.contains(&ty))
        }
        Value::String(s) => {
            matches!(ty, "java.lang.String" | "java.lang.CharSequence")
                || (matches!(ty, "char" | "java.lang.Character") && s.chars().count() == 1)
                // An enum constant: a type outside java.* that is not primitive.
                || (!ty.starts_with("java.")
                    && !PRIMITIVES.contains(&ty)
                    && !ty.ends_with("[]")
                    && !ty.starts_with('['))
        }
        Value::Array(_) => {
            ty.ends_with("[]")
                || ty.starts_with('[')
                || matches!(
                    ty,
                    "java.util.List"
                        | "java.util.ArrayList"
                        | "java.util.LinkedList"
                        | "java.util.Collection"
                        | "java.util.Set"
                        | "java.util.HashSet"
                )
        }
        Value::Object(o) => match o.get("class").and_then(Value::as_str) {
            Some(class) if !class.is_empty() => class == ty,
            _ => !PRIMITIVES.contains(&ty) && !ty.starts_with("java.lang."),
        },
    }
}

/// `invoke Svc.method(json args)` (Java's `InvokeTelnet`): finds the exported
/// service and the method by name, argument count and, among overloads, the JSON
/// kinds of the arguments; more than one left is listed for `select` (in a telnet
/// session). The call goes through the host (`Rubbo`: the generic client).
pub(super) async fn invoke(
    host: &dyn QosHost,
    args: &[String],
    session: Option<&Session>,
) -> String {
    if args.is_empty() {
        return "Please input method name, eg: \r\ninvoke xxxMethod(1234, \"abcd\", {\"prop\" : \
                \"value\"})\r\ninvoke XxxService.xxxMethod(1234, \"abcd\", {\"prop\" : \
                \"value\"})\r\ninvoke com.xxx.XxxService.xxxMethod(1234, \"abcd\", {\"prop\" \
                : \"value\"})"
            .to_owned();
    }
    // Telnet splits the line at spaces; the JSON may hold some.
    let message = args.join(" ");
    let call = match parse_call(message.trim()) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let prefix = format!("Use default service {}.", call.service);
    let Some(svc) = host
        .local_services()
        .into_iter()
        .find(|s| s.is_named(&call.service))
    else {
        return format!("{prefix}\r\nNo such service {}", call.service);
    };
    let same: Vec<MethodSignature> = svc
        .methods
        .iter()
        .filter(|m| m.name == call.method && m.parameter_types.len() == call.args.len())
        .cloned()
        .collect();
    let chosen = match same.len() {
        0 => None,
        1 => same.into_iter().next(),
        _ => {
            let fit: Vec<MethodSignature> = same
                .into_iter()
                .filter(|m| {
                    m.parameter_types
                        .iter()
                        .zip(&call.args)
                        .all(|(t, a)| arg_matches(t, a))
                })
                .collect();
            if fit.len() > 1 {
                let listed = select_message(&fit);
                if let Some(s) = session {
                    s.set(Pending {
                        message: message.trim().to_owned(),
                        service: svc,
                        methods: fit,
                    });
                }
                return listed;
            }
            fit.into_iter().next()
        }
    };
    let Some(sig) = chosen else {
        return format!(
            "{prefix}\r\nNo such method {} in service {}",
            call.method, call.service
        );
    };
    run(host, &prefix, &svc, &sig, call.args).await
}

fn select_message(methods: &[MethodSignature]) -> String {
    let mut buf = "Methods:\r\n".to_owned();
    for (i, m) in methods.iter().enumerate() {
        let types: Vec<&str> = m
            .parameter_types
            .iter()
            .map(|t| t.rsplit('.').next().unwrap_or(t))
            .collect();
        buf.push_str(&format!("{}. {}({})\r\n", i + 1, m.name, types.join(",")));
    }
    buf.push_str(
        "Please use the select command to select the method you want to invoke. eg: select 1",
    );
    buf
}

async fn run(
    host: &dyn QosHost,
    prefix: &str,
    svc: &LocalService,
    sig: &MethodSignature,
    args: Vec<Value>,
) -> String {
    let start = Instant::now();
    match host
        .invoke(&svc.service_key, &sig.name, &sig.parameter_types, args)
        .await
    {
        Ok(v) => format!(
            "{prefix}\r\nresult: {v}\r\nelapsed: {} ms.",
            start.elapsed().as_millis()
        ),
        Err(e) => format!("Failed to invoke method {}, cause: {e}", sig.name),
    }
}

/// `select N` (Java's `SelectTelnet`): invokes overload N of those the last `invoke`
/// of this telnet session listed.
pub(super) async fn select(
    host: &dyn QosHost,
    args: &[String],
    session: Option<&Session>,
) -> String {
    let Some(index) = args.first() else {
        return "Please input the index of the method you want to invoke, eg: \r\n select 1"
            .to_owned();
    };
    let Some(p) = session.and_then(Session::pending) else {
        return "Please use the invoke command first.".to_owned();
    };
    let n = p.methods.len();
    let Some(sig) = index
        .parse::<usize>()
        .ok()
        .filter(|i| (1..=n).contains(i))
        .map(|i| &p.methods[i - 1])
    else {
        return format!("Illegal index ,please input select 1~{n}");
    };
    let call = match parse_call(&p.message) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let prefix = format!("Use default service {}.", call.service);
    run(host, &prefix, &p.service, sig, call.args).await
}

/// `switchLogLevel <level>` (Java's `SwitchLogLevel`): `OK` once the registered
/// switch took the level.
pub(super) fn switch_log_level(levels: Option<&dyn LogLevelSwitch>, args: &[String]) -> String {
    let [arg] = args else {
        return "Unexpected argument length.".to_owned();
    };
    let Some(level) = log_level::parse(arg) else {
        return format!(
            "Unknown log level {arg}: use 0-6 or ALL, TRACE, DEBUG, INFO, WARN, ERROR, OFF"
        );
    };
    let Some(levels) = levels else {
        return "The log level cannot be switched: the application registered no reloadable \
                log filter with the QoS server"
            .to_owned();
    };
    match levels.set_level(level) {
        Ok(()) => "OK".to_owned(),
        Err(e) => format!("The log level was not switched: {e}"),
    }
}

/// The references whose service key, or key without group, matches `pat` (as Java's
/// `String.matches`).
fn matching_references(host: &dyn QosHost, pat: &str) -> Result<Vec<String>, QosError> {
    let re = pattern(pat)?;
    let mut keys: Vec<String> = host
        .consumers()
        .into_iter()
        .map(|c| c.service_key)
        .filter(|k| re.is_match(k) || re.is_match(k.split_once('/').map_or(k, |(_, d)| d)))
        .collect();
    keys.dedup();
    Ok(keys)
}

/// The router snapshot commands, by name.
pub(super) fn router_snapshot(
    host: &dyn QosHost,
    name: &str,
    args: &[String],
) -> Result<String, QosError> {
    let one = match args {
        [p] => Some(p),
        _ => None,
    };
    Ok(match name {
        "getRouterSnapshot" => {
            let Some(p) = one else {
                return Ok(
                    "args count should be 1. example getRouterSnapshot xx.xx.xxx.service".into(),
                );
            };
            let keys = matching_references(host, p)?;
            let mut out = String::new();
            for s in host
                .router_states()
                .into_iter()
                .filter(|s| keys.contains(&s.service_key))
            {
                out.push_str(&format!(
                    "{}\n[ All Invokers:{} ] [ Valid Invokers: {} ]\n\n",
                    s.service_key, s.all, s.valid
                ));
                for r in &s.routers {
                    out.push_str(&format!("[ {r} ]\n"));
                }
                out.push_str(&format!(
                    "Invocation snapshot: {}\n\n",
                    if s.recording { "enabled" } else { "disabled" }
                ));
            }
            out
        }
        "enableRouterSnapshot" | "disableRouterSnapshot" => {
            let Some(p) = one else {
                return Ok(format!(
                    "args count should be 1. example {name} xx.xx.xxx.service"
                ));
            };
            let keys = matching_references(host, p)?;
            let enable = name == "enableRouterSnapshot";
            host.set_router_recording(&keys, enable);
            if enable {
                format!(
                    "OK. Found service count: {}. This will cause performance degradation, \
                     please be careful!",
                    keys.len()
                )
            } else {
                format!("OK. Found service count: {}", keys.len())
            }
        }
        "getEnabledRouterSnapshot" => host
            .router_states()
            .into_iter()
            .filter(|s| s.recording)
            .map(|s| s.service_key)
            .collect::<Vec<_>>()
            .join("\n"),
        _ => {
            let mut recent = host.recent_routings();
            recent.sort();
            recent.join("\n\n")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tables_as_java_telnet_utils() {
        let t = telnet_table(&["method", "total"], &[vec!["hello".into(), "12".into()]]);
        assert_eq!(
            t,
            "+--------+-------+\r\n| method | total |\r\n+--------+-------+\r\n\
             | hello  | 12    |\r\n+--------+-------+\r\n"
        );
    }

    #[test]
    fn calls_parse_as_java_reads_them() {
        let c = parse_call("org.x.Greeter.hello(\"a b\", 3, {\"k\": 1})").unwrap();
        assert_eq!(
            (c.service.as_str(), c.method.as_str()),
            ("org.x.Greeter", "hello")
        );
        assert_eq!(c.args, vec![json!("a b"), json!(3), json!({"k": 1})]);
        assert_eq!(
            parse_call("Greeter.hello()").unwrap().args,
            Vec::<Value>::new()
        );
        assert!(
            parse_call("Greeter.hello(")
                .unwrap_err()
                .starts_with("Invalid parameters")
        );
        assert!(parse_call("hello(1)").unwrap_err().contains("cd command"));
        assert!(
            parse_call("Greeter.hello({oops)")
                .unwrap_err()
                .starts_with("Invalid json argument, cause: ")
        );
    }

    #[test]
    fn overloads_are_told_apart_by_json_kind() {
        assert!(arg_matches("int", &json!(1)));
        assert!(!arg_matches("int", &json!(1.5)));
        assert!(arg_matches("double", &json!(1)));
        assert!(!arg_matches("int", &json!("1")));
        assert!(arg_matches("java.lang.String", &json!("1")));
        assert!(!arg_matches("int", &Value::Null));
        assert!(arg_matches("java.lang.Integer", &Value::Null));
        assert!(arg_matches("org.x.User", &json!({"name": "a"})));
        assert!(!arg_matches("org.x.User", &json!({"class": "org.x.Other"})));
        assert!(arg_matches("java.util.List", &json!([1])));
        assert!(arg_matches("int[]", &json!([1])));
        assert!(!arg_matches("boolean", &json!([1])));
    }

    #[test]
    fn log_levels_read_as_java_reads_them() {
        use tracing::level_filters::LevelFilter;
        assert_eq!(log_level::parse("3"), Some(LevelFilter::INFO));
        assert_eq!(log_level::parse("debug"), Some(LevelFilter::DEBUG));
        assert_eq!(log_level::parse("ALL"), Some(LevelFilter::TRACE));
        assert_eq!(log_level::parse("6"), Some(LevelFilter::OFF));
        assert_eq!(log_level::parse("7"), None);
        assert!(switch_log_level(None, &["info".into()]).contains("registered no reloadable"));
        assert_eq!(switch_log_level(None, &[]), "Unexpected argument length.");
        assert!(switch_log_level(None, &["loud".into()]).starts_with("Unknown log level loud"));
    }
}
