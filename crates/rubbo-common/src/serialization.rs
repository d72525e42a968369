//! The serialization extension point: how values become bytes on the wire and back.
//!
//! A [`Serialization`] is a stateless codec named by the URL key `serialization`
//! (`serialization=hessian2`) and, on the dubbo wire, by a 5-bit id in the frame header
//! (2 = hessian2). Triple picks one by content type. The built-in implementations and
//! the by-name / by-id table live in `rubbo-serialization`; this module only defines
//! the trait, so every layer can name it without depending on a codec.
//!
//! [`Encoded`](crate::Encoded) bytes carry the serialization they are in, and
//! [`Payload::decode`](crate::Payload::decode) / [`Arguments::decode`](crate::Arguments::decode)
//! read them through it: typed reads go through [`erased_serde`], so any serialization
//! decodes any `T: DeserializeOwned` (one virtual call per value, none per byte).

use std::fmt;

use bytes::BytesMut;

use crate::Value;

/// The callback of a typed read: it is handed the serialization's deserializer, reads
/// its `T` from it and keeps it.
pub type DeserializeFn<'a, 'de> =
    dyn FnMut(&mut dyn erased_serde::Deserializer<'de>) -> Result<(), erased_serde::Error> + 'a;

/// Why a [`Serialization`] could not read or write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SerializationError {
    /// The bytes are not a valid value of the expected shape.
    #[error("{serialization}: cannot read the value: {message}")]
    Read {
        /// The serialization's name.
        serialization: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The value cannot be written in this serialization.
    #[error("{serialization}: cannot write the value: {message}")]
    Write {
        /// The serialization's name.
        serialization: &'static str,
        /// What went wrong.
        message: String,
    },
}

impl SerializationError {
    /// A read failure of `serialization`.
    pub fn read(serialization: &'static str, message: impl fmt::Display) -> Self {
        SerializationError::Read {
            serialization,
            message: message.to_string(),
        }
    }

    /// A write failure of `serialization`.
    pub fn write(serialization: &'static str, message: impl fmt::Display) -> Self {
        SerializationError::Write {
            serialization,
            message: message.to_string(),
        }
    }
}

impl From<SerializationError> for crate::RpcError {
    fn from(e: SerializationError) -> Self {
        crate::RpcError::serialization(e.to_string()).with_source(e)
    }
}

/// A wire serialization (Java's `org.apache.dubbo.common.serialize.Serialization`):
/// a stateless codec between bytes and values, dynamic ([`Value`]) or typed (serde).
///
/// Implementations hold no state, so one `static` instance serves every call and
/// [`Encoded`](crate::Encoded) refers to it as `&'static dyn Serialization`.
///
/// "Values" are top-level values written back to back in one stream (sharing its
/// reference tables and class definitions, where the format has them): how Dubbo
/// writes a call's arguments.
///
/// ```
/// use bytes::BytesMut;
/// use rubbo_common::Value;
/// use rubbo_common::serialization::{DeserializeFn, Serialization, SerializationError};
///
/// /// A toy serialization: every value is one byte, a small integer.
/// #[derive(Debug)]
/// struct Bytewise;
///
/// impl Serialization for Bytewise {
///     fn name(&self) -> &'static str { "bytewise" }
///     fn id(&self) -> u8 { 31 }
///     fn content_type(&self) -> &'static str { "application/x-bytewise" }
///     fn read_values(&self, bytes: &[u8], count: usize) -> Result<Vec<Value>, SerializationError> {
///         Ok(bytes.iter().take(count).map(|b| Value::Int(i32::from(*b))).collect())
///     }
///     fn deserialize<'de>(&self, bytes: &'de [u8], visit: &mut DeserializeFn<'_, 'de>)
///         -> Result<(), SerializationError> {
///         let first = bytes.first().copied().unwrap_or_default();
///         let d = serde::de::value::U8Deserializer::<erased_serde::Error>::new(first);
///         visit(&mut <dyn erased_serde::Deserializer>::erase(d))
///             .map_err(|e| SerializationError::read(self.name(), e))
///     }
///     fn deserialize_values<'de>(&self, bytes: &'de [u8], count: usize,
///         visit: &mut DeserializeFn<'_, 'de>) -> Result<(), SerializationError> {
///         let items = bytes.iter().take(count).copied();
///         let d = serde::de::value::SeqDeserializer::<_, erased_serde::Error>::new(items);
///         visit(&mut <dyn erased_serde::Deserializer>::erase(d))
///             .map_err(|e| SerializationError::read(self.name(), e))
///     }
///     fn write_value(&self, value: &Value, out: &mut BytesMut) -> Result<(), SerializationError> {
///         match value {
///             Value::Int(i) => Ok(out.extend_from_slice(&[u8::try_from(*i)
///                 .map_err(|e| SerializationError::write(self.name(), e))?])),
///             other => Err(SerializationError::write(self.name(), other.kind_name())),
///         }
///     }
///     fn write(&self, _: &dyn erased_serde::Serialize, _: &mut BytesMut)
///         -> Result<(), SerializationError> {
///         Err(SerializationError::write(self.name(), "typed values are not supported"))
///     }
///     fn write_values(&self, _: &dyn erased_serde::Serialize, _: &mut BytesMut)
///         -> Result<(), SerializationError> {
///         Err(SerializationError::write(self.name(), "typed values are not supported"))
///     }
/// }
///
/// static BYTEWISE: Bytewise = Bytewise;
/// let ser: &'static dyn Serialization = &BYTEWISE; // object safe
/// let args = rubbo_common::Arguments::Encoded {
///     count: 2,
///     encoded: rubbo_common::Encoded::new(ser, bytes::Bytes::from_static(&[4, 5])),
/// };
/// assert_eq!(args.decode::<(u8, u8)>().unwrap(), (4, 5));
/// assert_eq!(args.to_values().unwrap(), vec![Value::Int(4), Value::Int(5)]);
/// ```
pub trait Serialization: Send + Sync + 'static {
    /// The name the URL key `serialization` selects it by (`hessian2`).
    fn name(&self) -> &'static str;

    /// The dubbo wire id, the low 5 bits of the header's flag byte (Java's
    /// `getContentTypeId`: 2 for hessian2).
    fn id(&self) -> u8;

    /// The MIME type (Java's `getContentType`; Triple's content-type suffix).
    fn content_type(&self) -> &'static str;

    /// Reads `count` consecutive top-level values.
    fn read_values(&self, bytes: &[u8], count: usize) -> Result<Vec<Value>, SerializationError>;

    /// Reads the one value at the start of `bytes`.
    fn read_value(&self, bytes: &[u8]) -> Result<Value, SerializationError> {
        let mut values = self.read_values(bytes, 1)?;
        values
            .pop()
            .ok_or_else(|| SerializationError::read(self.name(), "no value"))
    }

    /// Typed read of the one value at the start of `bytes`: calls `visit` once with a
    /// deserializer positioned on it.
    fn deserialize<'de>(
        &self,
        bytes: &'de [u8],
        visit: &mut DeserializeFn<'_, 'de>,
    ) -> Result<(), SerializationError>;

    /// Typed read of `count` consecutive top-level values: calls `visit` once with a
    /// deserializer that presents them as one sequence (so a tuple, a `Vec` or a
    /// struct of the arguments reads them; `()` reads none).
    fn deserialize_values<'de>(
        &self,
        bytes: &'de [u8],
        count: usize,
        visit: &mut DeserializeFn<'_, 'de>,
    ) -> Result<(), SerializationError>;

    /// Appends `value` as one top-level value.
    fn write_value(&self, value: &Value, out: &mut BytesMut) -> Result<(), SerializationError>;

    /// Appends a typed value as one top-level value.
    fn write(
        &self,
        value: &dyn erased_serde::Serialize,
        out: &mut BytesMut,
    ) -> Result<(), SerializationError>;

    /// Appends each element of a typed tuple (or sequence, or struct) as its own
    /// top-level value: the inverse of [`deserialize_values`](Self::deserialize_values).
    fn write_values(
        &self,
        values: &dyn erased_serde::Serialize,
        out: &mut BytesMut,
    ) -> Result<(), SerializationError>;
}

impl fmt::Debug for dyn Serialization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.id())
    }
}

/// Whether `a` and `b` are the same serialization (same name and wire id).
pub fn same(a: &dyn Serialization, b: &dyn Serialization) -> bool {
    a.id() == b.id() && a.name() == b.name()
}
