//! Dubbo request and response bodies in Hessian 2, exactly as Java's `DubboCodec`
//! writes and reads them (reference §2.1, §2.2).
//!
//! Decoding is lazy where it pays: a request's arguments and a response's value stay
//! as a zero-copy slice of the frame ([`Encoded`]) until the typed dispatcher or stub
//! decodes them with the types it knows.

use bytes::{BufMut, Bytes, BytesMut};
use rubbo_common::keys::defaults::DUBBO_VERSION;
use rubbo_common::{
    Arguments, Attachments, BizException, Encoded, HESSIAN2, Invocation, Outcome, Payload,
    RpcResult, Value,
};
use rubbo_hessian2::{Decoder, Encoder, JavaException};

use crate::descriptor;

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
    /// The attachments are not a map with string keys.
    #[error("attachments are not a map: {0}")]
    BadAttachments(String),
    /// The serialization id is not Hessian 2.
    #[error("unsupported serialization id {0} (supported: 2 = hessian2)")]
    Serialization(u8),
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
}

fn write_attachments<B: rubbo_hessian2::Output>(
    enc: &mut Encoder<B>,
    fixed: &[(&str, &str)],
    extra: &Attachments,
) -> Result<(), CodecError> {
    enc.write_map_start(None)?;
    for (k, v) in fixed {
        if !extra.contains_key(*k) {
            enc.write_string(k)?;
            enc.write_string(v)?;
        }
    }
    for (k, v) in extra {
        enc.write_string(k)?;
        enc.write_value(v)?;
    }
    enc.write_end()?;
    Ok(())
}

/// Encodes a request body: version, path, service version, method, descriptor,
/// arguments, attachments.
pub fn encode_request(
    inv: &Invocation,
    meta: &RequestMeta<'_>,
    out: &mut BytesMut,
) -> Result<(), CodecError> {
    let mut enc = Encoder::new(out);
    let version = meta
        .version
        .unwrap_or(rubbo_common::keys::defaults::VERSION);
    enc.write_string(DUBBO_VERSION)?;
    enc.write_string(meta.interface.unwrap_or(meta.path))?;
    enc.write_string(version)?;
    enc.write_string(inv.method())?;
    enc.write_string(inv.parameter_types())?;
    match inv.arguments() {
        Arguments::Values(values) => {
            for v in values {
                enc.write_value(v)?;
            }
        }
        Arguments::Typed { value, .. } => enc.write_args(&**value)?,
        Arguments::Encoded { .. } => {
            for v in inv
                .arguments()
                .to_values()
                .map_err(|e| CodecError::BadAttachments(e.to_string()))?
            {
                enc.write_value(&v)?;
            }
        }
    }
    let timeout = meta.timeout_ms.to_string();
    let mut fixed: Vec<(&str, &str)> = vec![("path", meta.path), ("version", version)];
    fixed.push(("timeout", &timeout));
    if let Some(i) = meta.interface {
        fixed.push(("interface", i));
    }
    if let Some(g) = meta.group {
        fixed.push(("group", g));
    }
    if let Some(a) = meta.application {
        fixed.push(("remote.application", a));
    }
    if let Some(t) = meta.token {
        fixed.push(("token", t));
    }
    write_attachments(&mut enc, &fixed, inv.attachments())
}

/// A decoded request body; the arguments are still encoded.
#[derive(Debug, Clone)]
pub struct DecodedRequest {
    /// The dubbo protocol version the consumer speaks (`2.0.2`).
    pub dubbo_version: String,
    /// The service path from the body.
    pub path: String,
    /// The service version from the body.
    pub version: String,
    /// The method name.
    pub method: String,
    /// The JVM parameter descriptors.
    pub parameter_types: String,
    /// The arguments, as a zero-copy slice of the body.
    pub arguments: Arguments,
    /// The request attachments.
    pub attachments: Attachments,
}

impl DecodedRequest {
    /// The attachment `key` as a string.
    pub fn attachment(&self, key: &str) -> Option<&str> {
        self.attachments.get(key).and_then(Value::as_str)
    }
}

/// Decodes a request body.
pub fn decode_request(serialization: u8, body: &Bytes) -> Result<DecodedRequest, CodecError> {
    if serialization != HESSIAN2 {
        return Err(CodecError::Serialization(serialization));
    }
    let mut d = Decoder::new(body);
    let dubbo_version = d.read_string()?;
    let path = d.read_string()?;
    let version = d.read_nullable_string()?.unwrap_or_default();
    let method = d.read_string()?;
    let parameter_types = d.read_nullable_string()?.unwrap_or_default();
    let count = descriptor::count(&parameter_types)
        .ok_or_else(|| CodecError::BadDescriptor(parameter_types.clone()))?;
    let start = d.position();
    for _ in 0..count {
        d.skip_value()?;
    }
    let end = d.position();
    let attachments = if d.is_empty() {
        Attachments::new()
    } else {
        read_attachments(&mut d)?
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
        attachments,
    })
}

fn read_attachments(d: &mut Decoder<'_>) -> Result<Attachments, CodecError> {
    match d.read_value()? {
        Value::Null => Ok(Attachments::new()),
        Value::Map(m) => {
            let mut out = Attachments::with_capacity(m.entries.len());
            for (k, v) in m.entries {
                match k {
                    Value::String(k) => {
                        out.insert(k, v);
                    }
                    other => return Err(CodecError::BadAttachments(format!("key {other:?}"))),
                }
            }
            Ok(out)
        }
        other => Err(CodecError::BadAttachments(format!("{other:?}"))),
    }
}

/// Whether a consumer speaking `dubbo_version` reads response attachments (Java's
/// `Version.isSupportResponseAttachment`: 2.0.2 up to 2.0.99).
pub fn supports_response_attachments(dubbo_version: &str) -> bool {
    let mut parts = dubbo_version.split('.').map(|p| p.trim().parse::<u32>());
    matches!(
        (parts.next(), parts.next(), parts.next()),
        (Some(Ok(2)), Some(Ok(0)), Some(Ok(2..=99)))
    )
}

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
                Payload::Encoded(e) if e.serialization == HESSIAN2 => {
                    // Already Hessian: copy the bytes (a single value, own ref tables).
                    enc.get_mut().put_slice(&e.bytes);
                }
                Payload::Encoded(e) => return Err(CodecError::Serialization(e.serialization)),
                Payload::Null => enc.write_null()?,
            }
        }
    }
    if with_attachments {
        write_attachments(&mut enc, &[("dubbo", DUBBO_VERSION)], result.attachments())?;
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
    if serialization != HESSIAN2 {
        return Err(CodecError::Serialization(serialization));
    }
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
        flag::WITH_EXCEPTION | flag::WITH_EXCEPTION_WITH_ATTACHMENTS => {
            let value = d.read_value()?;
            let je = JavaException::from_value(&value);
            let class = je
                .as_ref()
                .map(|j| j.class.clone())
                .or_else(|| match &value {
                    Value::Object(o) => Some(o.class.to_string()),
                    _ => None,
                })
                .unwrap_or_else(|| "java.lang.Throwable".to_owned());
            let mut message = je.and_then(|j| j.message);
            // A generic call's exception arrives wrapped in GenericException: report
            // the original class and message (what getExceptionClass() gives Java).
            let mut class = class;
            if class.ends_with(".rpc.service.GenericException") {
                if let Some(inner) = value.field("exceptionClass").and_then(Value::as_str) {
                    class = inner.to_owned();
                    message = value
                        .field("exceptionMessage")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                }
            }
            (
                Outcome::Exception(BizException {
                    class,
                    message,
                    value,
                }),
                flag == flag::WITH_EXCEPTION_WITH_ATTACHMENTS,
            )
        }
        other => return Err(CodecError::BadFlag(other)),
    };
    let attachments = if has_attachments {
        read_attachments(&mut d)?
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
    if serialization == HESSIAN2 {
        if let Ok(Some(s)) = Decoder::new(body).read_nullable_string() {
            return s;
        }
    }
    String::from_utf8_lossy(body).into_owned()
}

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
