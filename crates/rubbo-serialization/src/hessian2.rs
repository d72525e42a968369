//! Hessian 2, Dubbo's default serialization, over `rubbo-hessian2`.

use bytes::BytesMut;
use rubbo_common::Value;
use rubbo_common::serialization::{DeserializeFn, Serialization, SerializationError};
use rubbo_hessian2::{Decoder, Encoder};
use serde::de::{self, DeserializeOwned, DeserializeSeed, SeqAccess, Visitor};

/// Hessian 2 (Java's `Hessian2Serialization`): name `hessian2`, dubbo wire id 2,
/// content type `x-application/hessian2`. Consecutive values are one Hessian stream
/// (shared references and class definitions), as Java's `Hessian2ObjectOutput` writes
/// a call's arguments.
///
/// ```
/// use rubbo_common::Serialization;
/// use rubbo_serialization::HESSIAN2;
///
/// let mut out = bytes::BytesMut::new();
/// HESSIAN2.write_values(&("a", 7i32), &mut out).unwrap();
/// assert_eq!(&out[..], b"\x01a\x97");
/// assert_eq!(HESSIAN2.read_values(&out, 2).unwrap()[1], rubbo_common::Value::Int(7));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Hessian2;

/// The [`Hessian2`] instance that [`Encoded`](rubbo_common::Encoded) values refer to.
pub static HESSIAN2: Hessian2 = Hessian2;

pub(crate) const NAME: &str = "hessian2";

fn read_err(e: impl std::fmt::Display) -> SerializationError {
    SerializationError::read(NAME, e)
}

fn write_err(e: impl std::fmt::Display) -> SerializationError {
    SerializationError::write(NAME, e)
}

impl Serialization for Hessian2 {
    fn name(&self) -> &'static str {
        NAME
    }

    fn id(&self) -> u8 {
        2
    }

    fn content_type(&self) -> &'static str {
        "x-application/hessian2"
    }

    fn read_value(&self, bytes: &[u8]) -> Result<Value, SerializationError> {
        Decoder::new(bytes).read_value().map_err(read_err)
    }

    fn read_values(&self, bytes: &[u8], count: usize) -> Result<Vec<Value>, SerializationError> {
        let mut d = Decoder::new(bytes);
        (0..count)
            .map(|_| d.read_value().map_err(read_err))
            .collect()
    }

    fn deserialize<'de>(
        &self,
        bytes: &'de [u8],
        visit: &mut DeserializeFn<'_, 'de>,
    ) -> Result<(), SerializationError> {
        let mut d = Decoder::new(bytes);
        visit(&mut <dyn erased_serde::Deserializer>::erase(&mut d)).map_err(read_err)
    }

    fn deserialize_values<'de>(
        &self,
        bytes: &'de [u8],
        count: usize,
        visit: &mut DeserializeFn<'_, 'de>,
    ) -> Result<(), SerializationError> {
        let mut d = Decoder::new(bytes);
        let mut values = Values {
            decoder: &mut d,
            left: count,
        };
        visit(&mut <dyn erased_serde::Deserializer>::erase(&mut values)).map_err(read_err)
    }

    fn write_value(&self, value: &Value, out: &mut BytesMut) -> Result<(), SerializationError> {
        Encoder::new(out).write_value(value).map_err(write_err)
    }

    fn write(
        &self,
        value: &dyn erased_serde::Serialize,
        out: &mut BytesMut,
    ) -> Result<(), SerializationError> {
        Encoder::new(out).write(value).map_err(write_err)
    }

    fn write_values(
        &self,
        values: &dyn erased_serde::Serialize,
        out: &mut BytesMut,
    ) -> Result<(), SerializationError> {
        Encoder::new(out).write_args(values).map_err(write_err)
    }
}

/// A `T` from the one value at the start of `bytes`, as [`Hessian2::deserialize`]
/// reads it, without the erased interface.
pub(crate) fn read_value<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, rubbo_hessian2::Error> {
    T::deserialize(&mut Decoder::new(bytes))
}

/// A `T` from `count` consecutive top-level values, as
/// [`Hessian2::deserialize_values`] reads them, without the erased interface.
pub(crate) fn read_values<T: DeserializeOwned>(
    bytes: &[u8],
    count: usize,
) -> Result<T, rubbo_hessian2::Error> {
    let mut d = Decoder::new(bytes);
    T::deserialize(&mut Values {
        decoder: &mut d,
        left: count,
    })
}

/// `left` consecutive top-level values of one Hessian stream, as one sequence (the
/// shape `Decoder::read_args` reads, behind a `&mut` that erased serde can hold).
struct Values<'a, 'de> {
    decoder: &'a mut Decoder<'de>,
    left: usize,
}

impl<'de> de::Deserializer<'de> for &mut Values<'_, 'de> {
    type Error = rubbo_hessian2::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_seq(self)
    }

    /// `()` reads no arguments.
    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        if self.left == 0 {
            visitor.visit_unit()
        } else {
            visitor.visit_seq(self)
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de> SeqAccess<'de> for &mut Values<'_, 'de> {
    type Error = rubbo_hessian2::Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Self::Error> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.decoder).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use rubbo_common::{Arguments, Encoded, ErrorKind, Payload};

    use super::*;

    fn encoded(write: impl FnOnce(&mut BytesMut)) -> Encoded {
        let mut out = BytesMut::new();
        write(&mut out);
        Encoded::new(&HESSIAN2, out.freeze())
    }

    #[test]
    fn encoded_arguments_decode_as_a_tuple_of_top_level_values() {
        let bytes = encoded(|out| {
            HESSIAN2
                .write_values(&("hello", 48i32, vec!["a".to_owned()]), out)
                .unwrap();
        });
        // What Java writes: three top-level values, no list around them.
        assert_eq!(&bytes.bytes[..], b"\x05hello\xc8\x30\x79\x01a");
        let args = Arguments::Encoded {
            count: 3,
            encoded: bytes,
        };
        let (s, n, l): (String, i32, Vec<String>) = args.decode().unwrap();
        assert_eq!((s.as_str(), n, l), ("hello", 48, vec!["a".to_owned()]));
        assert_eq!(args.to_values().unwrap()[1], Value::Int(48));
        // A struct of the arguments reads them in order, too.
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Echo {
            text: String,
            n: i64,
        }
        let two = Arguments::Encoded {
            count: 2,
            encoded: encoded(|out| HESSIAN2.write_values(&("t", 5i32), out).unwrap()),
        };
        assert_eq!(
            two.decode::<Echo>().unwrap(),
            Echo {
                text: "t".into(),
                n: 5
            }
        );
    }

    #[test]
    fn no_arguments_decode_as_unit() {
        let none = Arguments::Encoded {
            count: 0,
            encoded: Encoded::new(&HESSIAN2, Bytes::new()),
        };
        none.decode::<()>().unwrap();
        assert_eq!(none.to_values().unwrap(), Vec::<Value>::new());
    }

    #[test]
    fn encoded_payload_decodes_typed_and_dynamic() {
        let p = Payload::Encoded(encoded(|out| {
            HESSIAN2.write(&vec![1i64, 2], out).unwrap();
        }));
        assert_eq!(p.decode::<Vec<i64>>().unwrap(), vec![1, 2]);
        assert_eq!(p.decode::<Option<Vec<i64>>>().unwrap(), Some(vec![1, 2]));
        let Value::List(list) = p.to_value().unwrap() else {
            panic!("not a list");
        };
        assert_eq!(list.items, vec![Value::Long(1), Value::Long(2)]);
        let v = Payload::Encoded(encoded(|out| {
            HESSIAN2.write_value(&Value::from("x"), out).unwrap();
        }));
        assert_eq!(v.decode::<String>().unwrap(), "x");
    }

    #[test]
    fn bad_bytes_are_serialization_errors_that_say_why() {
        let p = Payload::Encoded(Encoded::new(&HESSIAN2, Bytes::from_static(b"\x05hi")));
        let err = p.decode::<String>().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Serialization);
        assert!(err.message().contains("hessian2: cannot read"), "{err}");
        let wrong_type = Payload::Encoded(encoded(|out| HESSIAN2.write(&"s", out).unwrap()));
        assert_eq!(
            wrong_type.decode::<i32>().unwrap_err().kind(),
            ErrorKind::Serialization
        );
        let short = Arguments::Encoded {
            count: 2,
            encoded: encoded(|out| HESSIAN2.write(&1i32, out).unwrap()),
        };
        assert_eq!(
            short.decode::<(i32, i32)>().unwrap_err().kind(),
            ErrorKind::Serialization
        );
        assert_eq!(
            short.to_values().unwrap_err().kind(),
            ErrorKind::Serialization
        );
    }
}
