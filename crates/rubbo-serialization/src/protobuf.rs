//! Protobuf, for Triple's IDL (protobuf) mode: the bytes of one protobuf message,
//! opaque to this layer.

use bytes::BytesMut;
use rubbo_common::Value;
use rubbo_common::serialization::{DeserializeFn, Serialization, SerializationError};

/// Protobuf messages (Java's `PROTOBUF_SERIALIZATION_ID`, 22): name `protobuf`.
///
/// The bytes are one encoded protobuf message, as Triple's IDL mode puts it in a gRPC
/// message. They are read and written by the code `rubbo-build` generates (with
/// prost), which knows the message types; this codec knows none, so every dynamic or
/// serde read and write is an error that says so. It is not in the default
/// [`Serializations`](crate::Serializations) table: nothing selects it by URL or by
/// dubbo wire id.
///
/// ```
/// use rubbo_common::{Encoded, Payload, Serialization};
/// use rubbo_serialization::PROTOBUF;
///
/// assert_eq!((PROTOBUF.name(), PROTOBUF.id()), ("protobuf", 22));
/// let reply = Payload::Encoded(Encoded::new(&PROTOBUF, bytes::Bytes::from_static(b"\x0a\x02hi")));
/// let e = reply.decode::<String>().unwrap_err();
/// assert!(e.message().contains("read by generated code"), "{e}");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Protobuf;

/// The [`Protobuf`] instance that [`Encoded`](rubbo_common::Encoded) values refer to.
pub static PROTOBUF: Protobuf = Protobuf;

const NAME: &str = "protobuf";

const READ: &str = "protobuf messages are read by generated code (rubbo-build, prost), \
                    not as dynamic or serde values";
const WRITE: &str = "protobuf messages are written by generated code (rubbo-build, prost), \
                     not from dynamic or serde values";

impl Serialization for Protobuf {
    fn name(&self) -> &'static str {
        NAME
    }

    fn id(&self) -> u8 {
        22
    }

    fn content_type(&self) -> &'static str {
        "application/x-protobuf"
    }

    fn read_values(&self, _: &[u8], _: usize) -> Result<Vec<Value>, SerializationError> {
        Err(SerializationError::read(NAME, READ))
    }

    fn deserialize<'de>(
        &self,
        _: &'de [u8],
        _: &mut DeserializeFn<'_, 'de>,
    ) -> Result<(), SerializationError> {
        Err(SerializationError::read(NAME, READ))
    }

    fn deserialize_values<'de>(
        &self,
        _: &'de [u8],
        _: usize,
        _: &mut DeserializeFn<'_, 'de>,
    ) -> Result<(), SerializationError> {
        Err(SerializationError::read(NAME, READ))
    }

    fn write_value(&self, _: &Value, _: &mut BytesMut) -> Result<(), SerializationError> {
        Err(SerializationError::write(NAME, WRITE))
    }

    fn write(
        &self,
        _: &dyn erased_serde::Serialize,
        _: &mut BytesMut,
    ) -> Result<(), SerializationError> {
        Err(SerializationError::write(NAME, WRITE))
    }

    fn write_values(
        &self,
        _: &dyn erased_serde::Serialize,
        _: &mut BytesMut,
    ) -> Result<(), SerializationError> {
        Err(SerializationError::write(NAME, WRITE))
    }
}

/// Whether `s` is [`PROTOBUF`] (by name and id, as
/// [`same`](rubbo_common::serialization::same) compares).
pub fn is_protobuf(s: &dyn Serialization) -> bool {
    rubbo_common::serialization::same(s, &PROTOBUF)
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use rubbo_common::{Arguments, Encoded, ErrorKind};

    use super::*;

    #[test]
    fn arguments_in_protobuf_are_not_read_as_values() {
        let args = Arguments::Encoded {
            count: 1,
            encoded: Encoded::new(&PROTOBUF, Bytes::from_static(b"\x0a\x01x")),
        };
        let e = args.decode::<(String,)>().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Serialization);
        assert!(e.message().contains("generated code"), "{e}");
        assert!(args.to_values().is_err());
        let mut out = BytesMut::new();
        assert!(PROTOBUF.write(&"x", &mut out).is_err());
        assert!(is_protobuf(&PROTOBUF));
        assert!(!is_protobuf(&crate::HESSIAN2));
    }
}
