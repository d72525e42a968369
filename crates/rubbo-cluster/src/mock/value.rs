//! Mock bodies and values (Java's `MockInvoker.normalizeMock` / `parseMockValue`).

use rubbo_common::{Payload, Value};
use rubbo_hessian2::{List, Map};

/// Java's `normalizeMock`: `return` -> `return null`; `true`/`default`/`fail`/`force`
/// -> `default`; strips `fail:` / `force:`; backticks -> double quotes in `return` and
/// `throw` bodies.
///
/// ```
/// use rubbo_cluster::mock::normalize_mock;
/// assert_eq!(normalize_mock("return"), "return null");
/// assert_eq!(normalize_mock("force"), "default");
/// assert_eq!(normalize_mock("fail:return `x`"), "return \"x\"");
/// assert_eq!(normalize_mock("force:throw com.X"), "throw com.X");
/// ```
pub fn normalize_mock(mock: &str) -> String {
    let mut m = mock.trim();
    if m.is_empty() {
        return String::new();
    }
    if m.eq_ignore_ascii_case("return") {
        return "return null".into();
    }
    if ["true", "default", "fail", "force"]
        .iter()
        .any(|d| m.eq_ignore_ascii_case(d))
    {
        return "default".into();
    }
    if let Some(rest) = m.strip_prefix("fail:") {
        m = rest.trim();
    }
    if let Some(rest) = m.strip_prefix("force:") {
        m = rest.trim();
    }
    if m.starts_with("return ") || m.starts_with("throw") {
        m.replace('`', "\"")
    } else {
        m.to_owned()
    }
}

/// Java's `parseMockValue` without a declared return type.
///
/// ```
/// use rubbo_cluster::mock::parse_mock_value;
/// use rubbo_common::{Payload, Value};
/// assert!(matches!(parse_mock_value("null"), Payload::Null));
/// assert!(matches!(parse_mock_value("true"), Payload::Value(Value::Bool(true))));
/// assert!(matches!(parse_mock_value("42"), Payload::Value(Value::Int(42))));
/// assert!(matches!(parse_mock_value("\"hi\""), Payload::Value(Value::String(ref s)) if s == "hi"));
/// ```
pub fn parse_mock_value(mock: &str) -> Payload {
    match mock {
        "empty" | "null" => return Payload::Null,
        "true" => return Payload::Value(Value::Bool(true)),
        "false" => return Payload::Value(Value::Bool(false)),
        _ => {}
    }
    if mock.len() >= 2
        && ((mock.starts_with('"') && mock.ends_with('"'))
            || (mock.starts_with('\'') && mock.ends_with('\'')))
    {
        return Payload::Value(Value::String(mock[1..mock.len() - 1].to_owned()));
    }
    if !mock.is_empty() && mock.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = mock.parse::<i64>() {
            return Payload::Value(match i32::try_from(n) {
                Ok(i) => Value::Int(i),
                Err(_) => Value::Long(n),
            });
        }
    }
    if mock.starts_with('{') || mock.starts_with('[') {
        if let Ok(json) = serde_json::from_str::<serde_json::Value>(mock) {
            return Payload::Value(from_json(json));
        }
    }
    Payload::Value(Value::String(mock.to_owned()))
}

fn from_json(j: serde_json::Value) -> Value {
    use serde_json::Value as J;
    match j {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(b),
        J::Number(n) => match n.as_i64() {
            Some(i) => match i32::try_from(i) {
                Ok(v) => Value::Int(v),
                Err(_) => Value::Long(i),
            },
            None => Value::Double(n.as_f64().unwrap_or(0.0)),
        },
        J::String(s) => Value::String(s),
        J::Array(items) => Value::List(List {
            type_name: None,
            items: items.into_iter().map(from_json).collect(),
        }),
        J::Object(entries) => Value::Map(Map {
            type_name: None,
            entries: entries
                .into_iter()
                .map(|(k, v)| (Value::String(k), from_json(v)))
                .collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_values() {
        let Payload::Value(Value::Map(m)) = parse_mock_value(r#"{"a": 1, "b": [true, "x"]}"#)
        else {
            panic!("not a map")
        };
        assert_eq!(m.entries.len(), 2);
        let Payload::Value(Value::List(l)) = parse_mock_value("[1, 2]") else {
            panic!("not a list")
        };
        assert_eq!(l.items, vec![Value::Int(1), Value::Int(2)]);
        assert!(
            matches!(parse_mock_value("1.5"), Payload::Value(Value::String(ref s)) if s == "1.5")
        );
        assert!(matches!(
            parse_mock_value("99999999999"),
            Payload::Value(Value::Long(99_999_999_999))
        ));
        assert!(
            matches!(parse_mock_value("'q'"), Payload::Value(Value::String(ref s)) if s == "q")
        );
        assert!(
            matches!(parse_mock_value("plain"), Payload::Value(Value::String(ref s)) if s == "plain")
        );
    }
}
