//! The dubbo frame decoder (sticky and half packets, lengths, payload limit) and the
//! request and response body decoders behind it.

use bytes::BytesMut;
use rubbo_protocol_dubbo::codec;
use rubbo_remoting::{Decoded, Decoder};

/// Dubbo header heads worth inserting (magic, flags, status).
pub const FRAME_DICT: &[&[u8]] = &[
    b"\xda\xbb\xc2\x00",
    b"\xda\xbb\x02\x14",
    b"\xda\xbb\xe2\x00",
];

/// The default `payload` limit: 8 MiB.
const DEFAULT_PAYLOAD: i64 = 8 * 1024 * 1024;

/// Frames under the default payload limit.
pub fn frames(input: &[u8]) {
    decode_stream(input, DEFAULT_PAYLOAD);
}

/// Frames with `payload=0`, which trusts the peer's length more: still no allocation
/// from it alone.
pub fn frames_unlimited(input: &[u8]) {
    decode_stream(input, 0);
}

/// A body as every body decoder reads it (Hessian 2 serialization).
pub fn bodies(input: &[u8]) {
    let body = crate::bytes(input);
    let _ = codec::decode_request(2, &body);
    let _ = codec::decode_request_full(2, &body);
    let _ = codec::decode_response(2, &body);
    let _ = codec::decode_error_text(2, &body);
}

/// Feeds `input` to a decoder in pieces and decodes every frame's body.
fn decode_stream(input: &[u8], payload: i64) {
    let mut decoder = Decoder::new(payload);
    let mut buf = BytesMut::new();
    // Pieces sized by the input's first byte: whole, halves, a few bytes at a time.
    let step = match input.first() {
        Some(b) if b % 3 == 0 => 1 + (*b as usize % 7),
        Some(b) if b % 3 == 1 => input.len() / 2 + 1,
        _ => input.len().max(1),
    };
    for piece in input.chunks(step) {
        buf.extend_from_slice(piece);
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(Decoded::Request(req))) => {
                    if !req.event {
                        let _ = codec::decode_request(req.serialization, &req.body);
                        let _ = codec::decode_request_full(req.serialization, &req.body);
                    }
                }
                Ok(Some(Decoded::Response(resp))) => {
                    let _ = codec::decode_response(resp.serialization, &resp.body);
                    let _ = codec::decode_error_text(resp.serialization, &resp.body);
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
}
