//! The Hessian 2 reader, as values, streams of values (skipped, written back) and
//! typed serde shapes.

use std::collections::HashMap;

use rubbo_hessian2::{
    BigDecimal, Date, Decoder, Encoder, JavaException, Value, decode_value, from_slice,
};
use serde::Deserialize;

/// The most values one stream input is read as.
const MAX_VALUES: usize = 64;

#[derive(Deserialize, Debug)]
#[allow(dead_code, clippy::upper_case_acronyms)]
enum Gender {
    MALE,
    FEMALE,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct User {
    id: Option<i64>,
    name: Option<String>,
    gender: Option<Gender>,
    tags: Option<Vec<String>>,
    props: Option<HashMap<String, String>>,
    scores: Option<Vec<f64>>,
    created_at: Option<Date>,
    balance: Option<BigDecimal>,
    friend: Option<Box<User>>,
    any: Option<Value>,
    raw: Option<Raw>,
}

/// Bytes as serde reads them (no serde_bytes dependency).
#[derive(Deserialize, Debug)]
#[allow(dead_code)]
struct Raw(Vec<u8>);

/// Java's values and the bodies of Java's dubbo frames.
pub fn seeds() -> Vec<Vec<u8>> {
    let mut s = crate::seeds::hessian_values();
    s.extend(crate::seeds::dubbo_bodies());
    s
}

/// One value: read, skipped, written back.
pub fn values(input: &[u8]) {
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
}

/// A stream of values (a dubbo body): `skip_value` accepts each value `read_value`
/// accepted, and decode, encode, decode, encode is byte-stable.
pub fn streams(input: &[u8]) {
    let mut d = Decoder::new(input);
    let mut values = Vec::new();
    while values.len() < MAX_VALUES && !d.is_empty() {
        match d.read_value() {
            Ok(v) => values.push(v),
            Err(_) => break,
        }
    }
    let mut s = Decoder::new(input);
    for _ in &values {
        if let Err(e) = s.skip_value() {
            panic!("skip_value rejected what read_value accepted: {e}");
        }
    }
    let first = encode_all(&values);
    let mut d2 = Decoder::new(&first);
    let mut again = Vec::with_capacity(values.len());
    for _ in &values {
        match d2.read_value() {
            Ok(v) => again.push(v),
            Err(e) => panic!("our own encoding does not decode: {e}"),
        }
    }
    assert!(d2.is_empty(), "our own encoding has bytes left over");
    assert_eq!(first, encode_all(&again), "decode->encode is not stable");
}

fn encode_all(values: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut e = Encoder::new(&mut out);
    for v in values {
        if let Err(err) = e.write_value(v) {
            panic!("a decoded value does not encode: {err}");
        }
    }
    out
}

/// Typed shapes through serde: a struct with every kind of field, lists, maps,
/// tuples, Java exceptions, and values ignored.
pub fn typed(input: &[u8]) {
    let _ = from_slice::<User>(input);
    let _ = from_slice::<Vec<User>>(input);
    let _ = from_slice::<HashMap<String, Value>>(input);
    let _ = from_slice::<(String, i32, Vec<i64>)>(input);
    let _ = from_slice::<JavaException>(input);
    let _ = from_slice::<serde::de::IgnoredAny>(input);
    let mut t = Decoder::new(input);
    for _ in 0..MAX_VALUES {
        if t.is_empty() || t.read::<Value>().is_err() {
            break;
        }
    }
}
