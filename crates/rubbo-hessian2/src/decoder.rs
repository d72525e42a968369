//! The streaming decoder: reads Hessian 2 values one after another from a byte slice.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::tags::{self, Kind};
use crate::value::{List, Map, Object, Value};

/// The default bound on nesting depth (lists, maps, objects, references).
pub const DEFAULT_MAX_DEPTH: usize = 512;

use crate::class_cache::{self, SharedClass};

/// A class definition read in full from the stream (names borrowed from the
/// input when they are plain UTF-8, as they nearly always are).
#[derive(Debug)]
pub(crate) struct ClassDef<'de> {
    name: Cow<'de, str>,
    /// Range into the decoder's `field_names`.
    fields: std::ops::Range<usize>,
    /// Shared forms for building `Value`s, made on first use.
    shared: Option<SharedClass>,
}

/// Where the field names of a class definition are: a slot of the cache
/// snapshot, or the first of its names in `Decoder::field_names`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Fields {
    Cached(u32),
    Stream(usize),
}

/// In `Decoder::class_refs`: the definition is slot `r & !CACHED` of the
/// cache snapshot (else it is `classes[r]`).
const CACHED: u32 = 1 << 31;

/// The `Decoder`'s view of the per-thread class cache.
#[derive(Debug, Default)]
struct CacheState {
    /// The table as it was when this stream first needed it.
    table: Option<Arc<class_cache::Table>>,
    /// Definitions read in full that can be cached: (bytes, class index).
    pending: Vec<(std::ops::Range<usize>, usize)>,
    /// Whether `table` was taken.
    taken: bool,
}

/// How a list starts: its type and its length (`None` = ends with `Z`).
#[derive(Debug)]
pub(crate) struct ListHead {
    pub(crate) type_name: Option<Arc<str>>,
    pub(crate) len: Option<usize>,
}

/// Reads a sequence of Hessian 2 values from a byte slice.
///
/// One `Decoder` is one Hessian stream: class definitions, type names and the
/// object reference table are shared by all values read from it, as in one
/// Dubbo body. Values can be read as a dynamic [`Value`], as any serde type
/// ([`Decoder::read`]), or skipped without being built ([`Decoder::skip_value`]).
///
/// ```
/// use rubbo_hessian2::{Decoder, Encoder, Value};
///
/// let mut buf = Vec::new();
/// let mut enc = Encoder::new(&mut buf);
/// enc.write_string("2.0.2")?;
/// enc.write(&(1i32, "two"))?;
/// enc.write_int(7)?;
///
/// let mut dec = Decoder::new(&buf);
/// assert_eq!(dec.read_string()?, "2.0.2");
/// let mark = dec.position();
/// dec.skip_value()?; // skipped without building it
/// assert_eq!(dec.read::<i32>()?, 7);
/// assert!(dec.is_empty());
///
/// // decode the skipped value later, lazily, from its own slice
/// let mut lazy = Decoder::new(&buf[mark..]);
/// let (a, b): (i32, String) = lazy.read()?;
/// assert_eq!((a, b.as_str()), (1, "two"));
/// # Ok::<(), rubbo_hessian2::Error>(())
/// ```
#[derive(Debug)]
pub struct Decoder<'de> {
    input: &'de [u8],
    pos: usize,
    /// The stream's class definitions, by number: `CACHED | slot` for one
    /// found in the class cache, else an index into `classes`.
    class_refs: Small<u32, 16>,
    /// The class definitions read in full.
    classes: Vec<ClassDef<'de>>,
    types: Vec<Arc<str>>,
    /// Start offset of every container (list, map, object), in stream order.
    pub(crate) refs: Small<usize, 16>,
    /// Reference indices of the containers being decoded right now (typed decoding).
    pub(crate) active: Small<u32, 16>,
    /// Field names of all class definitions (one allocation for the stream).
    pub(crate) field_names: Vec<Cow<'de, str>>,
    /// > 0 while re-reading a referenced container: nothing is registered then.
    pub(crate) replay: u32,
    pub(crate) replay_next: u32,
    depth: usize,
    max_depth: usize,
    /// Values read while following references (typed decoding), and the bound
    /// on them: a chain of shared references must not expand exponentially.
    replay_work: usize,
    cache: CacheState,
}

impl Drop for Decoder<'_> {
    fn drop(&mut self) {
        self.flush_cache();
    }
}

impl<'de> Decoder<'de> {
    /// A decoder over `input`, starting at its first byte.
    pub fn new(input: &'de [u8]) -> Self {
        Decoder {
            input,
            pos: 0,
            class_refs: Small::default(),
            classes: Vec::new(),
            types: Vec::new(),
            refs: Small::default(),
            active: Small::default(),
            field_names: Vec::new(),
            replay: 0,
            replay_next: 0,
            depth: 0,
            max_depth: DEFAULT_MAX_DEPTH,
            replay_work: 0,
            cache: CacheState::default(),
        }
    }

    /// Sets the nesting depth bound (default [`DEFAULT_MAX_DEPTH`]).
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// The offset of the next unread byte.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The bytes not read yet.
    pub fn remaining(&self) -> &'de [u8] {
        self.input.get(self.pos..).unwrap_or_default()
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.input.len()
    }

    /// The whole input.
    pub fn input(&self) -> &'de [u8] {
        self.input
    }

    /// Forgets class definitions, type names and references, as at the start
    /// of a new stream (the position is kept).
    pub fn reset(&mut self) {
        self.flush_cache();
        self.class_refs.clear();
        self.classes.clear();
        self.types.clear();
        self.refs.clear();
        self.active.clear();
        self.field_names.clear();
        self.replay = 0;
        self.depth = 0;
        self.replay_work = 0;
    }

    /// Reads one top-level value as any serde type.
    ///
    /// Call it repeatedly to read a sequence of top-level values (the
    /// arguments of a Dubbo call).
    pub fn read<T: Deserialize<'de>>(&mut self) -> Result<T> {
        let start = self.pos;
        T::deserialize(&mut *self).map_err(|e| e.with_offset(start))
    }

    /// Fails with [`Error::TrailingBytes`] unless every byte has been read.
    pub fn end(&self) -> Result<()> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(Error::TrailingBytes { offset: self.pos })
        }
    }

    // ---- byte-level helpers -------------------------------------------------

    #[inline]
    pub(crate) fn peek(&self, expected: &'static str) -> Result<u8> {
        self.input
            .get(self.pos)
            .copied()
            .ok_or(Error::UnexpectedEof {
                offset: self.pos,
                expected,
            })
    }

    #[inline]
    pub(crate) fn byte(&mut self, expected: &'static str) -> Result<u8> {
        let b = self.peek(expected)?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    fn take(&mut self, n: usize, expected: &'static str) -> Result<&'de [u8]> {
        match self.input.get(self.pos..self.pos.saturating_add(n)) {
            Some(s) if self.pos.checked_add(n).is_some() => {
                self.pos += n;
                Ok(s)
            }
            _ => Err(Error::UnexpectedEof {
                offset: self.input.len(),
                expected,
            }),
        }
    }

    #[inline]
    fn array<const N: usize>(&mut self, expected: &'static str) -> Result<[u8; N]> {
        let s = self.take(N, expected)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn left(&self) -> usize {
        self.input.len().saturating_sub(self.pos)
    }

    pub(crate) fn unexpected(&self, at: usize, tag: u8, expected: &'static str) -> Error {
        Error::UnexpectedTag {
            offset: at,
            tag,
            expected,
        }
    }

    pub(crate) fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(Error::DepthLimit {
                offset: self.pos,
                limit: self.max_depth,
            });
        }
        Ok(())
    }

    pub(crate) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Registers a container starting at `at` in the reference table and
    /// returns its index.
    pub(crate) fn register(&mut self, at: usize) -> u32 {
        if self.replay > 0 {
            let i = self.replay_next;
            self.replay_next = self.replay_next.saturating_add(1);
            i
        } else {
            let i = u32::try_from(self.refs.len()).unwrap_or(u32::MAX);
            self.refs.push(at);
            i
        }
    }

    /// Reads class definitions (`C`) until something else starts; returns the
    /// tag of that value without consuming it.
    #[inline]
    pub(crate) fn prelude(&mut self, expected: &'static str) -> Result<u8> {
        if self.replay == 0
            && let Some(&tag) = self.input.get(self.pos)
            && tag != tags::CLASS_DEF
        {
            return Ok(tag);
        }
        self.prelude_slow(expected)
    }

    #[inline(never)]
    fn prelude_slow(&mut self, expected: &'static str) -> Result<u8> {
        if self.replay > 0 {
            self.replay_work += 1;
            if self.replay_work > self.input.len().saturating_mul(16).saturating_add(1 << 16) {
                return Err(Error::Message {
                    msg: "back-references expand to too many values".into(),
                    offset: Some(self.pos),
                });
            }
        }
        loop {
            let tag = self.peek(expected)?;
            if tag != tags::CLASS_DEF {
                return Ok(tag);
            }
            self.pos += 1;
            self.read_class_def()?;
        }
    }

    fn read_class_def(&mut self) -> Result<()> {
        let start = self.pos;
        let span = class_cache::span(self.input, start);
        if let Some(end) = span {
            if self.replay > 0 {
                self.pos = end;
                return Ok(());
            }
            if !self.cache.taken {
                self.cache.taken = true;
                self.cache.table = class_cache::snapshot();
            }
            if let Some(slot) = self
                .cache
                .table
                .as_ref()
                .and_then(|t| t.find(&self.input[start..end]))
            {
                self.pos = end;
                self.class_refs.push(CACHED | slot);
                return Ok(());
            }
        }
        self.read_class_def_slow()?;
        if let Some(end) = span
            && end == self.pos
            && self.last_class_is_ascii()
            && let Some(idx) = self.class_refs.len().checked_sub(1)
        {
            self.cache.pending.push((start..end, idx));
        }
        Ok(())
    }

    /// Adds the definitions this stream read in full to the class cache.
    fn flush_cache(&mut self) {
        self.cache.table = None;
        self.cache.taken = false;
        if self.cache.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.cache.pending);
        let mut new = Vec::with_capacity(pending.len());
        for (bytes, idx) in pending {
            if idx < self.class_refs.len()
                && let Some(key) = self.input.get(bytes)
            {
                new.push((Box::<[u8]>::from(key), self.class_shared(idx)));
            }
        }
        class_cache::insert(new);
    }

    /// Whether the names of the last class definition read in full are all
    /// ASCII, so its byte layout follows from its string lengths alone.
    fn last_class_is_ascii(&self) -> bool {
        self.classes.last().is_some_and(|def| {
            def.name.is_ascii()
                && self.field_names[def.fields.clone()]
                    .iter()
                    .all(|f| f.is_ascii())
        })
    }

    fn push_class(&mut self, def: ClassDef<'de>) {
        if self.classes.capacity() == 0 {
            self.classes.reserve(8);
        }
        self.class_refs
            .push(u32::try_from(self.classes.len()).unwrap_or(u32::MAX) & !CACHED);
        self.classes.push(def);
    }

    #[cold]
    fn read_class_def_slow(&mut self) -> Result<()> {
        let name = self.read_str()?;
        let at = self.pos;
        let n = self.read_int()?;
        let n = self.check_len(i64::from(n), at, 1)?;
        if self.replay > 0 {
            for _ in 0..n {
                self.read_str()?;
            }
            return Ok(());
        }
        if self.field_names.capacity() == 0 {
            self.field_names.reserve(32);
        }
        let start = self.field_names.len();
        for _ in 0..n {
            let f = self.read_str()?;
            self.field_names.push(f);
        }
        self.push_class(ClassDef {
            name,
            fields: start..self.field_names.len(),
            shared: None,
        });
        Ok(())
    }

    /// Checks a length read at `at` against the bytes left (`min_each` bytes per item).
    pub(crate) fn check_len(&self, len: i64, at: usize, min_each: usize) -> Result<usize> {
        if len < 0 {
            return Err(Error::InvalidLength {
                offset: at,
                len,
                reason: "negative",
            });
        }
        let len_u = usize::try_from(len).unwrap_or(usize::MAX);
        if len_u.saturating_mul(min_each) > self.left() {
            return Err(Error::InvalidLength {
                offset: at,
                len,
                reason: "longer than the bytes left",
            });
        }
        Ok(len_u)
    }

    // ---- scalars ------------------------------------------------------------

    /// Reads the body of an int whose tag has been consumed.
    pub(crate) fn int_body(&mut self, tag: u8) -> Result<i32> {
        Ok(match tag {
            0x80..=0xbf => i32::from(tag) - 0x90,
            0xc0..=0xcf => ((i32::from(tag) - 0xc8) << 8) | i32::from(self.byte("int")?),
            0xd0..=0xd7 => {
                let [b1, b0] = self.array("int")?;
                ((i32::from(tag) - 0xd4) << 16) | (i32::from(b1) << 8) | i32::from(b0)
            }
            _ => i32::from_be_bytes(self.array("int")?),
        })
    }

    /// Reads the body of a long whose tag has been consumed.
    pub(crate) fn long_body(&mut self, tag: u8) -> Result<i64> {
        Ok(match tag {
            0xd8..=0xef => i64::from(tag) - 0xe0,
            0xf0..=0xff => ((i64::from(tag) - 0xf8) << 8) | i64::from(self.byte("long")?),
            0x38..=0x3f => {
                let [b1, b0] = self.array("long")?;
                ((i64::from(tag) - 0x3c) << 16) | (i64::from(b1) << 8) | i64::from(b0)
            }
            tags::LONG_INT => i64::from(i32::from_be_bytes(self.array("long")?)),
            _ => i64::from_be_bytes(self.array("long")?),
        })
    }

    pub(crate) fn double_body(&mut self, tag: u8) -> Result<f64> {
        Ok(match tag {
            tags::DOUBLE_ZERO => 0.0,
            tags::DOUBLE_ONE => 1.0,
            tags::DOUBLE_BYTE => f64::from(self.byte("double")? as i8),
            tags::DOUBLE_SHORT => f64::from(i16::from_be_bytes(self.array("double")?)),
            tags::DOUBLE_MILL => 0.001 * f64::from(i32::from_be_bytes(self.array("double")?)),
            _ => f64::from_be_bytes(self.array("double")?),
        })
    }

    pub(crate) fn date_body(&mut self, tag: u8) -> Result<i64> {
        Ok(if tag == tags::DATE {
            i64::from_be_bytes(self.array("date")?)
        } else {
            i64::from(i32::from_be_bytes(self.array("date")?)) * 60_000
        })
    }

    /// Reads an int (any int form; a long that fits is accepted too).
    pub fn read_int(&mut self) -> Result<i32> {
        let at = self.pos;
        let tag = self.byte("int")?;
        match tags::kind(tag) {
            Kind::Int => self.int_body(tag),
            Kind::Long => {
                let v = self.long_body(tag)?;
                i32::try_from(v).map_err(|_| self.unexpected(at, tag, "int (long out of range)"))
            }
            _ => Err(self.unexpected(at, tag, "int")),
        }
    }

    /// Reads a long (any long or int form).
    pub fn read_long(&mut self) -> Result<i64> {
        let at = self.pos;
        let tag = self.byte("long")?;
        match tags::kind(tag) {
            Kind::Long => self.long_body(tag),
            Kind::Int => self.int_body(tag).map(i64::from),
            _ => Err(self.unexpected(at, tag, "long")),
        }
    }

    /// Reads a double (any double form; ints and longs are widened).
    pub fn read_double(&mut self) -> Result<f64> {
        let at = self.pos;
        let tag = self.byte("double")?;
        match tags::kind(tag) {
            Kind::Double => self.double_body(tag),
            Kind::Int => self.int_body(tag).map(f64::from),
            Kind::Long => self.long_body(tag).map(|v| v as f64),
            _ => Err(self.unexpected(at, tag, "double")),
        }
    }

    /// Reads a boolean.
    pub fn read_bool(&mut self) -> Result<bool> {
        let at = self.pos;
        match self.byte("boolean")? {
            tags::TRUE => Ok(true),
            tags::FALSE => Ok(false),
            t => Err(self.unexpected(at, t, "boolean")),
        }
    }

    /// Reads a date as milliseconds since the epoch.
    pub fn read_date(&mut self) -> Result<i64> {
        let at = self.pos;
        match self.byte("date")? {
            t @ (tags::DATE | tags::DATE_MINUTE) => self.date_body(t),
            t => Err(self.unexpected(at, t, "date")),
        }
    }

    /// Consumes a null if one comes next; returns whether it did.
    pub fn read_null(&mut self) -> Result<bool> {
        if self.peek("value")? == tags::NULL {
            self.pos += 1;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    // ---- strings ------------------------------------------------------------

    /// Reads a string (not null).
    pub fn read_string(&mut self) -> Result<String> {
        self.read_str().map(Cow::into_owned)
    }

    /// Reads a string or null.
    pub fn read_nullable_string(&mut self) -> Result<Option<String>> {
        if self.read_null()? {
            Ok(None)
        } else {
            self.read_string().map(Some)
        }
    }

    /// Reads a string, borrowing from the input when it is plain UTF-8.
    pub fn read_str(&mut self) -> Result<Cow<'de, str>> {
        let at = self.pos;
        let tag = self.byte("string")?;
        if tags::kind(tag) != Kind::String {
            return Err(self.unexpected(at, tag, "string"));
        }
        self.string_body(tag)
    }

    /// Reads a string that is plain ASCII in one chunk (the usual form of names and
    /// keys) and returns its bytes, which are then also valid UTF-8. Returns `None`,
    /// consuming nothing, for anything else (a string in another form, another
    /// value, or the end of the input): read that with [`read_str`](Self::read_str).
    ///
    /// Cheaper than `read_str` where the caller compares or hashes the bytes and
    /// needs no `&str`.
    ///
    /// ```
    /// use rubbo_hessian2::Decoder;
    /// let mut d = Decoder::new(b"\x04echo\x02h\xc3\xa9");
    /// assert_eq!(d.read_ascii(), Some(&b"echo"[..]));
    /// assert_eq!(d.read_ascii(), None, "not ASCII");
    /// assert_eq!(d.read_str().unwrap(), "hé");
    /// ```
    pub fn read_ascii(&mut self) -> Option<&'de [u8]> {
        if self.replay > 0 {
            return None;
        }
        let at = self.pos;
        let &tag = self.input.get(at)?;
        let (len, head) = match tag {
            0x00..=0x1f => (usize::from(tag), 1),
            0x30..=0x33 => (
                (usize::from(tag - 0x30) << 8) | usize::from(*self.input.get(at + 1)?),
                2,
            ),
            _ => return None,
        };
        // In ASCII the length in UTF-16 units is the length in bytes.
        let bytes = self.input.get(at + head..at + head + len)?;
        if !bytes.is_ascii() {
            return None;
        }
        self.pos = at + head + len;
        Some(bytes)
    }

    /// Length (in UTF-16 units) and finality of a string chunk whose tag was read.
    fn string_chunk_len(&mut self, tag: u8) -> Result<(usize, bool)> {
        Ok(match tag {
            0x00..=0x1f => (usize::from(tag), true),
            0x30..=0x33 => (
                (usize::from(tag - 0x30) << 8) | usize::from(self.byte("string length")?),
                true,
            ),
            _ => (
                usize::from(u16::from_be_bytes(self.array("string length")?)),
                tag == tags::STRING_FINAL,
            ),
        })
    }

    /// Scans `units` UTF-16 units of modified UTF-8; returns the bytes and
    /// whether they need converting (surrogates present).
    fn string_units(&mut self, units: usize) -> Result<(&'de [u8], bool)> {
        let start = self.pos;
        if let Some(s) = self.input.get(start..start.saturating_add(units))
            && s.is_ascii()
        {
            self.pos += units;
            return Ok((s, false));
        }
        let mut left = units;
        let mut fix = false;
        let mut p = start;
        while left > 0 {
            let b = *self.input.get(p).ok_or(Error::UnexpectedEof {
                offset: p,
                expected: "string data",
            })?;
            let (w, u) = match b {
                0x00..=0x7f => (1, 1),
                0xc0..=0xdf => (2, 1),
                0xe0..=0xef => {
                    if b == 0xed && self.input.get(p + 1).is_some_and(|&c| c >= 0xa0) {
                        fix = true;
                    }
                    (3, 1)
                }
                0xf0..=0xf7 if left >= 2 => (4, 2),
                _ => return Err(Error::InvalidUtf8 { offset: p }),
            };
            if p + w > self.input.len() {
                return Err(Error::UnexpectedEof {
                    offset: self.input.len(),
                    expected: "string data",
                });
            }
            p += w;
            left -= u;
        }
        self.pos = p;
        Ok((&self.input[start..p], fix))
    }

    #[inline]
    pub(crate) fn string_body(&mut self, tag: u8) -> Result<Cow<'de, str>> {
        // fast path: a short ASCII string (names, most values)
        if tag <= 0x1f {
            let n = usize::from(tag);
            if let Some(b) = self.input.get(self.pos..self.pos + n)
                && b.is_ascii()
                && let Ok(s) = std::str::from_utf8(b)
            {
                self.pos += n;
                return Ok(Cow::Borrowed(s));
            }
        }
        self.string_body_chunks(tag)
    }

    fn string_body_chunks(&mut self, mut tag: u8) -> Result<Cow<'de, str>> {
        let mut out: Option<String> = None;
        loop {
            let (units, last) = self.string_chunk_len(tag)?;
            let at = self.pos;
            if units > self.left() {
                return Err(Error::InvalidLength {
                    offset: at,
                    len: units as i64,
                    reason: "longer than the bytes left",
                });
            }
            let (bytes, fix) = self.string_units(units)?;
            let piece: Cow<'de, str> = if fix {
                Cow::Owned(decode_cesu(bytes, at)?)
            } else {
                Cow::Borrowed(std::str::from_utf8(bytes).map_err(|e| Error::InvalidUtf8 {
                    offset: at + e.valid_up_to(),
                })?)
            };
            if last && out.is_none() {
                return Ok(piece);
            }
            let buf = out.get_or_insert_with(String::new);
            buf.push_str(&piece);
            if last {
                return Ok(Cow::Owned(out.unwrap_or_default()));
            }
            let at = self.pos;
            tag = self.byte("string chunk")?;
            if tags::kind(tag) != Kind::String {
                return Err(self.unexpected(at, tag, "string chunk"));
            }
        }
    }

    fn skip_string_body(&mut self, mut tag: u8) -> Result<()> {
        loop {
            let (units, last) = self.string_chunk_len(tag)?;
            self.string_units(units)?;
            if last {
                return Ok(());
            }
            let at = self.pos;
            tag = self.byte("string chunk")?;
            if tags::kind(tag) != Kind::String {
                return Err(self.unexpected(at, tag, "string chunk"));
            }
        }
    }

    // ---- binary -------------------------------------------------------------

    /// Reads binary data (not null).
    pub fn read_binary(&mut self) -> Result<Vec<u8>> {
        let at = self.pos;
        let tag = self.byte("binary")?;
        if tags::kind(tag) != Kind::Binary {
            return Err(self.unexpected(at, tag, "binary"));
        }
        self.binary_body(tag).map(Cow::into_owned)
    }

    pub(crate) fn binary_body(&mut self, mut tag: u8) -> Result<Cow<'de, [u8]>> {
        let mut out: Option<Vec<u8>> = None;
        loop {
            let (len, last) = match tag {
                0x20..=0x2f => (usize::from(tag - 0x20), true),
                0x34..=0x37 => (
                    (usize::from(tag - 0x34) << 8) | usize::from(self.byte("binary length")?),
                    true,
                ),
                _ => (
                    usize::from(u16::from_be_bytes(self.array("binary length")?)),
                    tag == tags::BINARY_FINAL,
                ),
            };
            let data = self.take(len, "binary data")?;
            if last && out.is_none() {
                return Ok(Cow::Borrowed(data));
            }
            out.get_or_insert_with(Vec::new).extend_from_slice(data);
            if last {
                return Ok(Cow::Owned(out.unwrap_or_default()));
            }
            let at = self.pos;
            tag = self.byte("binary chunk")?;
            if tags::kind(tag) != Kind::Binary {
                return Err(self.unexpected(at, tag, "binary chunk"));
            }
        }
    }

    // ---- containers ---------------------------------------------------------

    /// Reads a type: a string (a new entry) or an int (an earlier entry).
    fn read_type(&mut self) -> Result<Arc<str>> {
        let at = self.pos;
        let tag = self.peek("type")?;
        match tags::kind(tag) {
            Kind::String => {
                let s: Arc<str> = Arc::from(self.read_str()?.as_ref());
                if self.replay == 0 {
                    self.types.push(s.clone());
                }
                Ok(s)
            }
            Kind::Int | Kind::Long => {
                let i = self.read_int()?;
                usize::try_from(i)
                    .ok()
                    .and_then(|i| self.types.get(i))
                    .cloned()
                    .ok_or(Error::InvalidRef {
                        offset: at,
                        kind: "type",
                        index: i64::from(i),
                    })
            }
            _ => Err(self.unexpected(at, tag, "type name or type reference")),
        }
    }

    /// Reads the head of a list whose tag was consumed.
    pub(crate) fn list_head(&mut self, tag: u8) -> Result<ListHead> {
        let type_name = match tag {
            tags::LIST_VAR_TYPED | tags::LIST_FIXED_TYPED | 0x70..=0x77 => Some(self.read_type()?),
            _ => None,
        };
        let len = match tag {
            tags::LIST_VAR_TYPED | tags::LIST_VAR => None,
            tags::LIST_FIXED_TYPED | tags::LIST_FIXED => {
                let at = self.pos;
                let n = self.read_int()?;
                Some(self.check_len(i64::from(n), at, 1)?)
            }
            0x70..=0x77 => Some(self.check_len(i64::from(tag - 0x70), self.pos, 1)?),
            _ => Some(self.check_len(i64::from(tag - 0x78), self.pos, 1)?),
        };
        Ok(ListHead { type_name, len })
    }

    /// Reads the type of a map whose tag was consumed.
    pub(crate) fn map_head(&mut self, tag: u8) -> Result<Option<Arc<str>>> {
        if tag == tags::MAP_TYPED {
            Ok(Some(self.read_type()?))
        } else {
            Ok(None)
        }
    }

    /// Reads the class reference of an object whose tag was consumed and
    /// returns the (checked) index of its class definition.
    pub(crate) fn object_head(&mut self, tag: u8, at: usize) -> Result<usize> {
        let idx = if tag == tags::OBJECT {
            i64::from(self.read_int()?)
        } else {
            i64::from(tag - tags::OBJECT_SHORT)
        };
        usize::try_from(idx)
            .ok()
            .filter(|&i| i < self.class_refs.len())
            .ok_or(Error::InvalidRef {
                offset: at,
                kind: "class",
                index: idx,
            })
    }

    /// The cached form of class definition `idx`, if it came from the cache.
    #[inline]
    fn cached_class(&self, idx: usize) -> Option<&SharedClass> {
        let r = self.class_refs.get(idx)?;
        if r & CACHED == 0 {
            return None;
        }
        self.cache.table.as_ref()?.class(r & !CACHED)
    }

    /// Class definition `idx` when it was read in full.
    #[inline]
    fn stream_class(&self, idx: usize) -> &ClassDef<'de> {
        &self.classes[self.class_refs.get(idx).unwrap_or(u32::MAX) as usize]
    }

    /// The number of fields of class definition `idx` (checked by `object_head`).
    #[inline]
    pub(crate) fn class_len(&self, idx: usize) -> usize {
        match self.cached_class(idx) {
            Some((_, f)) => f.len(),
            None => self.stream_class(idx).fields.len(),
        }
    }

    /// Field `i` of class definition `idx`.
    #[inline]
    pub(crate) fn field_name(&self, idx: usize, i: usize) -> &str {
        self.name_in(self.fields_of(idx), i)
    }

    /// Where the field names of class definition `idx` are.
    #[inline]
    pub(crate) fn fields_of(&self, idx: usize) -> Fields {
        match self.class_refs.get(idx) {
            Some(r) if r & CACHED != 0 => Fields::Cached(r & !CACHED),
            _ => Fields::Stream(self.stream_class(idx).fields.start),
        }
    }

    /// Field `i` of the field names at `at`.
    #[inline]
    pub(crate) fn name_in(&self, at: Fields, i: usize) -> &str {
        match at {
            Fields::Cached(slot) => self
                .cache
                .table
                .as_ref()
                .and_then(|t| t.class(slot))
                .and_then(|(_, f)| f.get(i))
                .map_or("", |f| f),
            Fields::Stream(first) => &self.field_names[first + i],
        }
    }

    /// The class name of class definition `idx`.
    pub(crate) fn class_name(&self, idx: usize) -> &str {
        match self.cached_class(idx) {
            Some((n, _)) => n,
            None => &self.stream_class(idx).name,
        }
    }

    /// The class name and field names of class definition `idx` as shared strings.
    fn class_shared(&mut self, idx: usize) -> SharedClass {
        if let Some(c) = self.cached_class(idx) {
            return c.clone();
        }
        let names = &self.field_names;
        let at = self.class_refs.get(idx).unwrap_or(u32::MAX) as usize;
        let def = &mut self.classes[at];
        def.shared
            .get_or_insert_with(|| {
                (
                    Arc::from(def.name.as_ref()),
                    names[def.fields.clone()]
                        .iter()
                        .map(|f| Arc::from(f.as_ref()))
                        .collect(),
                )
            })
            .clone()
    }

    /// Consumes `Z` if it comes next.
    pub(crate) fn at_end_marker(&mut self) -> Result<bool> {
        if self.peek("value or end marker")? == tags::END {
            self.pos += 1;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Reads a reference index whose `Q` tag was consumed.
    pub(crate) fn ref_index(&mut self) -> Result<u32> {
        let at = self.pos;
        let i = self.read_int()?;
        u32::try_from(i).map_err(|_| Error::InvalidRef {
            offset: at,
            kind: "object",
            index: i64::from(i),
        })
    }

    // ---- whole values -------------------------------------------------------

    /// Reads one value into a dynamic [`Value`].
    ///
    /// Back-references stay [`Value::Ref`] (indices into this stream's table
    /// of containers), so shared and cyclic graphs are kept as written.
    pub fn read_value(&mut self) -> Result<Value> {
        // Kept small: this frame is on the stack once per nesting level.
        let tag = self.prelude("value")?;
        let at = self.pos;
        self.pos += 1;
        match tags::kind(tag) {
            Kind::List => self.read_list_value(tag, at),
            Kind::Map => self.read_map_value(tag, at),
            Kind::Object => self.read_object_value(tag, at),
            _ => self.read_scalar_value(tag, at),
        }
    }

    #[inline(never)]
    fn read_scalar_value(&mut self, tag: u8, at: usize) -> Result<Value> {
        Ok(match tags::kind(tag) {
            Kind::Null => Value::Null,
            Kind::Bool => Value::Bool(tag == tags::TRUE),
            Kind::Int => Value::Int(self.int_body(tag)?),
            Kind::Long => Value::Long(self.long_body(tag)?),
            Kind::Double => Value::Double(self.double_body(tag)?),
            Kind::Date => Value::Date(self.date_body(tag)?),
            Kind::String => Value::String(self.string_body(tag)?.into_owned()),
            Kind::Binary => Value::Binary(self.binary_body(tag)?.into_owned()),
            Kind::Ref => Value::Ref(self.checked_ref(at)?),
            _ => return Err(self.unexpected(at, tag, "value")),
        })
    }

    /// Reads a reference index (tag consumed) and checks it points to a container.
    pub(crate) fn checked_ref(&mut self, at: usize) -> Result<u32> {
        let i = self.ref_index()?;
        if self.ref_valid(i) {
            Ok(i)
        } else {
            Err(Error::InvalidRef {
                offset: at,
                kind: "object",
                index: i64::from(i),
            })
        }
    }

    #[inline(never)]
    fn read_list_value(&mut self, tag: u8, at: usize) -> Result<Value> {
        self.register(at);
        self.enter()?;
        let head = self.list_head(tag)?;
        let mut items = Vec::with_capacity(head.len.unwrap_or(0).min(1024));
        match head.len {
            Some(n) => {
                for _ in 0..n {
                    items.push(self.read_value()?);
                }
            }
            None => {
                while !self.at_end_marker()? {
                    items.push(self.read_value()?);
                }
            }
        }
        self.leave();
        Ok(Value::List(List {
            type_name: head.type_name,
            items,
        }))
    }

    #[inline(never)]
    fn read_map_value(&mut self, tag: u8, at: usize) -> Result<Value> {
        self.register(at);
        self.enter()?;
        let type_name = self.map_head(tag)?;
        let mut entries = Vec::new();
        while !self.at_end_marker()? {
            let k = self.read_value()?;
            let v = self.read_value()?;
            entries.push((k, v));
        }
        self.leave();
        Ok(Value::Map(Map { type_name, entries }))
    }

    #[inline(never)]
    fn read_object_value(&mut self, tag: u8, at: usize) -> Result<Value> {
        let idx = self.object_head(tag, at)?;
        let (class, names) = self.class_shared(idx);
        self.register(at);
        self.enter()?;
        let mut fields = Vec::with_capacity(names.len());
        for f in names.iter() {
            fields.push((f.clone(), self.read_value()?));
        }
        self.leave();
        Ok(Value::Object(Object { class, fields }))
    }

    pub(crate) fn ref_valid(&self, i: u32) -> bool {
        if self.replay > 0 {
            i < self.replay_next || (i as usize) < self.refs.len()
        } else {
            (i as usize) < self.refs.len()
        }
    }

    /// Skips exactly one value without building it.
    ///
    /// Class definitions, type names and reference slots inside it are still
    /// registered, so later values of the same stream decode correctly.
    pub fn skip_value(&mut self) -> Result<()> {
        let tag = self.prelude("value")?;
        let at = self.pos;
        self.pos += 1;
        match tags::kind(tag) {
            Kind::List | Kind::Map | Kind::Object => self.skip_container(tag, at),
            _ => self.skip_scalar(tag, at),
        }
    }

    #[inline(never)]
    fn skip_scalar(&mut self, tag: u8, at: usize) -> Result<()> {
        match tags::kind(tag) {
            Kind::Null | Kind::Bool => {}
            Kind::Int => {
                self.int_body(tag)?;
            }
            Kind::Long => {
                self.long_body(tag)?;
            }
            Kind::Double => {
                self.double_body(tag)?;
            }
            Kind::Date => {
                self.date_body(tag)?;
            }
            Kind::String => self.skip_string_body(tag)?,
            Kind::Binary => self.skip_binary_body(tag)?,
            Kind::Ref => {
                self.checked_ref(at)?;
            }
            _ => return Err(self.unexpected(at, tag, "value")),
        }
        Ok(())
    }

    #[inline(never)]
    fn skip_container(&mut self, tag: u8, at: usize) -> Result<()> {
        // (items, or entries * 2, to skip; None = until `Z`)
        let count = match tags::kind(tag) {
            Kind::List => {
                self.register(at);
                self.list_head(tag)?.len
            }
            Kind::Map => {
                self.register(at);
                self.map_head(tag)?;
                None
            }
            _ => {
                let idx = self.object_head(tag, at)?;
                let n = self.class_len(idx);
                self.register(at);
                Some(n)
            }
        };
        self.enter()?;
        match count {
            Some(n) => {
                for _ in 0..n {
                    self.skip_value()?;
                }
            }
            None => {
                while !self.at_end_marker()? {
                    self.skip_value()?;
                    if tag == tags::MAP || tag == tags::MAP_TYPED {
                        self.skip_value()?;
                    }
                }
            }
        }
        self.leave();
        Ok(())
    }

    fn skip_binary_body(&mut self, mut tag: u8) -> Result<()> {
        loop {
            let (len, last) = match tag {
                0x20..=0x2f => (usize::from(tag - 0x20), true),
                0x34..=0x37 => (
                    (usize::from(tag - 0x34) << 8) | usize::from(self.byte("binary length")?),
                    true,
                ),
                _ => (
                    usize::from(u16::from_be_bytes(self.array("binary length")?)),
                    tag == tags::BINARY_FINAL,
                ),
            };
            self.take(len, "binary data")?;
            if last {
                return Ok(());
            }
            let at = self.pos;
            tag = self.byte("binary chunk")?;
            if tags::kind(tag) != Kind::Binary {
                return Err(self.unexpected(at, tag, "binary chunk"));
            }
        }
    }

    /// Moves to `pos` (used to re-read a referenced container).
    pub(crate) fn seek(&mut self, pos: usize) {
        self.pos = pos;
    }
}

/// Decodes Java's modified UTF-8 (surrogates as 3-byte sequences) into a String.
/// Lone surrogates become U+FFFD.
fn decode_cesu(bytes: &[u8], at: usize) -> Result<String> {
    let mut units: Vec<u16> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let cont = |i: usize| -> Result<u32> {
        match bytes.get(i) {
            Some(&c) if c & 0xc0 == 0x80 => Ok(u32::from(c & 0x3f)),
            _ => Err(Error::InvalidUtf8 { offset: at + i }),
        }
    };
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            0x00..=0x7f => {
                units.push(u16::from(b));
                i += 1;
            }
            0xc0..=0xdf => {
                let c = (u32::from(b & 0x1f) << 6) | cont(i + 1)?;
                units.push(c as u16);
                i += 2;
            }
            0xe0..=0xef => {
                let c = (u32::from(b & 0x0f) << 12) | (cont(i + 1)? << 6) | cont(i + 2)?;
                units.push(c as u16);
                i += 3;
            }
            _ => {
                let c = (u32::from(b & 0x07) << 18)
                    | (cont(i + 1)? << 12)
                    | (cont(i + 2)? << 6)
                    | cont(i + 3)?;
                let ch = char::from_u32(c).ok_or(Error::InvalidUtf8 { offset: at + i })?;
                let mut buf = [0u16; 2];
                units.extend_from_slice(ch.encode_utf16(&mut buf));
                i += 4;
            }
        }
    }
    Ok(char::decode_utf16(units)
        .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect())
}

/// A stack that keeps its first `N` items inline (no allocation for the
/// shallow graphs of ordinary messages).
#[derive(Debug)]
pub(crate) struct Small<T, const N: usize> {
    inline: [T; N],
    len: usize,
    spill: Vec<T>,
}

impl<T: Copy + Default, const N: usize> Default for Small<T, N> {
    fn default() -> Self {
        Small {
            inline: [T::default(); N],
            len: 0,
            spill: Vec::new(),
        }
    }
}

impl<T: Copy + PartialEq, const N: usize> Small<T, N> {
    #[inline]
    pub(crate) fn push(&mut self, v: T) {
        if self.len < N {
            self.inline[self.len] = v;
        } else {
            self.spill.push(v);
        }
        self.len += 1;
    }

    #[inline]
    pub(crate) fn pop(&mut self) {
        if self.len > N {
            self.spill.pop();
        }
        self.len = self.len.saturating_sub(1);
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn get(&self, i: usize) -> Option<T> {
        if i >= self.len {
            None
        } else if i < N {
            Some(self.inline[i])
        } else {
            self.spill.get(i - N).copied()
        }
    }

    pub(crate) fn contains(&self, v: &T) -> bool {
        self.inline[..self.len.min(N)].contains(v) || self.spill.contains(v)
    }

    pub(crate) fn clear(&mut self) {
        self.len = 0;
        self.spill.clear();
    }
}
