//! Triple's gRPC message framing (5-byte prefix, compression flag, length),
//! compressed messages (gzip, snappy, bzip2: bombs and garbage) and the request and
//! response wrappers inside it.

use bytes::Bytes;
use prost::Message;
use rubbo_protocol_triple::compress::Encoding;
use rubbo_protocol_triple::frame;
use rubbo_protocol_triple::wrapper::{TripleRequestWrapper, TripleResponseWrapper};

/// The encodings a peer may name in `grpc-encoding`.
const ENCODINGS: [Encoding; 3] = [Encoding::Gzip, Encoding::Snappy, Encoding::Bzip2];

/// The payload limit of the compressed target: 1 MiB, never more is inflated.
const INFLATE_LIMIT: usize = 1 << 20;

/// [`INFLATE_LIMIT`] as the decoder's `payload` setting.
const PAYLOAD: i64 = INFLATE_LIMIT as i64;

/// Message prefixes: empty, compressed, 2 GiB.
pub const FRAME_DICT: &[&[u8]] = &[
    b"\x00\x00\x00\x00\x05",
    b"\x01\x00\x00\x00\x01",
    b"\x00\x7f\xff\xff\xff",
];

/// Compressed prefixes and the gzip and bzip2 magic.
pub const COMPRESSED_DICT: &[&[u8]] = &[
    b"\x01\x00\x00\x00\x0a",
    b"\x1f\x8b\x08\x00",
    b"BZh9",
    b"\xff\xff\xff\xff\x0f",
];

/// Wrapper field tags and lengths.
pub const WRAPPER_DICT: &[&[u8]] = &[
    b"\x0a\x08hessian4",
    b"\x12",
    b"\x1a",
    b"\x0a",
    b"\x12\xff\xff\xff\xff\x0f",
];

fn hessian(v: &impl serde::Serialize) -> Bytes {
    Bytes::from(rubbo_hessian2::to_vec(v).unwrap_or_default())
}

/// Request and response wrappers as Java writes them, some around the bodies of
/// Java's dubbo frames.
pub fn wrapper_seeds() -> Vec<Vec<u8>> {
    let request = TripleRequestWrapper {
        serialize_type: "hessian4".into(),
        args: vec![
            hessian(&"hello"),
            hessian(&42i32),
            hessian(&vec![1i64, 2, 3]),
        ],
        arg_types: vec![
            "java.lang.String".into(),
            "int".into(),
            "java.util.List".into(),
        ],
    };
    let response = TripleResponseWrapper {
        serialize_type: "hessian4".into(),
        data: hessian(&"world"),
        r#type: "java.lang.String".into(),
    };
    let empty = TripleRequestWrapper {
        serialize_type: "hessian2".into(),
        args: vec![],
        arg_types: vec![],
    };
    let mut seeds = vec![
        request.encode_to_vec(),
        response.encode_to_vec(),
        empty.encode_to_vec(),
    ];
    seeds.extend(
        crate::seeds::dubbo_bodies()
            .into_iter()
            .take(8)
            .map(|body| {
                TripleResponseWrapper {
                    serialize_type: "hessian4".into(),
                    data: Bytes::from(body),
                    r#type: String::new(),
                }
                .encode_to_vec()
            }),
    );
    seeds
}

/// The wrappers, framed.
pub fn frame_seeds() -> Vec<Vec<u8>> {
    wrapper_seeds()
        .iter()
        .filter_map(|w| frame::encode(w).ok().map(|f| f.to_vec()))
        .collect()
}

/// The wrappers framed compressed in every encoding, and a bomb in each: twice the
/// payload limit, in zeros.
pub fn compressed_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for e in ENCODINGS {
        for w in wrapper_seeds() {
            if let Ok(f) = frame::encode_with(&w, Some(e)) {
                seeds.push(f.to_vec());
            }
        }
        if let Ok(f) = frame::encode_with(&vec![0u8; 2 * INFLATE_LIMIT], Some(e)) {
            seeds.push(f.to_vec());
        }
    }
    seeds
}

/// A framed message, with and without a payload limit, and the wrappers inside.
pub fn framing(input: &[u8]) {
    let body = crate::bytes(input);
    for max in [0, 8 * 1024 * 1024] {
        if let Ok(message) = frame::decode_unary(&body, max) {
            unwrap_all(message);
        }
    }
}

/// A framed message read as compressed in each encoding.
pub fn compressed(input: &[u8]) {
    let body = crate::bytes(input);
    for e in ENCODINGS {
        if let Ok(message) = frame::decode_unary_with(&body, PAYLOAD, Some(e)) {
            assert!(message.len() <= INFLATE_LIMIT, "inflated past the limit");
            unwrap_all(message);
        }
    }
}

/// A message as both wrappers, and their arguments.
pub fn wrappers(input: &[u8]) {
    unwrap_all(crate::bytes(input));
}

fn unwrap_all(message: Bytes) {
    if let Ok(req) = TripleRequestWrapper::decode_strict(message.clone()) {
        let _ = req.descriptor();
        let _ = req.arguments();
    }
    if let Ok(resp) = TripleResponseWrapper::decode_strict(message) {
        let _ = resp.clone().into_result(false);
        let _ = resp.into_result(true);
    }
}
