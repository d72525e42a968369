//! Bodies encoded into a shared per-thread chunk instead of one allocation each.
//!
//! Each body is split off the chunk as its own `Bytes` (a reference count, no copy),
//! so small bodies share one allocation until the chunk is used up; the memory goes
//! back when the last body cut from it is dropped (they live until written).

use std::cell::RefCell;

use bytes::{Bytes, BytesMut};

/// Size of a fresh chunk.
const CHUNK: usize = 32 * 1024;
/// Bodies expected to be larger get a buffer of their own.
const MAX_SHARED: usize = CHUNK / 4;

thread_local! {
    static CHUNK_BUF: RefCell<BytesMut> = RefCell::new(BytesMut::new());
}

/// Encodes a body with `encode`, which appends to the buffer it is given. `hint` is
/// the expected size. On error nothing is kept.
pub(crate) fn encode<E>(
    hint: usize,
    encode: impl FnOnce(&mut BytesMut) -> Result<(), E>,
) -> Result<Bytes, E> {
    if hint > MAX_SHARED {
        let mut own = BytesMut::with_capacity(hint);
        encode(&mut own)?;
        return Ok(own.freeze());
    }
    CHUNK_BUF.with_borrow_mut(|buf| {
        buf.clear();
        if buf.capacity() < hint {
            *buf = BytesMut::with_capacity(CHUNK);
        }
        match encode(buf) {
            Ok(()) => Ok(buf.split().freeze()),
            Err(e) => {
                buf.clear();
                Err(e)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_independent_and_errors_leave_nothing() {
        let a = encode::<()>(16, |b| {
            b.extend_from_slice(b"first");
            Ok(())
        })
        .unwrap();
        assert!(
            encode(16, |b| {
                b.extend_from_slice(b"partial");
                Err("bad")
            })
            .is_err()
        );
        let b = encode::<()>(16, |b| {
            b.extend_from_slice(b"second");
            Ok(())
        })
        .unwrap();
        assert_eq!((&a[..], &b[..]), (&b"first"[..], &b"second"[..]));
        let big = encode::<()>(MAX_SHARED + 1, |b| {
            b.extend_from_slice(&[7; 100_000]);
            Ok(())
        })
        .unwrap();
        assert_eq!(big.len(), 100_000);
        let after = encode::<()>(16, |b| {
            b.extend_from_slice(&[1; 50_000]);
            Ok(())
        })
        .unwrap();
        assert!(after.iter().all(|x| *x == 1) && after.len() == 50_000);
        assert_eq!(&a[..], b"first", "earlier bodies are untouched");
    }
}
