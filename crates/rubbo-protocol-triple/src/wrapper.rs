//! Wrapper mode: the messages Java's Triple sends for a plain Java interface
//! (`triple_wrapper.proto`, package `org.apache.dubbo.triple`), with hessian2 inside.
//!
//! Java reads and writes them with a hand-written codec
//! (`TripleCustomerProtocolWrapper.java`) that throws on any field other than 1-3 or
//! any wire type other than 2, so decoding here is as strict and encoding writes no
//! other field. Each argument is its own hessian2 stream (own reference tables).

use bytes::Bytes;
use prost::Message;
use rubbo_common::descriptor;
use rubbo_common::{
    Arguments, BizException, Encoded, Invocation, Outcome, Payload, RpcResult, Value,
};
use rubbo_hessian2::{Encoder, JavaException};
use rubbo_serialization::{HESSIAN2, Serialization};
use serde::ser::{self, Impossible, Serialize};

use crate::error::TripleError;

/// The `serializeType` Java sends for hessian2 (`TripleConstants.HESSIAN4`).
pub const HESSIAN4: &str = "hessian4";
/// Dubbo's SPI name of hessian2, which readers accept too.
pub const HESSIAN2_NAME: &str = "hessian2";

/// The arguments of one call (`TripleRequestWrapper`).
#[derive(Clone, PartialEq, Message)]
pub struct TripleRequestWrapper {
    /// The serialization of `args`: `hessian4` for hessian2.
    #[prost(string, tag = "1")]
    pub serialize_type: String,
    /// One serialized stream per argument.
    #[prost(bytes = "bytes", repeated, tag = "2")]
    pub args: Vec<Bytes>,
    /// `Class.getName()` of each declared parameter.
    #[prost(string, repeated, tag = "3")]
    pub arg_types: Vec<String>,
}

/// The result of one call (`TripleResponseWrapper`): a value, or the thrown exception
/// when the response carries `tri-exception-code`.
#[derive(Clone, PartialEq, Message)]
pub struct TripleResponseWrapper {
    /// The request's `serializeType`, echoed.
    #[prost(string, tag = "1")]
    pub serialize_type: String,
    /// The serialized value or exception.
    #[prost(bytes = "bytes", tag = "2")]
    pub data: Bytes,
    /// The declared return type's `Class.getName()` (not read by Java).
    #[prost(string, tag = "3")]
    pub r#type: String,
}

/// Checks `buf` the way Java's parser does: every field is 1, 2 or 3 and
/// length-delimited.
fn check_fields(buf: &[u8], message: &'static str) -> Result<(), TripleError> {
    use prost::encoding::{WireType, decode_key, decode_varint};
    let not = |reason: String| TripleError::NotWrapper { message, reason };
    let mut rest = buf;
    while !rest.is_empty() {
        let (tag, wire) = decode_key(&mut rest).map_err(|e| not(e.to_string()))?;
        if !(1..=3).contains(&tag) {
            return Err(not(format!("field number {tag}, expected 1, 2 or 3")));
        }
        if wire != WireType::LengthDelimited {
            return Err(not(format!("field {tag} has wire type {wire:?}")));
        }
        let len = decode_varint(&mut rest).map_err(|e| not(e.to_string()))?;
        let len = usize::try_from(len)
            .ok()
            .filter(|l| *l <= rest.len())
            .ok_or_else(|| not(format!("field {tag} runs past the message")))?;
        rest = &rest[len..];
    }
    Ok(())
}

/// Whether `e` holds hessian2 bytes (what the wrapper carries).
fn is_hessian2(e: &Encoded) -> bool {
    e.serialization.id() == HESSIAN2.id()
}

fn check_serialization(name: &str) -> Result<(), TripleError> {
    if name == HESSIAN4 || name == HESSIAN2_NAME {
        Ok(())
    } else {
        Err(TripleError::Serialization(name.to_owned()))
    }
}

impl TripleRequestWrapper {
    /// Decodes a request wrapper, as strictly as Java does.
    pub fn decode_strict(buf: Bytes) -> Result<Self, TripleError> {
        check_fields(&buf, "TripleRequestWrapper")?;
        let w = Self::decode(buf).map_err(|e| TripleError::NotWrapper {
            message: "TripleRequestWrapper",
            reason: e.to_string(),
        })?;
        check_serialization(&w.serialize_type)?;
        if w.arg_types.len() != w.args.len() {
            return Err(TripleError::NotWrapper {
                message: "TripleRequestWrapper",
                reason: format!("{} args but {} argTypes", w.args.len(), w.arg_types.len()),
            });
        }
        Ok(w)
    }

    /// Decodes one message of a wrapper-mode stream (Java's `StreamObserver<T>`), as
    /// strictly as Java does, holding exactly one argument. Its `argTypes` are not
    /// checked against it: Java writes the method's parameter types, which for a
    /// server-streaming method are two (`[Req, StreamObserver]`) for the one request
    /// (`ReflectionPackableMethod`).
    pub fn decode_stream_message(buf: Bytes) -> Result<Self, TripleError> {
        check_fields(&buf, "TripleRequestWrapper")?;
        let w = Self::decode(buf).map_err(|e| TripleError::NotWrapper {
            message: "TripleRequestWrapper",
            reason: e.to_string(),
        })?;
        check_serialization(&w.serialize_type)?;
        if w.args.len() != 1 {
            return Err(TripleError::NotWrapper {
                message: "TripleRequestWrapper",
                reason: format!("{} args in a stream message, expected 1", w.args.len()),
            });
        }
        Ok(w)
    }

    /// The JVM descriptor of the argument types (`Ljava/lang/String;I`).
    pub fn descriptor(&self) -> String {
        self.arg_types
            .iter()
            .map(|t| descriptor::name_to_desc(t))
            .collect()
    }

    /// The arguments as the dispatcher reads them: a single argument stays encoded
    /// (zero copy); several are decoded, each from its own stream.
    pub fn arguments(&self) -> Result<Arguments, TripleError> {
        if let [one] = self.args.as_slice() {
            return Ok(Arguments::Encoded {
                count: 1,
                encoded: Encoded {
                    serialization: &HESSIAN2,
                    bytes: one.clone(),
                },
            });
        }
        let values = self
            .args
            .iter()
            .map(|a| rubbo_hessian2::decode_value(a))
            .collect::<Result<Vec<Value>, _>>()?;
        Ok(Arguments::Values(values))
    }

    /// The wrapper of `inv`'s arguments: one hessian2 stream each, and the Java class
    /// names of its parameter descriptor (`java.lang.Object` when it has none).
    pub fn for_invocation(inv: &Invocation) -> Result<Self, TripleError> {
        let args = encode_arguments(inv.arguments())?;
        let mut arg_types = descriptor::split_names(inv.parameter_types()).unwrap_or_default();
        if arg_types.len() != args.len() {
            arg_types = vec!["java.lang.Object".to_owned(); args.len()];
        }
        Ok(TripleRequestWrapper {
            serialize_type: HESSIAN4.to_owned(),
            args,
            arg_types,
        })
    }
}

/// Each argument as its own hessian2 stream.
fn encode_arguments(args: &Arguments) -> Result<Vec<Bytes>, TripleError> {
    let values = match args {
        Arguments::Typed { value, .. } => match (**value).serialize(Splitter) {
            Ok(split) => return Ok(split),
            // Not a tuple or sequence: go through dynamic values.
            Err(_) => args.to_values(),
        },
        Arguments::Encoded { count: 1, encoded } if is_hessian2(encoded) => {
            return Ok(vec![encoded.bytes.clone()]);
        }
        Arguments::Values(v) => Ok(v.clone()),
        Arguments::Encoded { .. } | Arguments::Stream(_) => args.to_values(),
    }
    .map_err(|e| TripleError::Serialization(e.to_string()))?;
    values
        .iter()
        .map(|v| {
            let mut out = Vec::new();
            Encoder::new(&mut out).write_value(v)?;
            Ok(Bytes::from(out))
        })
        .collect()
}

impl TripleResponseWrapper {
    /// Decodes a response wrapper, as strictly as Java does.
    pub fn decode_strict(buf: Bytes) -> Result<Self, TripleError> {
        check_fields(&buf, "TripleResponseWrapper")?;
        let w = Self::decode(buf).map_err(|e| TripleError::NotWrapper {
            message: "TripleResponseWrapper",
            reason: e.to_string(),
        })?;
        check_serialization(&w.serialize_type)?;
        Ok(w)
    }

    /// The wrapper of a call's outcome. `serialize_type` is the request's.
    pub fn for_outcome(outcome: &Outcome, serialize_type: &str) -> Result<Self, TripleError> {
        let mut out = Vec::new();
        let mut enc = Encoder::new(&mut out);
        match outcome {
            Outcome::Value(Payload::Null) => enc.write_null()?,
            Outcome::Value(Payload::Value(v)) => enc.write_value(v)?,
            Outcome::Value(Payload::Typed(t)) => enc.write(&**t)?,
            Outcome::Value(Payload::Encoded(e)) if is_hessian2(e) => {
                return Ok(Self::new(serialize_type, e.bytes.clone()));
            }
            Outcome::Value(Payload::Encoded(e)) => {
                return Err(TripleError::Serialization(format!(
                    "serialization {}",
                    e.serialization.name()
                )));
            }
            Outcome::Value(Payload::Stream(_)) => {
                return Err(TripleError::Serialization(
                    "a message stream in a unary wrapper-mode reply".to_owned(),
                ));
            }
            Outcome::Exception(e) => {
                if let Value::Object(_) = &e.value {
                    enc.write_value(&e.value)?;
                } else {
                    let mut je =
                        JavaException::new(e.class.clone(), e.message.clone().unwrap_or_default());
                    je.message = e.message.clone();
                    enc.write_exception(&je)?;
                }
            }
        }
        Ok(Self::new(serialize_type, Bytes::from(out)))
    }

    fn new(serialize_type: &str, data: Bytes) -> Self {
        TripleResponseWrapper {
            serialize_type: serialize_type.to_owned(),
            data,
            // The declared return type is not known here; Java's reader ignores it.
            r#type: "java.lang.Object".to_owned(),
        }
    }

    /// The call's result: the value still encoded, or (`exception`: the response
    /// had a nonzero `tri-exception-code`) the thrown exception as data.
    pub fn into_result(self, exception: bool) -> Result<RpcResult, TripleError> {
        if exception {
            let value = rubbo_hessian2::decode_value(&self.data)?;
            return Ok(RpcResult::from_exception(BizException::from_thrown(value)));
        }
        if self.data.is_empty() || self.data[..] == [b'N'] {
            return Ok(RpcResult::null());
        }
        Ok(RpcResult::value(Payload::Encoded(Encoded {
            serialization: &HESSIAN2,
            bytes: self.data,
        })))
    }
}

/// Serializes a tuple (or sequence) of arguments as one hessian2 stream per element.
struct Splitter;

/// Why [`Splitter`] refused: the arguments are not a tuple.
#[derive(Debug)]
struct NotATuple(String);

impl std::fmt::Display for NotATuple {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotATuple {}

impl ser::Error for NotATuple {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        NotATuple(msg.to_string())
    }
}

/// The elements of the tuple, each serialized on its own.
struct Elements(Vec<Bytes>);

impl Elements {
    fn push<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), NotATuple> {
        let bytes = rubbo_hessian2::to_vec(v).map_err(|e| NotATuple(e.to_string()))?;
        self.0.push(Bytes::from(bytes));
        Ok(())
    }
}

impl ser::SerializeTuple for Elements {
    type Ok = Vec<Bytes>;
    type Error = NotATuple;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), NotATuple> {
        self.push(v)
    }
    fn end(self) -> Result<Vec<Bytes>, NotATuple> {
        Ok(self.0)
    }
}

impl ser::SerializeSeq for Elements {
    type Ok = Vec<Bytes>;
    type Error = NotATuple;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), NotATuple> {
        self.push(v)
    }
    fn end(self) -> Result<Vec<Bytes>, NotATuple> {
        Ok(self.0)
    }
}

macro_rules! refuse {
    ($($f:ident($($t:ty),*);)*) => {
        $(fn $f(self, $(_: $t),*) -> Result<Vec<Bytes>, NotATuple> {
            Err(NotATuple("not a tuple".into()))
        })*
    };
}

impl ser::Serializer for Splitter {
    type Ok = Vec<Bytes>;
    type Error = NotATuple;
    type SerializeSeq = Elements;
    type SerializeTuple = Elements;
    type SerializeTupleStruct = Impossible<Vec<Bytes>, NotATuple>;
    type SerializeTupleVariant = Impossible<Vec<Bytes>, NotATuple>;
    type SerializeMap = Impossible<Vec<Bytes>, NotATuple>;
    type SerializeStruct = Impossible<Vec<Bytes>, NotATuple>;
    type SerializeStructVariant = Impossible<Vec<Bytes>, NotATuple>;

    refuse! {
        serialize_bool(bool); serialize_i8(i8); serialize_i16(i16); serialize_i32(i32);
        serialize_i64(i64); serialize_u8(u8); serialize_u16(u16); serialize_u32(u32);
        serialize_u64(u64); serialize_f32(f32); serialize_f64(f64); serialize_char(char);
        serialize_str(&str); serialize_bytes(&[u8]); serialize_none();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }

    fn serialize_unit(self) -> Result<Vec<Bytes>, NotATuple> {
        Ok(Vec::new())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<Vec<Bytes>, NotATuple> {
        Err(NotATuple("not a tuple".into()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<Vec<Bytes>, NotATuple> {
        Err(NotATuple("not a tuple".into()))
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Vec<Bytes>, NotATuple> {
        Err(NotATuple("not a tuple".into()))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Elements, NotATuple> {
        Ok(Elements(Vec::with_capacity(len.unwrap_or(0))))
    }
    fn serialize_tuple(self, len: usize) -> Result<Elements, NotATuple> {
        Ok(Elements(Vec::with_capacity(len)))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotATuple> {
        Err(NotATuple("not a tuple".into()))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotATuple> {
        Err(NotATuple("not a tuple".into()))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotATuple> {
        Err(NotATuple("not a tuple".into()))
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, NotATuple> {
        Err(NotATuple("not a tuple".into()))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotATuple> {
        Err(NotATuple("not a tuple".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request Java 3.3 sends for `echo("world")` (wire reference §4.5), fields
    /// in Java's order 1, 3, 2.
    const JAVA_ECHO_WORLD: &[u8] = b"\x0a\x08hessian4\x1a\x10java.lang.String\x12\x06\x05world";

    #[test]
    fn a_java_request_decodes_to_a_descriptor_and_encoded_arguments() {
        let w = TripleRequestWrapper::decode_strict(Bytes::from_static(JAVA_ECHO_WORLD)).unwrap();
        assert_eq!(w.descriptor(), "Ljava/lang/String;");
        let args = w.arguments().unwrap();
        let (s,): (String,) = args.decode().unwrap();
        assert_eq!(s, "world");
    }

    #[test]
    fn typed_arguments_encode_as_one_stream_each_with_java_class_names() {
        let inv = Invocation::new("S", "m")
            .with_parameter_types("Ljava/lang/String;I")
            .with_arguments(Arguments::typed(2, ("world".to_owned(), 7i32)));
        let w = TripleRequestWrapper::for_invocation(&inv).unwrap();
        assert_eq!(w.serialize_type, "hessian4");
        assert_eq!(w.arg_types, ["java.lang.String", "int"]);
        assert_eq!(w.args, [&b"\x05world"[..], &b"\x97"[..]]);
        let bytes = w.encode_to_vec();
        // Only fields 1-3, all length-delimited: what Java's parser accepts.
        check_fields(&bytes, "TripleRequestWrapper").unwrap();
        let back = TripleRequestWrapper::decode_strict(Bytes::from(bytes)).unwrap();
        let (s, n): (String, i32) = back.arguments().unwrap().decode().unwrap();
        assert_eq!((s.as_str(), n), ("world", 7));
    }

    #[test]
    fn each_argument_has_its_own_reference_tables() {
        // Two equal lists: in one stream the second would be a back-reference.
        let l = vec!["a".to_owned()];
        let inv = Invocation::new("S", "m")
            .with_parameter_types("Ljava/util/List;Ljava/util/List;")
            .with_arguments(Arguments::typed(2, (l.clone(), l)));
        let w = TripleRequestWrapper::for_invocation(&inv).unwrap();
        assert_eq!(w.args[0], w.args[1]);
        let (a, b): (Vec<String>, Vec<String>) = w.arguments().unwrap().decode().unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn plain_protobuf_messages_are_refused_naming_the_mode() {
        // GreetRequest { name: "x" (1), repeat: 2 (varint), payload: "" }.
        let greet = Bytes::from_static(b"\x0a\x01x\x10\x02");
        let e = TripleRequestWrapper::decode_strict(greet).unwrap_err();
        assert!(e.to_string().contains("wrapper mode"), "{e}");
        let other_field = Bytes::from_static(b"\x22\x00");
        assert!(TripleRequestWrapper::decode_strict(other_field).is_err());
        let json = Bytes::from_static(b"\x0a\x04json");
        assert!(matches!(
            TripleRequestWrapper::decode_strict(json),
            Err(TripleError::Serialization(_))
        ));
    }

    #[test]
    fn outcomes_round_trip_values_nulls_and_exceptions() {
        let w = TripleResponseWrapper::for_outcome(
            &Outcome::Value(Payload::typed("hi".to_owned())),
            HESSIAN4,
        )
        .unwrap();
        let bytes = Bytes::from(w.encode_to_vec());
        check_fields(&bytes, "TripleResponseWrapper").unwrap();
        let r = TripleResponseWrapper::decode_strict(bytes)
            .unwrap()
            .into_result(false)
            .unwrap();
        assert_eq!(r.payload().unwrap().decode::<String>().unwrap(), "hi");

        let null = TripleResponseWrapper::for_outcome(&Outcome::Value(Payload::Null), HESSIAN4)
            .unwrap()
            .into_result(false)
            .unwrap();
        assert!(matches!(null.payload(), Some(Payload::Null)));

        let biz = BizException::new("org.rubbo.interop.InteropException", Some("boom".into()));
        let r = TripleResponseWrapper::for_outcome(&Outcome::Exception(biz), HESSIAN4)
            .unwrap()
            .into_result(true)
            .unwrap();
        let e = r.exception().unwrap();
        assert_eq!(e.class, "org.rubbo.interop.InteropException");
        assert_eq!(e.message.as_deref(), Some("boom"));
    }
}
