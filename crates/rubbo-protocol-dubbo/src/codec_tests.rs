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
fn via_serde(bytes: &[u8]) -> (Vec<Option<Value>>, Attachments) {
    let raw: RawAttachments<'_> = Decoder::new(bytes).read().unwrap();
    (known_strings(&raw), raw.other)
}

fn known_strings(raw: &RawAttachments<'_>) -> Vec<Option<Value>> {
    raw.known
        .iter()
        .map(|v| v.clone().map(AttStr::into_value))
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

    // `group: null` (some non-Java clients send it) and null user values stay on the
    // direct path, and read the same as through serde.
    let nulls = attachment_map(
        &[
            ("group", Value::Null),
            ("path", s("org.S")),
            ("trace-id", Value::Null),
        ],
        None,
    );
    let direct = RawAttachments::read_plain(&nulls).expect("a plain map with nulls");
    assert_eq!(
        (known_strings(&direct), direct.other.clone()),
        via_serde(&nulls)
    );
    assert_eq!(direct.known[3], Some(AttStr::Null), "group");
    assert_eq!(direct.other.get("trace-id"), Some(&Value::Null));

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

// ---- The tolerant reader: every body Java's `DecodeableRpcInvocation` accepts ----

const SVC: &str = "org.rubbo.interop.InteropService";

/// A request body written field by field, as a non-Java client may write it: the
/// five leading fields, the arguments, then `attachments` (raw bytes, or nothing).
fn request_body(head: [Value; 5], args: &[Value], attachments: Option<&[u8]>) -> Bytes {
    let mut out = BytesMut::new();
    let mut enc = Encoder::new(&mut out);
    for v in head.iter().chain(args) {
        enc.write_value(v).unwrap();
    }
    if let Some(a) = attachments {
        out.extend_from_slice(a);
    }
    out.freeze()
}

/// The usual head: `2.0.2`, the service, `1.0.0`, `echo(String)`.
fn echo_head() -> [Value; 5] {
    [
        Value::from("2.0.2"),
        Value::from(SVC),
        Value::from("1.0.0"),
        Value::from("echo"),
        Value::from("Ljava/lang/String;"),
    ]
}

fn echo_body(attachments: Option<&[u8]>) -> Bytes {
    request_body(echo_head(), &[Value::from("hi")], attachments)
}

fn decode_ok(body: &Bytes) -> DecodedRequest {
    decode_request(2, body).unwrap_or_else(|e| panic!("rejected: {e}"))
}

fn decode_err(body: &Bytes) -> String {
    match decode_request(2, body) {
        Ok(r) => panic!("accepted: {r:?}"),
        Err(e) => e.to_string(),
    }
}

/// What every accepted echo body decodes to, besides its attachments.
fn assert_echo(req: &DecodedRequest) {
    assert_eq!(&*req.path, SVC);
    assert_eq!(&*req.method, "echo");
    assert_eq!(&*req.parameter_types, "Ljava/lang/String;");
    assert_eq!(req.arguments.decode::<(String,)>().unwrap().0, "hi");
}

fn list(items: Vec<Value>) -> Value {
    Value::List(rubbo_hessian2::List {
        type_name: None,
        items,
    })
}

fn map(entries: Vec<(Value, Value)>) -> Value {
    Value::Map(rubbo_hessian2::Map {
        type_name: None,
        entries,
    })
}

#[test]
fn a_null_group_is_no_group() {
    let att = attachment_map(
        &[
            ("path", Value::from(SVC)),
            ("version", Value::from("1.0.0")),
            ("group", Value::Null),
            ("timeout", Value::from("3000")),
        ],
        None,
    );
    let req = decode_ok(&echo_body(Some(&att)));
    assert_echo(&req);
    assert_eq!(req.routing.group, None, "routed as if no group was sent");
    assert_eq!(req.attachment("group"), None);
    assert_eq!((req.service_path(), req.service_version()), (SVC, "1.0.0"));
    assert_eq!(req.routing.timeout_ms, Some(3000));
    assert!(req.attachments.is_empty(), "routing keys are not handed on");
    // Kept as the null it was for tools, as Java keeps it in its map.
    let full = decode_request_full(2, &echo_body(Some(&att))).unwrap();
    assert_eq!(full.attachments.get("group"), Some(&Value::Null));
}

#[test]
fn a_null_user_attachment_reaches_the_provider_as_null() {
    let att = attachment_map(
        &[
            ("trace-id", Value::Null),
            ("remote.application", Value::from("app")),
        ],
        None,
    );
    let req = decode_ok(&echo_body(Some(&att)));
    assert_echo(&req);
    assert_eq!(req.attachments.get("trace-id"), Some(&Value::Null));
    assert_eq!(req.attachment("trace-id"), None, "not a string");
    assert_eq!(req.attachment("remote.application"), Some("app"));
}

#[test]
fn null_path_and_version_attachments_replace_the_body_fields_as_in_java() {
    // Java merges the attachments over the body's `path` and `version`, nulls too,
    // and then looks the service up with neither: so does the routing here.
    let att = attachment_map(&[("path", Value::Null), ("version", Value::Null)], None);
    let req = decode_ok(&echo_body(Some(&att)));
    assert_echo(&req);
    assert_eq!(&*req.version, "1.0.0", "the body's fields are kept");
    assert_eq!(req.service_path(), "", "no path to route by (Java: null)");
    assert_eq!(
        req.service_version(),
        "",
        "the default version (Java: null)"
    );
    assert_eq!(req.routing.group, None);
}

#[test]
fn non_string_attachment_values_are_kept_as_values() {
    let att = attachment_map(
        &[
            ("count", Value::Int(7)),
            ("tags", list(vec![Value::from("a"), Value::from("b")])),
            ("ctx", map(vec![(Value::from("k"), Value::Long(1 << 40))])),
            // Java reads a numeric timeout as a number, and ignores one it cannot.
            ("timeout", Value::Int(250)),
            // A number where a string belongs reads as its text (as it always did).
            ("group", Value::Int(5)),
            // A token that is no string is no token (Java's check then fails).
            ("token", list(vec![])),
            ("interface", map(vec![])),
        ],
        None,
    );
    let req = decode_ok(&echo_body(Some(&att)));
    assert_echo(&req);
    assert_eq!(req.attachments.get("count"), Some(&Value::Int(7)));
    assert_eq!(
        req.attachments.get("tags"),
        Some(&list(vec![Value::from("a"), Value::from("b")]))
    );
    assert_eq!(
        req.attachments.get("ctx"),
        Some(&map(vec![(Value::from("k"), Value::Long(1 << 40))]))
    );
    assert_eq!(req.routing.timeout_ms, Some(250));
    assert_eq!(req.routing.group.as_deref(), Some("5"));
    assert_eq!(req.routing.token, None);
    assert!(!req.attachments.contains_key("interface"));

    for timeout in [Value::Double(1500.9), Value::Long(1500)] {
        let att = attachment_map(&[("timeout", timeout.clone())], None);
        let req = decode_ok(&echo_body(Some(&att)));
        assert_eq!(req.routing.timeout_ms, Some(1500), "{timeout:?}");
    }
    for timeout in [
        map(vec![]),
        Value::Int(-1),
        Value::Null,
        Value::from("soon"),
    ] {
        let att = attachment_map(&[("timeout", timeout.clone())], None);
        let req = decode_ok(&echo_body(Some(&att)));
        assert_eq!(req.routing.timeout_ms, None, "{timeout:?} is no timeout");
    }
}

#[test]
fn a_container_where_routing_needs_a_string_is_an_error() {
    for key in ["path", "version", "group"] {
        let att = attachment_map(&[(key, map(vec![]))], None);
        let e = decode_err(&echo_body(Some(&att)));
        assert_eq!(
            e,
            format!("attachment \"{key}\" is not a string (found map)")
        );
    }
}

#[test]
fn a_null_dubbo_version_is_accepted_and_gets_no_response_attachments() {
    let mut head = echo_head();
    head[0] = Value::Null;
    let att = attachment_map(&[("k", Value::from("v"))], None);
    let req = decode_ok(&request_body(head, &[Value::from("hi")], Some(&att)));
    assert_echo(&req);
    assert_eq!(req.dubbo_version, "");
    assert!(
        !supports_response_attachments(&req.dubbo_version),
        "Java's isSupportResponseAttachment(null) is false"
    );
    assert_eq!(req.attachment("k"), Some("v"));
}

#[test]
fn a_null_service_version_is_the_default_version() {
    let mut head = echo_head();
    head[2] = Value::Null;
    let req = decode_ok(&request_body(head.clone(), &[Value::from("hi")], None));
    assert_echo(&req);
    assert_eq!(&*req.version, "");
    assert_eq!(req.service_version(), "");
    // The attachment's version wins, as in Java.
    let att = attachment_map(&[("version", Value::from("1.0.0"))], None);
    let req = decode_ok(&request_body(head, &[Value::from("hi")], Some(&att)));
    assert_eq!(req.service_version(), "1.0.0");
}

#[test]
fn typed_and_untyped_attachment_maps_read_the_same() {
    let entries = [
        ("path", Value::from(SVC)),
        ("group", Value::from("g1")),
        ("timeout", Value::from("800")),
        ("trace-id", Value::from("t-1")),
        ("n", Value::Null),
    ];
    let mut seen = Vec::new();
    for typed in [None, Some("java.util.HashMap"), Some("java.util.TreeMap")] {
        let att = attachment_map(&entries, typed);
        let req = decode_ok(&echo_body(Some(&att)));
        assert_echo(&req);
        assert_eq!(req.routing.group.as_deref(), Some("g1"), "{typed:?}");
        assert_eq!(req.routing.timeout_ms, Some(800), "{typed:?}");
        assert_eq!(req.service_path(), SVC, "{typed:?}");
        seen.push(req.attachments);
    }
    assert_eq!(seen[0].get("trace-id"), Some(&Value::from("t-1")));
    assert_eq!(seen[0].get("n"), Some(&Value::Null));
    assert!(seen.iter().all(|a| *a == seen[0]), "{seen:?}");
}

#[test]
fn empty_null_and_absent_attachments_are_no_attachments() {
    let empty = attachment_map(&[], None);
    let null = [b'N'];
    for att in [Some(&empty[..]), Some(&null[..]), None] {
        let req = decode_ok(&echo_body(att));
        assert_echo(&req);
        assert!(req.attachments.is_empty(), "{att:?}");
        assert_eq!((req.service_path(), req.service_version()), (SVC, "1.0.0"));
        assert_eq!(req.routing.group, None);
        assert_eq!(req.routing.timeout_ms, None);
    }
    // Nor does a call without arguments need anything after its descriptor.
    let mut head = echo_head();
    head[3] = Value::from("ping");
    head[4] = Value::from("");
    let req = decode_ok(&request_body(head, &[], None));
    assert_eq!((&*req.method, req.arguments.len()), ("ping", 0));
}

#[test]
fn numbers_and_booleans_in_the_head_read_as_their_text_as_in_java() {
    // Java's `readUTF` (`Hessian2Input.readString`) takes them.
    let head = [
        Value::Int(2),
        Value::from(SVC),
        Value::Double(1.0),
        Value::Long(42),
        Value::from(""),
    ];
    let req = decode_ok(&request_body(head, &[], None));
    assert_eq!(
        (&*req.dubbo_version, &*req.version, &*req.method),
        ("2", "1.0", "42")
    );
    assert_eq!(java_double(1e10), "1.0E10");
    assert_eq!(java_double(1.5e-5), "1.5E-5");
    assert_eq!(java_double(0.25), "0.25");
    assert_eq!(java_double(-0.0), "-0.0");
    let mut head = echo_head();
    head[3] = Value::Bool(true);
    assert_eq!(&*decode_ok(&echo_like(head)).method, "true");
}

fn echo_like(head: [Value; 5]) -> Bytes {
    request_body(head, &[Value::from("hi")], Some(&attachment_map(&[], None)))
}

#[test]
fn a_null_method_name_is_accepted_only_without_parameter_types() {
    let mut head = echo_head();
    head[3] = Value::Null;
    assert_eq!(
        decode_err(&echo_like(head.clone())),
        format!("Service not found:{SVC}, null (the method name is null)")
    );
    head[4] = Value::from("");
    let req = decode_ok(&request_body(head, &[], None));
    assert_eq!((&*req.method, req.arguments.len()), ("", 0));
}

#[test]
fn what_java_rejects_is_rejected_with_a_clear_error() {
    // A method name that is no string and no number.
    for (method, found) in [
        (map(vec![]), "map"),
        (list(vec![Value::from("echo")]), "list"),
        (Value::Binary(b"echo".to_vec()), "binary"),
        (Value::Date(0), "date"),
    ] {
        let mut head = echo_head();
        head[3] = method;
        let e = decode_err(&echo_like(head));
        assert_eq!(
            e,
            format!("the method name is not a string (found {found})")
        );
    }
    // A null service path: Java's serialization check finds no service.
    let mut head = echo_head();
    head[1] = Value::Null;
    assert_eq!(
        decode_err(&echo_like(head)),
        "Service null:1.0.0 not found, invocation rejected (the service path is null)"
    );
    // A null descriptor (Java fails reading its length).
    let mut head = echo_head();
    head[4] = Value::Null;
    assert_eq!(
        decode_err(&echo_like(head)),
        "the parameter types descriptor is null"
    );
    // Truncated arguments: the descriptor names two, one is there.
    let mut head = echo_head();
    head[4] = Value::from("Ljava/lang/String;I");
    let e = decode_err(&request_body(head, &[Value::from("hi")], None));
    assert!(e.starts_with("hessian2: "), "{e}");
    let whole = echo_body(None);
    let e = decode_err(&whole.slice(..whole.len() - 1));
    assert!(e.starts_with("hessian2: "), "cut inside the argument: {e}");
    // Attachments that are no map.
    for att in [Value::from("k=v"), list(vec![])] {
        let mut out = BytesMut::new();
        Encoder::new(&mut out).write_value(&att).unwrap();
        let e = decode_err(&echo_body(Some(&out)));
        assert!(e.contains("expected an attachment map"), "{e}");
    }
    // An attachment key that is null or a container.
    for key in [Value::Null, list(vec![])] {
        let mut out = BytesMut::new();
        let mut enc = Encoder::new(&mut out);
        enc.write_map_start(None).unwrap();
        enc.write_value(&key).unwrap();
        enc.write_string("v").unwrap();
        enc.write_end().unwrap();
        let e = decode_err(&echo_body(Some(&out)));
        assert!(e.contains("expected a string attachment key"), "{e}");
    }
}

#[test]
fn the_usual_request_reads_its_attachments_on_the_direct_path() {
    // What a Java 3.3 consumer sends: all strings, untyped map.
    let (_, body) = fixture("attachment.request");
    let req = decode_request(2, &body).unwrap();
    let mut d = Decoder::new(&body);
    for _ in 0..5 {
        d.read_ascii().expect("ASCII head");
    }
    d.skip_value().unwrap();
    assert!(
        RawAttachments::read_plain(d.remaining()).is_some(),
        "the fast path takes Java's attachment map"
    );
    assert_eq!(req.attachment("rubbo-key"), Some("value-1"));
}

#[test]
fn attachments_may_be_a_reference_to_an_argument_map() {
    // Java's `readObject(Map.class)` follows a back-reference (`Q` + index) to a map
    // read earlier in the body: the first argument here.
    let mut head = echo_head();
    head[4] = Value::from("Ljava/util/Map;");
    let arg = map(vec![
        (Value::from("group"), Value::from("g1")),
        (Value::from("k"), Value::from("v")),
    ]);
    let req = decode_ok(&request_body(head, &[arg], Some(&[b'Q', 0x90])));
    assert_eq!(req.routing.group.as_deref(), Some("g1"));
    assert_eq!(req.attachment("k"), Some("v"));
    assert_eq!(req.arguments.len(), 1);
}

#[test]
fn pre_encoded_arguments_are_written_as_the_values_would_be() {
    use rubbo_hessian2::Object;
    let user = Value::Object(
        Object::new("org.rubbo.interop.User")
            .with_field("id", Value::Long(7))
            .with_field("name", "u7"),
    );
    let args = vec![Value::from("hi"), user];
    let mut bytes = BytesMut::new();
    let mut enc = Encoder::new(&mut bytes);
    for v in &args {
        enc.write_value(v).unwrap();
    }
    let encoded = rubbo_common::Arguments::Encoded {
        count: 2,
        encoded: Encoded::new(&HESSIAN2, bytes.freeze()),
    };
    let meta = RequestMeta {
        path: "org.rubbo.interop.InteropService",
        version: Some("1.0.0"),
        timeout_ms: 1000,
        ..Default::default()
    };
    let base = Invocation::new("org.rubbo.interop.InteropService", "twoArgs")
        .with_parameter_types("Ljava/lang/String;Lorg/rubbo/interop/User;");
    let body = |inv: &Invocation| {
        let mut out = BytesMut::new();
        encode_request(inv, &meta, &mut out).unwrap();
        out.freeze()
    };
    // Scalar attachments: the bytes are copied, and the body is the one the values make.
    let values = base.clone().with_arguments(args.clone());
    let copied = base.clone().with_arguments(encoded.clone());
    assert_eq!(body(&copied), body(&values));
    let with_trace = |inv: Invocation| inv.with_attachment("trace-id", "t-1");
    assert_eq!(
        body(&with_trace(copied.clone())),
        body(&with_trace(values.clone()))
    );
    // An object attachment (its class definition would clash with the bytes'): the
    // values are written through this encoder, and the provider reads them back.
    let obj = Value::Object(Object::new("org.example.Tag").with_field("v", "x"));
    let copied = copied.with_attachment("tag", obj.clone());
    let read = decode_request_full(2, &body(&copied)).unwrap();
    assert_eq!(read.arguments.to_values().unwrap(), args);
    assert_eq!(read.attachments.get("tag"), Some(&obj));
}
