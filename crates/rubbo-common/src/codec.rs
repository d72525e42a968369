//! Typed access to payloads and arguments: decoding Hessian 2 bytes (or dynamic
//! values) into Rust types, for generated stubs and dispatchers.

use serde::de::{self, DeserializeOwned, DeserializeSeed, SeqAccess, Visitor};

use crate::{Arguments, Payload, RpcError, Value};

/// The Dubbo serialization id of Hessian 2.
pub const HESSIAN2: u8 = 2;

fn ser_err(what: &str, e: impl std::fmt::Display) -> RpcError {
    RpcError::serialization(format!("{what}: {e}"))
}

fn check_serialization(id: u8) -> Result<(), RpcError> {
    if id == HESSIAN2 {
        Ok(())
    } else {
        Err(RpcError::serialization(format!(
            "unsupported serialization id {id} (supported: 2 = hessian2)"
        )))
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
            Payload::Encoded(enc) => {
                check_serialization(enc.serialization)?;
                let mut d = rubbo_hessian2::Decoder::new(&enc.bytes);
                d.read::<T>()
                    .map_err(|e| ser_err("cannot decode the result", e))
            }
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
            Payload::Encoded(enc) => {
                check_serialization(enc.serialization)?;
                rubbo_hessian2::Decoder::new(&enc.bytes)
                    .read_value()
                    .map_err(|e| ser_err("cannot decode the value", e))
            }
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
            Arguments::Encoded { count, encoded } => {
                check_serialization(encoded.serialization)?;
                let mut d = rubbo_hessian2::Decoder::new(&encoded.bytes);
                T::deserialize(StreamSeq {
                    decoder: &mut d,
                    count: *count,
                })
                .map_err(|e| ser_err("cannot decode the arguments", e))
            }
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
            Arguments::Encoded { count, encoded } => {
                check_serialization(encoded.serialization)?;
                let mut d = rubbo_hessian2::Decoder::new(&encoded.bytes);
                (0..*count)
                    .map(|_| {
                        d.read_value()
                            .map_err(|e| ser_err("cannot decode the arguments", e))
                    })
                    .collect()
            }
        }
    }
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

/// A tuple read from consecutive top-level values of one Hessian stream (how Dubbo
/// writes arguments).
struct StreamSeq<'a, 'de> {
    decoder: &'a mut rubbo_hessian2::Decoder<'de>,
    count: usize,
}

impl<'de> de::Deserializer<'de> for StreamSeq<'_, 'de> {
    type Error = rubbo_hessian2::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_seq(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de> SeqAccess<'de> for StreamSeq<'_, 'de> {
    type Error = rubbo_hessian2::Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Self::Error> {
        if self.count == 0 {
            return Ok(None);
        }
        self.count -= 1;
        seed.deserialize(&mut *self.decoder).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Encoded;

    #[test]
    fn encoded_arguments_decode_as_a_tuple_of_top_level_values() {
        let mut buf = Vec::new();
        let mut enc = rubbo_hessian2::Encoder::new(&mut buf);
        enc.write_args(&("hello", 48i32, vec!["a".to_owned()]))
            .unwrap();
        let args = Arguments::Encoded {
            count: 3,
            encoded: Encoded {
                serialization: HESSIAN2,
                bytes: buf.into(),
            },
        };
        let (s, n, l): (String, i32, Vec<String>) = args.decode().unwrap();
        assert_eq!((s.as_str(), n, l), ("hello", 48, vec!["a".to_owned()]));
        assert_eq!(args.to_values().unwrap()[1], Value::Int(48));
        let wrong = Arguments::Encoded {
            count: 1,
            encoded: Encoded {
                serialization: 23,
                bytes: bytes::Bytes::from_static(b"\x91"),
            },
        };
        assert_eq!(
            wrong.decode::<(i32,)>().unwrap_err().kind(),
            crate::ErrorKind::Serialization
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
