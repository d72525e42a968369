//! The HPACK encoder of response header blocks (RFC 7541): static-table indices where
//! the table has the field, literals without indexing otherwise, no Huffman. It never
//! adds to the dynamic table, so the peer's SETTINGS_HEADER_TABLE_SIZE does not
//! matter to it and encoding one block costs a copy of its names and values.
//! (Decoding, which must take whatever a client sends, is h2's.)

use bytes::{BufMut, BytesMut};
use http::{HeaderMap, StatusCode};

/// Appends `v` as an HPACK integer with a `prefix`-bit prefix, `first` holding the
/// bits above the prefix (RFC 7541 §5.1).
pub(crate) fn put_int(dst: &mut BytesMut, first: u8, prefix: u8, v: usize) {
    let max = (1usize << prefix) - 1;
    if v < max {
        dst.put_u8(first | v as u8);
        return;
    }
    dst.put_u8(first | max as u8);
    let mut rest = v - max;
    while rest >= 128 {
        dst.put_u8((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    dst.put_u8(rest as u8);
}

/// Appends a string literal, not Huffman-coded (RFC 7541 §5.2).
fn put_str(dst: &mut BytesMut, s: &[u8]) {
    put_int(dst, 0, 7, s.len());
    dst.put_slice(s);
}

/// The static-table index of `:status` with this code, when the table has the pair.
fn status_index(status: StatusCode) -> Option<usize> {
    Some(match status.as_u16() {
        200 => 8,
        204 => 9,
        206 => 10,
        304 => 11,
        400 => 12,
        404 => 13,
        500 => 14,
        _ => return None,
    })
}

/// The static-table index of a header name a response may carry.
fn name_index(name: &str) -> Option<usize> {
    Some(match name {
        "content-type" => 31,
        "content-length" => 28,
        "content-encoding" => 26,
        "accept-encoding" => 16,
        "date" => 33,
        "server" => 54,
        "cache-control" => 24,
        _ => return None,
    })
}

/// Appends the header block of a response (`status`, when it is one: trailers have
/// none) with `fields`.
pub(crate) fn encode(dst: &mut BytesMut, status: Option<StatusCode>, fields: &HeaderMap) {
    if let Some(status) = status {
        match status_index(status) {
            // Indexed header field.
            Some(i) => put_int(dst, 0x80, 7, i),
            // Literal without indexing, name `:status` (index 8).
            None => {
                put_int(dst, 0, 4, 8);
                put_str(dst, status.as_str().as_bytes());
            }
        }
    }
    for (name, value) in fields {
        match name_index(name.as_str()) {
            Some(i) => put_int(dst, 0, 4, i),
            None => {
                dst.put_u8(0);
                put_str(dst, name.as_str().as_bytes());
            }
        }
        put_str(dst, value.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_follow_rfc_7541_examples() {
        // C.1.1: 10 with a 5-bit prefix; C.1.2: 1337 with a 5-bit prefix.
        let mut b = BytesMut::new();
        put_int(&mut b, 0, 5, 10);
        assert_eq!(&b[..], [0x0a]);
        let mut b = BytesMut::new();
        put_int(&mut b, 0, 5, 1337);
        assert_eq!(&b[..], [0x1f, 0x9a, 0x0a]);
        let mut b = BytesMut::new();
        put_int(&mut b, 0x80, 7, 127);
        assert_eq!(&b[..], [0xff, 0x00]);
    }

    #[test]
    fn a_grpc_response_block_uses_static_indices_and_literals() {
        let mut h = HeaderMap::new();
        h.insert("content-type", "application/grpc".parse().unwrap());
        h.insert("grpc-status", "0".parse().unwrap());
        let mut b = BytesMut::new();
        encode(&mut b, Some(StatusCode::OK), &h);
        let mut want = vec![0x88, 0x0f, 0x10, 16];
        want.extend_from_slice(b"application/grpc");
        want.extend_from_slice(&[0x00, 11]);
        want.extend_from_slice(b"grpc-status");
        want.extend_from_slice(&[1, b'0']);
        assert_eq!(&b[..], &want[..]);
        let mut b = BytesMut::new();
        encode(
            &mut b,
            Some(StatusCode::UNSUPPORTED_MEDIA_TYPE),
            &HeaderMap::new(),
        );
        assert_eq!(&b[..], [0x08, 3, b'4', b'1', b'5']);
    }
}
