//! serde shapes beyond plain structs: several field sets under one class
//! name, internally tagged enums, skipped fields, flatten, byte buffers.
#![allow(unreachable_pub)]

use std::collections::HashMap;

use rubbo_hessian2::{Decoder, Encoder, Value, from_slice, to_vec};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Debug, PartialEq)]
#[serde(tag = "type")]
enum Event {
    Click { x: i32, y: i32 },
    Key { code: String },
    Idle,
}

#[test]
fn internally_tagged_enums_round_trip() {
    let events = vec![
        Event::Click { x: 1, y: 2 },
        Event::Key { code: "a".into() },
        Event::Click { x: 3, y: 4 },
        Event::Idle,
        Event::Key { code: "b".into() },
    ];
    let bytes = to_vec(&events).expect("encode");
    assert_eq!(from_slice::<Vec<Event>>(&bytes).expect("decode"), events);
    // each field set got its own class definition, reused afterwards
    let v: Value = from_slice(&bytes).expect("value");
    let classes: Vec<_> = v
        .as_list()
        .expect("list")
        .items
        .iter()
        .map(|i| i.as_object().map(|o| o.fields.len()))
        .collect();
    assert_eq!(classes, [Some(3), Some(2), Some(3), Some(1), Some(2)]);
}

mod v1 {
    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    #[serde(rename = "org.rubbo.Thing")]
    pub struct Thing {
        pub a: i32,
    }
}

mod v2 {
    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    #[serde(rename = "org.rubbo.Thing")]
    pub struct Thing {
        pub a: i32,
        pub b: String,
    }
}

#[test]
fn two_rust_types_with_one_java_name_in_one_stream() {
    let mut out = Vec::new();
    let mut enc = Encoder::new(&mut out);
    enc.write(&v1::Thing { a: 1 }).expect("v1");
    enc.write(&v2::Thing {
        a: 2,
        b: "x".into(),
    })
    .expect("v2");
    enc.write(&v1::Thing { a: 3 }).expect("v1 again");
    let mut d = Decoder::new(&out);
    assert_eq!(d.read::<v1::Thing>().expect("1"), v1::Thing { a: 1 });
    assert_eq!(
        d.read::<v2::Thing>().expect("2"),
        v2::Thing {
            a: 2,
            b: "x".into()
        }
    );
    assert_eq!(d.read::<v1::Thing>().expect("3"), v1::Thing { a: 3 });
    assert!(d.is_empty());
    // the third reuses the first definition: only two `C` definitions
    assert_eq!(out.iter().filter(|&&b| b == b'C').count(), 2);
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Default)]
#[serde(rename = "org.rubbo.Opt")]
struct Opt {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    maybe: Option<i32>,
    #[serde(flatten)]
    extra: HashMap<String, i32>,
}

#[test]
fn skipped_and_flattened_fields() {
    let a = Opt {
        maybe: None,
        extra: HashMap::from([("k".into(), 1)]),
    };
    assert_eq!(
        from_slice::<Opt>(&to_vec(&a).expect("enc")).expect("dec"),
        a
    );
    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    #[serde(rename = "org.rubbo.Skip")]
    struct Skip {
        a: i32,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        b: Option<i32>,
    }
    let items = vec![Skip { a: 1, b: None }, Skip { a: 2, b: Some(3) }];
    let bytes = to_vec(&items).expect("enc");
    // skipped fields are written as null: one class definition for both
    assert_eq!(bytes.iter().filter(|&&b| b == b'C').count(), 1);
    assert_eq!(from_slice::<Vec<Skip>>(&bytes).expect("dec"), items);
}

#[test]
fn read_args_is_the_inverse_of_write_args() {
    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Args {
        name: String,
        n: i64,
        tags: Vec<String>,
    }
    let args = Args {
        name: "x".into(),
        n: 1 << 40,
        tags: vec!["t".into()],
    };
    let mut out = Vec::new();
    let mut enc = Encoder::new(&mut out);
    enc.write_args(&args).expect("args");
    enc.write(&HashMap::from([("k", "v")]))
        .expect("attachments");
    let mut d = Decoder::new(&out);
    assert_eq!(d.read_args::<Args>(3).expect("struct"), args);
    let att: HashMap<String, String> = d.read().expect("attachments");
    assert_eq!(att["k"], "v");
    // as a tuple, as values, and fewer than written (the rest is skipped)
    let mut d = Decoder::new(&out);
    let t: (String, i64, Vec<String>) = d.read_args(3).expect("tuple");
    assert_eq!(t.1, 1 << 40);
    let mut d = Decoder::new(&out);
    let vs: Vec<Value> = d.read_args(3).expect("values");
    assert_eq!(vs.len(), 3);
    let mut d = Decoder::new(&out);
    let (first,): (String,) = d.read_args(3).expect("prefix");
    assert_eq!(first, "x");
    assert!(d.read::<HashMap<String, String>>().is_ok());
    // no arguments
    let mut d = Decoder::new(&out[..0]);
    d.read_args::<()>(0).expect("unit");
}

#[test]
fn undone_attempt_leaves_no_stale_definitions_or_references() {
    #[derive(Serialize, Deserialize, Debug, PartialEq, Clone, Copy)]
    #[serde(rename = "org.rubbo.Color")]
    #[allow(clippy::upper_case_acronyms)]
    enum Color {
        RED,
    }
    #[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
    #[serde(rename = "org.rubbo.Inner")]
    struct Inner {
        c: Color,
        v: Value,
    }
    mod a {
        #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq, Clone)]
        #[serde(rename = "org.rubbo.Outer")]
        pub struct Outer {
            pub inner: Option<i32>,
            pub y: i32,
        }
    }
    #[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
    #[serde(rename = "org.rubbo.Outer")]
    struct OuterB {
        inner: Inner,
        x: i32,
    }
    let typed = Value::List(rubbo_hessian2::List {
        type_name: Some("java.util.LinkedList".into()),
        items: vec![Value::Int(1)],
    });
    let b = OuterB {
        inner: Inner {
            c: Color::RED,
            v: typed,
        },
        x: 2,
    };
    let mut out = Vec::new();
    let mut enc = Encoder::new(&mut out);
    let a_value = a::Outer { inner: None, y: 1 };
    enc.write(&a_value).expect("a");
    // first tries the `a` definition, writes part of `inner` (new classes, an
    // enum constant, a type name), then undoes it and writes a new definition
    enc.write(&b).expect("b");
    enc.write(&b).expect("b again");
    enc.write(&Color::RED).expect("enum ref");
    let mut d = Decoder::new(&out);
    assert_eq!(d.read::<a::Outer>().expect("a"), a_value);
    assert_eq!(d.read::<OuterB>().expect("b"), b);
    assert_eq!(d.read::<OuterB>().expect("b again"), b);
    assert_eq!(d.read::<Color>().expect("enum"), Color::RED);
    assert!(d.is_empty());
    // and the dynamic reader agrees on every reference
    let mut d = Decoder::new(&out);
    for _ in 0..4 {
        d.read_value().expect("value");
    }
}
