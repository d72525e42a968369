//! A JSON view of [`Value`] for tools (feature `json`).

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map as JsonMap, Value as Json, json};

use crate::value::{List, Map, Object, Value};

/// Converts a [`Value`] to JSON.
///
/// Lists are arrays; maps with only string keys are objects, other maps arrays
/// of `[key, value]` pairs; objects are JSON objects with an `"@class"`
/// member; binary is `{"@binary": "<base64>"}`; dates `{"@date": millis}`;
/// typed lists `{"@type": "...", "items": [...]}` and typed maps
/// `{"@type": "...", "entries": ...}`; back-references `{"@ref": n}`.
///
/// ```
/// use rubbo_hessian2::{value_to_json, Object, Value};
/// let v = Value::Object(Object::new("org.rubbo.interop.Address").with_field("zip", 310000));
/// assert_eq!(value_to_json(&v), serde_json::json!({"@class": "org.rubbo.interop.Address", "zip": 310000}));
/// ```
pub fn value_to_json(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => json!(i),
        Value::Long(i) => json!(i),
        Value::Double(d) => serde_json::Number::from_f64(*d).map_or(Json::Null, Json::Number),
        Value::String(s) => Json::String(s.clone()),
        Value::Binary(b) => json!({ "@binary": STANDARD.encode(b) }),
        Value::Date(ms) => json!({ "@date": ms }),
        Value::Ref(i) => json!({ "@ref": i }),
        Value::List(l) => {
            let items = Json::Array(l.items.iter().map(value_to_json).collect());
            match &l.type_name {
                None => items,
                Some(t) => json!({ "@type": t.as_ref(), "items": items }),
            }
        }
        Value::Map(m) => {
            let entries = map_entries(&m.entries);
            match &m.type_name {
                None => entries,
                Some(t) => json!({ "@type": t.as_ref(), "entries": entries }),
            }
        }
        Value::Object(o) => {
            let mut obj = JsonMap::new();
            obj.insert("@class".into(), Json::String(o.class.to_string()));
            for (k, v) in &o.fields {
                obj.insert(k.to_string(), value_to_json(v));
            }
            Json::Object(obj)
        }
    }
}

fn map_entries(entries: &[(Value, Value)]) -> Json {
    if entries.iter().all(|(k, _)| k.as_str().is_some()) {
        let mut obj = JsonMap::new();
        for (k, v) in entries {
            obj.insert(k.as_str().unwrap_or_default().to_owned(), value_to_json(v));
        }
        Json::Object(obj)
    } else {
        Json::Array(
            entries
                .iter()
                .map(|(k, v)| Json::Array(vec![value_to_json(k), value_to_json(v)]))
                .collect(),
        )
    }
}

/// Converts JSON to a [`Value`] (the reverse of [`value_to_json`]), e.g. for
/// generic-invoke arguments given on a command line.
///
/// Numbers that fit an `i32` become `Int`, other integers `Long`, others
/// `Double`; objects with `"@class"` become objects; `{"@binary"}`,
/// `{"@date"}`, `{"@ref"}` and `{"@type", "items"|"entries"}` are understood;
/// any other object is an untyped map with string keys.
///
/// ```
/// use rubbo_hessian2::{json_to_value, Value};
/// assert_eq!(json_to_value(&serde_json::json!(7)), Value::Int(7));
/// assert_eq!(json_to_value(&serde_json::json!(1i64 << 40)), Value::Long(1 << 40));
/// let v = json_to_value(&serde_json::json!({"@class": "org.rubbo.interop.Address", "zip": 1}));
/// assert_eq!(v.class_name(), Some("org.rubbo.interop.Address"));
/// ```
pub fn json_to_value(j: &Json) -> Value {
    match j {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                i32::try_from(i).map_or(Value::Long(i), Value::Int)
            } else {
                Value::Double(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Json::String(s) => Value::String(s.clone()),
        Json::Array(a) => Value::List(List {
            type_name: None,
            items: a.iter().map(json_to_value).collect(),
        }),
        Json::Object(o) => object_to_value(o),
    }
}

fn object_to_value(o: &JsonMap<String, Json>) -> Value {
    if let Some(Json::String(class)) = o.get("@class") {
        let mut obj = Object::new(class.as_str());
        for (k, v) in o.iter().filter(|(k, _)| k.as_str() != "@class") {
            obj.fields.push((Arc::from(k.as_str()), json_to_value(v)));
        }
        return Value::Object(obj);
    }
    if o.len() == 1 {
        if let Some(Json::String(b)) = o.get("@binary")
            && let Ok(bytes) = STANDARD.decode(b)
        {
            return Value::Binary(bytes);
        }
        if let Some(ms) = o.get("@date").and_then(Json::as_i64) {
            return Value::Date(ms);
        }
        if let Some(i) = o
            .get("@ref")
            .and_then(Json::as_u64)
            .and_then(|i| u32::try_from(i).ok())
        {
            return Value::Ref(i);
        }
    }
    if o.len() == 2
        && let Some(Json::String(t)) = o.get("@type")
    {
        if let Some(Json::Array(items)) = o.get("items") {
            return Value::List(List {
                type_name: Some(Arc::from(t.as_str())),
                items: items.iter().map(json_to_value).collect(),
            });
        }
        if let Some(entries) = o.get("entries") {
            let entries = match json_to_value(entries) {
                Value::Map(m) => m.entries,
                Value::List(l) => l
                    .items
                    .into_iter()
                    .map(|p| match p {
                        Value::List(mut kv) if kv.items.len() == 2 => {
                            let v = kv.items.pop().unwrap_or_default();
                            let k = kv.items.pop().unwrap_or_default();
                            (k, v)
                        }
                        other => (other, Value::Null),
                    })
                    .collect(),
                _ => Vec::new(),
            };
            return Value::Map(Map {
                type_name: Some(Arc::from(t.as_str())),
                entries,
            });
        }
    }
    Value::Map(Map {
        type_name: None,
        entries: o
            .iter()
            .map(|(k, v)| (Value::String(k.clone()), json_to_value(v)))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip_of_every_shape() {
        let v = Value::List(List {
            type_name: None,
            items: vec![
                Value::Null,
                Value::Bool(true),
                Value::Int(1),
                Value::Long(1 << 40),
                Value::Double(1.5),
                Value::from("s"),
                Value::Binary(vec![1, 2, 3]),
                Value::Date(1_700_000_000_000),
                Value::Ref(0),
                Value::List(List {
                    type_name: Some(Arc::from("[int")),
                    items: vec![Value::Int(1)],
                }),
                Value::Map(Map {
                    type_name: Some(Arc::from("java.util.TreeMap")),
                    entries: vec![(Value::from("a"), Value::Int(1))],
                }),
                Value::Map(Map {
                    type_name: None,
                    entries: vec![(Value::Int(1), Value::from("one"))],
                }),
                Value::Object(Object::new("X").with_field("f", 1)),
            ],
        });
        let j = value_to_json(&v);
        assert_eq!(j[6], json!({"@binary": "AQID"}));
        assert_eq!(j[7], json!({"@date": 1_700_000_000_000i64}));
        assert_eq!(j[9], json!({"@type": "[int", "items": [1]}));
        assert_eq!(j[11], json!([[1, "one"]]));
        assert_eq!(j[12], json!({"@class": "X", "f": 1}));
        // everything but the non-string-key map (an array of pairs reads back as a list)
        let (Value::List(back), Value::List(orig)) = (json_to_value(&j), v) else {
            panic!("not lists")
        };
        for (i, (b, o)) in back.items.iter().zip(&orig.items).enumerate() {
            if i != 11 {
                assert_eq!(b, o, "item {i}");
            }
        }
    }
}
