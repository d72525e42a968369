//! The streaming encoder: writes Hessian 2 values into a caller's buffer.

use std::sync::Arc;

use bytes::BytesMut;
use serde::Serialize;

use crate::error::Result;
use crate::tags;
use crate::value::{List, Map, Object, Value};

/// Where an [`Encoder`] writes: a growable byte buffer.
pub trait Output {
    /// Appends bytes.
    fn put(&mut self, bytes: &[u8]);
    /// The number of bytes in the buffer.
    fn len(&self) -> usize;
    /// Whether the buffer is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Shortens the buffer to `len` bytes (used to undo a partly written value).
    fn truncate(&mut self, len: usize);
    /// Appends one byte.
    #[inline]
    fn put_u8(&mut self, b: u8) {
        self.put(&[b]);
    }
}

impl Output for Vec<u8> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
    #[inline]
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn truncate(&mut self, len: usize) {
        Vec::truncate(self, len);
    }
    #[inline]
    fn put_u8(&mut self, b: u8) {
        self.push(b);
    }
}

impl Output for BytesMut {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
    #[inline]
    fn len(&self) -> usize {
        BytesMut::len(self)
    }
    fn truncate(&mut self, len: usize) {
        BytesMut::truncate(self, len);
    }
}

impl<O: Output + ?Sized> Output for &mut O {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        (**self).put(bytes);
    }
    #[inline]
    fn len(&self) -> usize {
        (**self).len()
    }
    fn truncate(&mut self, len: usize) {
        (**self).truncate(len);
    }
    #[inline]
    fn put_u8(&mut self, b: u8) {
        (**self).put_u8(b);
    }
}

/// A name kept in the encoder's tables: borrowed for serde types, shared for `Value`s.
#[derive(Debug, Clone)]
pub(crate) enum Name {
    Static(&'static str),
    Shared(Arc<str>),
}

impl Name {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Name::Static(s) => s,
            Name::Shared(s) => s,
        }
    }
}

/// The encoder's state before a struct, to undo it if its fields turn out
/// not to match the class definition chosen for its name.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snapshot {
    out: usize,
    next_ref: u32,
}

/// A serde struct whose field names (and class definition bytes) are known.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KnownStruct {
    name: &'static str,
    fields: (usize, usize),
    bytes: (usize, usize),
}

#[derive(Debug)]
pub(crate) struct EncClass {
    /// Output offset where the definition was written.
    pub(crate) at: usize,
    pub(crate) name: Name,
    pub(crate) start: usize,
    pub(crate) len: usize,
}

/// Writes Hessian 2 values into a buffer (`Vec<u8>`, `BytesMut`, or `&mut` either).
///
/// One `Encoder` is one Hessian stream: class definitions and type names
/// written once are referenced afterwards, as Java does within one Dubbo
/// body. [`Encoder::reset`] starts a new stream while keeping the tables'
/// memory, so a reused encoder does not allocate for ordinary values.
///
/// ```
/// use bytes::BytesMut;
/// use rubbo_hessian2::{Decoder, Encoder};
///
/// #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// #[serde(rename = "org.rubbo.interop.Address")]
/// struct Address { city: String, street: String, zip: i32 }
///
/// let mut enc = Encoder::new(BytesMut::new());
/// // a Dubbo request body: strings, then each argument as a top-level value
/// enc.write_string("2.0.2")?;
/// enc.write_args(&("hello", 42i32))?;
/// let a = Address { city: "Hangzhou".into(), street: "West Lake".into(), zip: 310000 };
/// enc.write(&a)?;
/// enc.write(&a)?; // second time: the class definition is reused
/// let body = enc.get_mut().split().freeze();
/// enc.reset(); // next message
///
/// let mut dec = Decoder::new(&body);
/// assert_eq!(dec.read_string()?, "2.0.2");
/// assert_eq!(dec.read_string()?, "hello");
/// assert_eq!(dec.read_int()?, 42);
/// assert_eq!(dec.read::<Address>()?, a);
/// assert_eq!(dec.read::<Address>()?, a);
/// # Ok::<(), rubbo_hessian2::Error>(())
/// ```
#[derive(Debug)]
pub struct Encoder<B> {
    pub(crate) out: B,
    pub(crate) classes: Vec<EncClass>,
    pub(crate) class_fields: Vec<Name>,
    /// Type names, with the output offset where each was written.
    types: Vec<(Name, usize)>,
    next_ref: u32,
    /// Enum constants already written (Java enums are singletons, so a second
    /// occurrence is a back-reference): class, constant, reference index.
    pub(crate) enum_refs: Vec<(&'static str, &'static str, u32)>,
    /// Field names of serde structs seen before, kept across `reset()` so a
    /// reused encoder needs no dry run: (struct name, start, len) into `known_fields`.
    pub(crate) known_structs: Vec<KnownStruct>,
    pub(crate) known_fields: Vec<&'static str>,
    /// The encoded class definitions of `known_structs`.
    known_bytes: Vec<u8>,
    /// Set when a struct's fields did not match its class definition.
    pub(crate) mismatch: Option<Snapshot>,
    /// The class definition the next struct must use (after a mismatch).
    pub(crate) forced_class: Option<usize>,
}

impl<B: Output> Encoder<B> {
    /// An encoder appending to `out`.
    pub fn new(out: B) -> Self {
        Encoder {
            out,
            classes: Vec::new(),
            class_fields: Vec::new(),
            types: Vec::new(),
            next_ref: 0,
            enum_refs: Vec::new(),
            known_structs: Vec::new(),
            known_fields: Vec::new(),
            known_bytes: Vec::new(),
            mismatch: None,
            forced_class: None,
        }
    }

    /// The output buffer.
    pub fn get_ref(&self) -> &B {
        &self.out
    }

    /// The output buffer, mutably (e.g. to `split()` a `BytesMut`).
    pub fn get_mut(&mut self) -> &mut B {
        &mut self.out
    }

    /// The output buffer, consuming the encoder.
    pub fn into_inner(self) -> B {
        self.out
    }

    /// Starts a new stream: forgets class definitions, type names and the
    /// reference count (memory is kept for reuse). The buffer is untouched.
    pub fn reset(&mut self) {
        self.classes.clear();
        self.class_fields.clear();
        self.types.clear();
        self.next_ref = 0;
        self.enum_refs.clear();
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        Snapshot {
            out: self.out.len(),
            next_ref: self.next_ref,
        }
    }

    /// Undoes everything written since `s`: bytes, and the class definitions,
    /// type names and enum references they contained.
    pub(crate) fn restore(&mut self, s: Snapshot) {
        self.out.truncate(s.out);
        while self.classes.last().is_some_and(|c| c.at >= s.out) {
            self.classes.pop();
        }
        let fields_end = self.classes.last().map_or(0, |c| c.start + c.len);
        self.class_fields.truncate(fields_end);
        while self.types.last().is_some_and(|t| t.1 >= s.out) {
            self.types.pop();
        }
        while self.enum_refs.last().is_some_and(|e| e.2 >= s.next_ref) {
            self.enum_refs.pop();
        }
        self.next_ref = s.next_ref;
    }

    /// The reference index the next list, map or object will get.
    pub fn next_ref_index(&self) -> u32 {
        self.next_ref
    }

    #[inline]
    pub(crate) fn bump_ref(&mut self) -> u32 {
        let i = self.next_ref;
        self.next_ref = self.next_ref.saturating_add(1);
        i
    }

    // ---- scalars ------------------------------------------------------------

    /// Writes `null`.
    #[inline]
    pub fn write_null(&mut self) -> Result<()> {
        self.out.put_u8(tags::NULL);
        Ok(())
    }

    /// Writes a boolean.
    #[inline]
    pub fn write_bool(&mut self, v: bool) -> Result<()> {
        self.out.put_u8(if v { tags::TRUE } else { tags::FALSE });
        Ok(())
    }

    /// Writes an int in its shortest form.
    #[inline]
    pub fn write_int(&mut self, v: i32) -> Result<()> {
        self.put_int(v);
        Ok(())
    }

    #[inline]
    pub(crate) fn put_int(&mut self, v: i32) {
        if (-16..=47).contains(&v) {
            self.out.put_u8((0x90 + v) as u8);
        } else if (-2048..=2047).contains(&v) {
            self.out.put(&[(0xc8 + (v >> 8)) as u8, v as u8]);
        } else if (-262_144..=262_143).contains(&v) {
            self.out
                .put(&[(0xd4 + (v >> 16)) as u8, (v >> 8) as u8, v as u8]);
        } else {
            let b = v.to_be_bytes();
            self.out.put(&[tags::INT, b[0], b[1], b[2], b[3]]);
        }
    }

    /// Writes a long in its shortest form.
    #[inline]
    pub fn write_long(&mut self, v: i64) -> Result<()> {
        if (-8..=15).contains(&v) {
            self.out.put_u8((0xe0 + v) as u8);
        } else if (-2048..=2047).contains(&v) {
            self.out.put(&[(0xf8 + (v >> 8)) as u8, v as u8]);
        } else if (-262_144..=262_143).contains(&v) {
            self.out
                .put(&[(0x3c + (v >> 16)) as u8, (v >> 8) as u8, v as u8]);
        } else if let Ok(i) = i32::try_from(v) {
            let b = i.to_be_bytes();
            self.out.put(&[tags::LONG_INT, b[0], b[1], b[2], b[3]]);
        } else {
            self.out.put_u8(tags::LONG);
            self.out.put(&v.to_be_bytes());
        }
        Ok(())
    }

    /// Writes a double in its shortest form (the same choice as Java).
    pub fn write_double(&mut self, v: f64) -> Result<()> {
        let iv = v as i32;
        if f64::from(iv) == v {
            if iv == 0 {
                self.out.put_u8(tags::DOUBLE_ZERO);
                return Ok(());
            } else if iv == 1 {
                self.out.put_u8(tags::DOUBLE_ONE);
                return Ok(());
            } else if (-0x80..0x80).contains(&iv) {
                self.out.put(&[tags::DOUBLE_BYTE, iv as u8]);
                return Ok(());
            } else if (-0x8000..0x8000).contains(&iv) {
                self.out
                    .put(&[tags::DOUBLE_SHORT, (iv >> 8) as u8, iv as u8]);
                return Ok(());
            }
        }
        let mills = (v * 1000.0) as i32;
        if 0.001 * f64::from(mills) == v {
            self.out.put_u8(tags::DOUBLE_MILL);
            self.out.put(&mills.to_be_bytes());
        } else {
            self.out.put_u8(tags::DOUBLE);
            self.out.put(&v.to_be_bytes());
        }
        Ok(())
    }

    /// Writes a Java `float` as hessian-lite does: the double of its decimal
    /// string, so `0.1f32` travels as exactly `0.1`.
    pub fn write_float(&mut self, v: f32) -> Result<()> {
        self.write_double(crate::value_serde::f32_to_f64(v))
    }

    /// Writes a date (milliseconds since the epoch), in the minute form when exact.
    #[inline]
    pub fn write_date(&mut self, millis: i64) -> Result<()> {
        if millis % 60_000 == 0
            && let Ok(m) = i32::try_from(millis / 60_000)
        {
            self.out.put_u8(tags::DATE_MINUTE);
            self.out.put(&m.to_be_bytes());
            return Ok(());
        }
        self.out.put_u8(tags::DATE);
        self.out.put(&millis.to_be_bytes());
        Ok(())
    }

    /// Writes a string (length in UTF-16 units, supplementary characters as
    /// two 3-byte surrogates, chunked above 32 KiB units), like Java.
    #[inline]
    pub fn write_string(&mut self, s: &str) -> Result<()> {
        let bytes = s.as_bytes();
        let units = if s.is_ascii() {
            Some(bytes.len())
        } else if bytes.iter().all(|&b| b < 0xf0) {
            Some(bytes.iter().filter(|&&b| b & 0xc0 != 0x80).count())
        } else {
            None
        };
        match units {
            Some(n) if n <= 0x8000 => {
                self.string_header(n, true);
                self.out.put(bytes);
            }
            _ => self.write_string_slow(s),
        }
        Ok(())
    }

    #[inline]
    fn string_header(&mut self, units: usize, last: bool) {
        if !last {
            self.out.put_u8(tags::STRING_CHUNK);
            self.out.put(&(units as u16).to_be_bytes());
        } else if units <= 31 {
            self.out.put_u8(units as u8);
        } else if units <= 1023 {
            self.out.put(&[0x30 + (units >> 8) as u8, units as u8]);
        } else {
            self.out.put_u8(tags::STRING_FINAL);
            self.out.put(&(units as u16).to_be_bytes());
        }
    }

    fn write_string_slow(&mut self, s: &str) {
        let mut total: usize = s.chars().map(char::len_utf16).sum();
        let mut rest = s;
        loop {
            let last = total <= 0x8000;
            let (chunk_units, split) = if last {
                (total, rest.len())
            } else {
                let mut u = 0;
                let mut end = 0;
                for (i, c) in rest.char_indices() {
                    let w = c.len_utf16();
                    if u + w > 0x8000 {
                        break;
                    }
                    u += w;
                    end = i + c.len_utf8();
                }
                (u, end)
            };
            self.string_header(chunk_units, last);
            let (chunk, tail) = rest.split_at(split);
            self.put_cesu(chunk);
            total -= chunk_units;
            rest = tail;
            if last {
                return;
            }
        }
    }

    fn put_cesu(&mut self, s: &str) {
        let mut run = 0;
        let bytes = s.as_bytes();
        for (i, c) in s.char_indices() {
            if c.len_utf8() == 4 {
                self.out.put(&bytes[run..i]);
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    let u = *u;
                    self.out.put(&[
                        0xe0 | (u >> 12) as u8,
                        0x80 | ((u >> 6) & 0x3f) as u8,
                        0x80 | (u & 0x3f) as u8,
                    ]);
                }
                run = i + 4;
            }
        }
        self.out.put(&bytes[run..]);
    }

    /// Writes binary data (short forms up to 1023 bytes, chunked above).
    pub fn write_binary(&mut self, data: &[u8]) -> Result<()> {
        let mut rest = data;
        while rest.len() > 0x8000 {
            let (chunk, tail) = rest.split_at(0x8000);
            self.out.put_u8(tags::BINARY_CHUNK);
            self.out.put(&0x8000u16.to_be_bytes());
            self.out.put(chunk);
            rest = tail;
        }
        let n = rest.len();
        if n <= 15 {
            self.out.put_u8(0x20 + n as u8);
        } else if n <= 1023 {
            self.out.put(&[0x34 + (n >> 8) as u8, n as u8]);
        } else {
            self.out.put_u8(tags::BINARY_FINAL);
            self.out.put(&(n as u16).to_be_bytes());
        }
        self.out.put(rest);
        Ok(())
    }

    /// Writes a back-reference to the `index`-th list/map/object of the stream.
    pub fn write_ref(&mut self, index: u32) -> Result<()> {
        self.out.put_u8(tags::REF);
        self.put_int(index as i32);
        Ok(())
    }

    // ---- containers ---------------------------------------------------------

    fn put_type(&mut self, name: Name) {
        let s = name.as_str();
        if let Some(i) = self.types.iter().position(|t| t.0.as_str() == s) {
            self.put_int(i as i32);
        } else {
            let at = self.out.len();
            self.put_str_raw(s);
            self.types.push((name, at));
        }
    }

    pub(crate) fn put_str_raw(&mut self, s: &str) {
        let _ = self.write_string(s);
    }

    /// Writes the head of a fixed-length list (`type_name` `None` = untyped,
    /// like `ArrayList`); the caller then writes `len` items.
    pub fn write_list_header(&mut self, type_name: Option<&str>, len: usize) -> Result<()> {
        self.list_header(type_name.map(|t| Name::Shared(Arc::from(t))), len);
        Ok(())
    }

    pub(crate) fn list_header(&mut self, type_name: Option<Name>, len: usize) {
        self.bump_ref();
        match type_name {
            None if len <= 7 => self.out.put_u8(tags::LIST_SHORT + len as u8),
            None => {
                self.out.put_u8(tags::LIST_FIXED);
                self.put_int(len as i32);
            }
            Some(t) if len <= 7 => {
                self.out.put_u8(tags::LIST_SHORT_TYPED + len as u8);
                self.put_type(t);
            }
            Some(t) => {
                self.out.put_u8(tags::LIST_FIXED_TYPED);
                self.put_type(t);
                self.put_int(len as i32);
            }
        }
    }

    /// Writes the head of a variable-length untyped list; end it with [`Encoder::write_end`].
    pub fn write_list_start(&mut self) -> Result<()> {
        self.bump_ref();
        self.out.put_u8(tags::LIST_VAR);
        Ok(())
    }

    /// Writes the head of a map (`type_name` `None` = untyped `HashMap`); the
    /// caller then writes keys and values and ends it with [`Encoder::write_end`].
    pub fn write_map_start(&mut self, type_name: Option<&str>) -> Result<()> {
        self.map_start(type_name.map(|t| Name::Shared(Arc::from(t))));
        Ok(())
    }

    pub(crate) fn map_start(&mut self, type_name: Option<Name>) {
        self.bump_ref();
        match type_name {
            None => self.out.put_u8(tags::MAP),
            Some(t) => {
                self.out.put_u8(tags::MAP_TYPED);
                self.put_type(t);
            }
        }
    }

    /// Writes the end marker `Z` of a map or variable-length list.
    pub fn write_end(&mut self) -> Result<()> {
        self.out.put_u8(tags::END);
        Ok(())
    }

    /// Finds a class definition by name and exact field list.
    fn find_class(&self, name: &str, fields: &[&str]) -> Option<usize> {
        self.classes.iter().position(|c| {
            c.name.as_str() == name
                && c.len == fields.len()
                && self.class_fields[c.start..c.start + c.len]
                    .iter()
                    .zip(fields)
                    .all(|(a, b)| a.as_str() == *b)
        })
    }

    /// Defines the class of serde struct `name` from the fields remembered
    /// from an earlier stream, if any; returns its index.
    pub(crate) fn define_known_struct(&mut self, name: &'static str) -> Option<usize> {
        let k = *self
            .known_structs
            .iter()
            .find(|k| std::ptr::eq(k.name, name))
            .or_else(|| self.known_structs.iter().find(|k| k.name == name))?;
        let first = self.class_fields.len();
        for i in k.fields.0..k.fields.0 + k.fields.1 {
            self.class_fields.push(Name::Static(self.known_fields[i]));
        }
        let at = self.out.len();
        self.out
            .put(&self.known_bytes[k.bytes.0..k.bytes.0 + k.bytes.1]);
        self.classes.push(EncClass {
            at,
            name: Name::Static(name),
            start: first,
            len: k.fields.1,
        });
        Some(self.classes.len() - 1)
    }

    /// Remembers the fields of serde struct `name` (pushed on `class_fields`
    /// from `start`) and the bytes of its class definition.
    pub(crate) fn remember_struct(&mut self, name: &'static str, start: usize) {
        if self.known_structs.len() >= 256 {
            return;
        }
        let first = self.known_fields.len();
        for f in &self.class_fields[start..] {
            if let Name::Static(s) = f {
                self.known_fields.push(s);
            }
        }
        let end = self.known_fields.len();
        let mut bytes = std::mem::take(&mut self.known_bytes);
        let b0 = bytes.len();
        {
            let mut e = Encoder::new(&mut bytes);
            e.out.put_u8(tags::CLASS_DEF);
            e.put_str_raw(name);
            e.put_int((end - first) as i32);
            for i in first..end {
                e.put_str_raw(self.known_fields[i]);
            }
        }
        let b1 = bytes.len();
        self.known_bytes = bytes;
        self.known_structs.push(KnownStruct {
            name,
            fields: (first, end - first),
            bytes: (b0, b1 - b0),
        });
    }

    /// Finds the latest class definition with this name (serde structs).
    #[inline]
    pub(crate) fn find_class_by_name(&self, name: &'static str) -> Option<usize> {
        // the same `&'static str` nearly always: compare addresses before bytes
        self.classes
            .iter()
            .rposition(|c| matches!(&c.name, Name::Static(s) if std::ptr::eq(*s, name)))
            .or_else(|| self.classes.iter().rposition(|c| c.name.as_str() == name))
    }

    /// Writes a class definition whose field names were pushed onto
    /// `class_fields` from `start`; returns its index.
    pub(crate) fn define_class(&mut self, name: Name, start: usize) -> usize {
        let len = self.class_fields.len() - start;
        let at = self.out.len();
        self.out.put_u8(tags::CLASS_DEF);
        self.put_str_raw(name.as_str());
        self.put_int(len as i32);
        for i in start..start + len {
            let s = match &self.class_fields[i] {
                Name::Static(s) => Name::Static(s),
                Name::Shared(s) => Name::Shared(s.clone()),
            };
            self.put_str_raw(s.as_str());
        }
        self.classes.push(EncClass {
            at,
            name,
            start,
            len,
        });
        self.classes.len() - 1
    }

    /// Writes an object instance tag for class definition `idx`.
    #[inline]
    pub(crate) fn object_tag(&mut self, idx: usize) {
        self.bump_ref();
        if idx <= 15 {
            self.out.put_u8(tags::OBJECT_SHORT + idx as u8);
        } else {
            self.out.put_u8(tags::OBJECT);
            self.put_int(idx as i32);
        }
    }

    /// Writes the head of an object of `class` with these fields: the class
    /// definition the first time (per stream), then the instance tag. The caller
    /// then writes one value per field, in order. Returns the object's
    /// reference index.
    pub fn write_object_header(&mut self, class: &str, fields: &[&str]) -> Result<u32> {
        let idx = match self.find_class(class, fields) {
            Some(i) => i,
            None => {
                let start = self.class_fields.len();
                for f in fields {
                    self.class_fields.push(Name::Shared(Arc::from(*f)));
                }
                self.define_class(Name::Shared(Arc::from(class)), start)
            }
        };
        let r = self.next_ref;
        self.object_tag(idx);
        Ok(r)
    }

    fn object_header_shared(&mut self, o: &Object) -> u32 {
        let found = self.classes.iter().position(|c| {
            c.name.as_str() == o.class.as_ref()
                && c.len == o.fields.len()
                && self.class_fields[c.start..c.start + c.len]
                    .iter()
                    .zip(&o.fields)
                    .all(|(a, (b, _))| a.as_str() == b.as_ref())
        });
        let idx = match found {
            Some(i) => i,
            None => {
                let start = self.class_fields.len();
                for (f, _) in &o.fields {
                    self.class_fields.push(Name::Shared(f.clone()));
                }
                self.define_class(Name::Shared(o.class.clone()), start)
            }
        };
        let r = self.next_ref;
        self.object_tag(idx);
        r
    }

    // ---- whole values -------------------------------------------------------

    /// Writes a dynamic [`Value`] (typed lists and maps keep their types,
    /// objects their class, references stay references).
    pub fn write_value(&mut self, v: &Value) -> Result<()> {
        match v {
            Value::Null => self.write_null(),
            Value::Bool(b) => self.write_bool(*b),
            Value::Int(i) => self.write_int(*i),
            Value::Long(i) => self.write_long(*i),
            Value::Double(d) => self.write_double(*d),
            Value::String(s) => self.write_string(s),
            Value::Binary(b) => self.write_binary(b),
            Value::Date(d) => self.write_date(*d),
            Value::Ref(i) => self.write_ref(*i),
            Value::List(List { type_name, items }) => {
                self.list_header(type_name.clone().map(Name::Shared), items.len());
                for i in items {
                    self.write_value(i)?;
                }
                Ok(())
            }
            Value::Map(Map { type_name, entries }) => {
                self.map_start(type_name.clone().map(Name::Shared));
                for (k, v) in entries {
                    self.write_value(k)?;
                    self.write_value(v)?;
                }
                self.write_end()
            }
            Value::Object(o) => {
                self.object_header_shared(o);
                for (_, v) in &o.fields {
                    self.write_value(v)?;
                }
                Ok(())
            }
        }
    }

    /// Writes any serde type as one top-level value.
    pub fn write<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        crate::ser::serialize_child(self, v)
    }

    /// Writes each argument as its own top-level value, as Dubbo writes the
    /// arguments of a call: `T` is a tuple, a sequence (`Vec<Value>`...), or a
    /// struct (each field in order); `()` writes nothing; anything else is
    /// written as a single value.
    pub fn write_args<T: Serialize + ?Sized>(&mut self, args: &T) -> Result<()> {
        args.serialize(crate::ser::ArgsSerializer { enc: self })
    }
}
