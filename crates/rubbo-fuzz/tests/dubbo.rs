//! Fuzz: the dubbo frame decoder (sticky and half packets, lengths, payload limit)
//! and the request and response body decoders behind it.

mod support;

use bytes::BytesMut;
use rubbo_protocol_dubbo::codec;
use rubbo_remoting::{Decoded, Decoder};

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

#[test]
fn frames_with_the_default_payload_limit() {
    rubbo_fuzz::fuzz(
        "dubbo-frame",
        &support::dubbo_frames(),
        &[
            b"\xda\xbb\xc2\x00",
            b"\xda\xbb\x02\x14",
            b"\xda\xbb\xe2\x00",
        ],
        |input| decode_stream(input, 8 * 1024 * 1024),
    );
}

#[test]
fn frames_with_no_payload_limit() {
    // `payload=0` trusts the peer's length more: still no allocation from it alone.
    rubbo_fuzz::fuzz(
        "dubbo-frame-unlimited",
        &support::dubbo_frames(),
        &[b"\xda\xbb\xc2\x00", b"\xda\xbb\x02\x14"],
        |input| decode_stream(input, 0),
    );
}

#[test]
fn bodies() {
    rubbo_fuzz::fuzz(
        "dubbo-body",
        &support::dubbo_bodies(),
        support::HESSIAN_TAGS,
        |input| {
            let body = rubbo_fuzz::bytes(input);
            let _ = codec::decode_request(2, &body);
            let _ = codec::decode_request_full(2, &body);
            let _ = codec::decode_response(2, &body);
            let _ = codec::decode_error_text(2, &body);
        },
    );
}

/// Found by `frames_with_no_payload_limit`: a 16-byte header announcing a 2 GiB body
/// made the decoder reserve 2 GiB before a byte of it arrived.
#[test]
fn a_declared_length_reserves_nothing_big() {
    let header = rubbo_fuzz::unhex("dabbc20000000000000000077fffffff");
    for payload in [0, 8 * 1024 * 1024] {
        let mut buf = BytesMut::from(&header[..]);
        let mut decoder = Decoder::new(payload);
        let _ = decoder.decode(&mut buf);
        assert!(
            buf.capacity() <= rubbo_fuzz::MAX_ALLOC,
            "{}",
            buf.capacity()
        );
    }
}
