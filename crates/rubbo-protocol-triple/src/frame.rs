//! gRPC length-prefixed messages: 1 flag byte (bit 0 = compressed, bits 1-7 zero),
//! a 4-byte big-endian length, the payload.

use bytes::{BufMut, Bytes, BytesMut};

use crate::compress::Encoding;
use crate::error::TripleError;

/// The size of the prefix.
pub const PREFIX_LEN: usize = 5;

/// Frames `payload` as one uncompressed message.
pub fn encode(payload: &[u8]) -> Result<Bytes, TripleError> {
    let len = u32::try_from(payload.len()).map_err(|_| TripleError::TooLarge {
        len: payload.len(),
        max: u32::MAX as usize,
    })?;
    let mut out = BytesMut::with_capacity(PREFIX_LEN + payload.len());
    out.put_u8(0);
    out.put_u32(len);
    out.put_slice(payload);
    Ok(out.freeze())
}

/// Frames `payload` as one message, compressed with `encoding` if there is one.
pub fn encode_with(payload: &[u8], encoding: Option<Encoding>) -> Result<Bytes, TripleError> {
    let Some(e) = encoding else {
        return encode(payload);
    };
    let compressed = e.compress(payload)?;
    let mut out = BytesMut::from(&encode(&compressed)?[..]);
    out[0] = 1;
    Ok(out.freeze())
}

/// Reads the one message of a unary body: exactly one uncompressed message of at most
/// `max` bytes (0 or less: no limit).
pub fn decode_unary(body: &Bytes, max: i64) -> Result<Bytes, TripleError> {
    decode_unary_with(body, max, None)
}

/// Reads the one message of a unary body, as [`decode_unary`]; a message with the
/// compressed flag is decompressed with the call's `encoding` to at most `max` bytes.
pub fn decode_unary_with(
    body: &Bytes,
    max: i64,
    encoding: Option<Encoding>,
) -> Result<Bytes, TripleError> {
    if body.len() < PREFIX_LEN {
        return Err(if body.is_empty() {
            TripleError::MissingMessage
        } else {
            TripleError::Truncated {
                have: body.len(),
                need: PREFIX_LEN,
            }
        });
    }
    let flags = body[0];
    if flags & 0xfe != 0 {
        return Err(TripleError::BadFlags(flags));
    }
    let compressed = flags & 1 != 0;
    if compressed && encoding.is_none() {
        return Err(TripleError::Compressed);
    }
    let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
    if max > 0 && len as u64 > max as u64 {
        return Err(TripleError::TooLarge {
            len,
            max: usize::try_from(max).unwrap_or(usize::MAX),
        });
    }
    let end = PREFIX_LEN + len;
    if body.len() < end {
        return Err(TripleError::Truncated {
            have: body.len(),
            need: end,
        });
    }
    if body.len() > end {
        return Err(TripleError::ExtraMessages);
    }
    let message = body.slice(PREFIX_LEN..end);
    match encoding {
        Some(e) if compressed => e.decompress(&message, max),
        _ => Ok(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_message_round_trips_and_bad_prefixes_are_refused() {
        let framed = encode(b"hello").unwrap();
        assert_eq!(&framed[..], b"\x00\x00\x00\x00\x05hello");
        assert_eq!(&decode_unary(&framed, 0).unwrap()[..], b"hello");
        assert_eq!(&decode_unary(&encode(b"").unwrap(), 8).unwrap()[..], b"");
        let err = |b: &'static [u8], max| decode_unary(&Bytes::from_static(b), max).unwrap_err();
        assert!(matches!(err(b"", 0), TripleError::MissingMessage));
        assert!(matches!(err(b"\x00\x00", 0), TripleError::Truncated { .. }));
        assert!(matches!(
            err(b"\x00\x00\x00\x00\x09hi", 0),
            TripleError::Truncated { .. }
        ));
        assert!(matches!(
            err(b"\x01\x00\x00\x00\x01x", 0),
            TripleError::Compressed
        ));
        assert!(matches!(
            err(b"\x02\x00\x00\x00\x01x", 0),
            TripleError::BadFlags(2)
        ));
        assert!(matches!(
            err(b"\x00\x00\x00\x00\x05hello", 4),
            TripleError::TooLarge { len: 5, max: 4 }
        ));
        assert!(matches!(
            err(b"\x00\x00\x00\x00\x01x\x00\x00\x00\x00\x01y", 0),
            TripleError::ExtraMessages
        ));
    }

    #[test]
    fn a_compressed_message_is_flagged_and_read_back_with_its_encoding() {
        let framed = encode_with(b"hello hello hello", Some(Encoding::Gzip)).unwrap();
        assert_eq!(framed[0], 1, "compressed flag");
        let read = decode_unary_with(&framed, 0, Some(Encoding::Gzip)).unwrap();
        assert_eq!(&read[..], b"hello hello hello");
        // The flag with identity as the call's encoding is refused, as before.
        assert!(matches!(
            decode_unary(&framed, 0),
            Err(TripleError::Compressed)
        ));
        // An uncompressed message of a call with an encoding is taken as it is.
        let plain = encode_with(b"hi", None).unwrap();
        assert_eq!(
            &decode_unary_with(&plain, 0, Some(Encoding::Gzip)).unwrap()[..],
            b"hi"
        );
        // Inflating past max is refused.
        let bomb = encode_with(&[0u8; 4096], Some(Encoding::Gzip)).unwrap();
        assert!(matches!(
            decode_unary_with(&bomb, 1000, Some(Encoding::Gzip)),
            Err(TripleError::TooLarge { max: 1000, .. })
        ));
    }
}
