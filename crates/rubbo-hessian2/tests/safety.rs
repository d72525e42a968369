//! Hostile input: bounded depth, checked lengths, bounded reference expansion,
//! errors with offsets. Also the regression inputs found by fuzzing.

use rubbo_hessian2::{Decoder, Error, Value, decode_value, from_slice};
use serde::Deserialize;

fn nested_lists(depth: usize) -> Vec<u8> {
    // 0x79 = untyped fixed list of one item
    let mut b = vec![0x79; depth];
    b.push(0x90);
    b
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let deep = nested_lists(100_000);
    for r in [
        decode_value(&deep).map(|_| ()),
        Decoder::new(&deep).skip_value(),
        from_slice::<Value>(&deep).map(|_| ()),
        from_slice::<serde::de::IgnoredAny>(&deep).map(|_| ()),
    ] {
        assert!(
            matches!(r, Err(Error::DepthLimit { limit: 512, .. })),
            "{r:?}"
        );
    }
    // exactly at the limit is fine
    assert!(decode_value(&nested_lists(512)).is_ok());
    assert!(decode_value(&nested_lists(513)).is_err());
    // a smaller configured limit
    let r = Decoder::new(&nested_lists(4))
        .with_max_depth(3)
        .read_value();
    assert!(
        matches!(r, Err(Error::DepthLimit { limit: 3, .. })),
        "{r:?}"
    );
}

#[test]
fn deep_typed_nesting_on_a_small_stack() {
    // 512 levels of typed decoding fit in 3 MiB even in a debug build (release needs far less)
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Node(Vec<Node>);
    let mut b = vec![0x79; 511];
    b.push(0x78);
    let h = std::thread::Builder::new()
        .stack_size(3 << 20)
        .spawn(move || from_slice::<Node>(&b).is_ok() && decode_value(&b).is_ok())
        .expect("spawn");
    assert!(h.join().expect("no stack overflow"));
}

#[test]
fn lengths_are_checked_before_allocating() {
    let cases: &[(&[u8], &str)] = &[
        (&[0x58, 0x49, 0x7f, 0xff, 0xff, 0xff], "list length"),
        (
            &[0x56, 0x01, b'x', 0x49, 0x7f, 0xff, 0xff, 0xff],
            "typed list length",
        ),
        (&[0x58, 0x49, 0x80, 0, 0, 0], "negative list length"),
        (&[b'S', 0xff, 0xff, b'a'], "string length"),
        (&[b'B', 0xff, 0xff, 1, 2], "binary length"),
        (
            &[b'C', 0x01, b'X', 0x49, 0x7f, 0xff, 0xff, 0xff],
            "field count",
        ),
        (&[b'R', 0xff, 0xff], "string chunk"),
        (&[0x33, 0xff], "string 1023"),
    ];
    for (bytes, what) in cases {
        let r = decode_value(bytes);
        assert!(
            matches!(
                r,
                Err(Error::InvalidLength { .. } | Error::UnexpectedEof { .. })
            ),
            "{what}: {r:?}"
        );
        assert!(Decoder::new(bytes).skip_value().is_err(), "{what}");
    }
}

#[test]
fn errors_name_what_was_expected_and_where() {
    let e = decode_value(&[0x91, 0x40]).expect_err("trailing");
    assert_eq!(e, Error::TrailingBytes { offset: 1 });
    let e = decode_value(&[0x79, 0x40]).expect_err("bad tag");
    assert_eq!(
        e,
        Error::UnexpectedTag {
            offset: 1,
            tag: 0x40,
            expected: "value"
        }
    );
    assert_eq!(
        e.to_string(),
        "unexpected tag 0x40 at byte 1: expected value"
    );
    let e = Decoder::new(&[0x05, b'a'])
        .read_string()
        .expect_err("short");
    assert!(
        matches!(
            e,
            Error::InvalidLength {
                offset: 1,
                len: 5,
                ..
            }
        ),
        "{e:?}"
    );
    let e = Decoder::new(&[0x49, 0, 0]).read_int().expect_err("eof");
    assert!(
        matches!(
            e,
            Error::UnexpectedEof {
                offset: 3,
                expected: "int"
            }
        ),
        "{e:?}"
    );
    let e = from_slice::<String>(&[0x91]).expect_err("type");
    assert_eq!(e.offset(), Some(0));
    assert!(e.to_string().contains("at byte 0"), "{e}");
    let e = decode_value(&[0x60]).expect_err("class ref");
    assert!(
        matches!(e, Error::InvalidRef { kind: "class", .. }),
        "{e:?}"
    );
    let e = decode_value(&[0x51, 0x90]).expect_err("object ref");
    assert!(
        matches!(e, Error::InvalidRef { kind: "object", .. }),
        "{e:?}"
    );
    let e = decode_value(&[0x71, 0x90, 0x90]).expect_err("type ref");
    assert!(matches!(e, Error::InvalidRef { kind: "type", .. }), "{e:?}");
    let e = decode_value(&[0x03, 0xff, 0xfe, 0xfd]).expect_err("utf8");
    assert!(matches!(e, Error::InvalidUtf8 { offset: 1 }), "{e:?}");
}

#[test]
fn shared_reference_chains_do_not_explode() {
    // An outer list (ref 0) of c1 = [1, 1] (ref 1) and c(n) = [Q(n-1), Q(n-1)]
    // (refs 2..=40): fully expanded, that is 2^40 leaves.
    let mut body = vec![0x58, 0xc8, 40];
    body.extend([0x7a, 0x91, 0x91]);
    for i in 1..40u8 {
        body.extend([0x7a, 0x51, 0x90 + i, 0x51, 0x90 + i]);
    }
    // the dynamic form keeps references: cheap
    let v = decode_value(&body).expect("value");
    assert_eq!(v.as_list().map(|l| l.items.len()), Some(40));
    // a typed target that must expand them: an error, quickly
    #[derive(Deserialize, Debug)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum Tree {
        Leaf(i32),
        Node(Vec<Tree>),
    }
    let started = std::time::Instant::now();
    let r = from_slice::<Vec<Tree>>(&body);
    assert!(r.is_err());
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn lone_surrogates_and_four_byte_utf8_are_tolerated() {
    // a lone high surrogate (ED A0 80) becomes U+FFFD; 4-byte UTF-8 counts as 2 units
    assert_eq!(
        decode_value(&[0x01, 0xed, 0xa0, 0x80]).expect("lone"),
        Value::from("\u{fffd}")
    );
    assert_eq!(
        decode_value(&[0x02, 0xf0, 0x9f, 0x98, 0x80]).expect("4-byte"),
        Value::from("\u{1F600}")
    );
}
