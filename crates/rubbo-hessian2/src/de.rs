//! serde `Deserializer` over a [`Decoder`]: typed decoding of Hessian values.

use std::borrow::Cow;

use serde::de::{
    self, DeserializeSeed, EnumAccess, IntoDeserializer, MapAccess, SeqAccess, VariantAccess,
    Visitor,
};

use crate::decoder::{Decoder, Fields};
use crate::error::{Error, Result};
use crate::markers;
use crate::tags::{self, Kind};

impl<'de> Decoder<'de> {
    /// Follows a back-reference for typed decoding: re-reads the referenced
    /// container in place. `cyclic` is what to do when it is still being decoded.
    fn follow<R>(
        &mut self,
        idx: u32,
        at: usize,
        f: impl FnOnce(&mut Self) -> Result<R>,
    ) -> Result<R> {
        if self.active.contains(&idx) {
            return Err(Error::Message {
                msg: format!(
                    "cyclic reference to container {idx} cannot be decoded into this type"
                ),
                offset: Some(at),
            });
        }
        let target = self.refs.get(idx as usize).ok_or(Error::InvalidRef {
            offset: at,
            kind: "object",
            index: i64::from(idx),
        })?;
        self.enter()?;
        let back = self.position();
        let saved_next = self.replay_next;
        self.seek(target);
        self.replay += 1;
        self.replay_next = idx;
        let r = f(self);
        self.replay -= 1;
        self.replay_next = saved_next;
        self.seek(back);
        self.leave();
        r
    }

    /// Reads the value head for typed decoding: returns the tag (consumed) and
    /// its offset; back-references are returned as `Kind::Ref` with the tag unconsumed.
    #[inline]
    fn head(&mut self) -> Result<(u8, usize)> {
        let tag = self.prelude("value")?;
        let at = self.position();
        self.seek(at + 1);
        Ok((tag, at))
    }

    fn any<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        // Kept small: this frame is on the stack once per nesting level.
        let (tag, at) = self.head()?;
        match tags::kind(tag) {
            Kind::List => self.list(tag, at, visitor),
            Kind::Map => self.map(tag, at, visitor),
            Kind::Object => self.object_any(tag, at, visitor),
            Kind::Ref => self.ref_any(at, visitor),
            _ => self.scalar(tag, at, visitor),
        }
    }

    #[inline(never)]
    fn object_any<V: Visitor<'de>>(&mut self, tag: u8, at: usize, visitor: V) -> Result<V::Value> {
        let idx = self.object_head(tag, at)?;
        self.object(idx, at, visitor)
    }

    #[inline(never)]
    fn ref_any<V: Visitor<'de>>(&mut self, at: usize, visitor: V) -> Result<V::Value> {
        let idx = self.ref_index()?;
        self.follow(idx, at, |d| d.any(visitor))
    }

    #[inline(never)]
    fn scalar<V: Visitor<'de>>(&mut self, tag: u8, at: usize, visitor: V) -> Result<V::Value> {
        match tags::kind(tag) {
            Kind::Null => visitor.visit_unit(),
            Kind::Bool => visitor.visit_bool(tag == tags::TRUE),
            Kind::Int => visitor.visit_i32(self.int_body(tag)?),
            Kind::Long => visitor.visit_i64(self.long_body(tag)?),
            Kind::Double => visitor.visit_f64(self.double_body(tag)?),
            Kind::Date => visitor.visit_i64(self.date_body(tag)?),
            Kind::String => match self.string_body(tag)? {
                Cow::Borrowed(s) => visitor.visit_borrowed_str(s),
                Cow::Owned(s) => visitor.visit_string(s),
            },
            Kind::Binary => match self.binary_body(tag)? {
                Cow::Borrowed(b) => visitor.visit_borrowed_bytes(b),
                Cow::Owned(b) => visitor.visit_byte_buf(b),
            },
            _ => Err(self.unexpected(at, tag, "value")),
        }
    }

    fn open(&mut self, at: usize) -> Result<()> {
        let idx = self.register(at);
        self.active.push(idx);
        self.enter()
    }

    fn close(&mut self) {
        self.active.pop();
        self.leave();
    }

    fn list<V: Visitor<'de>>(&mut self, tag: u8, at: usize, visitor: V) -> Result<V::Value> {
        self.open(at)?;
        let head = self.list_head(tag)?;
        let mut access = ListAccess {
            de: self,
            left: head.len,
            done: false,
        };
        let r = visitor.visit_seq(&mut access);
        let r = match r {
            Ok(v) => access.finish().map(|()| v),
            Err(e) => Err(e),
        };
        self.close();
        r
    }

    fn map<V: Visitor<'de>>(&mut self, tag: u8, at: usize, visitor: V) -> Result<V::Value> {
        self.open(at)?;
        self.map_head(tag)?;
        let mut access = HMapAccess {
            de: self,
            done: false,
        };
        let r = visitor.visit_map(&mut access);
        let r = match r {
            Ok(v) => access.finish().map(|()| v),
            Err(e) => Err(e),
        };
        self.close();
        r
    }

    fn object<V: Visitor<'de>>(&mut self, class: usize, at: usize, visitor: V) -> Result<V::Value> {
        self.open(at)?;
        let len = self.class_len(class);
        let fields = self.fields_of(class);
        let mut access = ObjectAccess {
            de: self,
            fields,
            len,
            next: 0,
            value_pending: false,
        };
        let r = visitor.visit_map(&mut access);
        let r = match r {
            Ok(v) => access.finish().map(|()| v),
            Err(e) => Err(e),
        };
        self.close();
        r
    }

    /// Reads the constant name of an enum written as an object with a `name`
    /// field (hessian-lite's enum form); the instance tag was consumed.
    fn enum_object_name(&mut self, class: usize, at: usize) -> Result<Cow<'de, str>> {
        self.register(at);
        self.enter()?;
        let mut name = None;
        for i in 0..self.class_len(class) {
            if name.is_none() && self.field_name(class, i) == "name" {
                name = Some(self.read_str()?);
            } else {
                self.skip_value()?;
            }
        }
        self.leave();
        name.ok_or_else(|| Error::Message {
            msg: format!(
                "enum object of class {} has no `name` field",
                self.class_name(class)
            ),
            offset: Some(at),
        })
    }

    fn enum_<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        let (tag, at) = self.head()?;
        match tags::kind(tag) {
            Kind::String => match self.string_body(tag)? {
                Cow::Borrowed(s) => visitor.visit_enum(de::value::BorrowedStrDeserializer::new(s)),
                Cow::Owned(s) => visitor.visit_enum(s.into_deserializer()),
            },
            Kind::Int => {
                let v = self.int_body(tag)?;
                visitor.visit_enum(UnitIndex(v))
            }
            Kind::Object => {
                let class = self.object_head(tag, at)?;
                match self.enum_object_name(class, at)? {
                    Cow::Borrowed(s) => {
                        visitor.visit_enum(de::value::BorrowedStrDeserializer::new(s))
                    }
                    Cow::Owned(s) => visitor.visit_enum(s.into_deserializer()),
                }
            }
            Kind::Map => {
                self.open(at)?;
                self.map_head(tag)?;
                let r = visitor.visit_enum(MapEnum { de: self });
                let r = match r {
                    Ok(v) => {
                        if self.at_end_marker()? {
                            Ok(v)
                        } else {
                            Err(Error::Message {
                                msg: "enum map has more than one entry".into(),
                                offset: Some(at),
                            })
                        }
                    }
                    Err(e) => Err(e),
                };
                self.close();
                r
            }
            Kind::Ref => {
                let idx = self.ref_index()?;
                self.follow(idx, at, |d| d.enum_(visitor))
            }
            _ => Err(self.unexpected(at, tag, "enum (object, string or map)")),
        }
    }
}

/// An enum written as a bare int: its variant index.
struct UnitIndex(i32);

impl<'de> EnumAccess<'de> for UnitIndex {
    type Error = Error;
    type Variant = UnitOnly;
    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, UnitOnly)> {
        let idx = u32::try_from(self.0).map_err(|_| Error::Message {
            msg: format!("invalid enum index {}", self.0),
            offset: None,
        })?;
        let d: de::value::U32Deserializer<Error> = idx.into_deserializer();
        Ok((seed.deserialize(d)?, UnitOnly))
    }
}

struct UnitOnly;

impl<'de> VariantAccess<'de> for UnitOnly {
    type Error = Error;
    fn unit_variant(self) -> Result<()> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _: T) -> Result<T::Value> {
        Err(de::Error::custom("expected a unit variant"))
    }
    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value> {
        Err(de::Error::custom("expected a unit variant"))
    }
    fn struct_variant<V: Visitor<'de>>(self, _: &'static [&'static str], _: V) -> Result<V::Value> {
        Err(de::Error::custom("expected a unit variant"))
    }
}

struct MapEnum<'a, 'de> {
    de: &'a mut Decoder<'de>,
}

impl<'de> EnumAccess<'de> for MapEnum<'_, 'de> {
    type Error = Error;
    type Variant = Self;
    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self)> {
        let v = seed.deserialize(&mut *self.de)?;
        Ok((v, self))
    }
}

impl<'de> VariantAccess<'de> for MapEnum<'_, 'de> {
    type Error = Error;
    fn unit_variant(self) -> Result<()> {
        self.de.skip_value()
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value> {
        seed.deserialize(&mut *self.de)
    }
    fn tuple_variant<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value> {
        de::Deserializer::deserialize_seq(&mut *self.de, visitor)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.de.any(visitor)
    }
}

struct ListAccess<'a, 'de> {
    de: &'a mut Decoder<'de>,
    left: Option<usize>,
    done: bool,
}

impl ListAccess<'_, '_> {
    fn finish(&mut self) -> Result<()> {
        match self.left {
            Some(n) => {
                for _ in 0..n {
                    self.de.skip_value()?;
                }
                self.left = Some(0);
            }
            None => {
                while !self.done && !self.de.at_end_marker()? {
                    self.de.skip_value()?;
                }
                self.done = true;
            }
        }
        Ok(())
    }
}

impl<'de> SeqAccess<'de> for ListAccess<'_, 'de> {
    type Error = Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        match &mut self.left {
            Some(0) => return Ok(None),
            Some(n) => *n -= 1,
            None => {
                if self.done || self.de.at_end_marker()? {
                    self.done = true;
                    return Ok(None);
                }
            }
        }
        seed.deserialize(&mut *self.de).map(Some)
    }
    fn size_hint(&self) -> Option<usize> {
        self.left.map(|n| n.min(4096))
    }
}

struct HMapAccess<'a, 'de> {
    de: &'a mut Decoder<'de>,
    done: bool,
}

impl HMapAccess<'_, '_> {
    fn finish(&mut self) -> Result<()> {
        while !self.done && !self.de.at_end_marker()? {
            self.de.skip_value()?;
            self.de.skip_value()?;
        }
        self.done = true;
        Ok(())
    }
}

impl<'de> MapAccess<'de> for HMapAccess<'_, 'de> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if self.done || self.de.at_end_marker()? {
            self.done = true;
            return Ok(None);
        }
        seed.deserialize(&mut *self.de).map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        seed.deserialize(&mut *self.de)
    }
}

struct ObjectAccess<'a, 'de> {
    de: &'a mut Decoder<'de>,
    fields: Fields,
    len: usize,
    next: usize,
    value_pending: bool,
}

impl ObjectAccess<'_, '_> {
    fn finish(&mut self) -> Result<()> {
        if self.value_pending {
            self.de.skip_value()?;
            self.value_pending = false;
        }
        while self.next < self.len {
            self.de.skip_value()?;
            self.next += 1;
        }
        Ok(())
    }
}

impl<'de> MapAccess<'de> for ObjectAccess<'_, 'de> {
    type Error = Error;
    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if self.value_pending {
            self.de.skip_value()?;
            self.value_pending = false;
        }
        if self.next >= self.len {
            return Ok(None);
        }
        let name = self.de.name_in(self.fields, self.next);
        self.next += 1;
        self.value_pending = true;
        let d: de::value::StrDeserializer<'_, Error> = name.into_deserializer();
        seed.deserialize(d).map(Some)
    }
    #[inline]
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        self.value_pending = false;
        seed.deserialize(&mut *self.de)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.len - self.next)
    }
}

impl<'de> de::Deserializer<'de> for &mut Decoder<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.any(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit_struct map struct tuple_struct tuple identifier
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.any(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let tag = self.prelude("value")?;
        if tag == tags::NULL {
            self.seek(self.position() + 1);
            return visitor.visit_none();
        }
        if tag == tags::REF {
            // A back-reference to a container still being decoded (a cycle,
            // e.g. a Throwable's `cause` pointing to itself) decodes as None.
            let at = self.position();
            self.seek(at + 1);
            let idx = self.ref_index()?;
            if self.active.contains(&idx) {
                return visitor.visit_none();
            }
            return self.follow(idx, at, |d| visitor.visit_some(d));
        }
        visitor.visit_some(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let tag = self.prelude("list")?;
        if tags::kind(tag) == Kind::Binary {
            // Java byte[] into a Rust sequence of bytes.
            self.seek(self.position() + 1);
            let b = self.binary_body(tag)?;
            return visitor.visit_seq(de::value::SeqDeserializer::new(b.iter().copied()));
        }
        self.any(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if name == markers::VALUE {
            let v = self.read_value()?;
            return markers::stash_value(v, visitor);
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.enum_(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.skip_value()?;
        visitor.visit_unit()
    }
}

impl<'de> Decoder<'de> {
    /// Reads `count` top-level values as one serde value: a tuple, a `Vec`,
    /// or a struct (fields in order), the inverse of
    /// [`Encoder::write_args`](crate::Encoder::write_args). Exactly `count`
    /// values are consumed, even if `T` takes fewer.
    ///
    /// ```
    /// use rubbo_hessian2::{Decoder, Encoder};
    /// let mut buf = Vec::new();
    /// Encoder::new(&mut buf).write_args(&("a", 7i32))?;
    /// let (s, n): (String, i32) = Decoder::new(&buf).read_args(2)?;
    /// assert_eq!((s.as_str(), n), ("a", 7));
    /// # Ok::<(), rubbo_hessian2::Error>(())
    /// ```
    pub fn read_args<T: de::Deserialize<'de>>(&mut self, count: usize) -> Result<T> {
        let start = self.position();
        let mut args = ArgsDeserializer {
            de: self,
            left: count,
        };
        let v = T::deserialize(&mut args).map_err(|e| e.with_offset(start))?;
        for _ in 0..args.left {
            args.de.skip_value()?;
        }
        Ok(v)
    }
}

struct ArgsDeserializer<'a, 'de> {
    de: &'a mut Decoder<'de>,
    left: usize,
}

impl<'de> SeqAccess<'de> for &mut ArgsDeserializer<'_, 'de> {
    type Error = Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.de).map(Some)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

impl<'de> de::Deserializer<'de> for &mut ArgsDeserializer<'_, 'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_seq(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.left == 0 {
            visitor.visit_unit()
        } else {
            visitor.visit_seq(self)
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit_struct newtype_struct seq tuple tuple_struct
        map struct enum identifier ignored_any
    }
}
