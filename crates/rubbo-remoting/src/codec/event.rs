//! Event bodies and the default error-body encoder.

use bytes::{BufMut, Bytes, BytesMut};

/// Hessian2 encoding of `null`: the body of a heartbeat.
pub const HESSIAN2_NULL: &[u8] = &[0x4e];
/// Hessian2 string `"R"`: the readonly event body.
pub const READONLY_EVENT_BODY: &[u8] = &[0x01, 0x52];
/// Hessian2 string `"W"`: the writable event body (clears readonly).
pub const WRITABLE_EVENT_BODY: &[u8] = &[0x01, 0x57];
/// Event bodies longer than this are rejected (`deserialization.event.size`).
pub const MAX_EVENT_BODY: usize = 15;

/// Builds the body of an error response (status other than 20) from its message.
///
/// The body of an error response is a serialized string in the response's
/// serialization; the protocol layer owns serialization, so it may plug its own
/// encoder into [`ClientConfig`](crate::ClientConfig) and
/// [`ServerConfig`](crate::ServerConfig). The default is [`hessian2_error_body`].
pub type ErrorBodyFn = fn(serialization: u8, message: &str) -> Bytes;

/// Encodes `message` as one hessian2 string, as hessian-lite's `writeString` does
/// (length in UTF-16 units, 0x8000-unit chunks, each unit written as UTF-8 of
/// that unit). Ignores `serialization`.
///
/// ```
/// use rubbo_remoting::hessian2_error_body;
/// assert_eq!(&hessian2_error_body(2, "R")[..], &[0x01, 0x52]);
/// ```
pub fn hessian2_error_body(_serialization: u8, message: &str) -> Bytes {
    let units: Vec<u16> = message.encode_utf16().collect();
    let mut out = BytesMut::with_capacity(message.len() + 8);
    let mut rest = &units[..];
    while rest.len() > 0x8000 {
        // a non-final chunk never ends on a high surrogate (hessian-lite shortens it)
        let mut n = 0x8000;
        if (0xd800..=0xdbff).contains(&rest[n - 1]) {
            n -= 1;
        }
        out.put_u8(b'R');
        out.put_u16(n as u16);
        put_units(&mut out, &rest[..n]);
        rest = &rest[n..];
    }
    let len = rest.len();
    if len <= 31 {
        out.put_u8(len as u8);
    } else if len <= 1023 {
        out.put_u8(0x30 + (len >> 8) as u8);
        out.put_u8(len as u8);
    } else {
        out.put_u8(b'S');
        out.put_u16(len as u16);
    }
    put_units(&mut out, rest);
    out.freeze()
}

/// Each UTF-16 unit as the UTF-8 of that unit (surrogates take 3 bytes each).
fn put_units(out: &mut BytesMut, units: &[u16]) {
    for &u in units {
        let u = u32::from(u);
        if u < 0x80 {
            out.put_u8(u as u8);
        } else if u < 0x800 {
            out.put_u8(0xc0 | (u >> 6) as u8);
            out.put_u8(0x80 | (u & 0x3f) as u8);
        } else {
            out.put_u8(0xe0 | (u >> 12) as u8);
            out.put_u8(0x80 | ((u >> 6) & 0x3f) as u8);
            out.put_u8(0x80 | (u & 0x3f) as u8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hessian2_strings() {
        assert_eq!(&hessian2_error_body(2, "")[..], &[0x00]);
        assert_eq!(&hessian2_error_body(2, "W")[..], WRITABLE_EVENT_BODY);
        let s32 = "a".repeat(32);
        let b = hessian2_error_body(2, &s32);
        assert_eq!(&b[..2], &[0x30, 0x20]);
        assert_eq!(b.len(), 34);
        let s = "x".repeat(2000);
        let b = hessian2_error_body(2, &s);
        assert_eq!(&b[..3], &[b'S', 0x07, 0xd0]);
        // two-byte and three-byte units, length counted in UTF-16 units
        let b = hessian2_error_body(2, "é中");
        assert_eq!(&b[..], &[0x02, 0xc3, 0xa9, 0xe4, 0xb8, 0xad]);
        // a non-BMP char is two surrogates, three bytes each
        let b = hessian2_error_body(2, "😀");
        assert_eq!(b[0], 0x02);
        assert_eq!(b.len(), 7);
        let long = "y".repeat(0x8001);
        let b = hessian2_error_body(2, &long);
        assert_eq!(&b[..3], &[b'R', 0x80, 0x00]);
        assert_eq!(&b[3 + 0x8000..3 + 0x8000 + 2], &[0x01, b'y']);
        let exact = "z".repeat(0x8000);
        assert_eq!(&hessian2_error_body(2, &exact)[..3], &[b'S', 0x80, 0x00]);
        // "a" x 32767 + U+1F600 + "b" x 100: the first chunk stops before the surrogate pair
        let s = format!("{}\u{1F600}{}", "a".repeat(32767), "b".repeat(100));
        let b = hessian2_error_body(2, &s);
        assert_eq!(&b[..3], &[b'R', 0x7f, 0xff]);
        assert_eq!(&b[3 + 32767..3 + 32767 + 2], &[0x30, 102]);
    }
}
