//! Property tests: Value and serde round trips, skip agreement, truncation.

mod support;

use std::collections::HashMap;
use std::sync::Arc;

use proptest::prelude::*;
use rubbo_hessian2::{
    BigDecimal, Date, Decoder, List, Map, Object, Value, decode_value, encode_value, from_slice,
    from_value, to_value, to_vec,
};
use serde::{Deserialize, Serialize};

fn arb_double() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |d| d.is_finite()),
        (-40000i32..40000).prop_map(f64::from),
        (-5_000_000i32..5_000_000).prop_map(|m| 0.001 * f64::from(m)),
    ]
    // Java (and so Rubbo) writes -0.0 as 0.0
    .prop_map(|d| if d == 0.0 { 0.0 } else { d })
}

fn arb_name() -> impl Strategy<Value = Arc<str>> {
    prop_oneof![
        Just(Arc::from("java.util.LinkedList")),
        Just(Arc::from("[int")),
        Just(Arc::from("org.rubbo.interop.User")),
        "[a-z.]{1,12}".prop_map(|s| Arc::from(s.as_str())),
    ]
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::Int),
        prop_oneof![any::<i64>(), -300000i64..300000].prop_map(Value::Long),
        arb_double().prop_map(Value::Double),
        any::<String>().prop_map(Value::String),
        "[\u{10000}-\u{10ffff}a]{0,5}".prop_map(Value::String),
        proptest::collection::vec(any::<u8>(), 0..2000).prop_map(Value::Binary),
        prop_oneof![any::<i64>(), (-1000i64..1000).prop_map(|m| m * 60_000)].prop_map(Value::Date),
    ];
    leaf.prop_recursive(4, 64, 10, |inner| {
        prop_oneof![
            (
                proptest::option::of(arb_name()),
                proptest::collection::vec(inner.clone(), 0..10)
            )
                .prop_map(|(type_name, items)| Value::List(List { type_name, items })),
            (
                proptest::option::of(arb_name()),
                proptest::collection::vec((inner.clone(), inner.clone()), 0..5)
            )
                .prop_map(|(type_name, entries)| Value::Map(Map { type_name, entries })),
            (
                arb_name(),
                proptest::collection::btree_map("[a-zA-Z]{1,8}", inner, 0..6)
            )
                .prop_map(|(class, fields)| Value::Object(Object {
                    class,
                    fields: fields
                        .into_iter()
                        .map(|(k, v)| (Arc::from(k.as_str()), v))
                        .collect(),
                })),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn value_round_trips(v in arb_value()) {
        let bytes = encode_value(&v).expect("encode");
        prop_assert_eq!(&decode_value(&bytes).expect("decode"), &v);
        // skip_value consumes exactly the value
        let mut d = Decoder::new(&bytes);
        d.skip_value().expect("skip");
        prop_assert!(d.is_empty());
        // Value through the serde serializer: the same bytes; through the deserializer: the same value
        prop_assert_eq!(&to_vec(&v).expect("serde encode"), &bytes);
        prop_assert_eq!(&from_slice::<Value>(&bytes).expect("serde decode"), &v);
        // to_value / from_value are lossless on Value
        prop_assert_eq!(&to_value(&v).expect("to_value"), &v);
        prop_assert_eq!(&from_value::<Value>(v.clone()).expect("from_value"), &v);
    }

    #[test]
    fn truncated_input_is_an_error(v in arb_value(), cut in any::<prop::sample::Index>()) {
        let bytes = encode_value(&v).expect("encode");
        let n = cut.index(bytes.len());
        prop_assert!(decode_value(&bytes[..n]).is_err());
        prop_assert!(Decoder::new(&bytes[..n]).skip_value().is_err());
    }

    #[test]
    fn several_values_share_one_stream(vs in proptest::collection::vec(arb_value(), 1..6)) {
        let mut out = Vec::new();
        let mut enc = rubbo_hessian2::Encoder::new(&mut out);
        enc.write_args(&vs).expect("write_args");
        let mut d = Decoder::new(&out);
        for v in &vs {
            prop_assert_eq!(&d.read_value().expect("read"), v);
        }
        prop_assert!(d.is_empty());
    }
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
#[serde(rename = "org.rubbo.Kind")]
#[allow(clippy::upper_case_acronyms)]
enum Kind {
    ALPHA,
    BETA,
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
enum Shape {
    Unit,
    Circle(f64),
    Rect { w: i32, h: i32 },
    Pair(i32, String),
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
#[serde(rename = "org.rubbo.Inner")]
struct Inner {
    name: String,
    n: i64,
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
#[serde(rename = "org.rubbo.Everything")]
struct Everything {
    b: bool,
    i8_: i8,
    i16_: i16,
    i32_: i32,
    i64_: i64,
    u8_: u8,
    u16_: u16,
    u32_: u32,
    u64_: u64,
    f64_: f64,
    c: char,
    s: String,
    opt: Option<String>,
    v: Vec<i32>,
    nested: Vec<Inner>,
    m: HashMap<String, Inner>,
    kind: Kind,
    kinds: Vec<Kind>,
    shape: Shape,
    tuple: (i32, String),
    date: Date,
    dec: BigDecimal,
    any: Value,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    skipped: Option<i32>,
}

fn arb_inner() -> impl Strategy<Value = Inner> {
    (any::<String>(), any::<i64>()).prop_map(|(name, n)| Inner { name, n })
}

fn arb_everything() -> impl Strategy<Value = Everything> {
    (
        (
            any::<bool>(),
            any::<i8>(),
            any::<i16>(),
            any::<i32>(),
            any::<i64>(),
            any::<u8>(),
            any::<u16>(),
            any::<u32>(),
        ),
        (
            0..=i64::MAX as u64,
            arb_double(),
            any::<char>(),
            any::<String>(),
            proptest::option::of(any::<String>()),
        ),
        (
            proptest::collection::vec(any::<i32>(), 0..20),
            proptest::collection::vec(arb_inner(), 0..4),
            proptest::collection::hash_map(any::<String>(), arb_inner(), 0..3),
        ),
        (
            prop_oneof![Just(Kind::ALPHA), Just(Kind::BETA)],
            proptest::collection::vec(prop_oneof![Just(Kind::ALPHA), Just(Kind::BETA)], 0..5),
            prop_oneof![
                Just(Shape::Unit),
                arb_double().prop_map(Shape::Circle),
                (any::<i32>(), any::<i32>()).prop_map(|(w, h)| Shape::Rect { w, h }),
                (any::<i32>(), any::<String>()).prop_map(|(a, b)| Shape::Pair(a, b)),
            ],
            (any::<i32>(), any::<String>()),
            any::<i64>(),
            "-?[0-9]{1,20}(\\.[0-9]{1,5})?",
            arb_value(),
            proptest::option::of(any::<i32>()),
        ),
    )
        .prop_map(
            |(
                (b, i8_, i16_, i32_, i64_, u8_, u16_, u32_),
                (u64_, f64_, c, s, opt),
                (v, nested, m),
                (kind, kinds, shape, tuple, date, dec, any, skipped),
            )| Everything {
                b,
                i8_,
                i16_,
                i32_,
                i64_,
                u8_,
                u16_,
                u32_,
                u64_,
                f64_,
                c,
                s,
                opt,
                v,
                nested,
                m,
                kind,
                kinds,
                shape,
                tuple,
                date: Date(date),
                dec: BigDecimal::new(dec),
                any,
                skipped,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn serde_round_trips(e in arb_everything()) {
        let bytes = to_vec(&e).expect("encode");
        prop_assert_eq!(&from_slice::<Everything>(&bytes).expect("decode"), &e);
        // through Value, both ways
        let v = to_value(&e).expect("to_value");
        prop_assert_eq!(&from_value::<Everything>(v.clone()).expect("from_value"), &e);
        // (the stream itself may differ from `v`: a repeated enum constant is a
        // back-reference in the stream, as Java writes it)
        prop_assert_eq!(&from_slice::<Everything>(&encode_value(&v).expect("enc")).expect("dec"), &e);
        // twice in one stream: the second reuses the class definitions
        let mut out = Vec::new();
        let mut enc = rubbo_hessian2::Encoder::new(&mut out);
        enc.write(&e).expect("1");
        enc.write(&e).expect("2");
        let mut d = Decoder::new(&out);
        prop_assert_eq!(&d.read::<Everything>().expect("1"), &e);
        prop_assert_eq!(&d.read::<Everything>().expect("2"), &e);
        prop_assert!(d.is_empty());
    }
}
