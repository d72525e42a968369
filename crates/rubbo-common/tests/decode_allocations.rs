//! Typed decoding through a `Serialization` allocates only what the decoded value
//! holds: the values cross the erased boundary without a box each.
//!
//! One test in its own binary, so no other test allocates while it counts.
#![allow(missing_docs, clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::{Bytes, BytesMut};
use rubbo_common::serialization::{DeserializeFn, Serialization, SerializationError};
use rubbo_common::{Arguments, Encoded, Payload, Value};
use serde::de::value::{BorrowedStrDeserializer, SeqDeserializer};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: delegates every call to the system allocator, only counting allocations.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Values are UTF-8 strings ended by a NUL byte.
struct Lines;

static LINES: Lines = Lines;

fn split(bytes: &[u8]) -> impl Iterator<Item = &str> {
    bytes
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| std::str::from_utf8(s).unwrap_or(""))
}

impl Serialization for Lines {
    fn name(&self) -> &'static str {
        "lines"
    }
    fn id(&self) -> u8 {
        31
    }
    fn content_type(&self) -> &'static str {
        "text/x-lines"
    }
    fn read_values(&self, bytes: &[u8], count: usize) -> Result<Vec<Value>, SerializationError> {
        Ok(split(bytes).take(count).map(Value::from).collect())
    }
    fn deserialize<'de>(
        &self,
        bytes: &'de [u8],
        visit: &mut DeserializeFn<'_, 'de>,
    ) -> Result<(), SerializationError> {
        let first = split(bytes).next().unwrap_or("");
        let d = BorrowedStrDeserializer::<erased_serde::Error>::new(first);
        visit(&mut <dyn erased_serde::Deserializer>::erase(d))
            .map_err(|e| SerializationError::read("lines", e))
    }
    fn deserialize_values<'de>(
        &self,
        bytes: &'de [u8],
        count: usize,
        visit: &mut DeserializeFn<'_, 'de>,
    ) -> Result<(), SerializationError> {
        let items = split(bytes).take(count).map(BorrowedStrDeserializer::new);
        let d = SeqDeserializer::<_, erased_serde::Error>::new(items);
        visit(&mut <dyn erased_serde::Deserializer>::erase(d))
            .map_err(|e| SerializationError::read("lines", e))
    }
    fn write_value(&self, _: &Value, _: &mut BytesMut) -> Result<(), SerializationError> {
        Err(SerializationError::write("lines", "read-only"))
    }
    fn write(
        &self,
        _: &dyn erased_serde::Serialize,
        _: &mut BytesMut,
    ) -> Result<(), SerializationError> {
        Err(SerializationError::write("lines", "read-only"))
    }
    fn write_values(
        &self,
        _: &dyn erased_serde::Serialize,
        _: &mut BytesMut,
    ) -> Result<(), SerializationError> {
        Err(SerializationError::write("lines", "read-only"))
    }
}

fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    f();
    ALLOCATIONS.load(Ordering::SeqCst) - before
}

#[test]
fn typed_decoding_allocates_only_the_decoded_strings() {
    let args = Arguments::Encoded {
        count: 2,
        encoded: Encoded::new(
            &LINES,
            Bytes::from_static(b"a string longer than 16 bytes\0two\0"),
        ),
    };
    let payload = Payload::Encoded(Encoded::new(&LINES, Bytes::from_static(b"hello\0")));
    // Warm up anything lazily initialised.
    let _: (String, String) = args.decode().unwrap();
    let _: String = payload.decode().unwrap();

    let n = allocations(|| {
        let (a, b): (String, String) = args.decode().unwrap();
        assert_eq!((a.len(), b.as_str()), (29, "two"));
    });
    assert_eq!(n, 2, "one allocation per String, none for the tuple");
    let n = allocations(|| {
        let s: String = payload.decode().unwrap();
        assert_eq!(s, "hello");
    });
    assert_eq!(n, 1, "one allocation for the String");
}
