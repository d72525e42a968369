//! `GenericClient` against a real Rust provider on 127.0.0.1: POJOs as maps both
//! ways, overloads chosen by parameter types, business exceptions with the original
//! class and message, unknown methods, `$echo`, through a direct URL and a registry.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use rubbo::filter::Activate;
use rubbo::value::Map;
use rubbo::{BoxInvoker, ErrorKind, GenericClient, Invocation, RpcError, Rubbo, Value, filter_fn};
use serde::{Deserialize, Serialize};

/// `org.rubbo.test.Account`.
#[derive(Serialize, Deserialize, rubbo::JavaType, Debug, Clone, PartialEq)]
#[serde(rename = "org.rubbo.test.Account")]
pub struct Account {
    /// Id.
    pub id: i64,
    /// Owner.
    pub owner: String,
}

/// Accounts, as the Java interface `org.rubbo.test.Accounts` declares them.
#[rubbo::service(interface = "org.rubbo.test.Accounts", version = "1.0.0", group = "g")]
pub trait Accounts {
    /// `Account find(long id)`.
    async fn find(&self, id: i64) -> Result<Account, RpcError>;
    /// `String describe(Account a)`.
    async fn describe(&self, account: Account) -> Result<String, RpcError>;
    /// `long add(int, int)`.
    #[rubbo(name = "add")]
    async fn add_int(&self, a: i32, b: i32) -> Result<i64, RpcError>;
    /// `String add(String, String)`.
    #[rubbo(name = "add")]
    async fn add_str(&self, a: String, b: String) -> Result<String, RpcError>;
    /// `void close(long id) throws NotFound`.
    async fn close(&self, id: i64) -> Result<(), RpcError>;
}

const NOT_FOUND: &str = "org.rubbo.test.NotFound";

struct Bank;

impl Accounts for Bank {
    async fn find(&self, id: i64) -> Result<Account, RpcError> {
        Ok(Account {
            id,
            owner: format!("owner-{id}"),
        })
    }
    async fn describe(&self, account: Account) -> Result<String, RpcError> {
        Ok(format!("{}#{}", account.owner, account.id))
    }
    async fn add_int(&self, a: i32, b: i32) -> Result<i64, RpcError> {
        Ok(i64::from(a) + i64::from(b))
    }
    async fn add_str(&self, a: String, b: String) -> Result<String, RpcError> {
        Ok(a + &b)
    }
    async fn close(&self, id: i64) -> Result<(), RpcError> {
        Err(RpcError::biz(NOT_FOUND, Some(format!("no account {id}"))))
    }
}

fn map(entries: &[(&str, Value)]) -> Value {
    Value::Map(Map {
        type_name: None,
        entries: entries
            .iter()
            .map(|(k, v)| (Value::from(*k), v.clone()))
            .collect(),
    })
}

fn map_get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Map(m) => m
            .entries
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v),
        _ => None,
    }
}

fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(i64::from(*i)),
        Value::Long(l) => Some(*l),
        _ => None,
    }
}

/// A provider of `Accounts` on a free port, and a consumer application.
async fn provider() -> (Rubbo, String) {
    let p = Rubbo::builder()
        .application("generic-provider")
        .port(0)
        .build()
        .unwrap();
    let url = p.export(AccountsServer::new(Arc::new(Bank))).await.unwrap();
    (p, format!("dubbo://{}", url.address()))
}

fn consumer() -> Rubbo {
    Rubbo::builder()
        .application("generic-consumer")
        .build()
        .unwrap()
}

async fn direct_client(c: &Rubbo, address: &str) -> GenericClient {
    c.refer_generic_url(address, "org.rubbo.test.Accounts", "1.0.0", "g")
        .await
        .unwrap()
}

#[tokio::test]
async fn a_generic_reference_is_marked_generic_and_lists_no_methods() {
    // The provider records the `generic` attachment of what it serves.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let spy = filter_fn(move |inv: Invocation, next: BoxInvoker| {
        record
            .lock()
            .unwrap()
            .push(inv.attachment_str("generic").map(str::to_owned));
        next.invoke(inv)
    })
    .with_activate(Activate::provider(0));
    let p = Rubbo::builder()
        .application("generic-provider")
        .port(0)
        .filter("spy", spy)
        .build()
        .unwrap();
    let exported = p.export(AccountsServer::new(Arc::new(Bank))).await.unwrap();
    let address = format!("dubbo://{}", exported.address());
    let c = consumer();
    let client = direct_client(&c, &address).await;
    let url = client.get_ref().url();
    assert_eq!(url.get_param("generic"), Some("true"));
    assert_eq!(url.get_param("methods"), None);
    assert_eq!(url.get_param("interface"), Some("org.rubbo.test.Accounts"));
    assert_eq!(client.interface(), "org.rubbo.test.Accounts");

    let inv = client.invocation_of("find", &["long"], vec![Value::Long(1)]);
    assert_eq!(inv.method(), "$invoke");
    assert_eq!(
        inv.parameter_types(),
        rubbo_common::descriptor::GENERIC_DESC
    );
    assert_eq!(inv.version(), Some("1.0.0"));
    assert_eq!(inv.group(), Some("g"));
    client
        .invoke("find", &["long"], vec![Value::Long(1)])
        .await
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [Some("true".to_owned())],
        "the genericimpl filter tells the provider"
    );
    c.shutdown().await;
    p.shutdown().await;
}

#[tokio::test]
async fn pojos_travel_as_maps_with_their_class() {
    let (p, address) = provider().await;
    let c = consumer();
    let client = direct_client(&c, &address).await;

    let found = client
        .invoke("find", &["long"], vec![Value::Long(7)])
        .await
        .unwrap();
    assert_eq!(
        map_get(&found, "class").and_then(Value::as_str),
        Some("org.rubbo.test.Account"),
        "{found:?}"
    );
    assert_eq!(
        map_get(&found, "owner").and_then(Value::as_str),
        Some("owner-7")
    );
    assert_eq!(map_get(&found, "id").and_then(as_i64), Some(7));

    let account = map(&[
        ("class", Value::from("org.rubbo.test.Account")),
        ("id", Value::Long(42)),
        ("owner", Value::from("ann")),
    ]);
    let described = client
        .invoke("describe", &["org.rubbo.test.Account"], vec![account])
        .await
        .unwrap();
    assert_eq!(described.as_str(), Some("ann#42"));
    c.shutdown().await;
    p.shutdown().await;
}

#[tokio::test]
async fn parameter_types_choose_the_overload() {
    let (p, address) = provider().await;
    let c = consumer();
    let client = direct_client(&c, &address).await;

    let sum = client
        .invoke("add", &["int", "int"], vec![Value::Int(2), Value::Int(3)])
        .await
        .unwrap();
    assert_eq!(as_i64(&sum), Some(5), "{sum:?}");
    let joined = client
        .invoke(
            "add",
            &["java.lang.String", "java.lang.String"],
            vec![Value::from("2"), Value::from("3")],
        )
        .await
        .unwrap();
    assert_eq!(joined.as_str(), Some("23"));
    c.shutdown().await;
    p.shutdown().await;
}

#[tokio::test]
async fn a_business_exception_keeps_its_class_and_message() {
    let (p, address) = provider().await;
    let c = consumer();
    let client = direct_client(&c, &address).await;

    let err = client
        .invoke("close", &["long"], vec![Value::Long(9)])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Biz, "{err}");
    let biz = err.biz_exception().expect("a business exception");
    assert_eq!(biz.class, NOT_FOUND);
    assert_eq!(biz.message.as_deref(), Some("no account 9"));
    // The GenericException the provider wrapped it in stays available.
    match &biz.value {
        Value::Object(o) => {
            assert!(
                o.class.ends_with(".rpc.service.GenericException"),
                "{}",
                o.class
            );
            assert_eq!(
                o.field("exceptionClass").and_then(Value::as_str),
                Some(NOT_FOUND)
            );
        }
        other => panic!("the wrapper is kept: {other:?}"),
    }
    c.shutdown().await;
    p.shutdown().await;
}

#[tokio::test]
async fn an_unknown_method_fails_clearly() {
    let (p, address) = provider().await;
    let c = consumer();
    let client = direct_client(&c, &address).await;

    let err = client
        .invoke("transfer", &["long"], vec![Value::Long(1)])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MethodNotFound, "{err}");
    assert!(err.message().contains("no method transfer(J)"), "{err}");
    // Right name, wrong types: no such overload either.
    let err = client
        .invoke("add", &["double"], vec![Value::Double(1.0)])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MethodNotFound, "{err}");
    assert!(err.message().contains("no method add(D)"), "{err}");
    c.shutdown().await;
    p.shutdown().await;
}

#[tokio::test]
async fn echo_answers_its_argument() {
    let (p, address) = provider().await;
    let c = consumer();
    let client = direct_client(&c, &address).await;

    let back = client.echo(Value::from("ping 😀")).await.unwrap();
    assert_eq!(back.as_str(), Some("ping 😀"));
    let back = client.echo(Value::Null).await.unwrap();
    assert_eq!(back, Value::Null);
    c.shutdown().await;
    p.shutdown().await;
}

#[tokio::test]
async fn a_generic_reference_through_a_registry_finds_the_provider() {
    let factories = Arc::new(rubbo::registry_factories());
    let p = Rubbo::builder()
        .application("generic-provider")
        .registry("memory://local")
        .registry_factories(factories.clone())
        .port(0)
        .build()
        .unwrap();
    p.export(AccountsServer::new(Arc::new(Bank))).await.unwrap();
    let c = Rubbo::builder()
        .application("generic-consumer")
        .registry("memory://local")
        .registry_factories(factories)
        .build()
        .unwrap();
    let client = c
        .refer_generic("org.rubbo.test.Accounts", "1.0.0", "g")
        .await
        .unwrap();

    let found = client
        .invoke("find", &["long"], vec![Value::Long(3)])
        .await
        .unwrap();
    assert_eq!(
        map_get(&found, "owner").and_then(Value::as_str),
        Some("owner-3")
    );
    let err = client
        .invoke("close", &["long"], vec![Value::Long(3)])
        .await
        .unwrap_err();
    assert_eq!(
        err.biz_exception().map(|b| b.class.as_str()),
        Some(NOT_FOUND)
    );
    c.shutdown().await;
    p.shutdown().await;
}
