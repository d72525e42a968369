#![doc = include_str!("../README.md")]
// Unsafe stays forbidden here, not in Cargo.toml: see the [lints] note there.
#![forbid(unsafe_code)]

mod class_cache;
mod de;
mod decoder;
mod encoder;
mod error;
mod java;
#[cfg(feature = "json")]
mod json;
mod markers;
mod ser;
mod tags;
mod value;
mod value_serde;

pub use decoder::{DEFAULT_MAX_DEPTH, Decoder};
pub use encoder::{Encoder, Output};
pub use error::{Error, Result};
pub use java::{BigDecimal, BigInteger, Binary, Date, JavaException, StackTraceElement};
#[cfg(feature = "json")]
pub use json::{json_to_value, value_to_json};
pub use value::{List, Map, Object, Value};
pub use value_serde::{ValueDeserializer, ValueSerializer, from_value, to_value};

/// Serializes `value` as one Hessian 2 value into a new `Vec<u8>`.
///
/// ```
/// assert_eq!(rubbo_hessian2::to_vec(&1i32)?, [0x91]);
/// # Ok::<(), rubbo_hessian2::Error>(())
/// ```
pub fn to_vec<T: serde::Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    Encoder::new(&mut out).write(value)?;
    Ok(out)
}

/// Deserializes exactly one Hessian 2 value (no trailing bytes) from `bytes`.
///
/// ```
/// let s: String = rubbo_hessian2::from_slice(&[0x02, b'h', b'i'])?;
/// assert_eq!(s, "hi");
/// # Ok::<(), rubbo_hessian2::Error>(())
/// ```
pub fn from_slice<'de, T: serde::Deserialize<'de>>(bytes: &'de [u8]) -> Result<T> {
    let mut d = Decoder::new(bytes);
    let v = d.read()?;
    d.end()?;
    Ok(v)
}

/// Decodes exactly one value (no trailing bytes) into a dynamic [`Value`].
pub fn decode_value(bytes: &[u8]) -> Result<Value> {
    let mut d = Decoder::new(bytes);
    let v = d.read_value()?;
    d.end()?;
    Ok(v)
}

/// Encodes one dynamic [`Value`] into a new `Vec<u8>`.
pub fn encode_value(value: &Value) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    Encoder::new(&mut out).write_value(value)?;
    Ok(out)
}
