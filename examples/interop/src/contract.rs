//! `org.rubbo.interop.InteropService` and its types, with Java's nullability: every
//! Java reference type is an `Option`, and collections may hold nulls.

use std::collections::HashMap;

use rubbo::{BigDecimal, Date, JavaType, RpcError};
use serde::{Deserialize, Serialize};

/// `org.rubbo.interop.Gender`.
#[derive(Serialize, Deserialize, JavaType, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename = "org.rubbo.interop.Gender")]
#[allow(clippy::upper_case_acronyms)]
pub enum Gender {
    /// Even user ids.
    MALE,
    /// Odd user ids.
    FEMALE,
}

/// `org.rubbo.interop.Address`.
#[derive(Serialize, Deserialize, JavaType, Debug, Clone, PartialEq, Default)]
#[serde(rename = "org.rubbo.interop.Address", default)]
pub struct Address {
    /// City.
    pub city: Option<String>,
    /// Street.
    pub street: Option<String>,
    /// Zip code.
    pub zip: i32,
}

/// `org.rubbo.interop.User`.
#[derive(Serialize, Deserialize, JavaType, Debug, Clone, PartialEq, Default)]
#[serde(rename = "org.rubbo.interop.User", rename_all = "camelCase", default)]
pub struct User {
    /// Id.
    pub id: i64,
    /// Name.
    pub name: Option<String>,
    /// Age.
    pub age: i32,
    /// Gender.
    pub gender: Option<Gender>,
    /// Address.
    pub address: Option<Address>,
    /// Tags.
    pub tags: Option<Vec<Option<String>>>,
    /// Properties.
    pub props: Option<HashMap<String, Option<String>>>,
    /// Creation time.
    pub created_at: Option<Date>,
    /// Balance.
    pub balance: Option<BigDecimal>,
}

/// User `i` as the contract's `listUsers` builds it: id `i`, name `user-i`, age
/// `20 + i % 50`, `MALE` for even `i`, city `city-i`, tags `[ti]`, props `{k: vi}`,
/// createdAt `1700000000000 + i`, balance `i.50`.
pub fn contract_user(i: i32) -> User {
    User {
        id: i64::from(i),
        name: Some(format!("user-{i}")),
        age: 20 + i % 50,
        gender: Some(if i % 2 == 0 {
            Gender::MALE
        } else {
            Gender::FEMALE
        }),
        address: Some(Address {
            city: Some(format!("city-{i}")),
            street: None,
            zip: 0,
        }),
        tags: Some(vec![Some(format!("t{i}"))]),
        props: Some(HashMap::from([("k".to_owned(), Some(format!("v{i}")))])),
        created_at: Some(Date(1_700_000_000_000 + i64::from(i))),
        balance: Some(BigDecimal::new(format!("{i}.50"))),
    }
}

/// `org.rubbo.interop.InteropService` version `1.0.0`, as the contract declares it.
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
    async fn echo_list(
        &self,
        l: Option<Vec<Option<String>>>,
    ) -> Result<Option<Vec<Option<String>>>, RpcError>;
    /// `Map<String,Integer> echoMap(Map<String,Integer> m)`.
    async fn echo_map(
        &self,
        m: Option<HashMap<String, Option<i32>>>,
    ) -> Result<Option<HashMap<String, Option<i32>>>, RpcError>;
    /// `User echoUser(User u)`.
    async fn echo_user(&self, u: Option<User>) -> Result<Option<User>, RpcError>;
    /// `List<User> listUsers(int n)`.
    async fn list_users(&self, n: i32) -> Result<Option<Vec<User>>, RpcError>;
    /// `void ping()`.
    async fn ping(&self) -> Result<(), RpcError>;
    /// `String fail(String message) throws InteropException`.
    async fn fail(&self, message: Option<String>) -> Result<Option<String>, RpcError>;
    /// `String attachment(String key)`.
    async fn attachment(&self, key: Option<String>) -> Result<Option<String>, RpcError>;
    /// `String slow(int millis)`.
    async fn slow(&self, millis: i32) -> Result<Option<String>, RpcError>;
    /// `String whoami()`.
    async fn whoami(&self) -> Result<Option<String>, RpcError>;
}
