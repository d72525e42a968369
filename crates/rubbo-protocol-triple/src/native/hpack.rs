//! The HPACK encoder of response header blocks (RFC 7541): static-table indices where
//! the table has the field, literals otherwise, no Huffman. The few fields every gRPC
//! response repeats (`content-type: application/grpc`, `grpc-status: 0`,
//! `grpc-accept-encoding`, ...) go into the dynamic table the first time and are one
//! byte from then on, as h2's encoder sends them: the client then decodes an index
//! instead of a name it must check and copy. The table only grows to a few entries
//! and never evicts, so an index is the entry's place counted from the newest.
//! (Decoding, which must take whatever a client sends, is h2's.)

use bytes::{BufMut, BytesMut};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

/// The dynamic table's size before the peer's SETTINGS_HEADER_TABLE_SIZE.
const DEFAULT_TABLE: usize = 4096;
/// The most entries this encoder adds (each lookup scans them).
const MAX_ENTRIES: usize = 16;
/// The first dynamic-table index (after the static table's 61).
const FIRST_DYNAMIC: usize = 62;

/// An encoder of one connection's response header blocks, with its dynamic table.
#[derive(Debug)]
pub(crate) struct Encoder {
    /// The entries added, oldest first.
    entries: Vec<(HeaderName, HeaderValue)>,
    /// Their size as HPACK counts it (RFC 7541 §4.1).
    size: usize,
    /// The table's maximum size the peer's decoder applies.
    max: usize,
    /// A smaller maximum to announce at the start of the next block.
    update: Option<usize>,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder {
            entries: Vec::new(),
            size: 0,
            max: DEFAULT_TABLE,
            update: None,
        }
    }
}

/// A field worth a dynamic-table entry: a value every response of a kind repeats.
fn indexable(name: &HeaderName, value: &HeaderValue) -> bool {
    let name = name.as_str();
    (name == "content-type"
        || name == "grpc-status"
        || name == "grpc-accept-encoding"
        || name == "grpc-encoding")
        && value.len() <= 64
}

impl Encoder {
    /// The peer's SETTINGS_HEADER_TABLE_SIZE: a smaller table is announced at the
    /// start of the next block (RFC 7541 §4.2), its oldest entries evicted as the
    /// peer's decoder does.
    pub(crate) fn set_max_size(&mut self, size: usize) {
        if size >= self.max {
            return;
        }
        self.max = size;
        self.update = Some(size);
        while self.size > self.max {
            let (n, v) = self.entries.remove(0);
            self.size -= entry_size(&n, &v);
        }
    }

    /// Appends the header block of a response (`status`, when it is one: trailers
    /// have none) with `fields`.
    pub(crate) fn encode(
        &mut self,
        dst: &mut BytesMut,
        status: Option<StatusCode>,
        fields: &HeaderMap,
    ) {
        if let Some(size) = self.update.take() {
            // Dynamic table size update.
            put_int(dst, 0x20, 5, size);
        }
        if let Some(status) = status {
            put_status(dst, status);
        }
        for (name, value) in fields {
            if let Some(i) = self.find(name, value) {
                // Indexed header field.
                put_int(dst, 0x80, 7, i);
                continue;
            }
            if indexable(name, value) && self.entries.len() < MAX_ENTRIES {
                let size = entry_size(name, value);
                if self.size + size <= self.max {
                    // Literal with incremental indexing.
                    put_name(dst, 0x40, 6, name);
                    put_str(dst, value.as_bytes());
                    self.entries.push((name.clone(), value.clone()));
                    self.size += size;
                    continue;
                }
            }
            put_name(dst, 0, 4, name);
            put_str(dst, value.as_bytes());
        }
    }

    /// The index of the entry with this field, if the table has it.
    fn find(&self, name: &HeaderName, value: &HeaderValue) -> Option<usize> {
        let newest = self.entries.len().checked_sub(1)?;
        self.entries
            .iter()
            .position(|(n, v)| n == name && v.as_bytes() == value.as_bytes())
            .map(|i| FIRST_DYNAMIC + newest - i)
    }
}

/// An entry's size as HPACK counts it (RFC 7541 §4.1).
fn entry_size(name: &HeaderName, value: &HeaderValue) -> usize {
    name.as_str().len() + value.len() + 32
}

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

/// Appends `:status` (indexed when the static table has it).
fn put_status(dst: &mut BytesMut, status: StatusCode) {
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

/// Appends a literal's first byte(s) (`first`, with a `prefix`-bit name index) and
/// its name: the static table's index, or the name itself after index 0.
fn put_name(dst: &mut BytesMut, first: u8, prefix: u8, name: &HeaderName) {
    match name_index(name.as_str()) {
        Some(i) => put_int(dst, first, prefix, i),
        None => {
            dst.put_u8(first);
            put_str(dst, name.as_str().as_bytes());
        }
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
    fn a_grpc_response_block_indexes_its_repeated_fields_the_second_time() {
        let mut h = HeaderMap::new();
        h.insert("content-type", "application/grpc".parse().unwrap());
        h.insert("grpc-status", "0".parse().unwrap());
        h.insert("x-id", "7".parse().unwrap());
        let mut enc = Encoder::default();
        let mut b = BytesMut::new();
        enc.encode(&mut b, Some(StatusCode::OK), &h);
        // :status 200 indexed; content-type (static name 31) and grpc-status (literal
        // name) added to the table; x-id a literal without indexing.
        let mut want = vec![0x88, 0x5f, 16];
        want.extend_from_slice(b"application/grpc");
        want.extend_from_slice(&[0x40, 11]);
        want.extend_from_slice(b"grpc-status");
        want.extend_from_slice(&[1, b'0', 0x00, 4]);
        want.extend_from_slice(b"x-id");
        want.extend_from_slice(&[1, b'7']);
        assert_eq!(&b[..], &want[..]);
        // Then: content-type is the older entry (63), grpc-status the newer (62).
        let mut b = BytesMut::new();
        enc.encode(&mut b, Some(StatusCode::OK), &h);
        let mut want = vec![0x88, 0x80 | 63, 0x80 | 62, 0x00, 4];
        want.extend_from_slice(b"x-id");
        want.extend_from_slice(&[1, b'7']);
        assert_eq!(&b[..], &want[..]);
        // A status the static table lacks is a literal.
        let mut b = BytesMut::new();
        Encoder::default().encode(
            &mut b,
            Some(StatusCode::UNSUPPORTED_MEDIA_TYPE),
            &HeaderMap::new(),
        );
        assert_eq!(&b[..], [0x08, 3, b'4', b'1', b'5']);
    }

    #[test]
    fn a_smaller_peer_table_is_announced_and_evicts_the_oldest() {
        let mut h = HeaderMap::new();
        h.insert("content-type", "application/grpc".parse().unwrap());
        h.insert("grpc-status", "0".parse().unwrap());
        let mut enc = Encoder::default();
        enc.encode(&mut BytesMut::new(), None, &h);
        // content-type: 12 + 16 + 32 = 60; grpc-status: 11 + 1 + 32 = 44.
        enc.set_max_size(50);
        let mut b = BytesMut::new();
        enc.encode(&mut b, None, &h);
        // Size update to 50, then content-type (evicted, no room to add it again)
        // as a literal, grpc-status indexed (now the only entry, 62).
        let mut want = vec![0x3f, 50 - 31, 0x0f, 31 - 15, 16];
        want.extend_from_slice(b"application/grpc");
        want.push(0x80 | 62);
        assert_eq!(&b[..], &want[..]);
        // A table of 0: nothing indexed, nothing added.
        enc.set_max_size(0);
        let mut b = BytesMut::new();
        enc.encode(&mut b, None, &h);
        assert_eq!(b[0], 0x20, "size update to 0");
        assert!(enc.entries.is_empty());
    }
}
