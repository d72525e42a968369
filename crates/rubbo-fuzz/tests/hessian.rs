//! Fuzz: the Hessian 2 reader, as values, skipped values and typed serde shapes.

mod support;

use std::collections::HashMap;

use rubbo_hessian2::{Decoder, Value, decode_value, from_slice};
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct User {
    id: Option<i64>,
    name: Option<String>,
    tags: Option<Vec<String>>,
    props: Option<HashMap<String, String>>,
    scores: Option<Vec<f64>>,
    raw: Option<serde_bytes_like::Raw>,
}

/// Bytes as serde reads them (no serde_bytes dependency).
mod serde_bytes_like {
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    pub(crate) struct Raw(pub(crate) Vec<u8>);
}

fn seeds() -> Vec<Vec<u8>> {
    let mut s = support::hessian_values();
    s.extend(support::dubbo_bodies());
    s
}

#[test]
fn values() {
    rubbo_fuzz::fuzz("hessian-value", &seeds(), support::HESSIAN_TAGS, |input| {
        let _ = decode_value(input);
        let value = Decoder::new(input).read_value();
        let skipped = Decoder::new(input).skip_value();
        // skip accepts what read accepts (it may accept more: it checks no UTF-8).
        assert!(
            value.is_err() || skipped.is_ok(),
            "{value:?} vs {skipped:?}"
        );
        if let Ok(v) = value {
            // What was read can be written and read back.
            if let Ok(bytes) = rubbo_hessian2::encode_value(&v) {
                assert!(decode_value(&bytes).is_ok());
            }
        }
    });
}

#[test]
fn streams_of_values() {
    rubbo_fuzz::fuzz("hessian-stream", &seeds(), support::HESSIAN_TAGS, |input| {
        let mut d = Decoder::new(input);
        for _ in 0..64 {
            if d.read_value().is_err() {
                break;
            }
        }
    });
}

#[test]
fn typed_shapes() {
    rubbo_fuzz::fuzz("hessian-serde", &seeds(), support::HESSIAN_TAGS, |input| {
        let _ = from_slice::<User>(input);
        let _ = from_slice::<Vec<User>>(input);
        let _ = from_slice::<HashMap<String, Value>>(input);
        let _ = from_slice::<(String, i32, Vec<i64>)>(input);
        let _ = from_slice::<serde::de::IgnoredAny>(input);
    });
}
