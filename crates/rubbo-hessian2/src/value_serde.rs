//! `Value` <-> serde: `Serialize`/`Deserialize` for `Value`, and the
//! `to_value` / `from_value` conversions.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{self, Serialize, SerializeMap, SerializeSeq, SerializeTupleStruct};
use serde::{Deserialize, Deserializer, Serializer};

use crate::error::{Error, Result};
use crate::markers;
use crate::value::{List, Map, Object, Value};

// ---- Value: Serialize ----------------------------------------------------------

struct Names<'a>(&'a [(Arc<str>, Value)]);

impl Serialize for Names<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (n, _) in self.0 {
            seq.serialize_element(n.as_ref())?;
        }
        seq.end()
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(v) => s.serialize_i32(*v),
            Value::Long(v) => s.serialize_i64(*v),
            Value::Double(v) => s.serialize_f64(*v),
            Value::String(v) => s.serialize_str(v),
            Value::Binary(v) => s.serialize_bytes(v),
            Value::Date(v) => s.serialize_newtype_struct(markers::DATE, v),
            Value::Ref(v) => s.serialize_newtype_struct(markers::REF, v),
            Value::List(List {
                type_name: None,
                items,
            }) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(i)?;
                }
                seq.end()
            }
            Value::List(List {
                type_name: Some(t),
                items,
            }) => {
                let mut ts = s.serialize_tuple_struct(markers::TYPED_LIST, items.len() + 1)?;
                ts.serialize_field(t.as_ref())?;
                for i in items {
                    ts.serialize_field(i)?;
                }
                ts.end()
            }
            Value::Map(Map {
                type_name: None,
                entries,
            }) => {
                let mut m = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
            Value::Map(Map {
                type_name: Some(t),
                entries,
            }) => {
                let mut ts = s.serialize_tuple_struct(markers::TYPED_MAP, entries.len() * 2 + 1)?;
                ts.serialize_field(t.as_ref())?;
                for (k, v) in entries {
                    ts.serialize_field(k)?;
                    ts.serialize_field(v)?;
                }
                ts.end()
            }
            Value::Object(o) => {
                let mut ts = s.serialize_tuple_struct(markers::OBJECT, o.fields.len() + 2)?;
                ts.serialize_field(o.class.as_ref())?;
                ts.serialize_field(&Names(&o.fields))?;
                for (_, v) in &o.fields {
                    ts.serialize_field(v)?;
                }
                ts.end()
            }
        }
    }
}

// ---- Value: Deserialize --------------------------------------------------------

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i32<E>(self, v: i32) -> Result<Value, E> {
        Ok(Value::Int(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(i32::try_from(v).map_or(Value::Long(v), Value::Int))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(match i32::try_from(v) {
            Ok(i) => Value::Int(i),
            Err(_) => i64::try_from(v).map_or(Value::Double(v as f64), Value::Long),
        })
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Double(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Value, E> {
        Ok(Value::Binary(v.to_vec()))
    }
    fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Value, E> {
        Ok(Value::Binary(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        match markers::take_stashed() {
            Some(v) => Ok(v),
            None => d.deserialize_any(self),
        }
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(a.size_hint().unwrap_or(0).min(1024));
        while let Some(v) = a.next_element()? {
            items.push(v);
        }
        Ok(Value::List(List {
            type_name: None,
            items,
        }))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        let mut entries = Vec::new();
        while let Some((k, v)) = a.next_entry()? {
            entries.push((k, v));
        }
        Ok(Value::Map(Map {
            type_name: None,
            entries,
        }))
    }
}

impl<'de> Deserialize<'de> for Value {
    /// Through this crate's deserializers the value is read losslessly
    /// (typed lists, class names, references); other deserializers give the
    /// natural self-describing mapping.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        d.deserialize_newtype_struct(markers::VALUE, ValueVisitor)
    }
}

// ---- to_value ------------------------------------------------------------------

/// Converts any serde type into a [`Value`], with the same mapping as the
/// Hessian serializer (structs become objects of their serde name, unit enum
/// variants become hessian-lite enum objects...).
///
/// ```
/// use rubbo_hessian2::{to_value, Value};
/// #[derive(serde::Serialize)]
/// #[serde(rename = "org.rubbo.interop.Address")]
/// struct Address { city: String, zip: i32 }
///
/// let v = to_value(&Address { city: "Hangzhou".into(), zip: 310000 })?;
/// assert_eq!(v.class_name(), Some("org.rubbo.interop.Address"));
/// assert_eq!(v.field("zip"), Some(&Value::Int(310000)));
/// # Ok::<(), rubbo_hessian2::Error>(())
/// ```
pub fn to_value<T: Serialize + ?Sized>(value: &T) -> Result<Value> {
    value.serialize(ValueSerializer)
}

/// Converts a [`Value`] into any serde type (objects fill structs by field
/// name, enum objects select variants...).
///
/// Back-references ([`Value::Ref`]) cannot be followed without their stream:
/// they decode as `None` where an `Option` is expected and are an error elsewhere.
///
/// ```
/// use rubbo_hessian2::{from_value, Object, Value};
/// #[derive(serde::Deserialize, Debug, PartialEq)]
/// struct Address { city: String, zip: i32 }
///
/// let v = Value::Object(Object::new("org.rubbo.interop.Address")
///     .with_field("city", "Hangzhou").with_field("zip", 310000));
/// let a: Address = from_value(v)?;
/// assert_eq!(a, Address { city: "Hangzhou".into(), zip: 310000 });
/// # Ok::<(), rubbo_hessian2::Error>(())
/// ```
pub fn from_value<T: de::DeserializeOwned>(value: Value) -> Result<T> {
    T::deserialize(ValueDeserializer(value))
}

/// A serializer that builds a [`Value`] (see [`to_value`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct ValueSerializer;

fn float_via_decimal(v: f32) -> f64 {
    if v.is_finite() {
        v.to_string().parse().unwrap_or(f64::from(v))
    } else {
        f64::from(v)
    }
}

pub(crate) fn f32_to_f64(v: f32) -> f64 {
    float_via_decimal(v)
}

fn enum_object(class: &'static str, variant: &'static str) -> Value {
    Value::Object(Object::new(class).with_field("name", variant))
}

impl Serializer for ValueSerializer {
    type Ok = Value;
    type Error = Error;
    type SerializeSeq = SeqBuilder;
    type SerializeTuple = SeqBuilder;
    type SerializeTupleStruct = TupleStructBuilder;
    type SerializeTupleVariant = VariantBuilder<SeqBuilder>;
    type SerializeMap = MapBuilder;
    type SerializeStruct = ObjectBuilder;
    type SerializeStructVariant = VariantBuilder<ObjectBuilder>;

    fn serialize_bool(self, v: bool) -> Result<Value> {
        Ok(Value::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Value> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<Value> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<Value> {
        Ok(Value::Int(v))
    }
    fn serialize_i64(self, v: i64) -> Result<Value> {
        Ok(Value::Long(v))
    }
    fn serialize_u8(self, v: u8) -> Result<Value> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<Value> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<Value> {
        Ok(i32::try_from(v).map_or(Value::Long(i64::from(v)), Value::Int))
    }
    fn serialize_u64(self, v: u64) -> Result<Value> {
        i64::try_from(v)
            .map(Value::Long)
            .map_err(|_| Error::Unsupported("u64 larger than i64::MAX"))
    }
    fn serialize_f32(self, v: f32) -> Result<Value> {
        Ok(Value::Double(float_via_decimal(v)))
    }
    fn serialize_f64(self, v: f64) -> Result<Value> {
        Ok(Value::Double(v))
    }
    fn serialize_char(self, v: char) -> Result<Value> {
        Ok(Value::String(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Value> {
        Ok(Value::String(v.to_owned()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value> {
        Ok(Value::Binary(v.to_vec()))
    }
    fn serialize_none(self) -> Result<Value> {
        Ok(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<Value> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value> {
        Ok(Value::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Value> {
        Ok(Value::Null)
    }
    fn serialize_unit_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<Value> {
        Ok(enum_object(name, variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<Value> {
        let inner = v.serialize(self)?;
        match name {
            markers::DATE => inner
                .as_i64()
                .map(Value::Date)
                .ok_or(Error::Unsupported("date marker without millis")),
            markers::REF => inner
                .as_i64()
                .and_then(|i| u32::try_from(i).ok())
                .map(Value::Ref)
                .ok_or(Error::Unsupported("ref marker without index")),
            _ => Ok(inner),
        }
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<Value> {
        Ok(Value::Map(Map {
            type_name: None,
            entries: vec![(Value::from(variant), v.serialize(self)?)],
        }))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqBuilder> {
        Ok(SeqBuilder(Vec::with_capacity(len.unwrap_or(0).min(4096))))
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqBuilder> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, name: &'static str, len: usize) -> Result<TupleStructBuilder> {
        Ok(TupleStructBuilder {
            name,
            items: Vec::with_capacity(len.min(4096)),
        })
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<VariantBuilder<SeqBuilder>> {
        Ok(VariantBuilder {
            variant,
            inner: self.serialize_seq(Some(len))?,
        })
    }
    fn serialize_map(self, _: Option<usize>) -> Result<MapBuilder> {
        Ok(MapBuilder {
            entries: Vec::new(),
            key: None,
        })
    }
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<ObjectBuilder> {
        Ok(ObjectBuilder(Object {
            class: Arc::from(name),
            fields: Vec::with_capacity(len),
        }))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<VariantBuilder<ObjectBuilder>> {
        Ok(VariantBuilder {
            variant,
            inner: self.serialize_struct(variant, len)?,
        })
    }
}

#[doc(hidden)]
#[derive(Debug)]
pub struct SeqBuilder(Vec<Value>);

impl ser::SerializeSeq for SeqBuilder {
    type Ok = Value;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        self.0.push(to_value(v)?);
        Ok(())
    }
    fn end(self) -> Result<Value> {
        Ok(Value::List(List {
            type_name: None,
            items: self.0,
        }))
    }
}

impl ser::SerializeTuple for SeqBuilder {
    type Ok = Value;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        ser::SerializeSeq::serialize_element(self, v)
    }
    fn end(self) -> Result<Value> {
        ser::SerializeSeq::end(self)
    }
}

#[doc(hidden)]
#[derive(Debug)]
pub struct TupleStructBuilder {
    name: &'static str,
    items: Vec<Value>,
}

fn take_string(v: Option<Value>, what: &'static str) -> Result<Arc<str>> {
    match v {
        Some(Value::String(s)) => Ok(Arc::from(s)),
        _ => Err(Error::Unsupported(what)),
    }
}

impl ser::SerializeTupleStruct for TupleStructBuilder {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        self.items.push(to_value(v)?);
        Ok(())
    }
    fn end(self) -> Result<Value> {
        let mut it = self.items.into_iter();
        match self.name {
            markers::TYPED_LIST => {
                let t = take_string(it.next(), "typed list without type name")?;
                Ok(Value::List(List {
                    type_name: Some(t),
                    items: it.collect(),
                }))
            }
            markers::TYPED_MAP => {
                let t = take_string(it.next(), "typed map without type name")?;
                let mut entries = Vec::new();
                while let Some(k) = it.next() {
                    entries.push((k, it.next().unwrap_or_default()));
                }
                Ok(Value::Map(Map {
                    type_name: Some(t),
                    entries,
                }))
            }
            markers::OBJECT => {
                let class = take_string(it.next(), "object without class name")?;
                let names = match it.next() {
                    Some(Value::List(l)) => l.items,
                    _ => return Err(Error::Unsupported("object without field names")),
                };
                let mut fields = Vec::with_capacity(names.len());
                for n in names {
                    let n = take_string(Some(n), "object field name is not a string")?;
                    fields.push((n, it.next().unwrap_or_default()));
                }
                Ok(Value::Object(Object { class, fields }))
            }
            _ => Ok(Value::List(List {
                type_name: None,
                items: it.collect(),
            })),
        }
    }
}

#[doc(hidden)]
#[derive(Debug)]
pub struct VariantBuilder<B> {
    variant: &'static str,
    inner: B,
}

impl ser::SerializeTupleVariant for VariantBuilder<SeqBuilder> {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        ser::SerializeSeq::serialize_element(&mut self.inner, v)
    }
    fn end(self) -> Result<Value> {
        Ok(Value::Map(Map {
            type_name: None,
            entries: vec![(
                Value::from(self.variant),
                ser::SerializeSeq::end(self.inner)?,
            )],
        }))
    }
}

impl ser::SerializeStructVariant for VariantBuilder<ObjectBuilder> {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, k: &'static str, v: &T) -> Result<()> {
        ser::SerializeStruct::serialize_field(&mut self.inner, k, v)
    }
    fn end(self) -> Result<Value> {
        let fields = self.inner.0.fields;
        Ok(Value::Map(Map {
            type_name: None,
            entries: vec![(
                Value::from(self.variant),
                Value::Map(Map {
                    type_name: None,
                    entries: fields
                        .into_iter()
                        .map(|(k, v)| (Value::String(k.to_string()), v))
                        .collect(),
                }),
            )],
        }))
    }
}

#[doc(hidden)]
#[derive(Debug)]
pub struct MapBuilder {
    entries: Vec<(Value, Value)>,
    key: Option<Value>,
}

impl ser::SerializeMap for MapBuilder {
    type Ok = Value;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<()> {
        self.key = Some(to_value(k)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        let k = self.key.take().unwrap_or_default();
        self.entries.push((k, to_value(v)?));
        Ok(())
    }
    fn end(self) -> Result<Value> {
        Ok(Value::Map(Map {
            type_name: None,
            entries: self.entries,
        }))
    }
}

#[doc(hidden)]
#[derive(Debug)]
pub struct ObjectBuilder(Object);

impl ser::SerializeStruct for ObjectBuilder {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, k: &'static str, v: &T) -> Result<()> {
        self.0.fields.push((Arc::from(k), to_value(v)?));
        Ok(())
    }
    fn skip_field(&mut self, k: &'static str) -> Result<()> {
        self.0.fields.push((Arc::from(k), Value::Null));
        Ok(())
    }
    fn end(self) -> Result<Value> {
        Ok(Value::Object(self.0))
    }
}

// ---- from_value ----------------------------------------------------------------

/// A deserializer that reads from an owned [`Value`] (see [`from_value`]).
#[derive(Debug)]
pub struct ValueDeserializer(pub Value);

impl<'de> IntoDeserializer<'de, Error> for Value {
    type Deserializer = ValueDeserializer;
    fn into_deserializer(self) -> ValueDeserializer {
        ValueDeserializer(self)
    }
}

struct ObjectFields(std::vec::IntoIter<(Arc<str>, Value)>, Option<Value>);

impl<'de> MapAccess<'de> for ObjectFields {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        match self.0.next() {
            Some((k, v)) => {
                self.1 = Some(v);
                let d: de::value::StrDeserializer<'_, Error> = k.as_ref().into_deserializer();
                seed.deserialize(d).map(Some)
            }
            None => Ok(None),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        seed.deserialize(ValueDeserializer(self.1.take().unwrap_or_default()))
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct ValueEnum(Value, Value);

impl<'de> de::EnumAccess<'de> for ValueEnum {
    type Error = Error;
    type Variant = ValueDeserializer;
    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, ValueDeserializer)> {
        Ok((
            seed.deserialize(ValueDeserializer(self.0))?,
            ValueDeserializer(self.1),
        ))
    }
}

impl<'de> de::VariantAccess<'de> for ValueDeserializer {
    type Error = Error;
    fn unit_variant(self) -> Result<()> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value> {
        seed.deserialize(self)
    }
    fn tuple_variant<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value> {
        de::Deserializer::deserialize_seq(self, visitor)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        de::Deserializer::deserialize_any(self, visitor)
    }
}

impl<'de> de::Deserializer<'de> for ValueDeserializer {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Int(v) => visitor.visit_i32(v),
            Value::Long(v) | Value::Date(v) => visitor.visit_i64(v),
            Value::Double(v) => visitor.visit_f64(v),
            Value::String(v) => visitor.visit_string(v),
            Value::Binary(v) => visitor.visit_byte_buf(v),
            Value::List(l) => {
                visitor.visit_seq(de::value::SeqDeserializer::new(l.items.into_iter()))
            }
            Value::Map(m) => {
                visitor.visit_map(de::value::MapDeserializer::new(m.entries.into_iter()))
            }
            Value::Object(o) => visitor.visit_map(ObjectFields(o.fields.into_iter(), None)),
            Value::Ref(i) => Err(Error::Message {
                msg: format!("back-reference {i} cannot be resolved outside its stream"),
                offset: None,
            }),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct map struct tuple_struct tuple identifier ignored_any
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.0 {
            Value::Null | Value::Ref(_) => visitor.visit_none(),
            v => visitor.visit_some(ValueDeserializer(v)),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.0 {
            Value::Binary(b) => visitor.visit_seq(de::value::SeqDeserializer::new(b.into_iter())),
            v => ValueDeserializer(v).deserialize_any(visitor),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if name == markers::VALUE {
            return markers::stash_value(self.0, visitor);
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        match self.0 {
            Value::String(s) => visitor.visit_enum(s.into_deserializer()),
            Value::Int(i) => visitor.visit_enum(ValueEnum(Value::Long(i64::from(i)), Value::Null)),
            Value::Object(o) => match o.field("name") {
                Some(Value::String(s)) => visitor.visit_enum(s.clone().into_deserializer()),
                _ => Err(Error::Message {
                    msg: format!("enum object of class {} has no `name` field", o.class),
                    offset: None,
                }),
            },
            Value::Map(m) if m.entries.len() == 1 => {
                let mut it = m.entries.into_iter();
                let (k, v) = it.next().unwrap_or_default();
                visitor.visit_enum(ValueEnum(k, v))
            }
            other => Err(Error::Message {
                msg: format!("expected an enum, found {}", other.kind_name()),
                offset: None,
            }),
        }
    }
}
