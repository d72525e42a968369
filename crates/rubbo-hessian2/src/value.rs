//! The dynamic value model: what a Hessian 2 stream (and a Java object graph) can hold.

use std::sync::Arc;

/// A dynamically typed value, as Java writes it with Hessian 2.
///
/// This is the lingua franca of generic calls, attachments and tools: every
/// Hessian value decodes into it and every `Value` encodes back to the same bytes.
///
/// ```
/// use rubbo_hessian2::{Object, Value};
///
/// let user = Value::Object(
///     Object::new("org.rubbo.interop.Address")
///         .with_field("city", "Hangzhou")
///         .with_field("zip", 310000),
/// );
/// assert_eq!(user.field("city").and_then(Value::as_str), Some("Hangzhou"));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    /// Java `null`.
    #[default]
    Null,
    /// `boolean` / `Boolean`.
    Bool(bool),
    /// 32-bit int (Java `byte`, `short`, `int` all travel as this).
    Int(i32),
    /// 64-bit long.
    Long(i64),
    /// 64-bit double (Java `float` travels as this).
    Double(f64),
    /// A string (Java `String`, `char`, `char[]`).
    String(String),
    /// Binary data (Java `byte[]`).
    Binary(Vec<u8>),
    /// A date: milliseconds since the Unix epoch, UTC (`java.util.Date`).
    Date(i64),
    /// A list or array, with its Java type name when the writer gave one.
    List(List),
    /// A map, with its Java type name when the writer gave one.
    Map(Map),
    /// An object (POJO, enum, BigDecimal, exception...) with its class name.
    Object(Object),
    /// A back-reference to the n-th container (list, map or object) of the
    /// stream, in the order they started. Kept as a reference so that shared and
    /// cyclic graphs survive a decode/encode round trip without blowing up.
    Ref(u32),
}

/// A Hessian list: Java `List`, `Set`, array.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct List {
    /// The Java type (`java.util.HashSet`, `[int`...), `None` for an untyped list.
    pub type_name: Option<Arc<str>>,
    /// The items, in order.
    pub items: Vec<Value>,
}

/// A Hessian map: Java `Map`, or a POJO sent as a map.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Map {
    /// The Java type (`java.util.TreeMap`...), `None` for an untyped (`H`) map.
    pub type_name: Option<Arc<str>>,
    /// The entries, in stream order.
    pub entries: Vec<(Value, Value)>,
}

/// A Hessian object: a class name and its fields, in the class definition's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// The Java class name, e.g. `org.rubbo.interop.User`.
    pub class: Arc<str>,
    /// The fields: name and value.
    pub fields: Vec<(Arc<str>, Value)>,
}

impl Object {
    /// An object of `class` with no fields yet.
    pub fn new(class: impl Into<Arc<str>>) -> Self {
        Object {
            class: class.into(),
            fields: Vec::new(),
        }
    }

    /// Adds a field (builder style).
    pub fn with_field(mut self, name: impl Into<Arc<str>>, value: impl Into<Value>) -> Self {
        self.fields.push((name.into(), value.into()));
        self
    }

    /// The value of field `name`, if present.
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.fields
            .iter()
            .find(|(n, _)| n.as_ref() == name)
            .map(|(_, v)| v)
    }
}

impl Value {
    /// The string, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The number as `i64`, if this is an int or a long.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(i64::from(*v)),
            Value::Long(v) => Some(*v),
            _ => None,
        }
    }

    /// The boolean, if this is a boolean.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The number as `f64`, if this is a double, an int or a long.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Double(v) => Some(*v),
            Value::Int(v) => Some(f64::from(*v)),
            Value::Long(v) => Some(*v as f64),
            _ => None,
        }
    }

    /// The items, if this is a list.
    pub fn as_list(&self) -> Option<&List> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }

    /// The map, if this is a map.
    pub fn as_map(&self) -> Option<&Map> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The object, if this is an object.
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The class name of an object, or the type name of a typed list or map.
    pub fn class_name(&self) -> Option<&str> {
        match self {
            Value::Object(o) => Some(&o.class),
            Value::List(l) => l.type_name.as_deref(),
            Value::Map(m) => m.type_name.as_deref(),
            _ => None,
        }
    }

    /// A short name of the variant (`"int"`, `"list"`...), for messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "int",
            Value::Long(_) => "long",
            Value::Double(_) => "double",
            Value::String(_) => "string",
            Value::Binary(_) => "binary",
            Value::Date(_) => "date",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Object(_) => "object",
            Value::Ref(_) => "reference",
        }
    }

    /// Whether this is `Null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// A field of an object, or the value under a string key of a map.
    pub fn field(&self, name: &str) -> Option<&Value> {
        match self {
            Value::Object(o) => o.field(name),
            Value::Map(m) => m
                .entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(name))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

macro_rules! from_impl {
    ($($t:ty => $variant:ident $(as $cast:ty)?),* $(,)?) => {
        $(impl From<$t> for Value {
            fn from(v: $t) -> Self {
                Value::$variant(v $(as $cast)?)
            }
        })*
    };
}

from_impl! {
    bool => Bool,
    i8 => Int as i32,
    i16 => Int as i32,
    i32 => Int,
    i64 => Long,
    f64 => Double,
    String => String,
    Vec<u8> => Binary,
    List => List,
    Map => Map,
    Object => Object,
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::String(v.to_owned())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

impl From<f32> for Value {
    /// Like hessian-lite: a `float` travels as the double of its decimal string,
    /// so `0.1f32` becomes exactly `0.1`, not `0.10000000149011612`.
    fn from(v: f32) -> Self {
        Value::Double(v.to_string().parse().unwrap_or(f64::from(v)))
    }
}
