//! Body codec against frames captured from Java Dubbo 3.3.6
//! (`interop/fixtures/dubbo/`, see its README).

use bytes::{Bytes, BytesMut};
use rubbo_common::{Invocation, Payload, RpcResult, Value};

use super::*;

fn fixture(name: &str) -> (rubbo_remoting::Header, Bytes) {
    let path = format!(
        "{}/../../interop/fixtures/dubbo/{name}.bin",
        env!("CARGO_MANIFEST_DIR")
    );
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let header = rubbo_remoting::Header::decode(&bytes).unwrap().unwrap();
    (header, Bytes::from(bytes).slice(16..))
}

#[test]
fn decodes_every_java_request() {
    let cases = [
        ("echo", "echo", "Ljava/lang/String;", 1),
        ("echo_int", "echoInt", "I", 1),
        ("echo_user", "echoUser", "Lorg/rubbo/interop/User;", 1),
        ("list_users", "listUsers", "I", 1),
        ("ping", "ping", "", 0),
        ("attachment", "attachment", "Ljava/lang/String;", 1),
        ("generic_echo", "$invoke", descriptor::GENERIC_DESC, 3),
        ("generic_echo_user", "$invoke", descriptor::GENERIC_DESC, 3),
        ("echo_service", "$echo", descriptor::ECHO_DESC, 1),
        ("echo_string_chunked", "echo", "Ljava/lang/String;", 1),
        ("echo_bytes_chunked", "echoBytes", "[B", 1),
    ];
    for (name, method, desc, n) in cases {
        let (h, body) = fixture(&format!("{name}.request"));
        let req =
            decode_request(h.serialization(), &body).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(req.dubbo_version, "2.0.2", "{name}");
        assert_eq!(&*req.path, "org.rubbo.interop.InteropService", "{name}");
        assert_eq!(&*req.version, "1.0.0", "{name}");
        assert_eq!(&*req.method, method, "{name}");
        assert_eq!(&*req.parameter_types, desc, "{name}");
        assert_eq!(req.arguments.len(), n, "{name}");
        assert_eq!(
            req.attachment("remote.application"),
            Some("interop-consumer"),
            "{name}"
        );
        // Routing attachments are read, not kept (Java hides them from services too).
        assert_eq!(req.routing.timeout_ms, Some(5000));
        assert!(
            req.routing.path.is_none() && req.routing.version.is_none(),
            "same as the body"
        );
        assert_eq!(req.service_path(), "org.rubbo.interop.InteropService");
        assert!(
            !req.attachments.contains_key("interface") && !req.attachments.contains_key("timeout")
        );
        let full = decode_request_full(h.serialization(), &body).unwrap();
        assert_eq!(
            full.attachment("interface"),
            Some("org.rubbo.interop.InteropService")
        );
        assert_eq!(full.attachments.get("timeout"), Some(&Value::from("5000")));
    }
    let (h, body) = fixture("echo.request");
    let req = decode_request(h.serialization(), &body).unwrap();
    assert_eq!(req.arguments.decode::<(String,)>().unwrap().0, "hello");
    let (h, body) = fixture("echo_int.request");
    assert_eq!(
        decode_request(h.serialization(), &body)
            .unwrap()
            .arguments
            .decode::<(i32,)>()
            .unwrap()
            .0,
        48
    );
    let (h, body) = fixture("attachment.request");
    assert_eq!(
        decode_request(h.serialization(), &body)
            .unwrap()
            .attachment("rubbo-key"),
        Some("value-1")
    );
    let (h, body) = fixture("echo_string_chunked.request");
    let (s,): (String,) = decode_request(h.serialization(), &body)
        .unwrap()
        .arguments
        .decode()
        .unwrap();
    assert_eq!(s.encode_utf16().count(), 32767 + 2 + 100);
    let (h, body) = fixture("generic_echo_user.request");
    let args = decode_request(h.serialization(), &body)
        .unwrap()
        .arguments
        .to_values()
        .unwrap();
    assert_eq!(args[0], Value::from("echoUser"));
    assert!(matches!(&args[2], Value::List(l) if l.items.len() == 1));
}

#[test]
fn decodes_every_java_response() {
    let (h, body) = fixture("echo.response");
    let r = decode_response(h.serialization(), &body).unwrap();
    assert_eq!(r.payload().unwrap().decode::<String>().unwrap(), "hello");
    assert!(
        r.attachments().get("dubbo").is_none(),
        "protocol bookkeeping is not handed to callers"
    );

    let (h, body) = fixture("ping.response");
    let r = decode_response(h.serialization(), &body).unwrap();
    assert!(matches!(r.payload(), Some(Payload::Null)));

    let (h, body) = fixture("fail.response");
    let r = decode_response(h.serialization(), &body).unwrap();
    let e = r.exception().unwrap();
    assert_eq!(e.class, "org.rubbo.interop.InteropException");
    assert_eq!(e.message.as_deref(), Some("boom"));

    let (h, body) = fixture("list_users.response");
    let r = decode_response(h.serialization(), &body).unwrap();
    let users = r.payload().unwrap().to_value().unwrap();
    let Value::List(list) = users else {
        panic!("{users:?}")
    };
    assert_eq!(list.items.len(), 2);
    assert_eq!(
        list.items[1].field("name").and_then(Value::as_str),
        Some("user-1")
    );

    let (h, body) = fixture("echo_bytes_chunked.response");
    let r = decode_response(h.serialization(), &body).unwrap();
    let b: Vec<u8> = r.payload().unwrap().decode().unwrap();
    assert_eq!(b.len(), 40000);
    assert!(
        b.iter()
            .enumerate()
            .all(|(i, &x)| x == (i as u32 * 31 + 7) as u8)
    );

    let (h, body) = fixture("unknown_method.response");
    assert_eq!(h.status, 40);
    assert!(
        decode_error_text(h.serialization(), &body)
            .starts_with("Fail to decode request due to: RpcInvocation [methodName=noSuchMethod")
    );
}

#[test]
fn encodes_responses_byte_identical_to_java() {
    for (name, result) in [
        (
            "echo",
            RpcResult::value(Payload::Value(Value::from("hello"))),
        ),
        ("echo_int", RpcResult::value(Payload::typed(48i32))),
        ("echo_null", RpcResult::null()),
        ("ping", RpcResult::null()),
        ("echo_bool", RpcResult::value(Payload::typed(true))),
        ("echo_long", RpcResult::value(Payload::typed(i64::MAX))),
        ("echo_double", RpcResult::value(Payload::typed(12.25f64))),
    ] {
        let (_, java) = fixture(&format!("{name}.response"));
        let mut out = BytesMut::new();
        encode_response(&result, true, &mut out).unwrap();
        assert_eq!(&out[..], &java[..], "{name}");
    }
}

#[test]
fn request_round_trip_keeps_what_java_reads() {
    let inv = Invocation::new("org.rubbo.interop.InteropService", "echo")
        .with_version("1.0.0")
        .with_parameter_types("Ljava/lang/String;")
        .with_arguments(rubbo_common::Arguments::typed(1, ("hello",)))
        .with_attachment("rubbo-key", "value-1");
    let meta = RequestMeta {
        path: "org.rubbo.interop.InteropService",
        version: Some("1.0.0"),
        interface: Some("org.rubbo.interop.InteropService"),
        timeout_ms: 5000,
        application: Some("interop-consumer"),
        ..Default::default()
    };
    let mut out = BytesMut::new();
    encode_request(&inv, &meta, &mut out).unwrap();
    let out_bytes = out.freeze();
    let (_, java_body) = fixture("attachment.request");
    let ours = decode_request_full(2, &out_bytes).unwrap();
    let java = decode_request_full(2, &java_body).unwrap();
    assert_eq!(ours.dubbo_version, java.dubbo_version);
    assert_eq!(ours.path, java.path);
    assert_eq!(ours.version, java.version);
    let mut ours_keys: Vec<_> = ours.attachments.keys().collect();
    let mut java_keys: Vec<_> = java.attachments.keys().collect();
    ours_keys.sort();
    java_keys.sort();
    assert_eq!(
        ours_keys, java_keys,
        "the same attachment keys as a Java consumer"
    );
    assert_eq!(ours.arguments.decode::<(String,)>().unwrap().0, "hello");
}

#[test]
fn routing_attachments_that_differ_from_the_body_win() {
    // Java's unexported_version frame: body version 1.0.0, attachment version 9.9.9.
    let (h, body) = fixture("unexported_version.request");
    let req = decode_request(h.serialization(), &body).unwrap();
    assert_eq!(&*req.version, "1.0.0");
    assert_eq!(req.service_version(), "9.9.9");
}

#[test]
fn malformed_bodies_are_errors_not_panics() {
    let (_, body) = fixture("echo_user.request");
    for cut in 0..body.len() {
        let _ = decode_request(2, &body.slice(..cut));
    }
    let (_, body) = fixture("fail.response");
    for cut in 0..body.len() {
        let _ = decode_response(2, &body.slice(..cut));
    }
    assert!(matches!(
        decode_request(23, &body),
        Err(CodecError::Serialization(23))
    ));
    assert!(matches!(
        decode_response(2, &Bytes::from_static(&[0x99])),
        Err(CodecError::BadFlag(9))
    ));
    assert!(supports_response_attachments("2.0.2"));
    assert!(!supports_response_attachments("2.0.1"));
    assert!(!supports_response_attachments("3.0.0"));
}

/// An attachment map written the way a Java consumer writes one.
fn attachment_map(entries: &[(&str, Value)], typed: Option<&str>) -> Vec<u8> {
    let mut out = BytesMut::new();
    let mut enc = Encoder::new(&mut out);
    enc.write_map_start(typed).unwrap();
    for (k, v) in entries {
        enc.write_string(k).unwrap();
        enc.write_value(v).unwrap();
    }
    enc.write_end().unwrap();
    out.to_vec()
}

/// What the general (serde) reader makes of `bytes`.
fn via_serde(bytes: &[u8]) -> (Vec<Option<String>>, Attachments) {
    let raw: RawAttachments<'_> = Decoder::new(bytes).read().unwrap();
    (known_strings(&raw), raw.other)
}

fn known_strings(raw: &RawAttachments<'_>) -> Vec<Option<String>> {
    raw.known
        .iter()
        .map(|v| v.clone().map(|v| v.into_str().into_owned()))
        .collect()
}

#[test]
fn plain_attachment_maps_read_directly_the_same_as_through_serde() {
    let s = |v: &str| Value::String(v.to_owned());
    let plain = attachment_map(
        &[
            ("path", s("org.S")),
            ("timeout", s("3000")),
            ("trace-id", s("abc")),
            ("count", Value::Int(7)),
            ("big", Value::Long(1 << 40)),
            ("flag", Value::Bool(true)),
            ("nothing", Value::Null),
            ("path", s("org.Last")),
        ],
        None,
    );
    let direct = RawAttachments::read_plain(&plain).expect("a plain map");
    let serde = via_serde(&plain);
    assert_eq!((known_strings(&direct), direct.other.clone()), serde);
    assert_eq!(
        direct.known[0],
        Some(AttStr::Ascii(b"org.Last")),
        "a repeated key keeps its last value"
    );
    assert!(
        matches!(&direct.known[4], Some(v) if v.to_ms() == Some(3000)),
        "the timeout parses from the bytes"
    );
    assert_eq!(direct.other.get("count"), Some(&Value::Int(7)));

    // Shapes the direct reader leaves to serde: a container value (it would take a
    // slot in the reference table), a routing key with a non-string value, a typed map.
    let nested = attachment_map(
        &[
            ("trace-id", s("abc")),
            (
                "list",
                Value::List(rubbo_hessian2::List {
                    type_name: None,
                    items: vec![s("a"), s("b")],
                }),
            ),
            ("timeout", s("5")),
        ],
        None,
    );
    let int_timeout = attachment_map(&[("timeout", Value::Int(250))], None);
    let typed = attachment_map(&[("k", s("v"))], Some("java.util.HashMap"));
    for bytes in [&nested, &int_timeout, &typed] {
        assert!(RawAttachments::read_plain(bytes).is_none());
        let mut d = Decoder::new(bytes);
        let read = RawAttachments::read(&mut d).unwrap();
        assert_eq!((known_strings(&read), read.other), via_serde(bytes));
    }
    let mut d = Decoder::new(&int_timeout);
    let read = RawAttachments::read(&mut d).unwrap();
    assert!(
        matches!(&read.known[4], Some(v) if v.to_ms() == Some(250)),
        "an int timeout reads as its digits"
    );
    // Truncated maps are errors, not panics, on either path.
    for cut in 0..plain.len() {
        assert!(RawAttachments::read(&mut Decoder::new(&plain[..cut])).is_err());
    }
}

#[test]
fn requests_encoded_with_the_cached_meta_read_the_same() {
    let meta = RequestMeta {
        path: "org.rubbo.interop.InteropService",
        version: Some("1.0.0"),
        group: Some("g1"),
        interface: Some("org.rubbo.interop.InteropService"),
        timeout_ms: 1500,
        application: Some("interop-consumer"),
        token: Some("secret"),
        encoded: None,
    };
    let cached = EncodedMeta::new(&meta).unwrap();
    let with_cache = RequestMeta {
        encoded: Some(&cached),
        ..meta.clone()
    };
    let base = Invocation::new("org.rubbo.interop.InteropService", "echo")
        .with_parameter_types("Ljava/lang/String;")
        .with_arguments(rubbo_common::Arguments::typed(1, ("hi",)));
    let calls = [
        base.clone(),
        base.clone().with_attachment("trace-id", "t-1"),
        // The call's own value of an encoded key wins, as without the cache.
        base.clone().with_attachment("group", "g2"),
    ];
    for inv in calls {
        let encode = |m: &RequestMeta<'_>| {
            let mut out = BytesMut::new();
            encode_request(&inv, m, &mut out).unwrap();
            decode_request_full(2, &out.freeze()).unwrap()
        };
        let (plain, fast) = (encode(&meta), encode(&with_cache));
        assert_eq!(
            (
                &plain.dubbo_version,
                &plain.path,
                &plain.version,
                &plain.method
            ),
            (&fast.dubbo_version, &fast.path, &fast.version, &fast.method)
        );
        assert_eq!(plain.attachments, fast.attachments);
        assert_eq!(fast.attachment("timeout"), Some("1500"));
        assert_eq!(
            fast.arguments.decode::<(String,)>().unwrap().0,
            "hi",
            "the arguments follow the cached head"
        );
    }
}

#[test]
fn the_encoded_dubbo_attachment_is_what_the_encoder_writes() {
    let mut out = BytesMut::new();
    let mut enc = Encoder::new(&mut out);
    enc.write_string("dubbo").unwrap();
    enc.write_string(DUBBO_VERSION).unwrap();
    assert_eq!(&out[..], DUBBO_ATTACHMENT);
}
