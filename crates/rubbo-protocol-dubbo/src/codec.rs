//! Dubbo request and response bodies in Hessian 2, exactly as Java's `DubboCodec`
//! writes and reads them (reference §2.1, §2.2).
//!
//! Decoding is lazy where it pays: a request's arguments and a response's value stay
//! as a zero-copy slice of the frame ([`Encoded`]) until the typed dispatcher or stub
//! decodes them with the types it knows, through the [`Serialization`] they name.
//!
//! The serialization is chosen by name (the consumer's `serialization` URL key) or by
//! the frame header's id (the provider), through `rubbo-serialization`'s table; the
//! body layout itself (the fields, the attachment map, the fast paths below) is written
//! and read here in Hessian 2 directly, as Java's `DubboCodec` does with its
//! `ObjectOutput`, so this codec accepts only serializations that are Hessian 2
//! ([`body_serialization`]).

use std::borrow::Cow;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use rubbo_common::keys::defaults::DUBBO_VERSION;
use rubbo_common::{
    Arguments, Attachments, BizException, Encoded, Invocation, Outcome, Payload, RpcResult,
    Serialization, Value,
};
use rubbo_hessian2::{Decoder, Encoder, JavaException};
use rubbo_serialization::HESSIAN2;
use serde::Deserialize;
use serde::de::{self, Visitor};

use crate::descriptor;
use crate::names::{self, Names};

/// Response flags (the first value of an OK response body).
pub mod flag {
    /// A Throwable follows.
    pub const WITH_EXCEPTION: i32 = 0;
    /// A value follows.
    pub const VALUE: i32 = 1;
    /// Nothing follows (`null` / `void`).
    pub const NULL_VALUE: i32 = 2;
    /// A Throwable and attachments follow.
    pub const WITH_EXCEPTION_WITH_ATTACHMENTS: i32 = 3;
    /// A value and attachments follow.
    pub const VALUE_WITH_ATTACHMENTS: i32 = 4;
    /// Attachments follow.
    pub const NULL_VALUE_WITH_ATTACHMENTS: i32 = 5;
}

/// Why a body could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The Hessian layer failed.
    #[error("hessian2: {0}")]
    Hessian(#[from] rubbo_hessian2::Error),
    /// The parameter descriptor is not a JVM descriptor.
    #[error("malformed parameter descriptor \"{0}\"")]
    BadDescriptor(String),
    /// An unknown response flag.
    #[error("unknown response flag {0}")]
    BadFlag(i32),
    /// Arguments received in encoded form could not be read back to be sent on.
    #[error("arguments cannot be re-encoded: {0}")]
    BadArguments(String),
    /// The serialization id is not Hessian 2.
    #[error("unsupported serialization id {0} (supported: 2 = hessian2)")]
    Serialization(u8),
    /// A value to send is encoded in a serialization that cannot be read back.
    #[error("{0}")]
    Value(#[from] rubbo_common::SerializationError),
    /// A leading field of a request body is neither a string, `null`, a boolean nor
    /// a number (what Java's `Hessian2Input.readString` reads as text).
    #[error("the {field} is not a string (found {found})")]
    NotAString {
        /// Which field (`method name`, ...).
        field: &'static str,
        /// What came instead (a [`Value::kind_name`]).
        found: &'static str,
    },
    /// The body's service path is `null`: Java's provider finds no service for it
    /// (its serialization check), whatever the attachments say.
    #[error("Service null:{0} not found, invocation rejected (the service path is null)")]
    NullPath(String),
    /// The method name is `null` while parameter types are given: Java's provider
    /// finds no method for it.
    #[error("Service not found:{0}, null (the method name is null)")]
    NullMethod(String),
    /// The parameter type descriptor is `null` (Java fails reading its length).
    #[error("the parameter types descriptor is null")]
    NullDescriptor,
    /// A routing attachment (`path`, `version`, `group`) holds a list, map or
    /// object, which Java's provider cannot use as a string either.
    #[error("attachment \"{key}\" is not a string (found {found})")]
    BadAttachment {
        /// The attachment key.
        key: &'static str,
        /// What came instead (a [`Value::kind_name`]).
        found: &'static str,
    },
}

/// What the consumer adds to the attachments of every request, beside the call's own.
#[derive(Debug, Clone, Default)]
pub struct RequestMeta<'a> {
    /// The service path (normally the interface name).
    pub path: &'a str,
    /// Service version (`0.0.0` when unset).
    pub version: Option<&'a str>,
    /// Service group.
    pub group: Option<&'a str>,
    /// The interface name, when the URL names one.
    pub interface: Option<&'a str>,
    /// Timeout in ms (sent as a decimal string).
    pub timeout_ms: u64,
    /// The consumer's application (`remote.application`).
    pub application: Option<&'a str>,
    /// Provider token, if any.
    pub token: Option<&'a str>,
    /// The same fields encoded once ([`EncodedMeta::new`]), for a consumer that sends
    /// many requests with them: encoding then copies them instead.
    pub encoded: Option<&'a EncodedMeta>,
}

/// The parts of a request that stay the same for every call of one consumer
/// reference, encoded once: the dubbo version, path and service version that open the
/// body, and the `path`, `version`, `interface`, `group`, `remote.application` and
/// `token` attachments (`timeout` varies by method and is written per call).
#[derive(Debug, Clone)]
pub struct EncodedMeta {
    head: Bytes,
    attachments: Bytes,
}

/// The attachment keys [`EncodedMeta`] holds.
const ENCODED_KEYS: [&str; 6] = [
    "path",
    "version",
    "interface",
    "group",
    "remote.application",
    "token",
];

impl EncodedMeta {
    /// Encodes the per-reference parts of `meta` (its `timeout_ms` and `encoded`
    /// are not used).
    pub fn new(meta: &RequestMeta<'_>) -> Result<Self, CodecError> {
        let mut head = BytesMut::new();
        meta.write_head(&mut Encoder::new(&mut head))?;
        let mut attachments = BytesMut::new();
        let mut enc = Encoder::new(&mut attachments);
        for (k, v) in ENCODED_KEYS.iter().zip(meta.attachment_values()) {
            if let Some(v) = v {
                enc.write_string(k)?;
                enc.write_string(v)?;
            }
        }
        Ok(EncodedMeta {
            head: head.freeze(),
            attachments: attachments.freeze(),
        })
    }
}

impl<'a> RequestMeta<'a> {
    /// The body's first three fields: dubbo version, path, service version.
    fn write_head<B: rubbo_hessian2::Output>(
        &self,
        enc: &mut Encoder<B>,
    ) -> Result<(), CodecError> {
        enc.write_string(DUBBO_VERSION)?;
        enc.write_string(self.interface.unwrap_or(self.path))?;
        enc.write_string(
            self.version
                .unwrap_or(rubbo_common::keys::defaults::VERSION),
        )?;
        Ok(())
    }

    /// The values of [`ENCODED_KEYS`], in order.
    fn attachment_values(&self) -> [Option<&'a str>; 6] {
        [
            Some(self.path),
            Some(
                self.version
                    .unwrap_or(rubbo_common::keys::defaults::VERSION),
            ),
            self.interface,
            self.group,
            self.application,
            self.token,
        ]
    }
}

/// Formats `v` in decimal into `buf` without allocating.
fn format_u64(mut v: u64, buf: &mut [u8; 20]) -> &str {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[i..]).unwrap_or("0")
}

fn write_attachments<B: rubbo_hessian2::Output>(
    enc: &mut Encoder<B>,
    fixed: &[(&str, Option<&str>)],
    extra: &Attachments,
) -> Result<(), CodecError> {
    enc.write_map_start(None)?;
    write_attachment_entries(enc, fixed, extra)?;
    enc.write_end()?;
    Ok(())
}

/// The entries of an attachment map: `fixed` unless `extra` has the key, then `extra`.
fn write_attachment_entries<B: rubbo_hessian2::Output>(
    enc: &mut Encoder<B>,
    fixed: &[(&str, Option<&str>)],
    extra: &Attachments,
) -> Result<(), CodecError> {
    for (k, v) in fixed {
        if let Some(v) = v {
            if !extra.contains_key(*k) {
                enc.write_string(k)?;
                enc.write_string(v)?;
            }
        }
    }
    for (k, v) in extra {
        enc.write_string(k)?;
        enc.write_value(v)?;
    }
    Ok(())
}

/// The serialization a frame header's `id` names, if this codec can read and write
/// bodies in it: the table's entry for the id, when it is Hessian 2 (the only body
/// layout implemented here). Anything else is [`CodecError::Serialization`], which the
/// provider answers with status 40 as before.
pub fn body_serialization(id: u8) -> Result<&'static dyn Serialization, CodecError> {
    rubbo_serialization::builtin_by_id(id)
        .filter(|s| is_hessian2(*s))
        .ok_or(CodecError::Serialization(id))
}

/// Whether bodies of this codec can carry `serialization` (its name is `hessian2`).
pub fn supports(serialization: &dyn Serialization) -> bool {
    is_hessian2(serialization)
}

fn is_hessian2(s: &dyn Serialization) -> bool {
    s.name() == HESSIAN2.name()
}

/// Whether writing `v` starts no class definition, type or back-reference.
fn is_scalar(v: &Value) -> bool {
    matches!(
        v,
        Value::Null
            | Value::Bool(_)
            | Value::Int(_)
            | Value::Long(_)
            | Value::Double(_)
            | Value::String(_)
            | Value::Binary(_)
            | Value::Date(_)
    )
}

/// Encodes a request body: version, path, service version, method, descriptor,
/// arguments, attachments.
pub fn encode_request(
    inv: &Invocation,
    meta: &RequestMeta<'_>,
    out: &mut BytesMut,
) -> Result<(), CodecError> {
    let mut enc = Encoder::new(out);
    match meta.encoded {
        Some(e) => enc.get_mut().put_slice(&e.head),
        None => meta.write_head(&mut enc)?,
    }
    enc.write_string(inv.method())?;
    enc.write_string(inv.parameter_types())?;
    match inv.arguments() {
        Arguments::Values(values) => {
            for v in values {
                enc.write_value(v)?;
            }
        }
        Arguments::Typed { value, .. } => enc.write_args(&**value)?,
        Arguments::Stream(_) => {
            return Err(CodecError::BadArguments(
                "a message stream: the dubbo protocol has no streaming calls (use tri)".into(),
            ));
        }
        // Hessian 2 bytes made once for many calls (`rubbo bench --typed`): copied as
        // they are. Only when the attachments written after them are scalars: the
        // bytes were written by another encoder, so a class definition or reference
        // in an attachment would not line up with the ones the bytes hold.
        Arguments::Encoded { encoded, .. }
            if is_hessian2(encoded.serialization) && inv.attachments().values().all(is_scalar) =>
        {
            enc.get_mut().put_slice(&encoded.bytes);
        }
        Arguments::Encoded { .. } => {
            for v in inv
                .arguments()
                .to_values()
                .map_err(|e| CodecError::BadArguments(e.to_string()))?
            {
                enc.write_value(&v)?;
            }
        }
    }
    let mut digits = [0u8; 20];
    let timeout = format_u64(meta.timeout_ms, &mut digits);
    let extra = inv.attachments();
    match meta.encoded {
        // The call's own attachments replace none of the encoded ones.
        Some(e) if extra.is_empty() || !ENCODED_KEYS.iter().any(|k| extra.contains_key(*k)) => {
            enc.write_map_start(None)?;
            enc.get_mut().put_slice(&e.attachments);
            let fixed = [("timeout", Some(timeout))];
            write_attachment_entries(&mut enc, &fixed, extra)?;
            enc.write_end()?;
            Ok(())
        }
        _ => {
            let [path, version, interface, group, application, token] = meta.attachment_values();
            let fixed: [(&str, Option<&str>); 7] = [
                ("path", path),
                ("version", version),
                ("timeout", Some(timeout)),
                ("interface", interface),
                ("group", group),
                ("remote.application", application),
                ("token", token),
            ];
            write_attachments(&mut enc, &fixed, extra)
        }
    }
}

/// A decoded request body; the arguments are still encoded.
#[derive(Debug, Clone)]
pub struct DecodedRequest {
    /// The dubbo protocol version the consumer speaks (`2.0.2`).
    pub dubbo_version: Cow<'static, str>,
    /// The service path from the body.
    pub path: Arc<str>,
    /// The service version from the body.
    pub version: Arc<str>,
    /// The method name.
    pub method: Arc<str>,
    /// The JVM parameter descriptors.
    pub parameter_types: Arc<str>,
    /// The arguments, as a zero-copy slice of the body.
    pub arguments: Arguments,
    /// What the attachments say about routing (`path`, `version`, `group`,
    /// `timeout`, `token`), read without keeping them in [`attachments`](Self::attachments).
    pub routing: Routing,
    /// The other request attachments (with [`decode_request_full`], all of them).
    pub attachments: Attachments,
}

/// The routing attachments of a request. `path` and `version` are set only where
/// they differ from the body's fields.
#[derive(Debug, Clone, Default)]
pub struct Routing {
    /// Attachment `path`, when it differs from the body's path.
    pub path: Option<Arc<str>>,
    /// Attachment `version`, when it differs from the body's version.
    pub version: Option<Arc<str>>,
    /// Attachment `group`.
    pub group: Option<Arc<str>>,
    /// Attachment `timeout` in ms.
    pub timeout_ms: Option<u64>,
    /// Attachment `token`.
    pub token: Option<Arc<str>>,
}

impl DecodedRequest {
    /// The attachment `key` as a string (routing keys included).
    pub fn attachment(&self, key: &str) -> Option<&str> {
        match key {
            "path" => Some(self.routing.path.as_deref().unwrap_or(&self.path)),
            "version" => Some(self.routing.version.as_deref().unwrap_or(&self.version)),
            "group" => self.routing.group.as_deref(),
            "token" => self.routing.token.as_deref(),
            _ => self.attachments.get(key).and_then(Value::as_str),
        }
    }

    /// The service path to route by: attachment `path`, else the body's.
    pub fn service_path(&self) -> &str {
        self.routing.path.as_deref().unwrap_or(&self.path)
    }

    /// The service version to route by: attachment `version`, else the body's.
    pub fn service_version(&self) -> &str {
        self.routing.version.as_deref().unwrap_or(&self.version)
    }
}

/// Decodes a request body for serving: the arguments stay encoded, and the
/// attachments Java providers hide from services (`path`, `interface`, `version`,
/// `timeout`, `dubbo`, `group`, `token`) go to [`DecodedRequest::routing`] instead of
/// the attachment map, without allocating when they repeat the body's fields.
pub fn decode_request(serialization: u8, body: &Bytes) -> Result<DecodedRequest, CodecError> {
    decode_request_with(serialization, body, false)
}

/// Decodes a request body keeping every attachment in the map (for tools).
pub fn decode_request_full(serialization: u8, body: &Bytes) -> Result<DecodedRequest, CodecError> {
    decode_request_with(serialization, body, true)
}

fn decode_request_with(
    serialization: u8,
    body: &Bytes,
    keep_all: bool,
) -> Result<DecodedRequest, CodecError> {
    let serialization = body_serialization(serialization)?;
    let mut d = Decoder::new(body);
    let dubbo_version: Cow<'static, str> = match d.read_ascii() {
        Some(v) if v == DUBBO_VERSION.as_bytes() => Cow::Borrowed(DUBBO_VERSION),
        Some(v) => Cow::Owned(String::from_utf8_lossy(v).into_owned()),
        // Java keeps a null version (and then sends no response attachments).
        None => Cow::Owned(
            read_java_string(&mut d, "dubbo version")?
                .map(Cow::into_owned)
                .unwrap_or_default(),
        ),
    };
    // The four names are looked up by their encoded bytes: skipped here, decoded only
    // when the cache has not seen them.
    let names_start = d.position();
    for _ in 0..4 {
        if d.read_ascii().is_none() {
            d.skip_value()?;
        }
    }
    let names = names::lookup(&body[names_start..d.position()], || {
        read_names(&body[names_start..d.position()])
    })?;
    let Names {
        path,
        version,
        method,
        parameter_types,
        count,
    } = names;
    let start = d.position();
    for _ in 0..count {
        d.skip_value()?;
    }
    let end = d.position();
    let (routing, attachments) = if d.is_empty() {
        (Routing::default(), Attachments::new())
    } else {
        let raw = RawAttachments::read(&mut d)?;
        raw.split(&path, &version, keep_all)?
    };
    Ok(DecodedRequest {
        dubbo_version,
        path,
        version,
        method,
        parameter_types,
        arguments: Arguments::Encoded {
            count,
            encoded: Encoded {
                serialization,
                bytes: body.slice(start..end),
            },
        },
        routing,
        attachments,
    })
}

/// Reads the four names after the dubbo version (path, service version, method,
/// parameter types) the way Java's `DecodeableRpcInvocation` does: each with
/// `readUTF` (see [`read_java_string`]), then the checks Java makes before reading
/// the arguments.
fn read_names(input: &[u8]) -> Result<Names, CodecError> {
    let mut n = Decoder::new(input);
    let path = read_java_string(&mut n, "service path")?;
    // A null version is the default one (Java's `keyWithoutGroup`).
    let version = read_java_string(&mut n, "service version")?.unwrap_or_default();
    let method = read_java_string(&mut n, "method name")?;
    let parameter_types = read_java_string(&mut n, "parameter types descriptor")?;
    let Some(path) = path else {
        let version = if version.is_empty() {
            rubbo_common::keys::defaults::VERSION
        } else {
            &version
        };
        return Err(CodecError::NullPath(version.to_owned()));
    };
    let parameter_types = parameter_types.ok_or(CodecError::NullDescriptor)?;
    // With no parameter types Java looks no method up while decoding; with some, a
    // null name matches none (nor the generic or echo names).
    let method = match method {
        Some(m) => m,
        None if parameter_types.is_empty() => Cow::Borrowed(""),
        None => return Err(CodecError::NullMethod(path.into_owned())),
    };
    let count = descriptor::count(&parameter_types)
        .ok_or_else(|| CodecError::BadDescriptor(parameter_types.to_string()))?;
    Ok(Names {
        path: Arc::from(&*path),
        version: Arc::from(&*version),
        method: Arc::from(&*method),
        parameter_types: Arc::from(&*parameter_types),
        count,
    })
}

/// Reads a string field as Java's `Hessian2Input.readString` does: a string, `None`
/// for `null`, or a boolean or number as its text (`5`, `true`, `1.0`). Anything else
/// (a list, map, object, binary, date) is [`CodecError::NotAString`].
fn read_java_string<'de>(
    d: &mut Decoder<'de>,
    field: &'static str,
) -> Result<Option<Cow<'de, str>>, CodecError> {
    if let Some(&tag) = d.remaining().first() {
        if matches!(tag, 0x00..=0x1f | 0x30..=0x33 | b'R' | b'S') {
            return Ok(Some(d.read_str()?));
        }
    }
    match d.read_value()? {
        Value::Null => Ok(None),
        v => scalar_text(&v)
            .map(|s| Some(Cow::Owned(s)))
            .ok_or(CodecError::NotAString {
                field,
                found: v.kind_name(),
            }),
    }
}

/// The text Java's `readString` makes of a scalar: strings as they are, booleans
/// and numbers as `String.valueOf` writes them. `None` for anything else.
fn scalar_text(v: &Value) -> Option<String> {
    Some(match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Long(l) => l.to_string(),
        Value::Double(f) => java_double(*f),
        _ => return None,
    })
}

/// A double as Java's `Double.toString` writes it: `1.0`, `0.25`, `1.0E10`,
/// `1.5E-5`, `NaN`, `Infinity` (decimal form from 10^-3 up to 10^7).
fn java_double(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    let with_point = |m: &str| {
        if m.contains('.') {
            m.to_owned()
        } else {
            format!("{m}.0")
        }
    };
    let a = f.abs();
    if a == 0.0 || (1e-3..1e7).contains(&a) {
        with_point(&f.to_string())
    } else {
        let s = format!("{f:e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        format!("{}E{e}", with_point(m))
    }
}

/// An attachment key: a string (borrowed from the frame when it is contiguous
/// there), or a boolean or integer as its text. Java keeps other keys as objects, and
/// its provider then fails on them (`ContextFilter` casts every key to `String`): a
/// `null`, list or map key is an error here.
struct Str<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string attachment key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_string())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_string())))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_any(V)
    }
}

/// The attachment map as read from the frame: routing keys borrowed (by their index
/// in [`ROUTING_KEYS`]; a repeated key keeps its last value), others owned. Values
/// are kept as Java keeps them: `null` stays [`Value::Null`], other objects stay
/// values (Java's `readAttachments` is `readObject(Map.class)`).
#[derive(Default)]
struct RawAttachments<'de> {
    known: [Option<AttStr<'de>>; ROUTING_KEYS.len()],
    other: Attachments,
}

/// A routing attachment's value as read: plain ASCII bytes straight from the frame
/// (compared and parsed as bytes, so the usual values are never validated as UTF-8
/// nor copied), text from the general path, `null`, or any other value.
#[derive(Debug, Clone, PartialEq)]
enum AttStr<'de> {
    Ascii(&'de [u8]),
    Text(Cow<'de, str>),
    Null,
    /// Rare (a number or a container): boxed, so the common variants, copied for
    /// every routing key of every request, stay small.
    Other(Box<Value>),
}

impl<'de> AttStr<'de> {
    fn from_value(v: Value) -> Self {
        match v {
            Value::String(s) => AttStr::Text(Cow::Owned(s)),
            Value::Null => AttStr::Null,
            v => AttStr::Other(Box::new(v)),
        }
    }

    /// The value as the attachment map keeps it: strings, and booleans and numbers
    /// as their text (as this reader always gave them); `null` and containers as
    /// they came.
    fn into_value(self) -> Value {
        match self {
            // ASCII is UTF-8: the lossy conversion never replaces anything.
            AttStr::Ascii(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
            AttStr::Text(t) => Value::String(t.into_owned()),
            AttStr::Null => Value::Null,
            AttStr::Other(v) => scalar_text(&v).map_or(*v, Value::String),
        }
    }

    /// The value as text for the routing attachment `key`: `None` for `null`, an
    /// error for a container (Java's provider fails casting it to `String`).
    fn to_arc(&self, key: &'static str) -> Result<Option<Arc<str>>, CodecError> {
        Ok(match self {
            AttStr::Ascii(b) => Some(Arc::from(&*String::from_utf8_lossy(b))),
            AttStr::Text(t) => Some(Arc::from(&**t)),
            AttStr::Null => None,
            AttStr::Other(v) => Some(Arc::from(scalar_text(v).ok_or(
                CodecError::BadAttachment {
                    key,
                    found: v.kind_name(),
                },
            )?)),
        })
    }

    /// Whether the value, `null` being the empty string, equals `body`.
    fn is(&self, body: &str) -> bool {
        match self {
            AttStr::Ascii(b) => *b == body.as_bytes(),
            AttStr::Text(t) => t == body,
            AttStr::Null => body.is_empty(),
            AttStr::Other(v) => scalar_text(v).is_some_and(|t| t == body),
        }
    }

    /// The value as a count of milliseconds: decimal text (surrounding blanks
    /// allowed) or a number, as Java's `RpcUtils.convertToNumber` takes it; `None`
    /// for anything else, which Java ignores too.
    fn to_ms(&self) -> Option<u64> {
        let digits = match self {
            AttStr::Ascii(b) => b.trim_ascii(),
            AttStr::Text(t) => t.as_bytes().trim_ascii(),
            AttStr::Null => return None,
            AttStr::Other(v) => {
                return match **v {
                    Value::Int(i) => u64::try_from(i).ok(),
                    Value::Long(l) => u64::try_from(l).ok(),
                    // `Number.longValue()` truncates; NaN and negatives give no timeout.
                    Value::Double(f) => (f.is_finite() && f >= 0.0).then(|| f.trunc() as u64),
                    _ => None,
                };
            }
        };
        if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(digits.iter().fold(0, |n, d| n * 10 + u64::from(d - b'0')))
    }
}

impl<'de> RawAttachments<'de> {
    /// The routing attachments present, as `(key, value)`.
    fn known(
        self,
    ) -> (
        impl Iterator<Item = (&'static str, AttStr<'de>)>,
        Attachments,
    ) {
        let known = ROUTING_KEYS
            .iter()
            .zip(self.known)
            .filter_map(|(k, v)| Some((*k, v?)));
        (known, self.other)
    }
}

impl<'de> Deserialize<'de> for RawAttachments<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawAttachments<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an attachment map")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(RawAttachments::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(RawAttachments::default())
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = RawAttachments::default();
                while let Some(Str(k)) = map.next_key::<Str<'de>>()? {
                    if let Some(i) = ROUTING_KEYS.iter().position(|r| *r == k) {
                        out.known[i] = Some(AttStr::from_value(map.next_value()?));
                    } else {
                        let v: Value = map.next_value()?;
                        out.other.insert(k.into_owned(), v);
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> RawAttachments<'de> {
    /// Reads the attachment map at the decoder's position.
    ///
    /// The usual map (untyped, string keys, scalar values) is read directly, without
    /// serde's visitor layers; any other shape goes through the general
    /// [`Deserialize`] path from the start of the map.
    fn read(d: &mut Decoder<'de>) -> Result<Self, CodecError> {
        match Self::read_plain(d.remaining()) {
            Some(raw) => Ok(raw),
            None => Ok(d.read()?),
        }
    }

    /// `None` unless `input` starts with an untyped map of plain ASCII keys and
    /// scalar values, routing values being plain ASCII too (scalars cannot hold
    /// back-references or class definitions, so they read the same outside the map's
    /// reference table).
    fn read_plain(input: &'de [u8]) -> Option<Self> {
        let (&tag, body) = input.split_first()?;
        if tag != b'H' {
            return None;
        }
        let mut out = RawAttachments::default();
        let mut pos = 0;
        loop {
            let &next = body.get(pos)?;
            if next == b'Z' {
                return Some(out);
            }
            let (key, n) = ascii_str(&body[pos..])?;
            pos += n;
            let &vtag = body.get(pos)?;
            if let Some(i) = ROUTING_KEYS.iter().position(|r| r.as_bytes() == key) {
                // `group: null` is common enough to be read here; anything else but
                // plain ASCII takes the general path.
                if vtag == b'N' {
                    pos += 1;
                    out.known[i] = Some(AttStr::Null);
                    continue;
                }
                let (value, n) = ascii_str(&body[pos..])?;
                pos += n;
                out.known[i] = Some(AttStr::Ascii(value));
                continue;
            }
            let value = match ascii_str(&body[pos..]) {
                Some((v, n)) => {
                    pos += n;
                    Value::String(String::from_utf8_lossy(v).into_owned())
                }
                None if is_container_tag(vtag) => return None,
                None => {
                    let mut d = Decoder::new(&body[pos..]);
                    let v = d.read_value().ok()?;
                    pos += d.position();
                    v
                }
            };
            out.other
                .insert(String::from_utf8_lossy(key).into_owned(), value);
        }
    }
}

/// A string in one chunk of plain ASCII at the start of `input` (compact or
/// two-byte length form): its bytes, and how many bytes it takes.
fn ascii_str(input: &[u8]) -> Option<(&[u8], usize)> {
    let (&tag, rest) = input.split_first()?;
    let (len, head) = match tag {
        0x00..=0x1f => (usize::from(tag), 1),
        0x30..=0x33 => (
            (usize::from(tag - 0x30) << 8) | usize::from(*rest.first()?),
            2,
        ),
        _ => return None,
    };
    // For ASCII, the UTF-16 length is the byte length.
    let bytes = input.get(head..head + len)?;
    bytes.is_ascii().then_some((bytes, head + len))
}

/// Whether `tag` starts a value that takes part in the reference table or the class
/// definitions: lists, maps, objects, references, class definitions.
fn is_container_tag(tag: u8) -> bool {
    matches!(
        tag,
        0x55..=0x58 | 0x70..=0x7f | b'H' | b'M' | b'C' | b'O' | 0x60..=0x6f | b'Q'
    )
}

const ROUTING_KEYS: &[&str] = &[
    "path",
    "interface",
    "version",
    "group",
    "timeout",
    "token",
    "dubbo",
];

impl RawAttachments<'_> {
    fn split(
        self,
        path: &str,
        version: &str,
        keep_all: bool,
    ) -> Result<(Routing, Attachments), CodecError> {
        let mut routing = Routing::default();
        let (known, mut other) = self.known();
        // As in Java, the attachments replace the body's path and version, a null
        // one too (Java then looks the service up with none: the empty string here).
        let empty = || Arc::from("");
        for (k, v) in known {
            match k {
                "path" if !v.is(path) => routing.path = Some(v.to_arc(k)?.unwrap_or_else(empty)),
                "version" if !v.is(version) => {
                    routing.version = Some(v.to_arc(k)?.unwrap_or_else(empty));
                }
                // An empty or null group is no group.
                "group" if !v.is("") => routing.group = v.to_arc(k)?,
                "timeout" => routing.timeout_ms = v.to_ms(),
                // Java reads the token only where one is required, and a non-string
                // one then fails the check: no token.
                "token" => routing.token = v.to_arc(k).ok().flatten(),
                // `interface` and `dubbo` route nothing: any value will do.
                _ => {}
            }
            if keep_all {
                other.insert(k.to_owned(), v.into_value());
            }
        }
        Ok((routing, other))
    }
}

/// Whether a consumer speaking `dubbo_version` reads response attachments (Java's
/// `Version.isSupportResponseAttachment`: 2.0.2 up to 2.0.99).
pub fn supports_response_attachments(dubbo_version: &str) -> bool {
    if dubbo_version == DUBBO_VERSION {
        // What every Dubbo 2.7+ and 3.x consumer sends: no need to parse it.
        return true;
    }
    let mut parts = dubbo_version.split('.').map(|p| p.trim().parse::<u32>());
    matches!(
        (parts.next(), parts.next(), parts.next()),
        (Some(Ok(2)), Some(Ok(0)), Some(Ok(2..=99)))
    )
}

/// The response attachment `dubbo` = `2.0.2`, encoded (two compact strings).
const DUBBO_ATTACHMENT: &[u8] = b"\x05dubbo\x052.0.2";

/// Encodes an OK response body for `result`. Attachments (plus `dubbo=2.0.2`) are
/// written only when the consumer supports them.
pub fn encode_response(
    result: &RpcResult,
    with_attachments: bool,
    out: &mut BytesMut,
) -> Result<(), CodecError> {
    let mut enc = Encoder::new(out);
    match result.outcome() {
        Outcome::Exception(e) => {
            enc.write_int(if with_attachments {
                flag::WITH_EXCEPTION_WITH_ATTACHMENTS
            } else {
                flag::WITH_EXCEPTION
            })?;
            write_biz_exception(&mut enc, e)?;
        }
        Outcome::Value(Payload::Null) => {
            enc.write_int(if with_attachments {
                flag::NULL_VALUE_WITH_ATTACHMENTS
            } else {
                flag::NULL_VALUE
            })?;
        }
        Outcome::Value(p) => {
            enc.write_int(if with_attachments {
                flag::VALUE_WITH_ATTACHMENTS
            } else {
                flag::VALUE
            })?;
            match p {
                Payload::Value(v) => enc.write_value(v)?,
                Payload::Typed(t) => enc.write(&**t)?,
                Payload::Encoded(e) if is_hessian2(e.serialization) => {
                    // Already Hessian: copy the bytes (a single value, own ref tables).
                    enc.get_mut().put_slice(&e.bytes);
                }
                // Another serialization (a value relayed from Triple): read it back and
                // write it in Hessian.
                Payload::Encoded(e) => enc.write_value(&e.serialization.read_value(&e.bytes)?)?,
                Payload::Null => enc.write_null()?,
                Payload::Stream(_) => {
                    return Err(CodecError::BadArguments(
                        "a message stream as a reply: the dubbo protocol has no streaming calls"
                            .into(),
                    ));
                }
            }
        }
    }
    if with_attachments && result.attachments().is_empty() {
        enc.write_map_start(None)?;
        enc.get_mut().put_slice(DUBBO_ATTACHMENT);
        enc.write_end()?;
    } else if with_attachments {
        write_attachments(
            &mut enc,
            &[("dubbo", Some(DUBBO_VERSION))],
            result.attachments(),
        )?;
    }
    Ok(())
}

/// Writes a business exception as a Java Throwable: the object as it came (when it
/// came off the wire) or a new one with class and message.
fn write_biz_exception<B: rubbo_hessian2::Output>(
    enc: &mut Encoder<B>,
    e: &BizException,
) -> Result<(), CodecError> {
    if let Value::Object(_) = &e.value {
        enc.write_value(&e.value)?;
    } else {
        let mut je = JavaException::new(e.class.clone(), e.message.clone().unwrap_or_default());
        je.message = e.message.clone();
        enc.write_exception(&je)?;
    }
    Ok(())
}

/// Decodes an OK response body. The value stays encoded (zero-copy).
pub fn decode_response(serialization: u8, body: &Bytes) -> Result<RpcResult, CodecError> {
    let serialization = body_serialization(serialization)?;
    let mut d = Decoder::new(body);
    let flag = d.read_int()?;
    let (outcome, has_attachments) = match flag {
        flag::VALUE | flag::VALUE_WITH_ATTACHMENTS => {
            let start = d.position();
            d.skip_value()?;
            let end = d.position();
            let payload = Payload::Encoded(Encoded {
                serialization,
                bytes: body.slice(start..end),
            });
            (
                Outcome::Value(payload),
                flag == flag::VALUE_WITH_ATTACHMENTS,
            )
        }
        flag::NULL_VALUE | flag::NULL_VALUE_WITH_ATTACHMENTS => (
            Outcome::Value(Payload::Null),
            flag == flag::NULL_VALUE_WITH_ATTACHMENTS,
        ),
        flag::WITH_EXCEPTION | flag::WITH_EXCEPTION_WITH_ATTACHMENTS => (
            Outcome::Exception(BizException::from_thrown(d.read_value()?)),
            flag == flag::WITH_EXCEPTION_WITH_ATTACHMENTS,
        ),
        other => return Err(CodecError::BadFlag(other)),
    };
    let attachments = if has_attachments {
        // The provider's `dubbo=2.0.2` is protocol bookkeeping, not for the caller.
        let raw = RawAttachments::read(&mut d)?;
        let (known, mut out) = raw.known();
        for (k, v) in known {
            if k != "dubbo" {
                out.insert(k.to_owned(), v.into_value());
            }
        }
        out
    } else {
        Attachments::new()
    };
    Ok(RpcResult::from_parts(outcome, attachments))
}

/// Encodes the body of a non-OK response: one Hessian string.
pub fn encode_error_text(message: &str) -> Bytes {
    let mut out = BytesMut::with_capacity(message.len() + 4);
    let mut enc = Encoder::new(&mut out);
    // Writing a string into memory cannot fail.
    let _ = enc.write_string(message);
    out.freeze()
}

/// Decodes the body of a non-OK response (one Hessian string), leniently.
pub fn decode_error_text(serialization: u8, body: &Bytes) -> String {
    if body_serialization(serialization).is_ok() {
        if let Ok(Some(s)) = Decoder::new(body).read_nullable_string() {
            return s;
        }
    }
    String::from_utf8_lossy(body).into_owned()
}

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
