//! Decoder fuzz target: any bytes must decode or fail cleanly (no panic, no
//! hang, bounded memory); `skip_value` must accept exactly what `read_value`
//! accepts; and decode -> encode -> decode -> encode must be byte-stable.
//!
//! Run with: `cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run decode -- -max_total_time=600`
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use rubbo_hessian2::{BigDecimal, Date, Decoder, Encoder, JavaException, Value};
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[allow(dead_code)]
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
    created_at: Option<Date>,
    balance: Option<BigDecimal>,
    friend: Option<Box<User>>,
    any: Option<Value>,
    bytes: Option<Vec<u8>>,
}

fuzz_target!(|data: &[u8]| {
    let mut d = Decoder::new(data);
    let mut values = Vec::new();
    while !d.is_empty() {
        match d.read_value() {
            Ok(v) => values.push(v),
            Err(_) => break,
        }
    }
    let mut s = Decoder::new(data);
    for _ in &values {
        s.skip_value().expect("skip_value rejected what read_value accepted");
    }

    let _ = rubbo_hessian2::from_slice::<User>(data);
    let _ = rubbo_hessian2::from_slice::<Vec<User>>(data);
    let _ = rubbo_hessian2::from_slice::<JavaException>(data);
    let mut t = Decoder::new(data);
    while !t.is_empty() {
        if t.read::<Value>().is_err() {
            break;
        }
    }

    let mut first = Vec::new();
    let mut e = Encoder::new(&mut first);
    for v in &values {
        e.write_value(v).expect("encode");
    }
    let mut d2 = Decoder::new(&first);
    let mut again = Vec::new();
    for _ in &values {
        again.push(d2.read_value().expect("re-decode of our own encoding"));
    }
    assert!(d2.is_empty());
    let mut second = Vec::new();
    let mut e = Encoder::new(&mut second);
    for v in &again {
        e.write_value(v).expect("encode");
    }
    assert_eq!(first, second, "decode->encode is not stable");
});
