//! The interop contract's data types and the test wiring shared by the black-box tests.
#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;

use rubbo::{BigDecimal, Date, JavaType, Url};
use serde::{Deserialize, Serialize};

/// `org.rubbo.interop.Gender`.
#[derive(Serialize, Deserialize, JavaType, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename = "org.rubbo.interop.Gender")]
#[allow(clippy::upper_case_acronyms)]
pub enum Gender {
    /// Even ids.
    MALE,
    /// Odd ids.
    FEMALE,
}

/// `org.rubbo.interop.Address`.
#[derive(Serialize, Deserialize, JavaType, Debug, Clone, PartialEq, Default)]
#[serde(rename = "org.rubbo.interop.Address")]
pub struct Address {
    /// City.
    pub city: Option<String>,
    /// Street.
    pub street: Option<String>,
    /// Zip code.
    pub zip: i32,
}

/// `org.rubbo.interop.User`.
#[derive(Serialize, Deserialize, JavaType, Debug, Clone, PartialEq)]
#[serde(rename = "org.rubbo.interop.User", rename_all = "camelCase")]
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
    pub tags: Option<Vec<String>>,
    /// Properties.
    pub props: Option<HashMap<String, String>>,
    /// Creation time.
    pub created_at: Option<Date>,
    /// Balance.
    pub balance: Option<BigDecimal>,
}

/// User `i` as the contract's `listUsers` builds it.
pub fn user(i: i32) -> User {
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
        tags: Some(vec![format!("t{i}")]),
        props: Some(HashMap::from([("k".to_owned(), format!("v{i}"))])),
        created_at: Some(Date(1_700_000_000_000 + i64::from(i))),
        balance: Some(BigDecimal::new(format!("{i}.50"))),
    }
}

/// The URL a test server is exported under.
pub fn url() -> Url {
    Url::new("dubbo", "127.0.0.1", 20880)
}
