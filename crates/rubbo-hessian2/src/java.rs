//! Rust forms of Java types that have none: `java.util.Date`,
//! `java.math.BigDecimal`, `java.math.BigInteger` and `Throwable`.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::encoder::{Encoder, Output};
use crate::error::{Error, Result};
use crate::markers;
use crate::value::{List, Object, Value};

/// A `java.util.Date`: milliseconds since the Unix epoch (UTC).
///
/// Serializes as a Hessian date (`0x4a`/`0x4b`); deserializes from a date, int or long.
///
/// ```
/// use rubbo_hessian2::{from_slice, to_vec, Date};
/// let bytes = to_vec(&Date(0))?;
/// assert_eq!(bytes, [0x4b, 0, 0, 0, 0]);
/// assert_eq!(from_slice::<Date>(&bytes)?, Date(0));
/// # Ok::<(), rubbo_hessian2::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Date(pub i64);

impl Serialize for Date {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(markers::DATE, &self.0)
    }
}

impl<'de> Deserialize<'de> for Date {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Date;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a date (epoch millis)")
            }
            fn visit_i64<E>(self, v: i64) -> Result<Date, E> {
                Ok(Date(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Date, E> {
                i64::try_from(v).map(Date).map_err(E::custom)
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Date, D::Error> {
                d.deserialize_i64(self)
            }
        }
        d.deserialize_newtype_struct(markers::DATE, V)
    }
}

/// A `java.math.BigDecimal`, kept as its decimal string (`toString()` form).
///
/// On the wire (hessian-lite) it is an object of class `java.math.BigDecimal`
/// with one field `value`.
///
/// ```
/// use rubbo_hessian2::{from_slice, to_vec, BigDecimal};
/// let d = BigDecimal::new("12.50");
/// assert_eq!(from_slice::<BigDecimal>(&to_vec(&d)?)?, d);
/// # Ok::<(), rubbo_hessian2::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename = "java.math.BigDecimal")]
pub struct BigDecimal {
    /// The decimal string, e.g. `"12.50"`.
    pub value: String,
}

impl BigDecimal {
    /// A BigDecimal from its decimal string.
    pub fn new(value: impl Into<String>) -> Self {
        BigDecimal {
            value: value.into(),
        }
    }
}

impl fmt::Display for BigDecimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.value)
    }
}

/// A `java.math.BigInteger`, kept as its decimal string.
///
/// Java writes it as a bean of its JDK fields (`signum`, `mag` as `[int`...);
/// this type reads and writes that form.
///
/// ```
/// use rubbo_hessian2::{from_slice, to_vec, BigInteger};
/// let n = BigInteger::new("-123456789012345678901234567890");
/// assert_eq!(from_slice::<BigInteger>(&to_vec(&n)?)?, n);
/// # Ok::<(), rubbo_hessian2::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct BigInteger {
    /// The decimal string, e.g. `"-42"`.
    pub value: String,
}

impl BigInteger {
    /// A BigInteger from its decimal string (an optional `-`, then digits).
    pub fn new(value: impl Into<String>) -> Self {
        BigInteger {
            value: value.into(),
        }
    }

    fn to_java_value(&self) -> Result<Value> {
        let (neg, digits) = match self.value.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, self.value.as_str()),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Error::Unsupported(
                "BigInteger value is not a decimal integer",
            ));
        }
        // magnitude as little-endian u32 words
        let mut mag: Vec<u32> = Vec::new();
        for b in digits.bytes() {
            let mut carry = u64::from(b - b'0');
            for w in mag.iter_mut() {
                let x = u64::from(*w) * 10 + carry;
                *w = x as u32;
                carry = x >> 32;
            }
            if carry > 0 {
                mag.push(carry as u32);
            }
        }
        let signum = if mag.is_empty() {
            0
        } else if neg {
            -1
        } else {
            1
        };
        let items = mag.iter().rev().map(|&w| Value::Int(w as i32)).collect();
        // JDK 17's field set, in the order hessian-lite writes it; the lazily
        // computed caches are 0 in a fresh BigInteger.
        Ok(Value::Object(
            Object::new("java.math.BigInteger")
                .with_field(
                    "mag",
                    Value::List(List {
                        type_name: Some(Arc::from("[int")),
                        items,
                    }),
                )
                .with_field("firstNonzeroIntNumPlusTwo", 0)
                .with_field("lowestSetBitPlusTwo", 0)
                .with_field("bitLengthPlusOne", 0)
                .with_field("bitCountPlusOne", 0)
                .with_field("signum", signum),
        ))
    }

    /// Reads Java's bean form (or a plain string or number).
    pub fn from_java_value(v: &Value) -> Option<BigInteger> {
        match v {
            Value::String(s) => Some(BigInteger::new(s.clone())),
            Value::Int(_) | Value::Long(_) => v.as_i64().map(|i| BigInteger::new(i.to_string())),
            Value::Object(o) => {
                if let Some(Value::String(s)) = o.field("value") {
                    return Some(BigInteger::new(s.clone()));
                }
                let signum = o.field("signum")?.as_i64()?;
                let Value::List(l) = o.field("mag")? else {
                    return None;
                };
                let mut words: Vec<u32> = Vec::with_capacity(l.items.len());
                for i in l.items.iter().rev() {
                    words.push(i.as_i64()? as u32);
                }
                let mut digits = Vec::new();
                while words.iter().any(|&w| w != 0) {
                    let mut rem = 0u64;
                    for w in words.iter_mut().rev() {
                        let x = (rem << 32) | u64::from(*w);
                        *w = (x / 1_000_000_000) as u32;
                        rem = x % 1_000_000_000;
                    }
                    digits.push(rem as u32);
                }
                let mut s = String::new();
                if signum < 0 && !digits.is_empty() {
                    s.push('-');
                }
                match digits.split_last() {
                    None => s.push('0'),
                    Some((top, rest)) => {
                        s.push_str(&top.to_string());
                        for d in rest.iter().rev() {
                            s.push_str(&format!("{d:09}"));
                        }
                    }
                }
                Some(BigInteger::new(s))
            }
            _ => None,
        }
    }
}

impl fmt::Display for BigInteger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.value)
    }
}

impl Serialize for BigInteger {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_java_value()
            .map_err(serde::ser::Error::custom)?
            .serialize(s)
    }
}

impl<'de> Deserialize<'de> for BigInteger {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        BigInteger::from_java_value(&v)
            .ok_or_else(|| serde::de::Error::custom("expected a java.math.BigInteger"))
    }
}

/// One frame of a Java stack trace (`java.lang.StackTraceElement`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StackTraceElement {
    /// `declaringClass`.
    pub declaring_class: String,
    /// `methodName`.
    pub method_name: String,
    /// `fileName`, if known.
    pub file_name: Option<String>,
    /// `lineNumber` (negative when unknown / native).
    pub line_number: i32,
}

/// A Java exception (`Throwable`) as data: class name, message, cause.
///
/// Decodes from what Java writes (any field set; unknown fields ignored) and
/// encodes as hessian-lite writes a Throwable, so Java reads it back as that
/// exception class (when the class exists on the Java side).
///
/// ```
/// use rubbo_hessian2::{from_slice, to_vec, JavaException};
/// let e = JavaException::new("org.rubbo.interop.InteropException", "boom");
/// let back: JavaException = from_slice(&to_vec(&e)?)?;
/// assert_eq!(back.class, "org.rubbo.interop.InteropException");
/// assert_eq!(back.message.as_deref(), Some("boom"));
/// # Ok::<(), rubbo_hessian2::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JavaException {
    /// The exception class, e.g. `java.lang.RuntimeException`.
    pub class: String,
    /// `detailMessage`.
    pub message: Option<String>,
    /// The cause, unless it is the exception itself (Java's "no cause").
    pub cause: Option<Box<JavaException>>,
    /// `stackTrace`.
    pub stack_trace: Vec<StackTraceElement>,
    /// `suppressedExceptions`.
    pub suppressed: Vec<JavaException>,
}

impl fmt::Display for JavaException {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.message {
            Some(m) => write!(f, "{}: {}", self.class, m),
            None => f.write_str(&self.class),
        }
    }
}

impl std::error::Error for JavaException {}

const EXCEPTION_FIELDS: [&str; 4] = [
    "suppressedExceptions",
    "stackTrace",
    "cause",
    "detailMessage",
];
const STACK_FIELDS: [&str; 4] = ["declaringClass", "methodName", "fileName", "lineNumber"];

impl JavaException {
    /// An exception of `class` with `message`.
    pub fn new(class: impl Into<String>, message: impl Into<String>) -> Self {
        JavaException {
            class: class.into(),
            message: Some(message.into()),
            ..Default::default()
        }
    }

    /// Reads an exception from its decoded form: an object with (some of)
    /// `detailMessage`, `cause`, `stackTrace`, `suppressedExceptions`. Returns
    /// `None` if `v` is not an object.
    pub fn from_value(v: &Value) -> Option<JavaException> {
        Self::from_value_depth(v, 0)
    }

    fn from_value_depth(v: &Value, depth: usize) -> Option<JavaException> {
        let Value::Object(o) = v else { return None };
        if depth > 64 {
            return None;
        }
        let cause = o
            .field("cause")
            .and_then(|c| Self::from_value_depth(c, depth + 1))
            .map(Box::new);
        let list = |name: &str| match o.field(name) {
            Some(Value::List(l)) => l.items.as_slice(),
            _ => &[],
        };
        let stack_trace = list("stackTrace")
            .iter()
            .filter_map(|e| {
                Some(StackTraceElement {
                    declaring_class: e.field("declaringClass")?.as_str()?.to_owned(),
                    method_name: e
                        .field("methodName")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    file_name: e
                        .field("fileName")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    line_number: e
                        .field("lineNumber")
                        .and_then(Value::as_i64)
                        .map_or(-1, |n| n as i32),
                })
            })
            .collect();
        let suppressed = list("suppressedExceptions")
            .iter()
            .filter_map(|s| Self::from_value_depth(s, depth + 1))
            .collect();
        Some(JavaException {
            class: o.class.to_string(),
            message: o
                .field("detailMessage")
                .and_then(Value::as_str)
                .map(str::to_owned),
            cause,
            stack_trace,
            suppressed,
        })
    }

    /// The `Value` form (cause `Null` when absent; the encoder writes the
    /// self-reference Java expects).
    pub fn to_value(&self) -> Value {
        let st = self
            .stack_trace
            .iter()
            .map(|e| {
                Value::Object(
                    Object::new("java.lang.StackTraceElement")
                        .with_field("declaringClass", e.declaring_class.as_str())
                        .with_field("methodName", e.method_name.as_str())
                        .with_field("fileName", e.file_name.as_deref())
                        .with_field("lineNumber", e.line_number),
                )
            })
            .collect();
        Value::Object(
            Object::new(self.class.as_str())
                .with_field(
                    "suppressedExceptions",
                    Value::List(List {
                        type_name: None,
                        items: self
                            .suppressed
                            .iter()
                            .map(JavaException::to_value)
                            .collect(),
                    }),
                )
                .with_field(
                    "stackTrace",
                    Value::List(List {
                        type_name: Some(Arc::from("[java.lang.StackTraceElement")),
                        items: st,
                    }),
                )
                .with_field(
                    "cause",
                    self.cause.as_ref().map_or(Value::Null, |c| c.to_value()),
                )
                .with_field("detailMessage", self.message.as_deref()),
        )
    }
}

impl<B: Output> Encoder<B> {
    /// Writes a Java exception the way hessian-lite writes a `Throwable`:
    /// fields `suppressedExceptions` (`Collections$EmptyList` when empty),
    /// `stackTrace` (a `[java.lang.StackTraceElement` list), `cause` (a
    /// reference to itself when there is none) and `detailMessage`.
    pub fn write_exception(&mut self, e: &JavaException) -> Result<()> {
        let me = self.write_object_header(&e.class, &EXCEPTION_FIELDS)?;
        if e.suppressed.is_empty() {
            self.write_list_header(Some("java.util.Collections$EmptyList"), 0)?;
        } else {
            self.write_list_header(None, e.suppressed.len())?;
            for s in &e.suppressed {
                self.write_exception(s)?;
            }
        }
        self.write_list_header(Some("[java.lang.StackTraceElement"), e.stack_trace.len())?;
        for f in &e.stack_trace {
            self.write_object_header("java.lang.StackTraceElement", &STACK_FIELDS)?;
            self.write_string(&f.declaring_class)?;
            self.write_string(&f.method_name)?;
            match &f.file_name {
                Some(n) => self.write_string(n)?,
                None => self.write_null()?,
            }
            self.write_int(f.line_number)?;
        }
        match &e.cause {
            Some(c) => self.write_exception(c)?,
            None => self.write_ref(me)?,
        }
        match &e.message {
            Some(m) => self.write_string(m),
            None => self.write_null(),
        }
    }
}

pub(crate) fn write_exception_value<B: Output>(enc: &mut Encoder<B>, v: &Value) -> Result<()> {
    let e = JavaException::from_value(v).ok_or(Error::Unsupported("exception is not an object"))?;
    enc.write_exception(&e)
}

impl Serialize for JavaException {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(markers::EXCEPTION, &self.to_value())
    }
}

impl<'de> Deserialize<'de> for JavaException {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        JavaException::from_value(&v)
            .ok_or_else(|| serde::de::Error::custom("expected a Java exception object"))
    }
}

/// A Java `byte[]`: serializes as Hessian binary (a plain `Vec<u8>` would be
/// a list of ints); deserializes from binary or a list of ints.
///
/// ```
/// use rubbo_hessian2::{from_slice, to_vec, Binary};
/// let b = Binary(vec![1, 2, 3]);
/// assert_eq!(to_vec(&b)?, [0x23, 1, 2, 3]);
/// assert_eq!(from_slice::<Binary>(&[0x23, 1, 2, 3])?, b);
/// # Ok::<(), rubbo_hessian2::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Binary(pub Vec<u8>);

impl Serialize for Binary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Binary {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Binary;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("binary data")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Binary, E> {
                Ok(Binary(v.to_vec()))
            }
            fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Binary, E> {
                Ok(Binary(v))
            }
            fn visit_unit<E>(self) -> Result<Binary, E> {
                Ok(Binary(Vec::new()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Binary, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = a.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(Binary(out))
            }
        }
        d.deserialize_byte_buf(V)
    }
}
