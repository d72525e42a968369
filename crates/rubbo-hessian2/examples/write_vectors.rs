//! Writes Rubbo-encoded vectors (same names as the Java generator's) into a
//! directory, for the Java reader of `interop/hessian` to check.
//!
//! Run with: `cargo run -p rubbo-hessian2 --example write_vectors -- <dir>`

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use rubbo_hessian2::{
    BigDecimal, BigInteger, Date, Encoder, JavaException, List, Map, Object, StackTraceElement,
    Value,
};
use support::{Address, DOUBLES, Gender, INTS, LONG_STRINGS, LONGS, bytes, repeat, user};

fn typed_list(t: &str, items: Vec<Value>) -> Value {
    Value::List(List {
        type_name: Some(Arc::from(t)),
        items,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: write_vectors <dir>")?;
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir)?;
    let mut count = 0;
    let mut put = |name: &str,
                   f: &dyn Fn(&mut Encoder<&mut Vec<u8>>) -> rubbo_hessian2::Result<()>|
     -> Result<(), Box<dyn std::error::Error>> {
        let mut out = Vec::new();
        f(&mut Encoder::new(&mut out))?;
        std::fs::write(dir.join(format!("{name}.bin")), out)?;
        count += 1;
        Ok(())
    };

    put("null", &|e| e.write(&Option::<i32>::None))?;
    put("true", &|e| e.write(&true))?;
    put("false", &|e| e.write(&false))?;
    for i in INTS {
        put(&format!("int_{i}"), &|e| e.write(&i))?;
    }
    for l in LONGS {
        put(&format!("long_{l}"), &|e| e.write(&l))?;
    }
    for (n, d) in DOUBLES {
        put(&format!("double_{n}"), &|e| e.write(&d))?;
    }
    put("float_0.1", &|e| e.write(&0.1f32))?;
    put("byte_5", &|e| e.write(&5i8))?;
    put("short_-300", &|e| e.write(&-300i16))?;
    put("char_x", &|e| e.write(&'x'))?;
    put("string_empty", &|e| e.write(""))?;
    put("string_hello", &|e| e.write("hello"))?;
    for (n, c) in LONG_STRINGS {
        put(&format!("string_{n}"), &|e| e.write(&repeat(c, n)))?;
    }
    put("string_cjk", &|e| e.write("中文字符串"))?;
    put("string_emoji", &|e| e.write("\u{1F600}"))?;
    put("string_mixed", &|e| e.write("a\u{1F600}b\u{e9}\u{4e2d}\0z"))?;
    put("string_surrogate_boundary", &|e| {
        e.write(&format!(
            "{}\u{1F600}{}",
            repeat('h', 32767),
            repeat('i', 10)
        ))
    })?;
    put("binary_empty", &|e| e.write_binary(&[]))?;
    for n in [15usize, 16, 1023, 1024, 70000] {
        put(&format!("binary_{n}"), &|e| e.write_binary(&bytes(n)))?;
    }
    put("date_epoch", &|e| e.write(&Date(0)))?;
    put("date_ms", &|e| e.write(&Date(1_700_000_000_001)))?;
    put("date_minute", &|e| e.write(&Date(1_699_999_980_000)))?;
    put("date_negative", &|e| e.write(&Date(-1)))?;
    put("list_empty", &|e| e.write(&Vec::<i32>::new()))?;
    put("list_int_2", &|e| e.write(&vec![1, 2]))?;
    put("list_8", &|e| e.write(&(1..=8).collect::<Vec<i32>>()))?;
    put("list_mixed", &|e| {
        e.write(&vec![
            Value::from("a"),
            Value::Int(1),
            Value::Long(2),
            Value::Double(3.5),
            Value::Bool(true),
            Value::Null,
        ])
    })?;
    put("list_nested", &|e| e.write(&vec![vec![1], vec![]]))?;
    put("array_int", &|e| {
        e.write(&typed_list("[int", vec![Value::Int(1), Value::Int(2)]))
    })?;
    put("array_string", &|e| {
        e.write(&typed_list(
            "[string",
            vec![Value::from("a"), Value::from("b")],
        ))
    })?;
    put("array_long_9", &|e| {
        e.write(&typed_list("[long", (1..=9).map(Value::Long).collect()))
    })?;
    put("linkedlist", &|e| {
        e.write(&typed_list(
            "java.util.LinkedList",
            vec![Value::from("x"), Value::from("y")],
        ))
    })?;
    put("hashset_1", &|e| {
        e.write(&typed_list("java.util.HashSet", vec![Value::from("only")]))
    })?;
    put("two_typed_lists", &|e| {
        e.write(&typed_list("java.util.LinkedList", vec![Value::Int(1)]))?;
        e.write(&typed_list("java.util.LinkedList", vec![Value::Int(2)]))
    })?;
    put("map_empty", &|e| e.write(&HashMap::<String, i32>::new()))?;
    put("map_a1", &|e| e.write(&HashMap::from([("a", 1)])))?;
    put("treemap", &|e| {
        e.write_value(&Value::Map(Map {
            type_name: Some(Arc::from("java.util.TreeMap")),
            entries: vec![
                (Value::from("a"), Value::Int(1)),
                (Value::from("b"), Value::Int(2)),
            ],
        }))
    })?;
    put("map_int_keys", &|e| e.write(&HashMap::from([(1, "one")])))?;
    put("enum_male", &|e| e.write(&Gender::MALE))?;
    put("address", &|e| {
        e.write(&Address {
            city: Some("Hangzhou".into()),
            street: Some("West Lake".into()),
            zip: 310000,
        })
    })?;
    put("user", &|e| e.write(&user(1)))?;
    put("user_nulls", &|e| e.write(&support::User::default()))?;
    put("users_3", &|e| e.write(&vec![user(0), user(1), user(2)]))?;
    put("user_twice", &|e| {
        e.write(&user(7))?;
        e.write(&user(7))
    })?;
    put("user_shared_in_list", &|e| e.write(&vec![user(7), user(7)]))?;
    put("shared_address", &|e| {
        let mut a = user(3);
        let mut b = user(4);
        let shared = Address {
            city: Some("c".into()),
            street: Some("s".into()),
            zip: 1,
        };
        a.address = Some(shared.clone());
        b.address = Some(shared);
        e.write(&vec![a, b])
    })?;
    put("cyclic_list", &|e| {
        e.write_value(&Value::List(List {
            type_name: None,
            items: vec![Value::from("head"), Value::Ref(0)],
        }))
    })?;
    put("bigdecimal", &|e| e.write(&BigDecimal::new("123.45")))?;
    put("bigdecimal_neg_exp", &|e| {
        e.write(&BigDecimal::new("-1.5E-10"))
    })?;
    put("biginteger", &|e| {
        e.write(&BigInteger::new("123456789012345678901234567890"))
    })?;
    put("biginteger_neg", &|e| e.write(&BigInteger::new("-42")))?;
    put("biginteger_zero", &|e| e.write(&BigInteger::new("0")))?;
    put("exception_interop", &|e| {
        e.write(&JavaException::new(
            "org.rubbo.interop.InteropException",
            "boom",
        ))
    })?;
    put("exception_runtime", &|e| {
        e.write_exception(&JavaException::new("java.lang.RuntimeException", "rt"))
    })?;
    put("exception_cause_stack", &|e| {
        let mut ex = JavaException::new("java.lang.RuntimeException", "with stack");
        ex.cause = Some(Box::new(JavaException::new(
            "java.lang.IllegalStateException",
            "inner",
        )));
        ex.stack_trace = vec![StackTraceElement {
            declaring_class: "org.rubbo.Demo".into(),
            method_name: "run".into(),
            file_name: Some("Demo.java".into()),
            line_number: 42,
        }];
        e.write(&ex)
    })?;
    put("dubbo_request_echo_user", &|e| {
        for s in [
            "2.0.2",
            "org.rubbo.interop.InteropService",
            "1.0.0",
            "echoUser",
            "Lorg/rubbo/interop/User;",
        ] {
            e.write_string(s)?;
        }
        e.write_args(&(user(5),))?;
        e.write(&HashMap::from([
            ("path", "org.rubbo.interop.InteropService"),
            ("version", "1.0.0"),
            ("timeout", "3000"),
        ]))
    })?;
    put("dubbo_request_two_users", &|e| {
        for s in [
            "2.0.2",
            "svc",
            "0.0.0",
            "m",
            "Lorg/rubbo/interop/User;Lorg/rubbo/interop/User;",
        ] {
            e.write_string(s)?;
        }
        e.write_args(&vec![user(1), user(2)])?;
        e.write(&HashMap::<String, String>::new())
    })?;
    put("object_array", &|e| {
        e.write(&typed_list(
            "[object",
            vec![Value::from("s"), Value::Int(1)],
        ))
    })?;
    put("local_date", &|e| {
        e.write(&Value::Object(
            Object::new("com.alibaba.com.caucho.hessian.io.java8.LocalDateHandle")
                .with_field("day", 2)
                .with_field("month", 1)
                .with_field("year", 2024),
        ))
    })?;
    println!("wrote {count} vectors to {}", dir.display());
    Ok(())
}
