//! Class definitions seen before are reused across streams (a per-thread
//! cache keyed by their exact bytes): reuse must never change what decodes.

mod support;

use rubbo_hessian2::{Binary, Decoder, Value, decode_value, from_slice, to_vec};
use serde::{Deserialize, Deserializer};
use support::{User, user};

/// `C` name, field names (ASCII), then one instance holding `values` (small ints).
fn object(class: &[u8], fields: &[&[u8]], values: &[i32]) -> Vec<u8> {
    let mut b = vec![b'C', class.len() as u8];
    b.extend_from_slice(class);
    b.push(0x90 + fields.len() as u8);
    for f in fields {
        b.push(f.len() as u8);
        b.extend_from_slice(f);
    }
    b.push(0x60);
    for v in values {
        b.push((0x90 + v) as u8);
    }
    b
}

fn field_names(v: &Value) -> (String, Vec<String>) {
    let o = v.as_object().expect("object");
    (
        o.class.to_string(),
        o.fields.iter().map(|(n, _)| n.to_string()).collect(),
    )
}

#[test]
fn repeated_definitions_decode_the_same_in_every_stream() {
    let users: Vec<User> = (0..5).map(user).collect();
    for round in 0..3 {
        for u in &users {
            let bytes = to_vec(u).expect("encode");
            assert_eq!(&from_slice::<User>(&bytes).expect("typed"), u, "{round}");
            let v = decode_value(&bytes).expect("value");
            let (class, fields) = field_names(&v);
            assert_eq!(class, "org.rubbo.interop.User");
            assert_eq!(fields[0], "balance");
            assert_eq!(fields.len(), 9);
            let mut d = Decoder::new(&bytes);
            d.skip_value().expect("skip");
            assert!(d.is_empty());
        }
    }
}

#[test]
fn definitions_differing_in_one_name_are_kept_apart() {
    #[derive(Deserialize, Debug, PartialEq, Default)]
    #[serde(default)]
    struct T {
        a: Option<i32>,
        b: Option<i32>,
    }
    let with_a = object(b"T", &[b"a"], &[1]);
    let with_b = object(b"T", &[b"b"], &[2]);
    let with_ab = object(b"T", &[b"a", b"b"], &[3, 4]);
    for _ in 0..3 {
        let t: T = from_slice(&with_a).expect("a");
        assert_eq!(
            t,
            T {
                a: Some(1),
                b: None
            }
        );
        let t: T = from_slice(&with_b).expect("b");
        assert_eq!(
            t,
            T {
                a: None,
                b: Some(2)
            }
        );
        let t: T = from_slice(&with_ab).expect("ab");
        assert_eq!(
            t,
            T {
                a: Some(3),
                b: Some(4)
            }
        );
        assert_eq!(field_names(&decode_value(&with_b).expect("b")).1, ["b"]);
    }
}

#[test]
fn non_ascii_names_decode_the_same_every_time() {
    // "é" is one UTF-16 unit and two bytes; "x\u{10400}" has a 4-byte
    // character that Java writes as two 3-byte surrogates.
    let e = [b'C', 0x01, b'T', 0x91, 0x01, 0xc3, 0xa9, 0x60, 0x95];
    let mut sur = vec![b'C', 0x01, b'T', 0x91, 0x03, b'x'];
    sur.extend_from_slice(&[0xed, 0xa0, 0x81, 0xed, 0xb0, 0x80]);
    sur.extend_from_slice(&[0x60, 0x96]);
    for _ in 0..3 {
        let v = decode_value(&e).expect("é");
        assert_eq!(field_names(&v).1, ["é"]);
        let v = decode_value(&sur).expect("surrogates");
        assert_eq!(field_names(&v).1, ["x\u{10400}"]);
    }
}

#[test]
fn more_definitions_than_the_cache_holds_still_decode() {
    for round in 0..2 {
        for i in 0..600 {
            let class = format!("C{i}");
            let field = format!("f{}", i % 7);
            let bytes = object(class.as_bytes(), &[field.as_bytes()], &[i % 16]);
            let v = decode_value(&bytes).expect("value");
            assert_eq!(field_names(&v), (class, vec![field]), "{round}");
        }
    }
}

/// A value holding a nested Hessian stream, decoded while the outer one is.
#[derive(Debug, PartialEq)]
struct Nested(User);

impl<'de> Deserialize<'de> for Nested {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let b = Binary::deserialize(d)?;
        from_slice(&b.0)
            .map(Nested)
            .map_err(serde::de::Error::custom)
    }
}

#[test]
fn a_stream_decoded_inside_another_uses_the_cache_safely() {
    let inner = to_vec(&user(3)).expect("inner");
    let outer = to_vec(&(user(4), Binary(inner), user(4))).expect("outer");
    for _ in 0..3 {
        let (a, Nested(b), c): (User, Nested, User) = from_slice(&outer).expect("decode");
        assert_eq!((a, b, c), (user(4), user(3), user(4)));
    }
}
