//! serde names that the Hessian serializer recognises, so that Java types
//! without a natural serde form (dates, typed lists, objects with dynamic
//! class names, references) keep their exact wire form.

use std::cell::RefCell;

use serde::de::{IntoDeserializer, Visitor};

use crate::error::Result;
use crate::value::Value;

/// Newtype struct name for a `java.util.Date` (payload: i64 millis).
pub(crate) const DATE: &str = "$rubbo_hessian2::Date";
/// Newtype struct name for a back-reference (payload: u32 index).
pub(crate) const REF: &str = "$rubbo_hessian2::Ref";
/// Tuple struct name for a typed list: type name, then the items.
pub(crate) const TYPED_LIST: &str = "$rubbo_hessian2::TypedList";
/// Tuple struct name for a typed map: type name, then key, value, key, value...
pub(crate) const TYPED_MAP: &str = "$rubbo_hessian2::TypedMap";
/// Tuple struct name for an object: class name, field names (a list), then values.
pub(crate) const OBJECT: &str = "$rubbo_hessian2::Object";
/// Newtype struct name under which a [`Value`] asks to be deserialized losslessly.
pub(crate) const VALUE: &str = "$rubbo_hessian2::Value";
/// Newtype struct name for a `JavaException` (payload: its `Value` form).
pub(crate) const EXCEPTION: &str = "$rubbo_hessian2::JavaException";

thread_local! {
    static STASH: RefCell<Option<Value>> = const { RefCell::new(None) };
}

/// Hands an already decoded `Value` to `Value`'s own visitor (see `value_serde`).
pub(crate) fn stash_value<'de, V: Visitor<'de>>(v: Value, visitor: V) -> Result<V::Value> {
    STASH.with(|s| *s.borrow_mut() = Some(v));
    let r = visitor.visit_newtype_struct(().into_deserializer());
    STASH.with(|s| s.borrow_mut().take());
    r
}

/// Takes the value stashed by [`stash_value`], if any.
pub(crate) fn take_stashed() -> Option<Value> {
    STASH.with(|s| s.borrow_mut().take())
}
