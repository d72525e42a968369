//! Fuzz: Triple's gRPC message framing (5-byte prefix, compression flag, length),
//! compressed messages (gzip, snappy, bzip2: bombs and garbage) and the request and
//! response wrappers inside it.

mod support;

use bytes::Bytes;
use prost::Message;
use rubbo_protocol_triple::compress::Encoding;
use rubbo_protocol_triple::frame;
use rubbo_protocol_triple::wrapper::{TripleRequestWrapper, TripleResponseWrapper};

fn hessian(v: &impl serde::Serialize) -> Bytes {
    Bytes::from(rubbo_hessian2::to_vec(v).unwrap_or_default())
}

fn wrappers() -> Vec<Vec<u8>> {
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
    seeds.extend(support::dubbo_bodies().into_iter().take(8).map(|body| {
        TripleResponseWrapper {
            serialize_type: "hessian4".into(),
            data: Bytes::from(body),
            r#type: String::new(),
        }
        .encode_to_vec()
    }));
    seeds
}

fn framed() -> Vec<Vec<u8>> {
    wrappers()
        .iter()
        .filter_map(|w| frame::encode(w).ok().map(|f| f.to_vec()))
        .collect()
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

#[test]
fn framing() {
    rubbo_fuzz::fuzz(
        "triple-frame",
        &framed(),
        &[
            b"\x00\x00\x00\x00\x05",
            b"\x01\x00\x00\x00\x01",
            b"\x00\x7f\xff\xff\xff",
        ],
        |input| {
            for max in [0, 8 * 1024 * 1024] {
                if let Ok(message) = frame::decode_unary(&rubbo_fuzz::bytes(input), max) {
                    unwrap_all(message);
                }
            }
        },
    );
}

#[test]
fn compressed_messages() {
    let encodings = [Encoding::Gzip, Encoding::Snappy, Encoding::Bzip2];
    let mut seeds = Vec::new();
    for e in encodings {
        for w in wrappers() {
            if let Ok(f) = frame::encode_with(&w, Some(e)) {
                seeds.push(f.to_vec());
            }
        }
        // A bomb: twice the payload below, in zeros.
        if let Ok(f) = frame::encode_with(&vec![0u8; 2 << 20], Some(e)) {
            seeds.push(f.to_vec());
        }
    }
    rubbo_fuzz::fuzz(
        "triple-compressed",
        &seeds,
        &[
            b"\x01\x00\x00\x00\x0a",
            b"\x1f\x8b\x08\x00",
            b"BZh9",
            b"\xff\xff\xff\xff\x0f",
        ],
        move |input| {
            let body = rubbo_fuzz::bytes(input);
            for e in encodings {
                // A payload of 1 MiB: never more is inflated.
                if let Ok(message) = frame::decode_unary_with(&body, 1 << 20, Some(e)) {
                    assert!(message.len() <= 1 << 20);
                    unwrap_all(message);
                }
            }
        },
    );
}

#[test]
fn wrappers_and_their_arguments() {
    rubbo_fuzz::fuzz(
        "triple-wrapper",
        &wrappers(),
        &[
            b"\x0a\x08hessian4",
            b"\x12",
            b"\x1a",
            b"\x0a",
            b"\x12\xff\xff\xff\xff\x0f",
        ],
        |input| unwrap_all(rubbo_fuzz::bytes(input)),
    );
}
