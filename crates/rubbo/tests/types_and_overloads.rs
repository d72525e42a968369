//! Every supported parameter type, overloads dispatched by descriptor, overrides,
//! borrowed parameters, default bodies and non-business errors.
#![deny(missing_docs, missing_debug_implementations)]

mod support;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use rubbo::{
    Arguments, BigDecimal, BigInteger, Date, ErrorKind, Invocation, JavaType, RpcError, Value,
};
use serde::{Deserialize, Serialize};
use support::{Address, Gender, User, url, user};

/// A Java class named only through `#[java(class)]`.
#[derive(Serialize, Deserialize, JavaType, Debug, Clone, PartialEq)]
#[java(class = "org.rubbo.interop.Point")]
#[serde(rename = "org.rubbo.interop.Point")]
pub struct Point {
    /// x.
    pub x: i32,
    /// y.
    pub y: i32,
}

/// A service touching every supported type.
#[rubbo::service(interface = "org.rubbo.test.Types", group = "g1")]
pub trait Types: Send + Sync {
    /// `float f(float)`.
    async fn float(&self, v: f32) -> Result<f32, RpcError>;
    /// `short s(short)`.
    async fn short(&self, v: i16) -> Result<i16, RpcError>;
    /// `byte b(byte)`.
    async fn byte(&self, v: i8) -> Result<i8, RpcError>;
    /// `char c(char)`.
    async fn char(&self, v: char) -> Result<char, RpcError>;
    /// `Integer boxed(Integer)`.
    async fn boxed(&self, v: Option<i32>) -> Result<Option<i32>, RpcError>;
    /// `Set set(Set)`.
    async fn set(&self, v: HashSet<String>) -> Result<BTreeSet<String>, RpcError>;
    /// `Map tree(Map)`.
    async fn tree(
        &self,
        v: BTreeMap<String, Vec<u8>>,
    ) -> Result<BTreeMap<String, Vec<u8>>, RpcError>;
    /// `Date date(Date, BigDecimal, BigInteger)`.
    async fn money(
        &self,
        at: Date,
        amount: BigDecimal,
        big: BigInteger,
    ) -> Result<String, RpcError>;
    /// `Object any(Object)`.
    async fn any(&self, v: Value) -> Result<Value, RpcError>;
    /// `Gender gender(Gender, Address, Point)`.
    async fn shapes(&self, g: Gender, a: Address, p: Point) -> Result<Gender, RpcError>;
    /// `String concat(String, String)` with a borrowed first parameter.
    async fn concat(&self, a: &str, b: String) -> Result<String, RpcError>;
    /// `int sum(int[]... )`: a descriptor given by hand.
    async fn sum(&self, #[rubbo(java = "[I")] v: Vec<i32>) -> Result<i64, RpcError>;
    /// `User who(Integer)`, boxed by hand.
    async fn who(&self, #[rubbo(java = "Ljava/lang/Integer;")] id: i32) -> Result<User, RpcError>;
    /// `long add(int, int)`.
    #[rubbo(name = "add")]
    async fn add_int(&self, a: i32, b: i32) -> Result<i64, RpcError>;
    /// `long add(long, long)`.
    #[rubbo(name = "add")]
    async fn add_long(&self, a: i64, b: i64) -> Result<i64, RpcError>;
    /// `String add(String, String)`.
    #[rubbo(name = "add")]
    async fn add_str(&self, a: String, b: String) -> Result<String, RpcError>;
    /// `int defaulted()`: has a default body.
    async fn defaulted(&self) -> Result<i32, RpcError> {
        Ok(self.short(20).await? as i32 + 1)
    }
    /// Fails with a non-business error.
    async fn refuse(&self) -> Result<(), RpcError>;
    /// `raw` keyword-free Rust name with a raw identifier.
    async fn r#type(&self) -> Result<String, RpcError>;
}

struct Impl;

impl Types for Impl {
    async fn float(&self, v: f32) -> Result<f32, RpcError> {
        Ok(v)
    }
    async fn short(&self, v: i16) -> Result<i16, RpcError> {
        Ok(v)
    }
    async fn byte(&self, v: i8) -> Result<i8, RpcError> {
        Ok(v)
    }
    async fn char(&self, v: char) -> Result<char, RpcError> {
        Ok(v)
    }
    async fn boxed(&self, v: Option<i32>) -> Result<Option<i32>, RpcError> {
        Ok(v.map(|v| v + 1))
    }
    async fn set(&self, v: HashSet<String>) -> Result<BTreeSet<String>, RpcError> {
        Ok(v.into_iter().collect())
    }
    async fn tree(
        &self,
        v: BTreeMap<String, Vec<u8>>,
    ) -> Result<BTreeMap<String, Vec<u8>>, RpcError> {
        Ok(v)
    }
    async fn money(
        &self,
        at: Date,
        amount: BigDecimal,
        big: BigInteger,
    ) -> Result<String, RpcError> {
        Ok(format!("{}|{amount}|{}", at.0, big.value))
    }
    async fn any(&self, v: Value) -> Result<Value, RpcError> {
        Ok(v)
    }
    async fn shapes(&self, g: Gender, a: Address, p: Point) -> Result<Gender, RpcError> {
        assert_eq!((a.zip, p.x), (1, 2));
        Ok(g)
    }
    async fn concat(&self, a: &str, b: String) -> Result<String, RpcError> {
        Ok(format!("{a}{b}"))
    }
    async fn sum(&self, v: Vec<i32>) -> Result<i64, RpcError> {
        Ok(v.into_iter().map(i64::from).sum())
    }
    async fn who(&self, id: i32) -> Result<User, RpcError> {
        Ok(user(id))
    }
    async fn add_int(&self, a: i32, b: i32) -> Result<i64, RpcError> {
        Ok(i64::from(a) + i64::from(b))
    }
    async fn add_long(&self, a: i64, b: i64) -> Result<i64, RpcError> {
        Ok(a * 1000 + b)
    }
    async fn add_str(&self, a: String, b: String) -> Result<String, RpcError> {
        Ok(a + &b)
    }
    async fn refuse(&self) -> Result<(), RpcError> {
        Err(RpcError::new(ErrorKind::Forbidden, "not today"))
    }
    async fn r#type(&self) -> Result<String, RpcError> {
        Ok("type".to_owned())
    }
}

fn client() -> TypesClient {
    TypesClient::new(TypesServer::new(Arc::new(Impl)).into_invoker(url()))
}

#[test]
fn descriptors_cover_every_type() {
    let table: Vec<(&str, &str)> = TypesClient::METHODS
        .iter()
        .map(|m| (m.name, m.parameter_types))
        .collect();
    assert_eq!(
        table,
        [
            ("float", "F"),
            ("short", "S"),
            ("byte", "B"),
            ("char", "C"),
            ("boxed", "Ljava/lang/Integer;"),
            ("set", "Ljava/util/Set;"),
            ("tree", "Ljava/util/Map;"),
            (
                "money",
                "Ljava/util/Date;Ljava/math/BigDecimal;Ljava/math/BigInteger;"
            ),
            ("any", "Ljava/lang/Object;"),
            (
                "shapes",
                "Lorg/rubbo/interop/Gender;Lorg/rubbo/interop/Address;Lorg/rubbo/interop/Point;"
            ),
            ("concat", "Ljava/lang/String;Ljava/lang/String;"),
            ("sum", "[I"),
            ("who", "Ljava/lang/Integer;"),
            ("add", "II"),
            ("add", "JJ"),
            ("add", "Ljava/lang/String;Ljava/lang/String;"),
            ("defaulted", ""),
            ("refuse", ""),
            ("type", ""),
        ]
    );
    assert_eq!(TypesClient::GROUP, "g1");
    assert_eq!(TypesClient::VERSION, "");
    assert_eq!(
        TypesClient::SERVICE.service_key(),
        "g1/org.rubbo.test.Types"
    );
    assert_eq!(TypesClient::SERVICE.overloads("add").count(), 3);
}

#[tokio::test]
async fn every_type_round_trips() {
    let c = client();
    assert_eq!(c.float(0.1).await.unwrap(), 0.1);
    assert_eq!(c.short(-3).await.unwrap(), -3);
    assert_eq!(c.byte(-128).await.unwrap(), -128);
    assert_eq!(c.char('é').await.unwrap(), 'é');
    assert_eq!(c.boxed(Some(1)).await.unwrap(), Some(2));
    assert_eq!(c.boxed(None).await.unwrap(), None);
    let set = HashSet::from(["b".to_owned(), "a".to_owned()]);
    assert_eq!(
        c.set(set).await.unwrap().into_iter().collect::<Vec<_>>(),
        ["a", "b"]
    );
    let tree = BTreeMap::from([("k".to_owned(), vec![1u8, 2])]);
    assert_eq!(c.tree(tree.clone()).await.unwrap(), tree);
    let money = c
        .money(
            Date(1_700_000_000_000),
            BigDecimal::new("3.14"),
            BigInteger::new("-12345678901234567890"),
        )
        .await
        .unwrap();
    assert_eq!(money, "1700000000000|3.14|-12345678901234567890");
    let v = Value::List(rubbo_hessian2::List {
        type_name: None,
        items: vec![Value::Int(1), Value::from("x"), Value::Null],
    });
    assert_eq!(c.any(v.clone()).await.unwrap(), v);
    assert_eq!(c.any(Value::Null).await.unwrap(), Value::Null);
    let a = Address {
        zip: 1,
        ..Address::default()
    };
    assert_eq!(
        c.shapes(Gender::FEMALE, a, Point { x: 2, y: 0 })
            .await
            .unwrap(),
        Gender::FEMALE
    );
    let tail = String::from("-tail");
    assert_eq!(c.concat("head", tail).await.unwrap(), "head-tail");
    assert_eq!(c.sum(vec![1, 2, 3]).await.unwrap(), 6);
    assert_eq!(c.who(5).await.unwrap(), user(5));
    assert_eq!(c.defaulted().await.unwrap(), 21);
    assert_eq!(c.r#type().await.unwrap(), "type");
}

#[tokio::test]
async fn overloads_dispatch_by_descriptor() {
    let c = client();
    assert_eq!(c.add_int(1, 2).await.unwrap(), 3);
    assert_eq!(c.add_long(1, 2).await.unwrap(), 1002);
    assert_eq!(c.add_str("1".into(), "2".into()).await.unwrap(), "12");

    // The same wire name from a generic caller: the descriptor picks the method.
    let server = TypesServer::new(Arc::new(Impl)).into_invoker(url());
    for (desc, args, want) in [
        ("II", vec![Value::Int(4), Value::Int(5)], Value::Long(9)),
        (
            "JJ",
            vec![Value::Long(4), Value::Long(5)],
            Value::Long(4005),
        ),
        (
            "Ljava/lang/String;Ljava/lang/String;",
            vec![Value::from("4"), Value::from("5")],
            Value::from("45"),
        ),
    ] {
        let inv = Invocation::new("org.rubbo.test.Types", "add")
            .with_parameter_types(desc)
            .with_arguments(Arguments::Values(args));
        let got = server.invoke(inv).await.unwrap();
        assert_eq!(got.payload().unwrap().to_value().unwrap(), want, "{desc}");
    }
    let err = server
        .invoke(
            Invocation::new("org.rubbo.test.Types", "add")
                .with_parameter_types("DD")
                .with_arguments(vec![Value::Double(1.0), Value::Double(2.0)]),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MethodNotFound);
    for listed in [
        "add(II)",
        "add(JJ)",
        "add(Ljava/lang/String;Ljava/lang/String;)",
    ] {
        assert!(err.message().contains(listed), "{}", err.message());
    }
}

#[tokio::test]
async fn non_business_errors_stay_errors() {
    let server = TypesServer::new(Arc::new(Impl)).into_invoker(url());
    let err = server
        .invoke(Invocation::new("org.rubbo.test.Types", "refuse"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    assert_eq!(err.message(), "not today");
    let err = client().refuse().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    assert!(err.biz_exception().is_none());
}

#[test]
fn debug_output_names_the_service() {
    let server = TypesServer::new(Arc::new(Impl));
    assert!(format!("{server:?}").contains("org.rubbo.test.Types"));
    let invoker = server.clone().into_invoker(url());
    assert!(format!("{invoker:?}").contains("g1/org.rubbo.test.Types"));
    assert!(format!("{:?}", client()).contains("g1/org.rubbo.test.Types"));
    let _: &Impl = server.get_ref();
}

/// A service whose implementation panics.
#[rubbo::service(interface = "org.rubbo.test.Panicky")]
pub trait Panicky {
    /// Panics.
    async fn boom(&self, n: i32) -> Result<i32, RpcError>;
}

struct Boom;

impl Panicky for Boom {
    async fn boom(&self, n: i32) -> Result<i32, RpcError> {
        tokio::task::yield_now().await;
        panic!("boom {n}")
    }
}

#[tokio::test]
async fn a_panicking_handler_answers_a_runtime_exception() {
    let c = PanickyClient::new(PanickyServer::new(Arc::new(Boom)).into_invoker(url()));
    let err = c.boom(3).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Biz);
    let biz = err.biz_exception().unwrap();
    assert_eq!(biz.class, "java.lang.RuntimeException");
    assert_eq!(biz.message.as_deref(), Some("boom 3"));
    // The server still serves.
    assert!(c.boom(4).await.is_err());
}

/// A generic Java class (`org.rubbo.test.Page<T>`).
#[derive(Serialize, Deserialize, JavaType, Debug, PartialEq)]
#[serde(rename = "org.rubbo.test.Page")]
pub struct Page<T> {
    /// Items.
    pub items: Vec<T>,
}

#[test]
fn generic_types_derive_their_class() {
    assert_eq!(<Page<User>>::DESCRIPTOR, "Lorg/rubbo/test/Page;");
    assert_eq!(<Option<Page<i32>>>::DESCRIPTOR, "Lorg/rubbo/test/Page;");
}
