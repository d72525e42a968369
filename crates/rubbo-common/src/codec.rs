//! Typed access to payloads and arguments: decoding encoded bytes (through the
//! [`Serialization`] they name) or dynamic values into Rust types, for generated stubs
//! and dispatchers.
//!
//! No wire codec is named here: encoded bytes are read by their serialization. The
//! dynamic [`Value`] model and its serde conversions (`rubbo_hessian2::{from_value,
//! to_value, ValueDeserializer}`) are the value model every serialization shares, not
//! the Hessian wire format.

use serde::de::{self, DeserializeOwned, Visitor};

use crate::serialization::{Serialization, SerializationError};
use crate::unboxed::Unboxed;
use crate::{Arguments, Encoded, Payload, RpcError, Value};

fn ser_err(what: &str, e: impl std::fmt::Display) -> RpcError {
    RpcError::serialization(format!("{what}: {e}"))
}

/// Reads a `T` from `bytes` in `ser`: one value, or `count` consecutive ones as a
/// sequence.
fn read_typed<T: DeserializeOwned>(
    ser: &dyn Serialization,
    bytes: &[u8],
    count: Option<usize>,
) -> Result<T, SerializationError> {
    let mut out = None;
    // Through `Unboxed`: the values of `T` cross the erased boundary without a box.
    let mut visit = |d: &mut dyn erased_serde::Deserializer<'_>| {
        out = Some(T::deserialize(Unboxed(d))?);
        Ok(())
    };
    match count {
        None => ser.deserialize(bytes, &mut visit)?,
        Some(n) => ser.deserialize_values(bytes, n, &mut visit)?,
    }
    out.ok_or_else(|| SerializationError::read(ser.name(), "the deserializer was not used"))
}

impl Encoded {
    /// Decodes the one value the bytes hold as `T`.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, RpcError> {
        read_typed(self.serialization, &self.bytes, None)
            .map_err(|e| ser_err("cannot decode the result", e))
    }

    /// Decodes `count` consecutive values as one `T` (a tuple, a `Vec`, a struct).
    pub fn decode_values<T: DeserializeOwned>(&self, count: usize) -> Result<T, RpcError> {
        read_typed(self.serialization, &self.bytes, Some(count))
            .map_err(|e| ser_err("cannot decode the arguments", e))
    }

    /// The one value the bytes hold, dynamic.
    pub fn to_value(&self) -> Result<Value, RpcError> {
        self.serialization
            .read_value(&self.bytes)
            .map_err(|e| ser_err("cannot decode the value", e))
    }

    /// `count` consecutive values, dynamic.
    pub fn to_values(&self, count: usize) -> Result<Vec<Value>, RpcError> {
        self.serialization
            .read_values(&self.bytes, count)
            .map_err(|e| ser_err("cannot decode the arguments", e))
    }
}

impl Payload {
    /// Decodes the payload as `T`.
    ///
    /// ```
    /// use rubbo_common::{Payload, Value};
    /// let p = Payload::Value(Value::from("hi"));
    /// assert_eq!(p.decode::<String>().unwrap(), "hi");
    /// assert_eq!(Payload::Null.decode::<Option<String>>().unwrap(), None);
    /// ```
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, RpcError> {
        match self {
            Payload::Null => rubbo_hessian2::from_value(Value::Null)
                .map_err(|e| ser_err("cannot read null as the declared type", e)),
            Payload::Value(v) => rubbo_hessian2::from_value(v.clone())
                .map_err(|e| ser_err("cannot convert the value", e)),
            Payload::Typed(t) => {
                let v = rubbo_hessian2::to_value(&**t)
                    .map_err(|e| ser_err("cannot convert the local value", e))?;
                rubbo_hessian2::from_value(v).map_err(|e| ser_err("cannot convert the value", e))
            }
            Payload::Encoded(enc) => enc.decode(),
            Payload::Stream(_) => Err(stream_not_value()),
        }
    }

    /// The payload as a dynamic [`Value`].
    pub fn to_value(&self) -> Result<Value, RpcError> {
        match self {
            Payload::Null => Ok(Value::Null),
            Payload::Value(v) => Ok(v.clone()),
            Payload::Typed(t) => {
                rubbo_hessian2::to_value(&**t).map_err(|e| ser_err("cannot convert the value", e))
            }
            Payload::Encoded(enc) => enc.to_value(),
            Payload::Stream(_) => Err(stream_not_value()),
        }
    }
}

impl Arguments {
    /// Decodes the arguments as a tuple `T` (e.g. `(String, i32)`; `()` for none).
    ///
    /// ```
    /// use rubbo_common::{Arguments, Value};
    /// let args = Arguments::Values(vec![Value::from("a"), Value::Int(7)]);
    /// let (s, n): (String, i32) = args.decode().unwrap();
    /// assert_eq!((s.as_str(), n), ("a", 7));
    /// ```
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, RpcError> {
        match self {
            Arguments::Values(values) => T::deserialize(ValuesSeq(values.clone()))
                .map_err(|e| ser_err("cannot convert the arguments", e)),
            Arguments::Typed { value, .. } => {
                let v = rubbo_hessian2::to_value(&**value)
                    .map_err(|e| ser_err("cannot convert the local arguments", e))?;
                rubbo_hessian2::from_value(v)
                    .map_err(|e| ser_err("cannot convert the arguments", e))
            }
            Arguments::Encoded { count, encoded } => encoded.decode_values(*count),
            Arguments::Stream(_) => Err(stream_not_value()),
        }
    }

    /// The arguments as dynamic values (for routers, generic calls, tools).
    pub fn to_values(&self) -> Result<Vec<Value>, RpcError> {
        match self {
            Arguments::Values(v) => Ok(v.clone()),
            Arguments::Typed { value, .. } => {
                match rubbo_hessian2::to_value(&**value)
                    .map_err(|e| ser_err("cannot convert the arguments", e))?
                {
                    Value::List(l) => Ok(l.items),
                    Value::Null => Ok(Vec::new()),
                    other => Ok(vec![other]),
                }
            }
            Arguments::Encoded { count, encoded } => encoded.to_values(*count),
            Arguments::Stream(_) => Err(stream_not_value()),
        }
    }
}

/// A stream of messages read as one value.
fn stream_not_value() -> RpcError {
    RpcError::serialization("a message stream is not one value: read it as a stream")
}

/// A tuple read from dynamic values.
struct ValuesSeq(Vec<Value>);

impl<'de> de::Deserializer<'de> for ValuesSeq {
    type Error = rubbo_hessian2::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        rubbo_hessian2::ValueDeserializer(Value::List(rubbo_hessian2::List {
            type_name: None,
            items: self.0,
        }))
        .deserialize_any(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use bytes::{Bytes, BytesMut};

    use super::*;
    use crate::serialization::DeserializeFn;

    /// A serialization that is not Hessian: each value is one byte, a small integer.
    struct Bytewise;

    static BYTEWISE: Bytewise = Bytewise;

    impl Serialization for Bytewise {
        fn name(&self) -> &'static str {
            "bytewise"
        }
        fn id(&self) -> u8 {
            31
        }
        fn content_type(&self) -> &'static str {
            "application/x-bytewise"
        }
        fn read_values(
            &self,
            bytes: &[u8],
            count: usize,
        ) -> Result<Vec<Value>, SerializationError> {
            if bytes.len() < count {
                return Err(SerializationError::read(self.name(), "too few bytes"));
            }
            Ok(bytes[..count]
                .iter()
                .map(|b| Value::Int(i32::from(*b)))
                .collect())
        }
        fn deserialize<'de>(
            &self,
            bytes: &'de [u8],
            visit: &mut DeserializeFn<'_, 'de>,
        ) -> Result<(), SerializationError> {
            let first = *bytes
                .first()
                .ok_or_else(|| SerializationError::read(self.name(), "empty"))?;
            let d = de::value::U8Deserializer::<erased_serde::Error>::new(first);
            visit(&mut <dyn erased_serde::Deserializer>::erase(d))
                .map_err(|e| SerializationError::read(self.name(), e))
        }
        fn deserialize_values<'de>(
            &self,
            bytes: &'de [u8],
            count: usize,
            visit: &mut DeserializeFn<'_, 'de>,
        ) -> Result<(), SerializationError> {
            let items = bytes.iter().take(count).copied();
            let d = de::value::SeqDeserializer::<_, erased_serde::Error>::new(items);
            visit(&mut <dyn erased_serde::Deserializer>::erase(d))
                .map_err(|e| SerializationError::read(self.name(), e))
        }
        fn write_value(&self, _: &Value, _: &mut BytesMut) -> Result<(), SerializationError> {
            Err(SerializationError::write(self.name(), "read-only"))
        }
        fn write(
            &self,
            _: &dyn erased_serde::Serialize,
            _: &mut BytesMut,
        ) -> Result<(), SerializationError> {
            Err(SerializationError::write(self.name(), "read-only"))
        }
        fn write_values(
            &self,
            _: &dyn erased_serde::Serialize,
            _: &mut BytesMut,
        ) -> Result<(), SerializationError> {
            Err(SerializationError::write(self.name(), "read-only"))
        }
    }

    fn bytewise(bytes: &'static [u8]) -> Encoded {
        Encoded::new(&BYTEWISE, Bytes::from_static(bytes))
    }

    #[test]
    fn encoded_payload_and_arguments_decode_through_their_serialization() {
        let args = Arguments::Encoded {
            count: 3,
            encoded: bytewise(&[7, 48, 2]),
        };
        let (a, b, c): (i32, u8, i64) = args.decode().unwrap();
        assert_eq!((a, b, c), (7, 48, 2));
        assert_eq!(
            args.to_values().unwrap(),
            vec![Value::Int(7), Value::Int(48), Value::Int(2)]
        );
        // Only `count` values belong to the arguments.
        let two = Arguments::Encoded {
            count: 2,
            encoded: bytewise(&[1, 2, 3]),
        };
        assert_eq!(two.decode::<Vec<u8>>().unwrap(), vec![1, 2]);

        let p = Payload::Encoded(bytewise(&[9]));
        assert_eq!(p.decode::<u32>().unwrap(), 9);
        assert_eq!(p.to_value().unwrap(), Value::Int(9));
    }

    #[test]
    fn unreadable_encoded_bytes_are_serialization_errors_naming_the_serialization() {
        let p = Payload::Encoded(bytewise(&[1]));
        let err = p.decode::<String>().unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Serialization);
        assert!(err.message().contains("bytewise"), "{err}");
        let short = Arguments::Encoded {
            count: 2,
            encoded: bytewise(&[1]),
        };
        let err = short.to_values().unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Serialization);
        assert!(err.message().contains("too few bytes"), "{err}");
        assert_eq!(
            Payload::Encoded(bytewise(b""))
                .decode::<u8>()
                .unwrap_err()
                .kind(),
            crate::ErrorKind::Serialization
        );
    }

    #[test]
    fn encoded_equality_and_debug_name_the_serialization() {
        assert_eq!(bytewise(&[1]), bytewise(&[1]));
        assert_ne!(bytewise(&[1]), bytewise(&[2]));
        assert_eq!(
            format!("{:?}", bytewise(&[1, 2])),
            "Encoded { serialization: \"bytewise\", len: 2 }"
        );
    }

    #[test]
    fn typed_payload_and_arguments_read_back_through_values() {
        let p = Payload::typed(vec![1i64, 2]);
        assert_eq!(p.decode::<Vec<i64>>().unwrap(), vec![1, 2]);
        let a = Arguments::typed(2, ("x".to_owned(), true));
        assert_eq!(
            a.decode::<(String, bool)>().unwrap(),
            ("x".to_owned(), true)
        );
        assert_eq!(
            a.to_values().unwrap(),
            vec![Value::from("x"), Value::Bool(true)]
        );
    }
}
