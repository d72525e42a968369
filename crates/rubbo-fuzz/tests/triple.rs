//! Fuzz: Triple's gRPC message framing (5-byte prefix, compression flag, length),
//! compressed messages (gzip, snappy, bzip2: bombs and garbage) and the request and
//! response wrappers inside it.

use rubbo_fuzz::targets;

#[test]
fn framing() {
    targets::TRIPLE_FRAME.fuzz();
}

#[test]
fn compressed_messages() {
    targets::TRIPLE_COMPRESSED.fuzz();
}

#[test]
fn wrappers_and_their_arguments() {
    targets::TRIPLE_WRAPPER.fuzz();
}
