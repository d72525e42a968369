//! A Rust consumer calling a Rust provider over `dubbo://` on real sockets on
//! 127.0.0.1: every shape of result, errors, timeouts, generic and echo calls,
//! unknown services and methods, concurrency on one connection, provider death.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rubbo_common::FilteredProtocol;
use rubbo_common::{
    Arguments, BizException, BoxInvoker, ErrorKind, Exporter, Invocation, InvokeFuture, Invoker,
    Payload, Protocol, RpcError, RpcResult, Url, Value,
};
use rubbo_protocol_dubbo::DubboProtocol;

const IFACE: &str = "org.rubbo.interop.InteropService";

/// A hand-written service (the macro-generated one is tested in the facade).
#[derive(Debug)]
struct Service {
    url: Url,
    calls: Arc<AtomicUsize>,
}

impl Invoker for Service {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        self.calls.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            match (inv.method(), inv.parameter_types()) {
                ("echo", "Ljava/lang/String;") => {
                    let (s,): (Option<String>,) = inv.arguments().decode()?;
                    Ok(match s {
                        Some(s) => RpcResult::value(Payload::typed(s)),
                        None => RpcResult::null(),
                    })
                }
                ("echoInt", "I") => {
                    let (v,): (i32,) = inv.arguments().decode()?;
                    Ok(RpcResult::value(Payload::typed(v)))
                }
                ("ping", "") => Ok(RpcResult::null()),
                ("fail", "Ljava/lang/String;") => {
                    let (m,): (String,) = inv.arguments().decode()?;
                    Ok(RpcResult::from_exception(BizException::new(
                        "org.rubbo.interop.InteropException",
                        Some(m),
                    )))
                }
                ("attachment", "Ljava/lang/String;") => {
                    let (k,): (String,) = inv.arguments().decode()?;
                    let v = inv.attachment_str(&k).map(str::to_owned);
                    Ok(RpcResult::value(Payload::typed(v))
                        .with_attachment("server-key", "server-value"))
                }
                ("slow", "I") => {
                    let (ms,): (i32,) = inv.arguments().decode()?;
                    tokio::time::sleep(Duration::from_millis(ms as u64)).await;
                    Ok(RpcResult::value(Payload::typed("done")))
                }
                ("panic", "") => panic!("handler bug"),
                (m, d) => Err(RpcError::method_not_found(format!(
                    "no method {m}({d}); exported: echo, echoInt, ping, fail, attachment, slow"
                ))),
            }
        })
    }
    fn url(&self) -> &Url {
        &self.url
    }
}

async fn provider(protocol: &DubboProtocol, extra: &str) -> (Box<dyn Exporter>, u16) {
    let (exporter, port, _) = counted_provider(protocol, extra).await;
    (exporter, port)
}

/// `protocol` with the built-in filter chains, as the bootstrap uses it: echo,
/// generic and limits are filters, not part of the protocol.
fn filtered(protocol: &DubboProtocol) -> FilteredProtocol {
    FilteredProtocol::new(
        Arc::new(protocol.clone()),
        Arc::new(rubbo_filter::builtin_filters()),
    )
}

/// A provider plus the count of calls that reached the service.
async fn counted_provider(
    protocol: &DubboProtocol,
    extra: &str,
) -> (Box<dyn Exporter>, u16, Arc<AtomicUsize>) {
    let url = Url::parse(&format!(
        "dubbo://127.0.0.1:0/{IFACE}?version=1.0.0&side=provider{extra}"
    ))
    .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let exporter = filtered(protocol)
        .export(Arc::new(Service {
            url,
            calls: calls.clone(),
        }))
        .await
        .unwrap();
    let port = protocol.server_addr("127.0.0.1:0").unwrap().port();
    (exporter, port, calls)
}

/// Waits (bounded) until the service has seen `n` calls.
async fn wait_calls(calls: &AtomicUsize, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while calls.load(Ordering::SeqCst) < n {
        assert!(
            Instant::now() < deadline,
            "the call never reached the service"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn consumer(protocol: &DubboProtocol, port: u16, extra: &str) -> BoxInvoker {
    filtered(protocol)
        .refer(Url::parse(&format!("dubbo://127.0.0.1:{port}/{IFACE}?version=1.0.0&application=rust-consumer&timeout=2000{extra}")).unwrap())
        .await
        .unwrap()
}

fn call(method: &str, desc: &str, args: Arguments) -> Invocation {
    Invocation::new(IFACE, method)
        .with_version("1.0.0")
        .with_parameter_types(desc)
        .with_arguments(args)
}

#[tokio::test]
async fn values_nulls_voids_exceptions_and_attachments() {
    let server = DubboProtocol::new();
    let (_exp, port) = provider(&server, "").await;
    let client = consumer(&DubboProtocol::new(), port, "").await;

    let r = client
        .invoke(call(
            "echo",
            "Ljava/lang/String;",
            Arguments::typed(1, ("hello",)),
        ))
        .await
        .unwrap();
    assert_eq!(r.payload().unwrap().decode::<String>().unwrap(), "hello");
    assert!(
        r.attachments().get("dubbo").is_none(),
        "protocol bookkeeping is not handed to callers"
    );

    let r = client
        .invoke(call(
            "echo",
            "Ljava/lang/String;",
            Arguments::typed(1, (None::<String>,)),
        ))
        .await
        .unwrap();
    assert!(matches!(r.payload(), Some(Payload::Null)));

    let big = "x".repeat(70_000) + "😀";
    let r = client
        .invoke(call(
            "echo",
            "Ljava/lang/String;",
            Arguments::typed(1, (big.clone(),)),
        ))
        .await
        .unwrap();
    assert_eq!(r.payload().unwrap().decode::<String>().unwrap(), big);

    let r = client
        .invoke(call(
            "echoInt",
            "I",
            Arguments::Values(vec![Value::Int(-262145)]),
        ))
        .await
        .unwrap();
    assert_eq!(r.payload().unwrap().decode::<i32>().unwrap(), -262145);

    let r = client
        .invoke(call("ping", "", Arguments::none()))
        .await
        .unwrap();
    assert!(matches!(r.payload(), Some(Payload::Null)));

    let r = client
        .invoke(call(
            "fail",
            "Ljava/lang/String;",
            Arguments::typed(1, ("boom",)),
        ))
        .await
        .unwrap();
    let e = r.exception().unwrap();
    assert_eq!(e.class, "org.rubbo.interop.InteropException");
    assert_eq!(e.message.as_deref(), Some("boom"));
    let err = r.into_payload().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Biz);

    let r = client
        .invoke(
            call(
                "attachment",
                "Ljava/lang/String;",
                Arguments::typed(1, ("k1",)),
            )
            .with_attachment("k1", "v1"),
        )
        .await
        .unwrap();
    assert_eq!(
        r.payload()
            .unwrap()
            .decode::<Option<String>>()
            .unwrap()
            .as_deref(),
        Some("v1")
    );
    assert_eq!(
        r.attachments().get("server-key"),
        Some(&Value::from("server-value"))
    );
}

#[tokio::test]
async fn unknown_service_and_method_name_what_is_exported() {
    let server = DubboProtocol::new();
    let (_exp, port) = provider(&server, "").await;
    let client = consumer(&DubboProtocol::new(), port, "").await;
    let err = client
        .invoke(call("nope", "I", Arguments::Values(vec![Value::Int(1)])))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MethodNotFound, "{err}");
    assert!(
        err.message().contains("nope(I)") && err.message().contains("echoInt"),
        "{err}"
    );

    let other = protocol_refer(port, "org.rubbo.interop.NoSuchService", "1.0.0").await;
    let err = other
        .invoke(
            Invocation::new("org.rubbo.interop.NoSuchService", "echo")
                .with_version("1.0.0")
                .with_parameter_types("Ljava/lang/String;")
                .with_arguments(Arguments::typed(1, ("x",))),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MethodNotFound);
    assert!(
        err.message()
            .contains("org.rubbo.interop.NoSuchService:1.0.0")
            && err
                .message()
                .contains("org.rubbo.interop.InteropService:1.0.0"),
        "{err}"
    );
    // The provider keeps serving.
    let r = client
        .invoke(call("echoInt", "I", Arguments::typed(1, (7,))))
        .await
        .unwrap();
    assert_eq!(r.payload().unwrap().decode::<i32>().unwrap(), 7);
}

async fn protocol_refer(port: u16, iface: &str, version: &str) -> BoxInvoker {
    DubboProtocol::new()
        .refer(
            Url::parse(&format!(
                "dubbo://127.0.0.1:{port}/{iface}?version={version}"
            ))
            .unwrap(),
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn a_panicking_handler_answers_an_error_and_the_connection_survives() {
    let server = DubboProtocol::new();
    let (_exp, port) = provider(&server, "").await;
    let client = consumer(&DubboProtocol::new(), port, "").await;
    let err = client
        .invoke(call("panic", "", Arguments::none()))
        .await
        .unwrap_err();
    assert_ne!(err.kind(), ErrorKind::Timeout, "{err}");
    let r = client
        .invoke(call("echoInt", "I", Arguments::typed(1, (1,))))
        .await
        .unwrap();
    assert_eq!(r.payload().unwrap().decode::<i32>().unwrap(), 1);
}

#[tokio::test]
async fn timeouts_fail_near_the_deadline_and_the_provider_keeps_serving() {
    let server = DubboProtocol::new();
    let (_exp, port) = provider(&server, "").await;
    let client = consumer(&DubboProtocol::new(), port, "&slow.timeout=200").await;
    let t0 = Instant::now();
    // The provider would answer after 20 s: a timeout that did not fire shows as a
    // wait of many seconds, far from the 200 ms deadline even on a loaded machine.
    let err = client
        .invoke(call("slow", "I", Arguments::typed(1, (20_000,))))
        .await
        .unwrap_err();
    let took = t0.elapsed();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_secs(10),
        "{took:?}"
    );
    let r = client
        .invoke(call("slow", "I", Arguments::typed(1, (10,))))
        .await
        .unwrap();
    assert_eq!(r.payload().unwrap().decode::<String>().unwrap(), "done");
}

#[tokio::test]
async fn generic_invoke_and_echo_are_served_by_every_provider() {
    let server = DubboProtocol::new();
    let (_exp, port) = provider(&server, "").await;
    let client = consumer(&DubboProtocol::new(), port, "").await;
    let generic = call(
        "$invoke",
        "Ljava/lang/String;[Ljava/lang/String;[Ljava/lang/Object;",
        Arguments::Values(vec![
            Value::from("echoInt"),
            Value::List(rubbo_hessian2::List {
                type_name: Some("[string".into()),
                items: vec![Value::from("int")],
            }),
            Value::List(rubbo_hessian2::List {
                type_name: Some("[object".into()),
                items: vec![Value::Int(41)],
            }),
        ]),
    )
    .with_attachment("generic", "true");
    let r = client.invoke(generic).await.unwrap();
    assert_eq!(r.payload().unwrap().to_value().unwrap(), Value::Int(41));

    let echo = call(
        "$echo",
        "Ljava/lang/Object;",
        Arguments::Values(vec![Value::from("ping!")]),
    );
    let r = client.invoke(echo).await.unwrap();
    assert_eq!(r.payload().unwrap().decode::<String>().unwrap(), "ping!");
}

#[tokio::test]
async fn ten_thousand_concurrent_calls_on_one_connection() {
    let server = DubboProtocol::new();
    // Multiplexing, not the provider's bound (Java's 200, tested in `overload.rs`):
    // the bound is raised so all 10,000 may run at once.
    let (_exp, port) = provider(&server, "&threads=10000").await;
    let client = consumer(&DubboProtocol::new(), port, "&timeout=20000").await;
    let calls = (0..10_000).map(|i| {
        let client = client.clone();
        async move {
            let r = client
                .invoke(call("echoInt", "I", Arguments::typed(1, (i,))))
                .await?;
            r.payload().map(|p| p.decode::<i32>()).unwrap_or(Ok(-1))
        }
    });
    let results = tokio::time::timeout(Duration::from_secs(60), futures::future::join_all(calls))
        .await
        .expect("10,000 calls finish in time");
    for (i, r) in results.into_iter().enumerate() {
        assert_eq!(r.unwrap(), i as i32);
    }
}

#[tokio::test]
async fn executes_limit_answers_pool_exhausted_instead_of_queueing() {
    let server = DubboProtocol::new();
    let (_exp, port, calls) = counted_provider(&server, "&executes=1").await;
    let client = consumer(&DubboProtocol::new(), port, "").await;
    let slow = client.invoke(call("slow", "I", Arguments::typed(1, (500,))));
    // The limit is per method, as Java's `ExecuteLimitFilter` counts it: a second
    // `slow` is refused while another method still runs.
    let others = async {
        wait_calls(&calls, 1).await;
        let second = client
            .invoke(call("slow", "I", Arguments::typed(1, (1,))))
            .await;
        let other = client
            .invoke(call("echoInt", "I", Arguments::typed(1, (1,))))
            .await;
        (second, other)
    };
    let (a, (b, c)) = tokio::join!(slow, others);
    assert!(a.is_ok());
    let err = b.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LimitExceeded, "{err}");
    assert!(
        c.is_ok(),
        "another method is not limited by slow's calls: {c:?}"
    );
}

#[tokio::test]
async fn provider_gone_mid_call_fails_fast_and_a_restarted_provider_is_reached_again() {
    let server = DubboProtocol::new();
    let (exp, port, calls) = counted_provider(&server, "&shutdown.timeout=100").await;
    let client = consumer(&DubboProtocol::new(), port, "&timeout=10000").await;
    let pending = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .invoke(call("slow", "I", Arguments::typed(1, (5000,))))
                .await
        }
    });
    wait_calls(&calls, 1).await;
    let t0 = Instant::now();
    exp.unexport().await; // graceful wait is 100 ms, then connections close
    let err = tokio::time::timeout(Duration::from_secs(3), pending)
        .await
        .expect("pending call ends")
        .unwrap()
        .unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert!(
        matches!(err.kind(), ErrorKind::Network | ErrorKind::Timeout),
        "{err}"
    );

    // Restart on the same port: the consumer reconnects.
    let url = Url::parse(&format!("dubbo://127.0.0.1:{port}/{IFACE}?version=1.0.0")).unwrap();
    let restarted = DubboProtocol::new();
    let _exp2 = restarted
        .export(Arc::new(Service {
            url,
            calls: Arc::default(),
        }))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match client
            .invoke(call("echoInt", "I", Arguments::typed(1, (5,))))
            .await
        {
            Ok(r) => {
                assert_eq!(r.payload().unwrap().decode::<i32>().unwrap(), 5);
                break;
            }
            Err(e) if Instant::now() < deadline => {
                assert!(
                    matches!(e.kind(), ErrorKind::Network | ErrorKind::Timeout),
                    "{e}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("no reconnect within 10 s: {e}"),
        }
    }
}
