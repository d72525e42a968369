//! The consumer's checks: every contract call with the contract's values plus edge
//! cases (nulls, empty and 100,000-element collections, long and non-BMP strings,
//! numeric encoding boundaries, nested POJOs, exceptions, attachments, timeouts,
//! generic calls), and over Triple the Greeter's. One line per check, `PASS name` or
//! `FAIL name: detail`.

use std::collections::HashMap;
use std::fmt::Debug;
use std::time::{Duration, Instant};

use rubbo::{Arguments, Code, Date, ErrorKind, Invocation, Payload, RpcError, Status, Value};

use crate::contract::{Address, Gender, InteropService, InteropServiceClient, User, contract_user};
use crate::greeter::proto::{GreetReply, GreetRequest, Greeter, GreeterClient};

/// Pass and fail counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// Checks that passed.
    pub passed: usize,
    /// Checks that failed.
    pub failed: usize,
}

impl Report {
    /// Records and prints one check.
    pub fn record(&mut self, name: &str, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => {
                self.passed += 1;
                println!("PASS {name}");
            }
            Err(detail) => {
                self.failed += 1;
                let detail: String = detail.chars().take(300).collect();
                println!("FAIL {name}: {detail}");
            }
        }
    }
}

fn eq<T: PartialEq + Debug>(got: Result<T, RpcError>, want: T) -> Result<(), String> {
    match got {
        Ok(v) if v == want => Ok(()),
        Ok(v) => Err(format!("got {:?}, want {:?}", short(&v), short(&want))),
        Err(e) => Err(format!("error: {e}")),
    }
}

fn short<T: Debug>(v: &T) -> String {
    let s = format!("{v:?}");
    if s.len() > 120 {
        format!(
            "{}… ({} chars)",
            &s[..s.char_indices().nth(100).map_or(s.len(), |(i, _)| i)],
            s.len()
        )
    } else {
        s
    }
}

/// How many calls the `concurrent.N` check makes at once by default.
pub const BURST: usize = 400;

/// Runs every check against `client`, whose calls time out after `timeout`.
pub async fn run_all(client: &InteropServiceClient, timeout: Duration) -> Report {
    run_all_over(client, timeout, false, BURST).await
}

/// [`run_all`], over Triple when `triple`: attachments travel as HTTP/2 header values,
/// which Java writes and reads as ISO-8859-1, so the non-ASCII attachment check uses
/// text that fits it. `burst` calls are made at once in the `concurrent.{burst}` check.
pub async fn run_all_over(
    client: &InteropServiceClient,
    timeout: Duration,
    triple: bool,
    burst: usize,
) -> Report {
    let mut r = Report::default();
    strings(client, &mut r).await;
    numbers(client, &mut r).await;
    bytes_lists_maps(client, &mut r).await;
    users(client, &mut r).await;
    errors_attachments_timeouts(client, timeout, triple, burst, &mut r).await;
    generic(client, &mut r).await;
    r
}

async fn strings(c: &InteropServiceClient, r: &mut Report) {
    r.record(
        "echo.hello",
        eq(c.echo(Some("hello".into())).await, Some("hello".into())),
    );
    r.record("echo.null", eq(c.echo(None).await, None));
    let cases: Vec<(&str, String)> = vec![
        ("echo.empty", String::new()),
        ("echo.one-char", "x".into()),
        ("echo.nul-char", "\0".into()),
        ("echo.len31", "a".repeat(31)),
        ("echo.len32", "a".repeat(32)),
        ("echo.len1023", "a".repeat(1023)),
        ("echo.len1024", "a".repeat(1024)),
        ("echo.unicode-bmp", "héllo wörld 你好 Ω".into()),
        ("echo.emoji", "😀🎉 rocket 🚀".into()),
        ("echo.len70000-ascii", "a".repeat(70_000)),
        ("echo.len70000-mixed", "ab你😀".repeat(14_000)),
        (
            "echo.emoji-at-chunk-boundary",
            "a".repeat(32_767) + "😀" + &"b".repeat(100),
        ),
    ];
    for (name, s) in cases {
        r.record(name, eq(c.echo(Some(s.clone())).await, Some(s)));
    }
}

async fn numbers(c: &InteropServiceClient, r: &mut Report) {
    for v in [
        0,
        -16,
        -17,
        47,
        48,
        -2048,
        -2049,
        2047,
        2048,
        -262_144,
        -262_145,
        262_143,
        262_144,
        i32::MIN,
        i32::MAX,
    ] {
        r.record(&format!("echoInt.{v}"), eq(c.echo_int(v).await, v));
    }
    for v in [
        0,
        -8,
        -9,
        15,
        16,
        -2048,
        2047,
        2048,
        -262_144,
        262_143,
        262_144,
        i64::from(i32::MIN),
        i64::from(i32::MAX),
        i64::from(i32::MAX) + 1,
        i64::from(i32::MIN) - 1,
        i64::MIN,
        i64::MAX,
    ] {
        r.record(&format!("echoLong.{v}"), eq(c.echo_long(v).await, v));
    }
    for v in [
        0.0,
        1.0,
        -128.0,
        127.0,
        -129.0,
        128.0,
        -32768.0,
        32767.0,
        32768.0,
        0.001,
        12.25,
        -3.5,
        1e300,
        -1e-300,
        f64::MIN_POSITIVE,
        f64::MAX,
    ] {
        r.record(&format!("echoDouble.{v}"), eq(c.echo_double(v).await, v));
    }
    r.record(
        "echoDouble.NaN",
        match c.echo_double(f64::NAN).await {
            Ok(v) if v.is_nan() => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    r.record(
        "echoDouble.-0.0",
        match c.echo_double(-0.0).await {
            Ok(0.0) => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    r.record("echoBool.true", eq(c.echo_bool(true).await, true));
    r.record("echoBool.false", eq(c.echo_bool(false).await, false));
}

async fn bytes_lists_maps(c: &InteropServiceClient, r: &mut Report) {
    r.record("echoBytes.null", eq(c.echo_bytes(None).await, None));
    for (name, b) in [
        ("echoBytes.empty", Vec::new()),
        ("echoBytes.one", vec![0xff]),
        ("echoBytes.all-256", (0..=255u8).collect()),
        (
            "echoBytes.100000",
            (0..100_000u32).map(|i| (i * 31 + 7) as u8).collect(),
        ),
    ] {
        r.record(name, eq(c.echo_bytes(Some(b.clone())).await, Some(b)));
    }
    r.record("echoList.null", eq(c.echo_list(None).await, None));
    let s = |v: &str| Some(v.to_owned());
    for (name, l) in [
        ("echoList.empty", vec![]),
        ("echoList.contract", vec![s("a"), s("b"), s("c")]),
        ("echoList.null-element", vec![s("a"), None, s("c")]),
        ("echoList.same-string-twice", vec![s("x"), s("x")]),
        (
            "echoList.100000",
            (0..100_000).map(|i| Some(format!("e{i}"))).collect(),
        ),
    ] {
        r.record(name, eq(c.echo_list(Some(l.clone())).await, Some(l)));
    }
    r.record("echoMap.null", eq(c.echo_map(None).await, None));
    for (name, m) in [
        ("echoMap.empty", HashMap::new()),
        (
            "echoMap.contract",
            HashMap::from([("a".to_owned(), Some(1))]),
        ),
        (
            "echoMap.boundaries-and-null-value",
            HashMap::from([
                ("min".to_owned(), Some(i32::MIN)),
                ("max".to_owned(), Some(i32::MAX)),
                ("48".to_owned(), Some(48)),
                ("null".to_owned(), None),
            ]),
        ),
        (
            "echoMap.100000",
            (0..100_000).map(|i| (format!("k{i}"), Some(i))).collect(),
        ),
    ] {
        r.record(name, eq(c.echo_map(Some(m.clone())).await, Some(m)));
    }
}

async fn users(c: &InteropServiceClient, r: &mut Report) {
    r.record(
        "echoUser.contract-user-1",
        eq(
            c.echo_user(Some(contract_user(1))).await,
            Some(contract_user(1)),
        ),
    );
    r.record("echoUser.null", eq(c.echo_user(None).await, None));
    r.record(
        "echoUser.all-null-fields",
        eq(
            c.echo_user(Some(User::default())).await,
            Some(User::default()),
        ),
    );
    let full = User {
        id: i64::MAX,
        name: Some("名前 😀".into()),
        age: i32::MIN,
        gender: Some(Gender::MALE),
        address: Some(Address {
            city: Some("Hangzhou".into()),
            street: Some("West Lake Rd".into()),
            zip: 310_000,
        }),
        tags: Some(vec![Some("a".into()), None, Some(String::new())]),
        props: Some(HashMap::from([
            ("k".into(), Some("v".into())),
            ("nil".into(), None),
        ])),
        created_at: Some(Date(-1)),
        balance: Some(rubbo::BigDecimal::new("-12345678901234567890.000000001")),
    };
    r.record(
        "echoUser.extremes",
        eq(c.echo_user(Some(full.clone())).await, Some(full)),
    );
    let empty_collections = User {
        address: None,
        tags: Some(vec![]),
        props: Some(HashMap::new()),
        ..contract_user(2)
    };
    r.record(
        "echoUser.null-address-empty-collections",
        eq(
            c.echo_user(Some(empty_collections.clone())).await,
            Some(empty_collections),
        ),
    );
    for n in [0, 1, 1000] {
        r.record(
            &format!("listUsers.{n}"),
            eq(
                c.list_users(n).await,
                Some((0..n).map(contract_user).collect()),
            ),
        );
    }
    r.record("ping", eq(c.ping().await, ()));
}

async fn errors_attachments_timeouts(
    c: &InteropServiceClient,
    timeout: Duration,
    triple: bool,
    burst: usize,
    r: &mut Report,
) {
    for (name, msg) in [("fail.boom", "boom"), ("fail.unicode-message", "出错了 😱")] {
        r.record(
            name,
            match c.fail(Some(msg.into())).await {
                Err(e) if e.kind() == ErrorKind::Biz => {
                    let b = e.biz_exception();
                    match b {
                        Some(b)
                            if b.class == "org.rubbo.interop.InteropException"
                                && b.message.as_deref() == Some(msg) =>
                        {
                            Ok(())
                        }
                        other => Err(format!("wrong exception {other:?}")),
                    }
                }
                other => Err(format!("want InteropException, got {other:?}")),
            },
        );
    }
    r.record(
        "after-fail.echo",
        eq(c.echo(Some("ok".into())).await, Some("ok".into())),
    );
    let with = |k: &str, v: &str| c.clone().with_attachment(k, v);
    r.record(
        "attachment.roundtrip",
        eq(
            with("rubbo-key", "value-1")
                .attachment(Some("rubbo-key".into()))
                .await,
            Some("value-1".into()),
        ),
    );
    let unicode = if triple { "värde é ü" } else { "值 😀" };
    r.record(
        "attachment.unicode-value",
        eq(
            with("rubbo-key", unicode)
                .attachment(Some("rubbo-key".into()))
                .await,
            Some(unicode.into()),
        ),
    );
    r.record(
        "attachment.missing",
        eq(c.attachment(Some("no-such-key".into())).await, None),
    );
    r.record("slow.10", eq(c.slow(10).await, Some("done".into())));
    let short = timeout.min(Duration::from_millis(500));
    let t0 = Instant::now();
    // One try only: failover would otherwise retry the timeout on another provider.
    let res = with("timeout", &short.as_millis().to_string())
        .with_attachment("retries", "0")
        .slow(i32::try_from(short.as_millis() * 3).unwrap_or(i32::MAX))
        .await;
    let took = t0.elapsed();
    r.record(
        "slow.timeout",
        match res {
            Err(e)
                if e.kind() == ErrorKind::Timeout
                    && took < short * 2 + Duration::from_millis(200) =>
            {
                Ok(())
            }
            Err(e) if e.kind() == ErrorKind::Timeout => {
                Err(format!("timed out late: {took:?} for {short:?}"))
            }
            other => Err(format!("want a timeout, got {other:?} after {took:?}")),
        },
    );
    r.record(
        "after-timeout.echo",
        eq(c.echo(Some("still".into())).await, Some("still".into())),
    );
    r.record(
        "whoami",
        match c.whoami().await {
            Ok(Some(id))
                if id.contains('@')
                    && id
                        .rsplit(':')
                        .next()
                        .is_some_and(|p| p.parse::<u16>().is_ok()) =>
            {
                Ok(())
            }
            other => Err(format!("{other:?}")),
        },
    );
    let burst_i32 = i32::try_from(burst).unwrap_or(i32::MAX);
    let calls = (0..burst_i32).map(|i| {
        let c = c.clone();
        async move { c.echo_int(i).await.map(|v| v == i) }
    });
    let all = futures::future::join_all(calls).await;
    let bad = all.iter().filter(|r| !matches!(r, Ok(true))).count();
    // The first failure says why (a wrong value, or the call's error).
    let first = all.iter().find(|r| !matches!(r, Ok(true)));
    r.record(
        &format!("concurrent.{burst}"),
        if bad == 0 {
            Ok(())
        } else {
            Err(format!("{bad} of {burst} wrong; the first: {first:?}"))
        },
    );
}

fn generic_call(method: &str, types: &[&str], args: Vec<Value>) -> Invocation {
    let list = |ty: &str, items: Vec<Value>| Value::List(rubbo_list(ty, items));
    Invocation::new(InteropServiceClient::INTERFACE, "$invoke")
        .with_version(InteropServiceClient::VERSION)
        .with_parameter_types("Ljava/lang/String;[Ljava/lang/String;[Ljava/lang/Object;")
        .with_arguments(Arguments::Values(vec![
            Value::from(method),
            list("[string", types.iter().map(|t| Value::from(*t)).collect()),
            list("[object", args),
        ]))
        .with_attachment("generic", "true")
}

fn rubbo_list(ty: &str, items: Vec<Value>) -> rubbo::value::List {
    rubbo::value::List {
        type_name: Some(ty.into()),
        items,
    }
}

async fn generic(c: &InteropServiceClient, r: &mut Report) {
    let invoker = c.invoker().clone();
    let echo = Invocation::new(InteropServiceClient::INTERFACE, "$echo")
        .with_version(InteropServiceClient::VERSION)
        .with_parameter_types("Ljava/lang/Object;")
        .with_arguments(Arguments::Values(vec![Value::from("hello")]));
    r.record(
        "echoService.$echo",
        value_eq(
            invoker.invoke(echo).await.and_then(|x| x.into_payload()),
            Value::from("hello"),
        ),
    );
    let echo_int = Invocation::new(InteropServiceClient::INTERFACE, "$echo")
        .with_version(InteropServiceClient::VERSION)
        .with_parameter_types("Ljava/lang/Object;")
        .with_arguments(Arguments::Values(vec![Value::Int(48)]));
    r.record(
        "echoService.$echo-int",
        value_eq(
            invoker
                .invoke(echo_int)
                .await
                .and_then(|x| x.into_payload()),
            Value::Int(48),
        ),
    );
    let call = |m: &str, t: &[&str], a: Vec<Value>| generic_call(m, t, a);
    r.record(
        "generic.echo",
        value_eq(
            invoker
                .invoke(call("echo", &["java.lang.String"], vec![Value::from("hi")]))
                .await
                .and_then(|x| x.into_payload()),
            Value::from("hi"),
        ),
    );
    r.record(
        "generic.echo-null",
        value_eq(
            invoker
                .invoke(call("echo", &["java.lang.String"], vec![Value::Null]))
                .await
                .and_then(|x| x.into_payload()),
            Value::Null,
        ),
    );
    r.record(
        "generic.echoInt",
        value_eq(
            invoker
                .invoke(call("echoInt", &["int"], vec![Value::Int(262_144)]))
                .await
                .and_then(|x| x.into_payload()),
            Value::Int(262_144),
        ),
    );
    r.record(
        "generic.echoLong",
        value_eq(
            invoker
                .invoke(call("echoLong", &["long"], vec![Value::Long(i64::MIN)]))
                .await
                .and_then(|x| x.into_payload()),
            Value::Long(i64::MIN),
        ),
    );
    // A POJO argument as a map carrying its class; the result comes back generalized.
    let user_map = Value::Map(rubbo::value::Map {
        type_name: None,
        entries: vec![
            (Value::from("class"), Value::from("org.rubbo.interop.User")),
            (Value::from("id"), Value::Long(7)),
            (Value::from("name"), Value::from("seven")),
            (Value::from("gender"), Value::from("FEMALE")),
        ],
    });
    r.record(
        "generic.echoUser-map",
        match invoker
            .invoke(call(
                "echoUser",
                &["org.rubbo.interop.User"],
                vec![user_map],
            ))
            .await
            .and_then(|x| x.into_payload())
            .and_then(|p| p.to_value())
        {
            Ok(v)
                if v.field("name").and_then(Value::as_str) == Some("seven")
                    && v.field("class").and_then(Value::as_str)
                        == Some("org.rubbo.interop.User")
                    && v.field("gender").and_then(Value::as_str) == Some("FEMALE")
                    && v.field("id").and_then(Value::as_i64) == Some(7) =>
            {
                Ok(())
            }
            other => Err(format!("{other:?}")),
        },
    );
    r.record(
        "generic.listUsers",
        match invoker
            .invoke(call("listUsers", &["int"], vec![Value::Int(3)]))
            .await
            .and_then(|x| x.into_payload())
            .and_then(|p| p.to_value())
        {
            Ok(Value::List(l))
                if l.items.len() == 3
                    && l.items[2].field("name").and_then(Value::as_str) == Some("user-2") =>
            {
                Ok(())
            }
            other => Err(format!("{:?}", other.map(|v| short(&v)))),
        },
    );
    r.record(
        "generic.ping",
        match invoker
            .invoke(call("ping", &[], vec![]))
            .await
            .and_then(|x| x.into_payload())
        {
            Ok(Payload::Null) => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    r.record(
        "generic.fail",
        match invoker
            .invoke(call("fail", &["java.lang.String"], vec![Value::from("g")]))
            .await
            .and_then(|x| x.into_payload())
        {
            Err(e)
                if e.biz_exception()
                    .is_some_and(|b| b.class == "org.rubbo.interop.InteropException") =>
            {
                Ok(())
            }
            other => Err(format!("{other:?}")),
        },
    );
    r.record(
        "generic.after.typed-echo",
        eq(c.echo(Some("typed".into())).await, Some("typed".into())),
    );
}

fn value_eq(got: Result<Payload, RpcError>, want: Value) -> Result<(), String> {
    match got.and_then(|p| p.to_value()) {
        Ok(v) if v == want => Ok(()),
        Ok(v) => Err(format!("got {}, want {want:?}", short(&v))),
        Err(e) => Err(format!("error: {e}")),
    }
}

/// The Greeter checks (Triple, IDL mode): `Greet` with a name, with a payload, with
/// non-ASCII text, and the `"error"` name's status. Every contract provider serves the
/// Greeter on Triple (the Java one too), so a missing Greeter fails `greeter/greet`.
pub async fn greeter(client: &GreeterClient, r: &mut Report) {
    let greet = |name: &str, payload: Vec<u8>| {
        client.greet(GreetRequest {
            name: name.to_owned(),
            repeat: 0,
            payload,
        })
    };
    let first = greet("world", Vec::new()).await;
    let reply = |got: Result<GreetReply, Status>, message: &str, payload: &[u8]| match got {
        Ok(g) if g.message == message && g.payload == payload && g.index == 0 => Ok(()),
        Ok(g) => Err(format!(
            "got message {:?}, index {}, {} payload bytes; want {message:?}, 0, {}",
            g.message,
            g.index,
            g.payload.len(),
            payload.len()
        )),
        Err(s) => Err(format!("error: {s}")),
    };
    r.record("greeter/greet", reply(first, "Hello, world", &[]));
    let payload: Vec<u8> = (0..64 * 1024).map(|i| (i % 251) as u8).collect();
    r.record(
        "greeter/payload",
        reply(greet("p", payload.clone()).await, "Hello, p", &payload),
    );
    r.record(
        "greeter/unicode",
        reply(greet("värld 😀", Vec::new()).await, "Hello, värld 😀", &[]),
    );
    r.record(
        "greeter/error-status",
        match greet(crate::greeter::ERROR_NAME, Vec::new()).await {
            Err(s)
                if s.code() == Code::InvalidArgument
                    && s.message() == crate::greeter::ERROR_MESSAGE =>
            {
                Ok(())
            }
            Err(s) => Err(format!(
                "got {s}, want INVALID_ARGUMENT {:?}",
                crate::greeter::ERROR_MESSAGE
            )),
            Ok(g) => Err(format!("got a reply {:?}, want a status", g.message)),
        },
    );
}

/// Whether `s` is the contract's `"error"` failure: INVALID_ARGUMENT `"bad name"`.
fn bad_name(s: &Status) -> Result<(), String> {
    if s.code() == Code::InvalidArgument && s.message() == crate::greeter::ERROR_MESSAGE {
        Ok(())
    } else {
        Err(format!(
            "got {s}, want INVALID_ARGUMENT {:?}",
            crate::greeter::ERROR_MESSAGE
        ))
    }
}

/// Reads a whole reply stream (bounded): the messages, and the status it failed with.
async fn drain<T, S>(mut replies: S) -> Result<(Vec<T>, Option<Status>), String>
where
    S: futures::Stream<Item = Result<T, Status>> + Unpin,
{
    use futures::StreamExt;
    let read = async {
        let mut got = Vec::new();
        while let Some(m) = replies.next().await {
            match m {
                Ok(m) => got.push(m),
                Err(s) => return (got, Some(s)),
            }
        }
        (got, None)
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .map_err(|_| "the stream did not end within 60 s".to_owned())
}

fn greet_request(name: &str, repeat: i32) -> GreetRequest {
    GreetRequest {
        name: name.to_owned(),
        repeat,
        payload: Vec::new(),
    }
}

/// The Greeter's three streaming rpcs (IDL mode): shapes, the half-close alone, 1,000
/// messages in order, and the `"error"` name mid-stream after the earlier replies.
pub async fn greeter_streams(client: &GreeterClient, r: &mut Report) {
    use rubbo::stream::Outbound;
    let names = |n: &[&str]| {
        Outbound::from_messages(n.iter().map(|n| greet_request(n, 0)).collect::<Vec<_>>())
    };
    let server = async |name: &str, repeat: i32| match client
        .greet_server_stream(greet_request(name, repeat))
        .await
    {
        Ok(s) => drain(s).await,
        Err(s) => Ok((Vec::new(), Some(s))),
    };
    r.record(
        "greeter/server-stream",
        match server("s", 3).await {
            Ok((got, None))
                if got.len() == 3
                    && got
                        .iter()
                        .enumerate()
                        .all(|(i, g)| g.message == "Hello, s" && g.index == i as i32) =>
            {
                Ok(())
            }
            other => Err(format!("got {}", short(&other))),
        },
    );
    r.record(
        "greeter/server-stream-1000-in-order",
        match server("many", 1000).await {
            Ok((got, None))
                if got.len() == 1000
                    && got.iter().enumerate().all(|(i, g)| g.index == i as i32) =>
            {
                Ok(())
            }
            other => Err(format!("got {}", short(&other))),
        },
    );
    r.record(
        "greeter/server-stream-error",
        match server(crate::greeter::ERROR_NAME, 3).await {
            Ok((got, Some(s))) if got.is_empty() => bad_name(&s),
            other => Err(format!("got {}", short(&other))),
        },
    );
    r.record(
        "greeter/client-stream",
        match client.greet_client_stream(names(&["a", "b", "c"])).await {
            Ok(g) if g.message == "a,b,c" => Ok(()),
            other => Err(format!("got {}", short(&other))),
        },
    );
    r.record(
        "greeter/client-stream-half-close-only",
        match client.greet_client_stream(Outbound::empty()).await {
            Ok(g) if g.message.is_empty() => Ok(()),
            other => Err(format!("got {}", short(&other))),
        },
    );
    let many: Vec<String> = (0..1000).map(|i| format!("n{i}")).collect();
    let many_refs: Vec<&str> = many.iter().map(String::as_str).collect();
    r.record(
        "greeter/client-stream-1000",
        match client.greet_client_stream(names(&many_refs)).await {
            Ok(g) if g.message == many.join(",") => Ok(()),
            other => Err(format!("got {}", short(&other))),
        },
    );
    r.record(
        "greeter/client-stream-error",
        match client.greet_client_stream(names(&["a", "error"])).await {
            Err(s) => bad_name(&s),
            Ok(g) => Err(format!("got a reply {:?}, want a status", g.message)),
        },
    );
    r.record(
        "greeter/bidi-1000-in-order",
        match client.greet_bidi(names(&many_refs)).await {
            Ok(s) => match drain(s).await {
                Ok((got, None))
                    if got.len() == 1000
                        && got.iter().enumerate().all(|(i, g)| {
                            g.index == i as i32 && g.message == format!("Hello, n{i}")
                        }) =>
                {
                    Ok(())
                }
                other => Err(format!("got {}", short(&other))),
            },
            Err(s) => Err(format!("error: {s}")),
        },
    );
    // The requests wait on a channel until the first reply came: "error" is sent
    // only after the earlier messages were answered.
    r.record("greeter/bidi-error-mid-stream", {
        let (tx, requests) = rubbo::stream::channel(4);
        match client.greet_bidi(requests).await {
            Ok(mut replies) => {
                let mut got = Vec::new();
                let mut outcome = Err("no error".to_owned());
                for name in ["a", "b", "error"] {
                    let _ = tx.send(greet_request(name, 0)).await;
                    match tokio::time::timeout(Duration::from_secs(30), replies.message()).await {
                        Ok(Ok(Some(g))) => got.push(g.message),
                        Ok(Ok(None)) => break,
                        Ok(Err(s)) => {
                            outcome = bad_name(&s);
                            break;
                        }
                        Err(_) => {
                            outcome = Err("no reply within 30 s".to_owned());
                            break;
                        }
                    }
                }
                drop(tx);
                outcome.and_then(|()| {
                    if got == ["Hello, a", "Hello, b"] {
                        Ok(())
                    } else {
                        Err(format!("replies before the error: {got:?}"))
                    }
                })
            }
            Err(s) => Err(format!("error: {s}")),
        }
    });
}

/// The interop-only StreamService (wrapper mode, hessian2 in each message; Java's
/// `StreamObserver`): each shape, the half-close alone, 1,000 messages in order, and
/// the error mid-stream after the earlier messages.
pub async fn stream_service(client: &crate::StreamServiceClient, r: &mut Report) {
    use crate::StreamService;
    use rubbo::stream::{Outbound, Streaming};
    let words = |w: Vec<String>| {
        Streaming::from(Outbound::from_messages(
            w.into_iter().map(Some).collect::<Vec<_>>(),
        ))
    };
    let users = async |n: i32| match client.users(n).await {
        Ok(s) => drain(s).await,
        Err(e) => Ok((Vec::new(), Some(Status::from_error(&e)))),
    };
    r.record(
        "streams/users",
        match users(3).await {
            Ok((got, None)) if got == (0..3).map(contract_user).collect::<Vec<_>>() => Ok(()),
            other => Err(format!("got {}", short(&other))),
        },
    );
    r.record(
        "streams/users-1000-in-order",
        match users(1000).await {
            Ok((got, None))
                if got.len() == 1000 && got.iter().enumerate().all(|(i, u)| u.id == i as i64) =>
            {
                Ok(())
            }
            other => Err(format!("got {}", short(&other))),
        },
    );
    r.record(
        "streams/users-error-mid-stream",
        match users(-2).await {
            Ok((got, Some(s))) if got.len() == 2 && got[1].id == 1 => bad_name(&s),
            other => Err(format!("got {}", short(&other))),
        },
    );
    let s = |v: &[&str]| v.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    r.record(
        "streams/join",
        eq(
            client.join(words(s(&["a", "中文 😀", "c"]))).await,
            Some("a,中文 😀,c".to_owned()),
        ),
    );
    r.record(
        "streams/join-half-close-only",
        eq(client.join(words(Vec::new())).await, Some(String::new())),
    );
    r.record(
        "streams/join-error",
        match client.join(words(s(&["a", "error"]))).await {
            Err(e) => bad_name(&Status::from_error(&e)),
            Ok(v) => Err(format!("got {v:?}, want a status")),
        },
    );
    let many: Vec<String> = (0..1000).map(|i| format!("w{i}")).collect();
    r.record(
        "streams/echo-1000-in-order",
        match client.echo(words(many)).await {
            Ok(replies) => match drain(replies).await {
                Ok((got, None))
                    if got.len() == 1000
                        && got
                            .iter()
                            .enumerate()
                            .all(|(i, w)| w.as_deref() == Some(format!("{i}:w{i}").as_str())) =>
                {
                    Ok(())
                }
                other => Err(format!("got {}", short(&other))),
            },
            Err(e) => Err(format!("error: {e}")),
        },
    );
    r.record("streams/echo-error-mid-stream", {
        let (tx, requests) = rubbo::stream::channel::<Option<String>>(4);
        match client.echo(requests.into()).await {
            Ok(mut replies) => {
                let mut got = Vec::new();
                let mut outcome = Err("no error".to_owned());
                for w in ["a", "b", "error"] {
                    let _ = tx.send(Some(w.to_owned())).await;
                    match tokio::time::timeout(
                        Duration::from_secs(30),
                        futures::StreamExt::next(&mut replies),
                    )
                    .await
                    {
                        Ok(Some(Ok(w))) => got.push(w.unwrap_or_default()),
                        Ok(None) => break,
                        Ok(Some(Err(s))) => {
                            outcome = bad_name(&s);
                            break;
                        }
                        Err(_) => {
                            outcome = Err("no reply within 30 s".to_owned());
                            break;
                        }
                    }
                }
                drop(tx);
                outcome.and_then(|()| {
                    if got == ["0:a", "1:b"] {
                        Ok(())
                    } else {
                        Err(format!("replies before the error: {got:?}"))
                    }
                })
            }
            Err(e) => Err(format!("error: {e}")),
        }
    });
}
