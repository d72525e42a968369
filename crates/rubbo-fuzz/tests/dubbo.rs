//! Fuzz: the dubbo frame decoder (sticky and half packets, lengths, payload limit)
//! and the request and response body decoders behind it.

use bytes::BytesMut;
use rubbo_fuzz::targets;
use rubbo_remoting::Decoder;

#[test]
fn frames_with_the_default_payload_limit() {
    targets::DUBBO_FRAME.fuzz();
}

#[test]
fn frames_with_no_payload_limit() {
    targets::DUBBO_FRAME_UNLIMITED.fuzz();
}

#[test]
fn bodies() {
    targets::DUBBO_BODY.fuzz();
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
    targets::DUBBO_FRAME_UNLIMITED.run(&header);
}
