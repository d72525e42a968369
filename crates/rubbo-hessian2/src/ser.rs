//! serde `Serializer` over an [`Encoder`].

use std::sync::Arc;

use serde::ser::{self, Impossible, Serialize, Serializer};

use crate::encoder::{Encoder, Name, Output};
use crate::error::{Error, Result};
use crate::markers;
use crate::value::Value;
use crate::value_serde::{ValueSerializer, f32_to_f64};

/// Serializes `v` as one value, writing a class definition first when `v` is
/// a struct whose class this stream has not defined yet.
///
/// A struct's field names are only known once its fields are serialized, but
/// Hessian needs them before the first value. So the first attempt stops
/// (before writing anything) with `NeedClassDef`, the names are collected by a
/// dry run, the definition is written, and the value is serialized again.
#[inline]
pub(crate) fn serialize_child<B: Output, T: Serialize + ?Sized>(
    enc: &mut Encoder<B>,
    v: &T,
) -> Result<()> {
    match v.serialize(&mut *enc) {
        Err(e @ (Error::NeedClassDef | Error::ClassMismatch)) => define_and_retry(enc, v, e),
        r => r,
    }
}

/// The slow path of [`serialize_child`]: write the class definition the
/// struct needs, then serialize it again.
#[cold]
#[inline(never)]
fn define_and_retry<B: Output, T: Serialize + ?Sized>(
    enc: &mut Encoder<B>,
    v: &T,
    signal: Error,
) -> Result<()> {
    match signal {
        Error::NeedClassDef => {
            let start = enc.class_fields.len();
            let name = collect_fields(enc, v, start)?;
            enc.remember_struct(name, start);
            enc.define_class(Name::Static(name), start);
            retry(enc, v)
        }
        Error::ClassMismatch => {
            // Another struct of the same serde name with other fields: undo what
            // was written, then use (or write) the definition of these fields.
            let Some(snap) = enc.mismatch.take() else {
                return Err(Error::Unsupported("class definition mismatch"));
            };
            enc.restore(snap);
            let start = enc.class_fields.len();
            let name = collect_fields(enc, v, start)?;
            let fields = &enc.class_fields[start..];
            let found = enc.classes.iter().position(|c| {
                c.name.as_str() == name
                    && c.len == fields.len()
                    && enc.class_fields[c.start..c.start + c.len]
                        .iter()
                        .zip(fields)
                        .all(|(a, b)| a.as_str() == b.as_str())
            });
            let idx = match found {
                Some(i) => {
                    enc.class_fields.truncate(start);
                    i
                }
                None => enc.define_class(Name::Static(name), start),
            };
            enc.forced_class = Some(idx);
            retry(enc, v)
        }
        e => Err(e),
    }
}

/// Dry run: pushes the struct's field names onto `class_fields`; returns its name.
fn collect_fields<B: Output, T: Serialize + ?Sized>(
    enc: &mut Encoder<B>,
    v: &T,
    start: usize,
) -> Result<&'static str> {
    let collected = v.serialize(FieldCollector {
        fields: &mut enc.class_fields,
    });
    if collected.is_err() {
        enc.class_fields.truncate(start);
    }
    collected
}

fn retry<B: Output, T: Serialize + ?Sized>(enc: &mut Encoder<B>, v: &T) -> Result<()> {
    match v.serialize(&mut *enc) {
        Err(Error::NeedClassDef | Error::ClassMismatch) => {
            enc.forced_class = None;
            Err(Error::Unsupported(
                "struct serialized differently on a second pass",
            ))
        }
        r => r,
    }
}

impl<'a, B: Output> Serializer for &'a mut Encoder<B> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = SeqSer<'a, B>;
    type SerializeTuple = SeqSer<'a, B>;
    type SerializeTupleStruct = MarkerSer<'a, B>;
    type SerializeTupleVariant = SeqSer<'a, B>;
    type SerializeMap = MapSer<'a, B>;
    type SerializeStruct = StructSer<'a, B>;
    type SerializeStructVariant = StructVariantSer<'a, B>;

    fn serialize_bool(self, v: bool) -> Result<()> {
        self.write_bool(v)
    }
    fn serialize_i8(self, v: i8) -> Result<()> {
        self.write_int(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<()> {
        self.write_int(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<()> {
        self.write_int(v)
    }
    fn serialize_i64(self, v: i64) -> Result<()> {
        self.write_long(v)
    }
    fn serialize_u8(self, v: u8) -> Result<()> {
        self.write_int(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<()> {
        self.write_int(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<()> {
        match i32::try_from(v) {
            Ok(i) => self.write_int(i),
            Err(_) => self.write_long(v.into()),
        }
    }
    fn serialize_u64(self, v: u64) -> Result<()> {
        let v = i64::try_from(v).map_err(|_| Error::Unsupported("u64 larger than i64::MAX"))?;
        self.write_long(v)
    }
    fn serialize_f32(self, v: f32) -> Result<()> {
        self.write_double(f32_to_f64(v))
    }
    fn serialize_f64(self, v: f64) -> Result<()> {
        self.write_double(v)
    }
    fn serialize_char(self, v: char) -> Result<()> {
        self.write_string(v.encode_utf8(&mut [0u8; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<()> {
        self.write_string(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        self.write_binary(v)
    }
    fn serialize_none(self) -> Result<()> {
        self.write_null()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<()> {
        serialize_child(self, v)
    }
    fn serialize_unit(self) -> Result<()> {
        self.write_null()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<()> {
        self.write_null()
    }
    fn serialize_unit_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<()> {
        // hessian-lite's enum form: an object of the enum class with one field
        // `name`; a constant already written in this stream is a back-reference.
        if let Some(&(_, _, r)) = self
            .enum_refs
            .iter()
            .find(|(c, v, _)| std::ptr::eq(*c, name) && std::ptr::eq(*v, variant))
            .or_else(|| {
                self.enum_refs
                    .iter()
                    .find(|(c, v, _)| *c == name && *v == variant)
            })
        {
            return self.write_ref(r);
        }
        let r = self.next_ref_index();
        self.enum_refs.push((name, variant, r));
        let idx = match self.find_class_by_name(name) {
            Some(i)
                if self.classes[i].len == 1
                    && self.class_fields[self.classes[i].start].as_str() == "name" =>
            {
                i
            }
            _ => {
                let start = self.class_fields.len();
                self.class_fields.push(Name::Static("name"));
                self.define_class(Name::Static(name), start)
            }
        };
        self.object_tag(idx);
        self.write_string(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<()> {
        if !name.starts_with('$') {
            return serialize_child(self, v);
        }
        match name {
            markers::DATE => {
                let ms = v
                    .serialize(ValueSerializer)?
                    .as_i64()
                    .ok_or(Error::Unsupported("date without millis"))?;
                self.write_date(ms)
            }
            markers::REF => {
                let i = v
                    .serialize(ValueSerializer)?
                    .as_i64()
                    .and_then(|i| u32::try_from(i).ok())
                    .ok_or(Error::Unsupported("reference without index"))?;
                self.write_ref(i)
            }
            markers::EXCEPTION => {
                let value = v.serialize(ValueSerializer)?;
                crate::java::write_exception_value(self, &value)
            }
            _ => serialize_child(self, v),
        }
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<()> {
        self.map_start(None);
        self.write_string(variant)?;
        serialize_child(self, v)?;
        self.write_end()
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqSer<'a, B>> {
        match len {
            Some(n) => {
                self.list_header(None, n);
                Ok(SeqSer { enc: self, end: 0 })
            }
            None => {
                self.write_list_start()?;
                Ok(SeqSer { enc: self, end: 1 })
            }
        }
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqSer<'a, B>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, name: &'static str, len: usize) -> Result<MarkerSer<'a, B>> {
        let name = if name.starts_with('$') { name } else { "" };
        let kind = match name {
            markers::TYPED_LIST => Marker::TypedList(len.saturating_sub(1)),
            markers::TYPED_MAP => Marker::TypedMap,
            markers::OBJECT => Marker::Object(None),
            _ => {
                self.list_header(None, len);
                Marker::Plain
            }
        };
        Ok(MarkerSer {
            enc: self,
            kind,
            seen: 0,
        })
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<SeqSer<'a, B>> {
        self.map_start(None);
        self.write_string(variant)?;
        self.list_header(None, len);
        Ok(SeqSer { enc: self, end: 2 })
    }
    fn serialize_map(self, _: Option<usize>) -> Result<MapSer<'a, B>> {
        self.map_start(None);
        Ok(MapSer { enc: self })
    }
    fn serialize_struct(self, name: &'static str, _: usize) -> Result<StructSer<'a, B>> {
        let snap = self.snapshot();
        let idx = match self.forced_class.take() {
            Some(i) => i,
            None => match self.find_class_by_name(name) {
                Some(i) => i,
                None => self.define_known_struct(name).ok_or(Error::NeedClassDef)?,
            },
        };
        self.object_tag(idx);
        let c = &self.classes[idx];
        let (start, len) = (c.start, c.len);
        Ok(StructSer {
            enc: self,
            start,
            len,
            cursor: 0,
            snap,
        })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<StructVariantSer<'a, B>> {
        self.map_start(None);
        self.write_string(variant)?;
        self.map_start(None);
        Ok(StructVariantSer { enc: self })
    }
}

/// Lists and tuples; `end` = how many `Z` markers close it.
#[doc(hidden)]
#[derive(Debug)]
pub struct SeqSer<'a, B> {
    enc: &'a mut Encoder<B>,
    end: u8,
}

impl<B: Output> SeqSer<'_, B> {
    fn finish(self) -> Result<()> {
        for _ in 0..self.end {
            self.enc.write_end()?;
        }
        Ok(())
    }
}

impl<B: Output> ser::SerializeSeq for SeqSer<'_, B> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        serialize_child(self.enc, v)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl<B: Output> ser::SerializeTuple for SeqSer<'_, B> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        serialize_child(self.enc, v)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl<B: Output> ser::SerializeTupleVariant for SeqSer<'_, B> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        serialize_child(self.enc, v)
    }
    fn end(self) -> Result<()> {
        // the list is fixed-length; only the enclosing map needs its `Z`
        self.enc.write_end()
    }
}

#[doc(hidden)]
#[derive(Debug)]
pub struct MapSer<'a, B> {
    enc: &'a mut Encoder<B>,
}

impl<B: Output> ser::SerializeMap for MapSer<'_, B> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<()> {
        serialize_child(self.enc, k)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        serialize_child(self.enc, v)
    }
    fn end(self) -> Result<()> {
        self.enc.write_end()
    }
}

#[doc(hidden)]
#[derive(Debug)]
pub struct StructVariantSer<'a, B> {
    enc: &'a mut Encoder<B>,
}

impl<B: Output> ser::SerializeStructVariant for StructVariantSer<'_, B> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, k: &'static str, v: &T) -> Result<()> {
        self.enc.write_string(k)?;
        serialize_child(self.enc, v)
    }
    fn end(self) -> Result<()> {
        self.enc.write_end()?;
        self.enc.write_end()
    }
}

/// A struct whose class definition is known: values in definition order.
#[doc(hidden)]
#[derive(Debug)]
pub struct StructSer<'a, B> {
    enc: &'a mut Encoder<B>,
    start: usize,
    len: usize,
    cursor: usize,
    snap: crate::encoder::Snapshot,
}

impl<B: Output> StructSer<'_, B> {
    #[inline]
    fn expect(&mut self, key: &'static str) -> Result<()> {
        let ok = self.cursor < self.len
            && match &self.enc.class_fields[self.start + self.cursor] {
                Name::Static(s) => std::ptr::eq(*s, key) || *s == key,
                Name::Shared(s) => s.as_ref() == key,
            };
        if !ok {
            self.enc.mismatch = Some(self.snap);
            return Err(Error::ClassMismatch);
        }
        self.cursor += 1;
        Ok(())
    }
}

impl<B: Output> ser::SerializeStruct for StructSer<'_, B> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, k: &'static str, v: &T) -> Result<()> {
        self.expect(k)?;
        serialize_child(self.enc, v)
    }
    fn skip_field(&mut self, k: &'static str) -> Result<()> {
        self.expect(k)?;
        self.enc.write_null()
    }
    fn end(self) -> Result<()> {
        if self.cursor < self.len {
            self.enc.mismatch = Some(self.snap);
            return Err(Error::ClassMismatch);
        }
        Ok(())
    }
}

#[derive(Debug)]
enum Marker {
    Plain,
    TypedList(usize),
    TypedMap,
    Object(Option<Arc<str>>),
}

/// Tuple structs, including the markers `Value` uses for typed lists, typed
/// maps and objects with dynamic class names.
#[doc(hidden)]
#[derive(Debug)]
pub struct MarkerSer<'a, B> {
    enc: &'a mut Encoder<B>,
    kind: Marker,
    seen: usize,
}

fn captured_str<T: Serialize + ?Sized>(v: &T, what: &'static str) -> Result<Arc<str>> {
    match v.serialize(ValueSerializer)? {
        Value::String(s) => Ok(Arc::from(s)),
        _ => Err(Error::Unsupported(what)),
    }
}

impl<B: Output> ser::SerializeTupleStruct for MarkerSer<'_, B> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        let first = self.seen == 0;
        self.seen += 1;
        match &mut self.kind {
            Marker::TypedList(n) if first => {
                let t = captured_str(v, "typed list without type name")?;
                let n = *n;
                self.enc.list_header(Some(Name::Shared(t)), n);
                Ok(())
            }
            Marker::TypedMap if first => {
                let t = captured_str(v, "typed map without type name")?;
                self.enc.map_start(Some(Name::Shared(t)));
                Ok(())
            }
            Marker::Object(class) if first => {
                *class = Some(captured_str(v, "object without class name")?);
                Ok(())
            }
            Marker::Object(class) if self.seen == 2 => {
                let names = match v.serialize(ValueSerializer)? {
                    Value::List(l) => l.items,
                    _ => return Err(Error::Unsupported("object without field names")),
                };
                let mut strs = Vec::with_capacity(names.len());
                for n in &names {
                    strs.push(
                        n.as_str()
                            .ok_or(Error::Unsupported("field name is not a string"))?,
                    );
                }
                let class = class.take().unwrap_or_else(|| Arc::from(""));
                self.enc.write_object_header(&class, &strs)?;
                Ok(())
            }
            _ => serialize_child(self.enc, v),
        }
    }
    fn end(self) -> Result<()> {
        match self.kind {
            Marker::TypedMap => self.enc.write_end(),
            _ => Ok(()),
        }
    }
}

// ---- dry run: collect a struct's field names --------------------------------

struct FieldCollector<'a> {
    fields: &'a mut Vec<Name>,
}

struct CollectStruct<'a> {
    name: &'static str,
    fields: &'a mut Vec<Name>,
}

impl ser::SerializeStruct for CollectStruct<'_> {
    type Ok = &'static str;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, k: &'static str, _: &T) -> Result<()> {
        self.fields.push(Name::Static(k));
        Ok(())
    }
    fn skip_field(&mut self, k: &'static str) -> Result<()> {
        self.fields.push(Name::Static(k));
        Ok(())
    }
    fn end(self) -> Result<&'static str> {
        Ok(self.name)
    }
}

const NOT_STRUCT: Error = Error::Unsupported("class definition requested by a non-struct");

macro_rules! not_struct {
    ($($f:ident($($t:ty),*);)*) => {
        $(fn $f(self, $(_: $t),*) -> Result<&'static str> { Err(NOT_STRUCT) })*
    };
}

impl<'a> Serializer for FieldCollector<'a> {
    type Ok = &'static str;
    type Error = Error;
    type SerializeSeq = Impossible<&'static str, Error>;
    type SerializeTuple = Impossible<&'static str, Error>;
    type SerializeTupleStruct = Impossible<&'static str, Error>;
    type SerializeTupleVariant = Impossible<&'static str, Error>;
    type SerializeMap = Impossible<&'static str, Error>;
    type SerializeStruct = CollectStruct<'a>;
    type SerializeStructVariant = Impossible<&'static str, Error>;

    not_struct! {
        serialize_bool(bool); serialize_i8(i8); serialize_i16(i16); serialize_i32(i32);
        serialize_i64(i64); serialize_u8(u8); serialize_u16(u16); serialize_u32(u32);
        serialize_u64(u64); serialize_f32(f32); serialize_f64(f64); serialize_char(char);
        serialize_str(&str); serialize_bytes(&[u8]); serialize_none(); serialize_unit();
        serialize_unit_struct(&'static str); serialize_unit_variant(&'static str, u32, &'static str);
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<&'static str> {
        Err(NOT_STRUCT)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<&'static str> {
        Err(NOT_STRUCT)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<&'static str> {
        Err(NOT_STRUCT)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(NOT_STRUCT)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
        Err(NOT_STRUCT)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(NOT_STRUCT)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(NOT_STRUCT)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Err(NOT_STRUCT)
    }
    fn serialize_struct(self, name: &'static str, _: usize) -> Result<CollectStruct<'a>> {
        Ok(CollectStruct {
            name,
            fields: self.fields,
        })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(NOT_STRUCT)
    }
}

// ---- write_args: a value per argument ---------------------------------------

/// Serializer behind [`Encoder::write_args`]: the elements of a tuple, sequence
/// or struct each become one top-level value.
pub(crate) struct ArgsSerializer<'a, B> {
    pub(crate) enc: &'a mut Encoder<B>,
}

#[derive(Debug)]
pub(crate) struct ArgsSeq<'a, B> {
    enc: &'a mut Encoder<B>,
}

impl<B: Output> ser::SerializeSeq for ArgsSeq<'_, B> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        serialize_child(self.enc, v)
    }
    fn end(self) -> Result<()> {
        Ok(())
    }
}
impl<B: Output> ser::SerializeTuple for ArgsSeq<'_, B> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        serialize_child(self.enc, v)
    }
    fn end(self) -> Result<()> {
        Ok(())
    }
}
/// A tuple struct given to `write_args`: the arguments, unless it is one of
/// `Value`'s markers (a typed list, typed map or object: one argument).
#[derive(Debug)]
pub(crate) enum ArgsTupleStruct<'a, B> {
    Args(ArgsSeq<'a, B>),
    Single(MarkerSer<'a, B>),
}

impl<B: Output> ser::SerializeTupleStruct for ArgsTupleStruct<'_, B> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        match self {
            ArgsTupleStruct::Args(a) => serialize_child(a.enc, v),
            ArgsTupleStruct::Single(m) => m.serialize_field(v),
        }
    }
    fn end(self) -> Result<()> {
        match self {
            ArgsTupleStruct::Args(_) => Ok(()),
            ArgsTupleStruct::Single(m) => m.end(),
        }
    }
}
impl<B: Output> ser::SerializeStruct for ArgsSeq<'_, B> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, v: &T) -> Result<()> {
        serialize_child(self.enc, v)
    }
    fn end(self) -> Result<()> {
        Ok(())
    }
}

macro_rules! single {
    ($($f:ident($($a:ident: $t:ty),*);)*) => {
        $(fn $f(self, $($a: $t),*) -> Result<()> { self.enc.$f($($a),*) })*
    };
}

impl<'a, B: Output> Serializer for ArgsSerializer<'a, B> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = ArgsSeq<'a, B>;
    type SerializeTuple = ArgsSeq<'a, B>;
    type SerializeTupleStruct = ArgsTupleStruct<'a, B>;
    type SerializeTupleVariant = SeqSer<'a, B>;
    type SerializeMap = MapSer<'a, B>;
    type SerializeStruct = ArgsSeq<'a, B>;
    type SerializeStructVariant = StructVariantSer<'a, B>;

    single! {
        serialize_bool(v: bool); serialize_i8(v: i8); serialize_i16(v: i16); serialize_i32(v: i32);
        serialize_i64(v: i64); serialize_u8(v: u8); serialize_u16(v: u16); serialize_u32(v: u32);
        serialize_u64(v: u64); serialize_f32(v: f32); serialize_f64(v: f64); serialize_char(v: char);
        serialize_str(v: &str); serialize_bytes(v: &[u8]); serialize_none();
        serialize_unit_struct(n: &'static str);
        serialize_unit_variant(n: &'static str, i: u32, v: &'static str);
    }
    fn serialize_unit(self) -> Result<()> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<()> {
        serialize_child(self.enc, v)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, n: &'static str, v: &T) -> Result<()> {
        self.enc.serialize_newtype_struct(n, v)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        n: &'static str,
        i: u32,
        var: &'static str,
        v: &T,
    ) -> Result<()> {
        self.enc.serialize_newtype_variant(n, i, var, v)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<ArgsSeq<'a, B>> {
        Ok(ArgsSeq { enc: self.enc })
    }
    fn serialize_tuple(self, _: usize) -> Result<ArgsSeq<'a, B>> {
        Ok(ArgsSeq { enc: self.enc })
    }
    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<ArgsTupleStruct<'a, B>> {
        if matches!(
            name,
            markers::TYPED_LIST | markers::TYPED_MAP | markers::OBJECT
        ) {
            return self
                .enc
                .serialize_tuple_struct(name, len)
                .map(ArgsTupleStruct::Single);
        }
        Ok(ArgsTupleStruct::Args(ArgsSeq { enc: self.enc }))
    }
    fn serialize_tuple_variant(
        self,
        n: &'static str,
        i: u32,
        v: &'static str,
        len: usize,
    ) -> Result<SeqSer<'a, B>> {
        self.enc.serialize_tuple_variant(n, i, v, len)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<MapSer<'a, B>> {
        self.enc.serialize_map(len)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<ArgsSeq<'a, B>> {
        Ok(ArgsSeq { enc: self.enc })
    }
    fn serialize_struct_variant(
        self,
        n: &'static str,
        i: u32,
        v: &'static str,
        len: usize,
    ) -> Result<StructVariantSer<'a, B>> {
        self.enc.serialize_struct_variant(n, i, v, len)
    }
}
