//! Typed decoding for generated code: Hessian 2 bytes are read by the Hessian decoder
//! itself, monomorphic, instead of through the serialization's erased interface.

use rubbo_common::serialization::same;
use rubbo_common::{Arguments, Encoded, Payload, RpcError, Serialization, SerializationError};
use serde::de::DeserializeOwned;

use crate::hessian2::{self, HESSIAN2};

/// Whether `encoded` is in Hessian 2: [`HESSIAN2`] itself (what the protocols decode
/// into: one pointer comparison), or another instance of it.
fn is_hessian2(encoded: &Encoded) -> bool {
    let hessian2: &dyn Serialization = &HESSIAN2;
    std::ptr::addr_eq(encoded.serialization, hessian2) || same(encoded.serialization, hessian2)
}

/// The error [`Payload::decode`] / [`Arguments::decode`] give for unreadable bytes.
fn read_error(what: &str, e: rubbo_hessian2::Error) -> RpcError {
    RpcError::serialization(format!(
        "{what}: {}",
        SerializationError::read(hessian2::NAME, e)
    ))
}

/// [`Arguments::decode`], with Hessian 2 arguments read in one monomorphic pass (no
/// `erased_serde` call per value): the same values and the same errors, for less work.
/// Generated servers decode their arguments with it.
///
/// ```
/// use rubbo_common::{Arguments, Encoded, Serialization};
/// use rubbo_serialization::{decode_arguments, HESSIAN2};
///
/// let mut out = bytes::BytesMut::new();
/// HESSIAN2.write_values(&("a", 7i32), &mut out).unwrap();
/// let args = Arguments::Encoded { count: 2, encoded: Encoded::new(&HESSIAN2, out.freeze()) };
/// let (s, n): (String, i32) = decode_arguments(&args).unwrap();
/// assert_eq!((s.as_str(), n), ("a", 7));
/// assert_eq!(args.decode::<(String, i32)>().unwrap(), (s, n));
/// ```
pub fn decode_arguments<T: DeserializeOwned>(args: &Arguments) -> Result<T, RpcError> {
    match args {
        Arguments::Encoded { count, encoded } if is_hessian2(encoded) => {
            hessian2::read_values(&encoded.bytes, *count)
                .map_err(|e| read_error("cannot decode the arguments", e))
        }
        other => other.decode(),
    }
}

/// [`Payload::decode`], with a Hessian 2 payload read in one monomorphic pass: the same
/// value and the same errors, for less work. Generated clients decode their results
/// with it.
///
/// ```
/// use rubbo_common::{Encoded, Payload, Serialization};
/// use rubbo_serialization::{decode_payload, HESSIAN2};
///
/// let mut out = bytes::BytesMut::new();
/// HESSIAN2.write(&"hi", &mut out).unwrap();
/// let p = Payload::Encoded(Encoded::new(&HESSIAN2, out.freeze()));
/// assert_eq!(decode_payload::<String>(&p).unwrap(), "hi");
/// assert_eq!(decode_payload::<Option<String>>(&Payload::Null).unwrap(), None);
/// ```
pub fn decode_payload<T: DeserializeOwned>(payload: &Payload) -> Result<T, RpcError> {
    match payload {
        Payload::Encoded(encoded) if is_hessian2(encoded) => hessian2::read_value(&encoded.bytes)
            .map_err(|e| read_error("cannot decode the result", e)),
        other => other.decode(),
    }
}
