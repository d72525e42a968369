//! Pattern helpers shared by the routers and balancers.

use std::net::{IpAddr, Ipv4Addr};

use rubbo_common::{Url, Value};

/// Java's `UrlUtils.isMatchGlobPattern`: `*` alone matches anything; a pattern whose
/// last `*` is at the end, start or middle matches by prefix, suffix or both; else
/// exact. An empty pattern matches only an empty value.
///
/// ```
/// use rubbo_cluster::router::is_match_glob_pattern;
/// assert!(is_match_glob_pattern("10.20.153.*", "10.20.153.11"));
/// assert!(is_match_glob_pattern("*Service", "DemoService"));
/// assert!(is_match_glob_pattern("get*Name", "getUserName"));
/// assert!(!is_match_glob_pattern("find*", "list"));
/// ```
pub fn is_match_glob_pattern(pattern: &str, value: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    if pattern.is_empty() || value.is_empty() {
        return pattern.is_empty() && value.is_empty();
    }
    match pattern.rfind('*') {
        None => value == pattern,
        Some(i) if i == pattern.len() - 1 => value.starts_with(&pattern[..i]),
        Some(0) => value.ends_with(&pattern[1..]),
        Some(i) => value.starts_with(&pattern[..i]) && value.ends_with(&pattern[i + 1..]),
    }
}

/// A URL field or parameter as Java's `URL.getRawParameter` / `toOriginalMap` sees it:
/// `protocol`, `username`, `password`, `host`, `port`, `path`, else the parameter.
pub(crate) fn url_value<'u>(url: &'u Url, key: &str) -> Option<std::borrow::Cow<'u, str>> {
    use std::borrow::Cow;
    match key {
        "protocol" => url.protocol().map(Cow::Borrowed),
        "username" => url.username().map(Cow::Borrowed),
        "password" => url.password().map(Cow::Borrowed),
        "host" => url.host().map(Cow::Borrowed),
        "port" => (url.port() > 0).then(|| Cow::Owned(url.port().to_string())),
        "path" => url.path().map(Cow::Borrowed),
        _ => url.get_param(key).map(Cow::Borrowed),
    }
}

/// Java's `String.valueOf(arg)` for a dynamic value.
pub(crate) fn java_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Long(l) | Value::Date(l) => l.to_string(),
        Value::Double(d) => java_double(*d),
        Value::String(s) => s.clone(),
        Value::Binary(b) => format!("{b:?}"),
        Value::List(l) => {
            let items: Vec<String> = l.items.iter().map(java_string).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Map(m) => {
            let items: Vec<String> = m
                .entries
                .iter()
                .map(|(k, v)| format!("{}={}", java_string(k), java_string(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Object(o) => o.class.to_string(),
        Value::Ref(r) => format!("ref#{r}"),
    }
}

/// Java's `Double.toString`: plain notation in [1e-3, 1e7), else `d.dddE±n`.
fn java_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let a = d.abs();
    if a == 0.0 || (1e-3..1e7).contains(&a) {
        let s = format!("{d}");
        if s.contains('.') { s } else { format!("{s}.0") }
    } else {
        let s = format!("{d:e}");
        let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let mant = if mant.contains('.') {
            mant.to_owned()
        } else {
            format!("{mant}.0")
        };
        format!("{mant}E{exp}")
    }
}

/// Java's `NetUtils.matchIpExpression` for tag-router addresses: `ip`, `ip:port`,
/// `*` or `a-b` per IPv4 segment, IPv4 CIDR (`10.0.0.0/8`); other hosts match
/// exactly.
///
/// ```
/// use rubbo_cluster::router::match_ip_expression;
/// assert!(match_ip_expression("192.168.1.*", "192.168.1.63", 20880));
/// assert!(match_ip_expression("192.168.1.10:20880", "192.168.1.10", 20880));
/// assert!(!match_ip_expression("192.168.1.10:20881", "192.168.1.10", 20880));
/// assert!(match_ip_expression("192.168.1.1-65", "192.168.1.63", 1));
/// assert!(match_ip_expression("10.0.0.0/8", "10.9.8.7", 1));
/// ```
pub fn match_ip_expression(pattern: &str, host: &str, port: u16) -> bool {
    let pattern = pattern.trim();
    if let Some((net, bits)) = pattern.split_once('/') {
        let (Ok(net), Ok(bits), Ok(IpAddr::V4(h))) = (
            net.parse::<Ipv4Addr>(),
            bits.parse::<u32>(),
            host.parse::<IpAddr>(),
        ) else {
            return false;
        };
        if bits > 32 {
            return false;
        }
        let mask = if bits == 0 {
            0
        } else {
            u32::MAX << (32 - bits)
        };
        return u32::from(net) & mask == u32::from(h) & mask;
    }
    // Optional ":port" (IPv4 or host names only; a bare IPv6 has several colons).
    let (ip_part, port_part) = match pattern.rsplit_once(':') {
        Some((ip, p)) if !ip.contains(':') => (ip, Some(p)),
        _ => (pattern, None),
    };
    if let Some(p) = port_part {
        if p.parse::<u16>().ok() != Some(port) {
            return false;
        }
    }
    let pat: Vec<&str> = ip_part.split('.').collect();
    let val: Vec<&str> = host.split('.').collect();
    if pat.len() != 4 || val.len() != 4 {
        return ip_part == host;
    }
    pat.iter().zip(&val).all(|(p, v)| {
        if *p == "*" {
            return true;
        }
        let Ok(v) = v.parse::<u32>() else {
            return p == v;
        };
        match p.split_once('-') {
            Some((a, b)) => match (a.parse::<u32>(), b.parse::<u32>()) {
                (Ok(a), Ok(b)) => a <= v && v <= b,
                _ => false,
            },
            None => p.parse::<u32>().ok() == Some(v),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_edge_cases() {
        assert!(is_match_glob_pattern("", ""));
        assert!(!is_match_glob_pattern("", "a"));
        assert!(!is_match_glob_pattern("a", ""));
        assert!(is_match_glob_pattern("*", ""));
        assert!(is_match_glob_pattern("a*b*c", "a*bxxc"));
    }

    #[test]
    fn java_strings() {
        assert_eq!(java_string(&Value::Double(1.0)), "1.0");
        assert_eq!(java_string(&Value::Double(1e10)), "1.0E10");
        assert_eq!(java_string(&Value::Double(0.5)), "0.5");
        assert_eq!(java_string(&Value::Int(-3)), "-3");
        assert_eq!(java_string(&Value::Null), "null");
    }

    #[test]
    fn ip_expressions() {
        assert!(match_ip_expression("192.168.1.10", "192.168.1.10", 1));
        assert!(!match_ip_expression("192.168.1.10", "192.168.1.11", 1));
        assert!(match_ip_expression("host-a", "host-a", 1));
        assert!(!match_ip_expression("10.0.0.0/8", "11.0.0.1", 1));
    }
}
