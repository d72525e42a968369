//! The contract's `InteropService` as a Rust service definition: generated client
//! wired straight to the generated server (no network), descriptors as Java writes
//! them, exceptions, attachments, and arguments in every form a protocol delivers.
#![allow(clippy::unwrap_used)]
#![deny(missing_docs, missing_debug_implementations)]

mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rubbo::codegen::Dispatch;
use rubbo::{Arguments, ErrorKind, Invocation, Payload, RpcError, Value, context};
use support::{User, url, user};

/// `org.rubbo.interop.InteropService`, exactly as the contract declares it.
#[rubbo::service(interface = "org.rubbo.interop.InteropService", version = "1.0.0")]
pub trait InteropService {
    /// `String echo(String s)`.
    async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError>;
    /// `int echoInt(int v)`.
    async fn echo_int(&self, v: i32) -> Result<i32, RpcError>;
    /// `long echoLong(long v)`.
    async fn echo_long(&self, v: i64) -> Result<i64, RpcError>;
    /// `double echoDouble(double v)`.
    async fn echo_double(&self, v: f64) -> Result<f64, RpcError>;
    /// `boolean echoBool(boolean v)`.
    async fn echo_bool(&self, v: bool) -> Result<bool, RpcError>;
    /// `byte[] echoBytes(byte[] b)`.
    async fn echo_bytes(&self, b: Option<Vec<u8>>) -> Result<Option<Vec<u8>>, RpcError>;
    /// `List<String> echoList(List<String> l)`.
    async fn echo_list(&self, l: Option<Vec<String>>) -> Result<Option<Vec<String>>, RpcError>;
    /// `Map<String,Integer> echoMap(Map<String,Integer> m)`.
    async fn echo_map(
        &self,
        m: Option<HashMap<String, i32>>,
    ) -> Result<Option<HashMap<String, i32>>, RpcError>;
    /// `User echoUser(User u)`.
    async fn echo_user(&self, u: Option<User>) -> Result<Option<User>, RpcError>;
    /// `List<User> listUsers(int n)`.
    async fn list_users(&self, n: i32) -> Result<Vec<User>, RpcError>;
    /// `void ping()`.
    async fn ping(&self) -> Result<(), RpcError>;
    /// `String fail(String message) throws InteropException`.
    async fn fail(&self, message: Option<String>) -> Result<Option<String>, RpcError>;
    /// `String attachment(String key)`.
    async fn attachment(&self, key: Option<String>) -> Result<Option<String>, RpcError>;
    /// `String slow(int millis)`.
    async fn slow(&self, millis: i32) -> Result<Option<String>, RpcError>;
    /// `String whoami()`.
    async fn whoami(&self) -> Result<String, RpcError>;
}

struct Provider;

impl InteropService for Provider {
    async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError> {
        Ok(s)
    }
    async fn echo_int(&self, v: i32) -> Result<i32, RpcError> {
        Ok(v)
    }
    async fn echo_long(&self, v: i64) -> Result<i64, RpcError> {
        Ok(v)
    }
    async fn echo_double(&self, v: f64) -> Result<f64, RpcError> {
        Ok(v)
    }
    async fn echo_bool(&self, v: bool) -> Result<bool, RpcError> {
        Ok(v)
    }
    async fn echo_bytes(&self, b: Option<Vec<u8>>) -> Result<Option<Vec<u8>>, RpcError> {
        Ok(b)
    }
    async fn echo_list(&self, l: Option<Vec<String>>) -> Result<Option<Vec<String>>, RpcError> {
        Ok(l)
    }
    async fn echo_map(
        &self,
        m: Option<HashMap<String, i32>>,
    ) -> Result<Option<HashMap<String, i32>>, RpcError> {
        Ok(m)
    }
    async fn echo_user(&self, u: Option<User>) -> Result<Option<User>, RpcError> {
        Ok(u)
    }
    async fn list_users(&self, n: i32) -> Result<Vec<User>, RpcError> {
        Ok((0..n).map(user).collect())
    }
    async fn ping(&self) -> Result<(), RpcError> {
        context::set_response_attachment("pong", true);
        Ok(())
    }
    async fn fail(&self, message: Option<String>) -> Result<Option<String>, RpcError> {
        Err(RpcError::biz("org.rubbo.interop.InteropException", message))
    }
    async fn attachment(&self, key: Option<String>) -> Result<Option<String>, RpcError> {
        let key = key.unwrap_or_default();
        context::set_response_attachment("echoed-key", key.as_str());
        Ok(context::attachment_str(&key))
    }
    async fn slow(&self, millis: i32) -> Result<Option<String>, RpcError> {
        tokio::time::sleep(Duration::from_millis(u64::try_from(millis).unwrap_or(0))).await;
        Ok(Some("done".to_owned()))
    }
    async fn whoami(&self) -> Result<String, RpcError> {
        Ok("interop-provider@127.0.0.1:20880".to_owned())
    }
}

fn client() -> InteropServiceClient {
    InteropServiceClient::new(InteropServiceServer::new(Arc::new(Provider)).into_invoker(url()))
}

#[test]
fn descriptors_are_what_java_writes() {
    let table: Vec<(&str, &str, &str)> = InteropServiceClient::METHODS
        .iter()
        .map(|m| (m.name, m.parameter_types, m.rust_name))
        .collect();
    assert_eq!(
        table,
        [
            ("echo", "Ljava/lang/String;", "echo"),
            ("echoInt", "I", "echo_int"),
            ("echoLong", "J", "echo_long"),
            ("echoDouble", "D", "echo_double"),
            ("echoBool", "Z", "echo_bool"),
            ("echoBytes", "[B", "echo_bytes"),
            ("echoList", "Ljava/util/List;", "echo_list"),
            ("echoMap", "Ljava/util/Map;", "echo_map"),
            ("echoUser", "Lorg/rubbo/interop/User;", "echo_user"),
            ("listUsers", "I", "list_users"),
            ("ping", "", "ping"),
            ("fail", "Ljava/lang/String;", "fail"),
            ("attachment", "Ljava/lang/String;", "attachment"),
            ("slow", "I", "slow"),
            ("whoami", "", "whoami"),
        ]
    );
    assert_eq!(
        InteropServiceClient::INTERFACE,
        "org.rubbo.interop.InteropService"
    );
    assert_eq!(InteropServiceClient::VERSION, "1.0.0");
    assert_eq!(InteropServiceClient::GROUP, "");
    assert_eq!(
        InteropServiceServer::<Provider>::SERVICE.service_key(),
        "org.rubbo.interop.InteropService:1.0.0"
    );
    assert_eq!(
        InteropServiceServer::<Provider>::SERVICE.methods[3].parameter_count,
        1
    );
}

#[tokio::test]
async fn every_method_round_trips() {
    let c = client();
    assert_eq!(
        c.echo(Some("hello".into())).await.unwrap().as_deref(),
        Some("hello")
    );
    assert_eq!(c.echo(None).await.unwrap(), None);
    assert_eq!(c.echo_int(i32::MIN).await.unwrap(), i32::MIN);
    assert_eq!(c.echo_long(i64::MAX).await.unwrap(), i64::MAX);
    assert_eq!(c.echo_double(12.25).await.unwrap(), 12.25);
    assert!(c.echo_bool(true).await.unwrap());
    assert_eq!(
        c.echo_bytes(Some(vec![0, 1, 255])).await.unwrap(),
        Some(vec![0, 1, 255])
    );
    assert_eq!(c.echo_bytes(None).await.unwrap(), None);
    let l = vec!["a".to_owned(), String::new(), "ü".to_owned()];
    assert_eq!(c.echo_list(Some(l.clone())).await.unwrap(), Some(l));
    let m = HashMap::from([("a".to_owned(), 1), ("b".to_owned(), -2)]);
    assert_eq!(c.echo_map(Some(m.clone())).await.unwrap(), Some(m));
    assert_eq!(c.echo_user(Some(user(7))).await.unwrap(), Some(user(7)));
    assert_eq!(c.echo_user(None).await.unwrap(), None);
    let users = c.list_users(3).await.unwrap();
    assert_eq!(users, vec![user(0), user(1), user(2)]);
    assert_eq!(
        users[1].balance.as_ref().map(|b| b.value.as_str()),
        Some("1.50")
    );
    c.ping().await.unwrap();
    assert_eq!(
        c.whoami().await.unwrap(),
        "interop-provider@127.0.0.1:20880"
    );
}

#[tokio::test]
async fn calls_run_concurrently_on_spawned_tasks() {
    let c = client();
    let started = std::time::Instant::now();
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let c = c.clone();
            tokio::spawn(async move { c.slow(200).await })
        })
        .collect();
    for call in calls {
        let done = tokio::time::timeout(Duration::from_secs(5), call)
            .await
            .expect("slow call timed out")
            .expect("task panicked")
            .unwrap();
        assert_eq!(done.as_deref(), Some("done"));
    }
    assert!(
        started.elapsed() < Duration::from_millis(1200),
        "8 x 200 ms ran serially: {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn business_exception_comes_back_as_biz_error() {
    let err = client().fail(Some("boom".into())).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Biz);
    let biz = err.biz_exception().expect("a business exception");
    assert_eq!(biz.class, "org.rubbo.interop.InteropException");
    assert_eq!(biz.message.as_deref(), Some("boom"));

    // On the provider side it is an exception result, not an error.
    let server = InteropServiceServer::new(Arc::new(Provider));
    let inv = Invocation::new("org.rubbo.interop.InteropService", "fail")
        .with_parameter_types("Ljava/lang/String;")
        .with_arguments(vec![Value::from("x")]);
    let result = server.dispatch(inv).await.unwrap();
    assert_eq!(
        result.exception().map(|e| e.class.as_str()),
        Some("org.rubbo.interop.InteropException")
    );
}

#[tokio::test]
async fn unknown_method_or_descriptor_lists_the_exported_methods() {
    let server = InteropServiceServer::new(Arc::new(Provider)).into_invoker(url());
    let err = server
        .invoke(
            Invocation::new("org.rubbo.interop.InteropService", "nope").with_parameter_types("I"),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MethodNotFound);
    let msg = err.message();
    assert!(msg.contains("nope(I)"), "{msg}");
    assert!(
        msg.contains("org.rubbo.interop.InteropService:1.0.0"),
        "{msg}"
    );
    assert!(msg.contains("echoInt(I)"), "{msg}");
    assert!(msg.contains("echoUser(Lorg/rubbo/interop/User;)"), "{msg}");
    assert!(msg.contains("ping()"), "{msg}");

    // Right name, boxed descriptor: Java would not find it either.
    let err = server
        .invoke(
            Invocation::new("org.rubbo.interop.InteropService", "echoInt")
                .with_parameter_types("Ljava/lang/Integer;")
                .with_arguments(vec![Value::Int(1)]),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MethodNotFound);
    assert!(err.message().contains("echoInt(Ljava/lang/Integer;)"));
    assert_eq!(server.url(), &url());
}

#[tokio::test]
async fn attachments_travel_both_ways_through_the_context() {
    let c = client().with_attachment("tenant", "acme");
    let (seen, response) =
        context::capture_response(async { c.attachment(Some("tenant".into())).await }).await;
    assert_eq!(seen.unwrap().as_deref(), Some("acme"));
    assert_eq!(response.get("echoed-key"), Some(&Value::from("tenant")));

    let c = c.with_attachments(HashMap::from([("more".to_owned(), Value::from("x"))]));
    assert_eq!(
        c.attachment(Some("more".into())).await.unwrap().as_deref(),
        Some("x")
    );
    assert_eq!(c.attachment(Some("absent".into())).await.unwrap(), None);

    // A void method's response attachments come back too.
    let ((), response) = context::capture_response(async { client().ping().await.unwrap() }).await;
    assert_eq!(response.get("pong"), Some(&Value::Bool(true)));

    // The generated invocation carries the client attachments.
    let inv = rubbo::codegen::Client::new(&InteropServiceClient::SERVICE, c.invoker().clone())
        .with_attachment("k", "v")
        .invocation(0, Arguments::none());
    assert_eq!(inv.attachment_str("k"), Some("v"));
    assert_eq!(inv.version(), Some("1.0.0"));
    assert_eq!(inv.group(), None);
}

fn encoded(
    count: usize,
    write: impl FnOnce(&mut rubbo_hessian2::Encoder<&mut Vec<u8>>),
) -> Arguments {
    let mut buf = Vec::new();
    write(&mut rubbo_hessian2::Encoder::new(&mut buf));
    Arguments::Encoded {
        count,
        encoded: rubbo_common::Encoded::new(&rubbo_serialization::HESSIAN2, buf.into()),
    }
}

fn call(method: &str, desc: &str, args: Arguments) -> Invocation {
    Invocation::new("org.rubbo.interop.InteropService", method)
        .with_version("1.0.0")
        .with_parameter_types(desc)
        .with_arguments(args)
}

fn typed_bytes(p: &Payload) -> Vec<u8> {
    match p {
        Payload::Typed(t) => rubbo_hessian2::to_vec(&**t).unwrap(),
        other => panic!("expected a typed payload, got {other:?}"),
    }
}

#[tokio::test]
async fn encoded_arguments_from_the_wire_are_decoded() {
    let server = InteropServiceServer::new(Arc::new(Provider));
    // String, as Java writes it.
    let r = server
        .dispatch(call(
            "echo",
            "Ljava/lang/String;",
            encoded(1, |e| e.write_args(&("hello",)).unwrap()),
        ))
        .await
        .unwrap();
    assert_eq!(r.payload().unwrap().decode::<String>().unwrap(), "hello");
    // byte[] as a Hessian binary; the answer is a binary too.
    let r = server
        .dispatch(call(
            "echoBytes",
            "[B",
            encoded(1, |e| e.write_binary(&[1, 2, 3]).unwrap()),
        ))
        .await
        .unwrap();
    assert_eq!(typed_bytes(r.payload().unwrap()), [0x23, 1, 2, 3]);
    // A POJO: class definition plus instance.
    let r = server
        .dispatch(call(
            "echoUser",
            "Lorg/rubbo/interop/User;",
            encoded(1, |e| e.write(&user(4)).unwrap()),
        ))
        .await
        .unwrap();
    assert_eq!(r.payload().unwrap().decode::<User>().unwrap(), user(4));
    // No arguments at all.
    let r = server
        .dispatch(call("ping", "", encoded(0, |_| {})))
        .await
        .unwrap();
    assert!(matches!(r.payload(), Some(Payload::Null)));
    // Too few values for the descriptor: a serialization error, not a panic.
    let err = server
        .dispatch(call("echoInt", "I", encoded(0, |_| {})))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Serialization);
}

#[tokio::test]
async fn generic_value_arguments_are_decoded() {
    let server = InteropServiceServer::new(Arc::new(Provider)).into_invoker(url());
    let r = server
        .invoke(call(
            "echoInt",
            "I",
            Arguments::Values(vec![Value::Int(41)]),
        ))
        .await
        .unwrap();
    assert_eq!(r.payload().unwrap().decode::<i32>().unwrap(), 41);
    let r = server
        .invoke(call(
            "echoList",
            "Ljava/util/List;",
            Arguments::Values(vec![Value::List(rubbo_hessian2::List {
                type_name: None,
                items: vec![Value::from("x")],
            })]),
        ))
        .await
        .unwrap();
    assert_eq!(
        r.payload().unwrap().decode::<Vec<String>>().unwrap(),
        vec!["x".to_owned()]
    );
    let r = server
        .invoke(call(
            "echo",
            "Ljava/lang/String;",
            Arguments::Values(vec![Value::Null]),
        ))
        .await
        .unwrap();
    assert!(matches!(r.payload(), Some(Payload::Null)));
    let err = server
        .invoke(call(
            "echoInt",
            "I",
            Arguments::Values(vec![Value::from("not an int")]),
        ))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Serialization);
}

#[tokio::test]
async fn client_sends_typed_arguments_with_java_descriptors() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let spy = rubbo::filter_fn(move |inv: Invocation, next: rubbo::BoxInvoker| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(inv.clone());
            next.invoke(inv).await
        }
    });
    let server = InteropServiceServer::new(Arc::new(Provider)).into_invoker(url());
    let c = InteropServiceClient::new(rubbo::Filter::layer(&spy, server));
    c.echo_bytes(Some(vec![9])).await.unwrap();
    let inv = rx.recv().await.unwrap();
    assert_eq!(inv.interface(), "org.rubbo.interop.InteropService");
    assert_eq!(inv.version(), Some("1.0.0"));
    assert_eq!((inv.method(), inv.parameter_types()), ("echoBytes", "[B"));
    let Arguments::Typed { count, value } = inv.arguments() else {
        panic!("expected typed arguments: {:?}", inv.arguments());
    };
    assert_eq!(*count, 1);
    // Written as Dubbo writes arguments: byte[] is a binary, not a list.
    let mut buf = Vec::new();
    rubbo_hessian2::Encoder::new(&mut buf)
        .write_args(&**value)
        .unwrap();
    assert_eq!(buf, [0x21, 9]);

    c.ping().await.unwrap();
    let inv = rx.recv().await.unwrap();
    assert_eq!((inv.method(), inv.parameter_types()), ("ping", ""));
    assert!(inv.arguments().is_empty());
}
