//! Typed reads through `erased_serde` without a heap allocation per value.
//!
//! Every value an erased visitor or seed produces crosses the erased boundary in an
//! `erased_serde` `Out`, which boxes anything larger than two words: a `String`, a
//! `Vec`, most tuples and structs. [`Unboxed`] wraps the deserializer on the typed
//! side so that only `()` crosses: each visitor and seed handed to the erased side
//! writes its value into a slot on the caller's stack instead of returning it. The
//! cost is what the erased call costs anyway (one virtual call per value).

use serde::de::{self, DeserializeSeed, Visitor};

/// A deserializer whose visitors and seeds all return `()`, their values going
/// through a slot.
pub(crate) struct Unboxed<D>(pub(crate) D);

fn take<T, E: de::Error>(slot: Option<T>) -> Result<T, E> {
    slot.ok_or_else(|| E::custom("the deserializer produced no value"))
}

/// A visitor that keeps its value in `slot` and returns `()`.
struct SlotVisitor<'s, 'de, V: Visitor<'de>> {
    inner: V,
    slot: &'s mut Option<<V as Visitor<'de>>::Value>,
}

macro_rules! visit_primitive {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<(), E> {
            *self.slot = Some(self.inner.$method(v)?);
            Ok(())
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for SlotVisitor<'_, 'de, V> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.expecting(f)
    }

    visit_primitive! {
        visit_bool(bool), visit_i8(i8), visit_i16(i16), visit_i32(i32), visit_i64(i64),
        visit_i128(i128), visit_u8(u8), visit_u16(u16), visit_u32(u32), visit_u64(u64),
        visit_u128(u128), visit_f32(f32), visit_f64(f64), visit_char(char),
        visit_str(&str), visit_borrowed_str(&'de str), visit_string(String),
        visit_bytes(&[u8]), visit_borrowed_bytes(&'de [u8]), visit_byte_buf(Vec<u8>),
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        *self.slot = Some(self.inner.visit_none()?);
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        *self.slot = Some(self.inner.visit_unit()?);
        Ok(())
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        *self.slot = Some(self.inner.visit_some(Unboxed(d))?);
        Ok(())
    }

    fn visit_newtype_struct<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        *self.slot = Some(self.inner.visit_newtype_struct(Unboxed(d))?);
        Ok(())
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        *self.slot = Some(self.inner.visit_seq(Unboxed(seq))?);
        Ok(())
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        *self.slot = Some(self.inner.visit_map(Unboxed(map))?);
        Ok(())
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        *self.slot = Some(self.inner.visit_enum(Unboxed(data))?);
        Ok(())
    }
}

/// A seed that keeps its value in `slot` and returns `()`.
struct SlotSeed<'s, 'de, S: DeserializeSeed<'de>> {
    inner: S,
    slot: &'s mut Option<<S as DeserializeSeed<'de>>::Value>,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for SlotSeed<'_, 'de, S> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        *self.slot = Some(self.inner.deserialize(Unboxed(d))?);
        Ok(())
    }
}

/// Runs `call` with a slot visitor around `visitor`, then takes its value.
macro_rules! through_slot {
    ($visitor:ident, |$v:ident| $call:expr) => {{
        let mut slot = None;
        let $v = SlotVisitor {
            inner: $visitor,
            slot: &mut slot,
        };
        $call?;
        take(slot)
    }};
}

macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            through_slot!(visitor, |v| self.0.$method($($arg,)* v))
        }
    )*};
}

impl<'de, D: de::Deserializer<'de>> de::Deserializer<'de> for Unboxed<D> {
    type Error = D::Error;

    forward! {
        deserialize_any(), deserialize_bool(), deserialize_i8(), deserialize_i16(),
        deserialize_i32(), deserialize_i64(), deserialize_i128(), deserialize_u8(),
        deserialize_u16(), deserialize_u32(), deserialize_u64(), deserialize_u128(),
        deserialize_f32(), deserialize_f64(), deserialize_char(), deserialize_str(),
        deserialize_string(), deserialize_bytes(), deserialize_byte_buf(),
        deserialize_option(), deserialize_unit(),
        deserialize_unit_struct(name: &'static str),
        deserialize_newtype_struct(name: &'static str),
        deserialize_seq(), deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_map(),
        deserialize_struct(name: &'static str, fields: &'static [&'static str]),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
        deserialize_identifier(), deserialize_ignored_any(),
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

impl<'de, A: de::SeqAccess<'de>> de::SeqAccess<'de> for Unboxed<A> {
    type Error = A::Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        let mut slot = None;
        let seed = SlotSeed {
            inner: seed,
            slot: &mut slot,
        };
        match self.0.next_element_seed(seed)? {
            Some(()) => take(slot).map(Some),
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: de::MapAccess<'de>> de::MapAccess<'de> for Unboxed<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let mut slot = None;
        let seed = SlotSeed {
            inner: seed,
            slot: &mut slot,
        };
        match self.0.next_key_seed(seed)? {
            Some(()) => take(slot).map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        let mut slot = None;
        self.0.next_value_seed(SlotSeed {
            inner: seed,
            slot: &mut slot,
        })?;
        take(slot)
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: de::EnumAccess<'de>> de::EnumAccess<'de> for Unboxed<A> {
    type Error = A::Error;
    type Variant = Unboxed<A::Variant>;

    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, Self::Variant), A::Error> {
        let mut slot = None;
        let ((), variant) = self.0.variant_seed(SlotSeed {
            inner: seed,
            slot: &mut slot,
        })?;
        Ok((take(slot)?, Unboxed(variant)))
    }
}

impl<'de, A: de::VariantAccess<'de>> de::VariantAccess<'de> for Unboxed<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, A::Error> {
        let mut slot = None;
        self.0.newtype_variant_seed(SlotSeed {
            inner: seed,
            slot: &mut slot,
        })?;
        take(slot)
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        through_slot!(visitor, |v| self.0.tuple_variant(len, v))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        through_slot!(visitor, |v| self.0.struct_variant(fields, v))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::*;

    #[derive(Debug, PartialEq, Deserialize)]
    enum Shape {
        Unit,
        New(String),
        Tuple(u8, String),
        Struct { name: String },
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Wrapper(u8);

    /// Reads `T` from JSON-like values through an erased deserializer and `Unboxed`.
    fn read<'de, T: Deserialize<'de>>(
        d: impl de::Deserializer<'de, Error = de::value::Error>,
    ) -> Result<T, erased_serde::Error> {
        let mut erased = <dyn erased_serde::Deserializer>::erase(d);
        let erased: &mut dyn erased_serde::Deserializer<'de> = &mut erased;
        T::deserialize(Unboxed(erased))
    }

    #[test]
    fn every_shape_reads_back_through_the_slots() {
        use serde::de::value::{
            MapDeserializer, SeqDeserializer, StrDeserializer, StringDeserializer,
        };
        let s: String = read(StringDeserializer::new("hi".to_owned())).unwrap();
        assert_eq!(s, "hi");
        let v: (u8, u16, u32) = read(SeqDeserializer::new([1u8, 2, 3].into_iter())).unwrap();
        assert_eq!(v, (1, 2, 3));
        let m: BTreeMap<String, i64> =
            read(MapDeserializer::new([("a", 1i64), ("b", 2)].into_iter())).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m["b"], 2);
        let unit: Shape = read(StrDeserializer::new("Unit")).unwrap();
        assert_eq!(unit, Shape::Unit);
        let w: Wrapper = read(SeqDeserializer::new([7u8].into_iter())).unwrap();
        assert_eq!(w, Wrapper(7));
        assert!(read::<Shape>(StrDeserializer::new("Nope")).is_err());
        assert!(read::<String>(SeqDeserializer::new([1u8].into_iter())).is_err());
        // Data-carrying variants are read through the Hessian decoder's enum access in
        // rubbo-serialization's tests; here the slots only need to type-check.
        let _ = (Shape::New(String::new()), Shape::Tuple(0, String::new()));
        let _ = Shape::Struct {
            name: String::new(),
        };
    }
}
