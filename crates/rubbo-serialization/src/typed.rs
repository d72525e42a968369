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

#[cfg(test)]
mod tests {
    use bytes::{Bytes, BytesMut};
    use rubbo_common::{Arguments, Encoded, Payload, RpcError, Serialization};

    use super::{decode_arguments, decode_payload};
    use crate::{HESSIAN2, Hessian2};

    /// What the fast path and the erased path give, as comparable text.
    fn shown<T: std::fmt::Debug>(r: Result<T, RpcError>) -> String {
        match r {
            Ok(v) => format!("ok {v:?}"),
            Err(e) => format!("err {:?} {}", e.kind(), e.message()),
        }
    }

    fn args(count: usize, bytes: &'static [u8]) -> Arguments {
        Arguments::Encoded {
            count,
            encoded: Encoded::new(&HESSIAN2, Bytes::from_static(bytes)),
        }
    }

    #[test]
    fn arguments_decode_as_the_erased_path_does_values_and_errors() {
        let mut two = BytesMut::new();
        HESSIAN2.write_values(&("a", 7i32), &mut two).unwrap();
        let two: &'static [u8] = two.to_vec().leak();
        for a in [
            args(2, two),
            args(1, two),       // fewer values than the bytes hold
            args(3, two),       // more than they hold
            args(2, b"\x05hi"), // truncated string
            args(0, b""),
        ] {
            assert_eq!(
                shown(decode_arguments::<(String, i32)>(&a)),
                shown(a.decode::<(String, i32)>()),
                "{a:?}"
            );
            assert_eq!(
                shown(decode_arguments::<(i32, String)>(&a)),
                shown(a.decode::<(i32, String)>()),
                "{a:?}"
            );
            assert_eq!(
                shown(decode_arguments::<()>(&a)),
                shown(a.decode::<()>()),
                "{a:?}"
            );
        }
        assert!(decode_arguments::<(i32, String)>(&args(2, two)).is_err());
    }

    #[test]
    fn payloads_decode_as_the_erased_path_does_values_and_errors() {
        let mut s = BytesMut::new();
        HESSIAN2.write(&"hi", &mut s).unwrap();
        for bytes in [s.freeze(), Bytes::from_static(b"\x05hi"), Bytes::new()] {
            let p = Payload::Encoded(Encoded::new(&HESSIAN2, bytes));
            assert_eq!(
                shown(decode_payload::<String>(&p)),
                shown(p.decode::<String>())
            );
            assert_eq!(shown(decode_payload::<i64>(&p)), shown(p.decode::<i64>()));
        }
        assert_eq!(
            shown(decode_payload::<Option<String>>(&Payload::Null)),
            "ok None"
        );
    }

    #[test]
    fn another_hessian2_instance_takes_the_fast_path_too() {
        static OTHER: Hessian2 = Hessian2;
        let mut out = BytesMut::new();
        OTHER.write(&5i32, &mut out).unwrap();
        let p = Payload::Encoded(Encoded::new(&OTHER, out.freeze()));
        assert!(super::is_hessian2(match &p {
            Payload::Encoded(e) => e,
            _ => unreachable!(),
        }));
        assert_eq!(decode_payload::<i32>(&p).unwrap(), 5);
    }
}
