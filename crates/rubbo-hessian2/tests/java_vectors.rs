//! Decode every vector Java's hessian-lite wrote, compare with the expected
//! values, and re-encode where Java's encoding is canonical.

mod support;

use rubbo_hessian2::{
    BigDecimal, BigInteger, Date, Decoder, Encoder, JavaException, Value, from_slice, to_vec,
};
use support::*;

/// Vectors whose bytes Rubbo does not reproduce exactly (still decoded and checked).
const NOT_CANONICAL: &[&str] = &[
    // Java chunks binary by its 8 KiB output buffer; Rubbo by 32 KiB.
    "binary_70000",
];

#[test]
fn every_java_vector_decodes_skips_and_reencodes() {
    let vectors = java_vectors();
    assert!(vectors.len() > 100, "only {} vectors", vectors.len());
    let mut failures = Vec::new();
    for (name, count, bytes) in &vectors {
        // read_value
        let mut d = Decoder::new(bytes);
        let mut values = Vec::new();
        for _ in 0..*count {
            values.push(d.read_value().unwrap_or_else(|e| panic!("{name}: {e}")));
        }
        assert!(d.is_empty(), "{name}: {} bytes left", d.remaining().len());
        // skip_value reaches the same end
        let mut s = Decoder::new(bytes);
        for _ in 0..*count {
            s.skip_value()
                .unwrap_or_else(|e| panic!("{name} skip: {e}"));
        }
        assert!(s.is_empty(), "{name}: skip left bytes");
        // typed decode into Value via serde: identical to read_value
        let mut t = Decoder::new(bytes);
        for v in &values {
            let tv: Value = t.read().unwrap_or_else(|e| panic!("{name} typed: {e}"));
            assert_eq!(&tv, v, "{name}: serde Value differs");
        }
        // re-encode
        let mut out = Vec::new();
        let mut enc = Encoder::new(&mut out);
        for v in &values {
            enc.write_value(v).expect("encode");
        }
        if out != *bytes {
            if NOT_CANONICAL.contains(&name.as_str()) {
                let mut d = Decoder::new(&out);
                for v in &values {
                    assert_eq!(&d.read_value().expect("re-decode"), v, "{name}");
                }
            } else {
                failures.push(name.clone());
            }
        }
    }
    assert!(
        failures.is_empty(),
        "re-encoded bytes differ from Java for {failures:?}"
    );
}

fn one<T: serde::de::DeserializeOwned>(name: &str) -> T {
    from_slice(&java(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Typed decode must give `expected`, and typed encode must give Java's bytes.
fn both<T>(name: &str, expected: T)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let bytes = java(name);
    let got: T = from_slice(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(got, expected, "{name}: decoded");
    assert_eq!(to_vec(&expected).expect("encode"), bytes, "{name}: encoded");
}

#[test]
fn scalars_match_java() {
    both::<Option<i32>>("null", None);
    both("true", true);
    both("false", false);
    for i in INTS {
        both(&format!("int_{i}"), i);
    }
    for l in LONGS {
        both(&format!("long_{l}"), l);
    }
    for (n, d) in DOUBLES {
        both(&format!("double_{n}"), d);
    }
    // -0.0 collapses to 0.0 like Java
    assert_eq!(to_vec(&-0.0f64).expect("enc"), java("double_-0.0"));
    both("float_0.1", 0.1f64);
    assert_eq!(to_vec(&0.1f32).expect("enc"), java("float_0.1"));
    assert_eq!(one::<f64>("float_0.1"), 0.1);
    both("byte_5", 5i8);
    both("short_-300", -300i16);
    both("char_x", 'x');
}

#[test]
fn strings_match_java() {
    both("string_empty", String::new());
    both("string_hello", "hello".to_string());
    for (n, c) in LONG_STRINGS {
        both(&format!("string_{n}"), repeat(c, n));
    }
    both("string_cjk", "中文字符串".to_string());
    both("string_emoji", "\u{1F600}".to_string());
    assert_eq!(
        java("string_emoji"),
        [0x02, 0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80]
    );
    both("string_mixed", "a\u{1F600}b\u{e9}\u{4e2d}\0z".to_string());
    both(
        "string_surrogate_boundary",
        format!("{}\u{1F600}{}", repeat('h', 32767), repeat('i', 10)),
    );
}

#[test]
fn binary_and_dates_match_java() {
    for n in [0usize, 15, 16, 1023, 1024] {
        let name = if n == 0 {
            "binary_empty".to_string()
        } else {
            format!("binary_{n}")
        };
        let b = java(&name);
        let v: Value = from_slice(&b).expect("decode");
        assert_eq!(v, Value::Binary(bytes(n)), "{name}");
        assert_eq!(rubbo_hessian2::encode_value(&v).expect("enc"), b, "{name}");
    }
    let big: Value = one("binary_70000");
    assert_eq!(big, Value::Binary(bytes(70000)));
    // Java byte[] into Vec<u8>, and the Binary helper both ways
    assert_eq!(one::<Vec<u8>>("binary_16"), bytes(16));
    both("binary_1023", rubbo_hessian2::Binary(bytes(1023)));
    both("binary_empty", rubbo_hessian2::Binary(Vec::new()));
    both("date_epoch", Date(0));
    both("date_ms", Date(1_700_000_000_001));
    both("date_minute", Date(1_699_999_980_000));
    both("date_negative", Date(-1));
}

#[test]
fn collections_match_java() {
    both::<Vec<i32>>("list_empty", vec![]);
    both("list_int_2", vec![1, 2]);
    both("list_8", vec![1, 2, 3, 4, 5, 6, 7, 8]);
    both("list_nested", vec![vec![1], vec![]]);
    let mixed: Vec<Value> = one("list_mixed");
    assert_eq!(
        mixed,
        vec![
            Value::from("a"),
            Value::Int(1),
            Value::Long(2),
            Value::Double(3.5),
            Value::Bool(true),
            Value::Null
        ]
    );
    assert_eq!(
        rubbo_hessian2::to_vec(&mixed).expect("enc"),
        java("list_mixed")
    );
    // typed arrays decode into plain Vecs, and keep their type as Values
    assert_eq!(one::<Vec<i32>>("array_int"), vec![1, 2]);
    assert_eq!(
        java("array_int"),
        [0x72, 0x04, b'[', b'i', b'n', b't', 0x91, 0x92]
    );
    assert_eq!(one::<Vec<String>>("array_string"), vec!["a", "b"]);
    assert_eq!(
        one::<Vec<i64>>("array_long_9"),
        (1..=9).collect::<Vec<i64>>()
    );
    let ll: Value = one("linkedlist");
    assert_eq!(ll.class_name(), Some("java.util.LinkedList"));
    assert_eq!(one::<Vec<String>>("linkedlist"), vec!["x", "y"]);
    // type reference reused in one stream
    let b = java("two_typed_lists");
    let mut d = Decoder::new(&b);
    assert_eq!(
        d.read_value().expect("1").class_name(),
        Some("java.util.LinkedList")
    );
    assert_eq!(
        d.read_value().expect("2").class_name(),
        Some("java.util.LinkedList")
    );
    both("map_empty", std::collections::HashMap::<String, i32>::new());
    both(
        "map_a1",
        std::collections::HashMap::from([("a".to_string(), 1)]),
    );
    let tm: Value = one("treemap");
    assert_eq!(tm.class_name(), Some("java.util.TreeMap"));
    assert_eq!(
        one::<std::collections::BTreeMap<String, i32>>("treemap"),
        [("a".to_string(), 1), ("b".to_string(), 2)].into()
    );
    assert_eq!(
        one::<std::collections::HashMap<i32, String>>("map_int_keys"),
        [(1, "one".to_string())].into()
    );
    let arr: Value = one("object_array");
    assert_eq!(arr.class_name(), Some("[object"));
}

#[test]
fn pojos_enums_and_refs_match_java() {
    both("enum_male", Gender::MALE);
    both(
        "address",
        Address {
            city: Some("Hangzhou".into()),
            street: Some("West Lake".into()),
            zip: 310000,
        },
    );
    both("user", user(1));
    // a reused encoder (struct definitions cached across streams) writes the same bytes
    let mut enc = Encoder::new(bytes::BytesMut::new());
    for _ in 0..3 {
        enc.write(&vec![user(0), user(1), user(2)]).expect("users");
        assert_eq!(enc.get_mut().split().as_ref(), java("users_3").as_slice());
        enc.reset();
    }
    both("user_nulls", User::default());
    both("users_3", vec![user(0), user(1), user(2)]);
    // the same object twice: second is a back-reference, resolved for typed decoding
    let b = java("user_twice");
    let mut d = Decoder::new(&b);
    assert_eq!(d.read::<User>().expect("first"), user(7));
    assert_eq!(d.read::<User>().expect("second (Q ref)"), user(7));
    assert!(d.is_empty());
    assert_eq!(
        one::<Vec<User>>("user_shared_in_list"),
        vec![user(7), user(7)]
    );
    let shared: Vec<User> = one("shared_address");
    assert_eq!(shared[0].address, shared[1].address);
    assert_eq!(
        shared[1].address.as_ref().and_then(|a| a.city.as_deref()),
        Some("c")
    );
    // a cyclic list decodes as a Value with a Ref to itself
    let cyc: Value = one("cyclic_list");
    assert_eq!(
        cyc.as_list().map(|l| l.items.clone()),
        Some(vec![Value::from("head"), Value::Ref(0)])
    );
    // and is an error (not a hang) for a typed target that cannot hold it
    assert!(from_slice::<Vec<Vec<String>>>(&java("cyclic_list")).is_err());
}

#[test]
fn java_math_and_exceptions_match_java() {
    both("bigdecimal", BigDecimal::new("123.45"));
    both("bigdecimal_neg_exp", BigDecimal::new("-1.5E-10"));
    both(
        "biginteger",
        BigInteger::new("123456789012345678901234567890"),
    );
    both("biginteger_neg", BigInteger::new("-42"));
    both("biginteger_zero", BigInteger::new("0"));

    let e: JavaException = one("exception_interop");
    assert_eq!(e.class, "org.rubbo.interop.InteropException");
    assert_eq!(e.message.as_deref(), Some("boom"));
    assert!(e.cause.is_none());
    assert_eq!(to_vec(&e).expect("enc"), java("exception_interop"));
    let rt = JavaException::new("java.lang.RuntimeException", "rt");
    assert_eq!(to_vec(&rt).expect("enc"), java("exception_runtime"));
    assert_eq!(one::<JavaException>("exception_runtime"), rt);

    let e: JavaException = one("exception_cause_stack");
    assert_eq!(e.message.as_deref(), Some("with stack"));
    let cause = e.cause.as_ref().expect("cause");
    assert_eq!(cause.class, "java.lang.IllegalStateException");
    assert_eq!(cause.message.as_deref(), Some("inner"));
    assert_eq!(e.stack_trace.len(), 1);
    assert_eq!(e.stack_trace[0].declaring_class, "org.rubbo.Demo");
    assert_eq!(e.stack_trace[0].line_number, 42);
    // the Value form keeps the class and message too
    let v: Value = one("exception_cause_stack");
    assert_eq!(v.class_name(), Some("java.lang.RuntimeException"));
    assert_eq!(
        v.field("detailMessage").and_then(Value::as_str),
        Some("with stack")
    );

    // java.time.LocalDate.of(2024, 1, 2), as Java's Hessian writes it: a handle object.
    let ld: Value = one("local_date");
    assert_eq!(
        ld.class_name(),
        Some("com.alibaba.com.caucho.hessian.io.java8.LocalDateHandle")
    );
    assert_eq!(ld.field("year"), Some(&Value::Int(2024)));
    assert_eq!(ld.field("month"), Some(&Value::Int(1)));
    assert_eq!(ld.field("day"), Some(&Value::Int(2)));
}

#[test]
fn dubbo_request_bodies() {
    let b = java("dubbo_request_echo_user");
    let mut d = Decoder::new(&b);
    assert_eq!(d.read_string().expect("v"), "2.0.2");
    assert_eq!(
        d.read_string().expect("s"),
        "org.rubbo.interop.InteropService"
    );
    assert_eq!(d.read_string().expect("v"), "1.0.0");
    assert_eq!(d.read_string().expect("m"), "echoUser");
    assert_eq!(d.read_string().expect("d"), "Lorg/rubbo/interop/User;");
    let args_at = d.position();
    d.skip_value().expect("skip user");
    let att: std::collections::HashMap<String, String> = d.read().expect("attachments");
    assert_eq!(att["path"], "org.rubbo.interop.InteropService");
    assert!(d.is_empty());
    // lazy decode of the argument from the remembered slice
    let mut lazy = Decoder::new(&b[args_at..]);
    assert_eq!(lazy.read::<User>().expect("user"), user(5));

    // writing the same body: strings, write_args, then the attachments in Java's order
    let att_value = {
        let mut d = Decoder::new(&b);
        for _ in 0..5 {
            d.skip_value().expect("s");
        }
        d.skip_value().expect("u");
        d.read_value().expect("att")
    };
    let mut out = Vec::new();
    let mut enc = Encoder::new(&mut out);
    for s in [
        "2.0.2",
        "org.rubbo.interop.InteropService",
        "1.0.0",
        "echoUser",
        "Lorg/rubbo/interop/User;",
    ] {
        enc.write_string(s).expect("s");
    }
    enc.write_args(&(user(5),)).expect("args");
    enc.write_value(&att_value).expect("att");
    assert_eq!(out, b);

    // two users: the class definition is shared; decode both lazily
    let b = java("dubbo_request_two_users");
    let mut d = Decoder::new(&b);
    for _ in 0..5 {
        d.read_string().expect("head");
    }
    let at = d.position();
    d.skip_value().expect("u1");
    d.skip_value().expect("u2");
    let _: Value = d.read().expect("att");
    assert!(d.is_empty());
    let mut lazy = Decoder::new(&b[at..]);
    let (u1, u2): (User, User) = (lazy.read().expect("u1"), lazy.read().expect("u2"));
    assert_eq!((u1, u2), (user(1), user(2)));
    let mut out = Vec::new();
    let mut enc = Encoder::new(&mut out);
    for s in [
        "2.0.2",
        "svc",
        "0.0.0",
        "m",
        "Lorg/rubbo/interop/User;Lorg/rubbo/interop/User;",
    ] {
        enc.write_string(s).expect("s");
    }
    enc.write_args(&vec![user(1), user(2)]).expect("args");
    enc.write(&std::collections::HashMap::<String, String>::new())
        .expect("att");
    assert_eq!(out, b);
}
