#![doc = include_str!("../README.md")]

mod hessian2;
mod protobuf;
mod table;
mod typed;

pub use hessian2::{HESSIAN2, Hessian2};
pub use protobuf::{PROTOBUF, Protobuf, is_protobuf};
pub use table::{Serializations, builtin_by_id};
pub use typed::{decode_arguments, decode_payload};

/// The extension point, re-exported from `rubbo-common` where every layer names it.
pub use rubbo_common::serialization::{DeserializeFn, Serialization, SerializationError};
