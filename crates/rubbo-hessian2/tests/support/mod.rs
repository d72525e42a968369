//! Shared test support: the interop types (CONTRACT.md) and the Java fixtures.
#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::path::PathBuf;

use rubbo_hessian2::{BigDecimal, Date};
use serde::{Deserialize, Serialize};

/// `org.rubbo.interop.Gender`.
#[derive(Serialize, Deserialize, Debug, PartialEq, Eq, Clone, Copy)]
#[serde(rename = "org.rubbo.interop.Gender")]
#[allow(clippy::upper_case_acronyms)]
pub enum Gender {
    MALE,
    FEMALE,
}

/// `org.rubbo.interop.Address`, fields in hessian-lite's order.
#[derive(Serialize, Deserialize, Debug, PartialEq, Clone, Default)]
#[serde(rename = "org.rubbo.interop.Address", default)]
pub struct Address {
    pub zip: i32,
    pub street: Option<String>,
    pub city: Option<String>,
}

/// `org.rubbo.interop.User`, fields in hessian-lite's order (so the bytes match Java's).
#[derive(Serialize, Deserialize, Debug, PartialEq, Clone, Default)]
#[serde(rename = "org.rubbo.interop.User", rename_all = "camelCase", default)]
pub struct User {
    pub balance: Option<BigDecimal>,
    pub created_at: Option<Date>,
    pub props: Option<HashMap<String, String>>,
    pub tags: Option<Vec<String>>,
    pub address: Option<Address>,
    pub gender: Option<Gender>,
    pub age: i32,
    pub name: Option<String>,
    pub id: i64,
}

/// The interop user `i`, as CONTRACT.md's `listUsers` builds it (address as the Java generator's).
pub fn user(i: i64) -> User {
    User {
        id: i,
        name: Some(format!("user-{i}")),
        age: 20 + (i % 50) as i32,
        gender: Some(if i % 2 == 0 {
            Gender::MALE
        } else {
            Gender::FEMALE
        }),
        address: Some(Address {
            city: Some(format!("city-{i}")),
            street: Some(format!("street-{i}")),
            zip: 310000 + i as i32,
        }),
        tags: Some(vec![format!("t{i}")]),
        props: Some(HashMap::from([("k".to_string(), format!("v{i}"))])),
        created_at: Some(Date(1_700_000_000_000 + i)),
        balance: Some(BigDecimal::new(format!("{i}.50"))),
    }
}

pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/java")
}

/// (name, number of top-level values, bytes) for every Java vector.
pub fn java_vectors() -> Vec<(String, usize, Vec<u8>)> {
    let dir = fixtures_dir();
    let index = std::fs::read_to_string(dir.join("index.txt")).expect("index.txt");
    index
        .lines()
        .map(|l| {
            let mut it = l.split(' ');
            let name = it.next().expect("name").to_string();
            let count: usize = it.next().expect("count").parse().expect("count");
            let bytes = std::fs::read(dir.join(format!("{name}.bin"))).expect("vector");
            (name, count, bytes)
        })
        .collect()
}

pub fn java(name: &str) -> Vec<u8> {
    std::fs::read(fixtures_dir().join(format!("{name}.bin"))).expect(name)
}

pub fn repeat(c: char, n: usize) -> String {
    std::iter::repeat_n(c, n).collect()
}

pub fn bytes(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i as u32 * 7 + 1) as u8).collect()
}

/// The ints the Java generator writes (`int_{i}`): every boundary of the compact forms.
pub const INTS: [i32; 16] = [
    0,
    1,
    -16,
    47,
    48,
    -17,
    2047,
    2048,
    -2048,
    -2049,
    262143,
    262144,
    -262144,
    -262145,
    i32::MAX,
    i32::MIN,
];

/// The longs the Java generator writes (`long_{l}`).
pub const LONGS: [i64; 19] = [
    0,
    -8,
    15,
    16,
    -9,
    2047,
    2048,
    -2048,
    -2049,
    262143,
    262144,
    -262144,
    -262145,
    2147483647,
    -2147483648,
    2147483648,
    -2147483649,
    i64::MAX,
    i64::MIN,
];

/// The doubles the Java generator writes (`double_{name}`), by Java's `toString`.
pub const DOUBLES: [(&str, f64); 19] = [
    ("0.0", 0.0),
    ("1.0", 1.0),
    ("-1.0", -1.0),
    ("127.0", 127.0),
    ("-128.0", -128.0),
    ("128.0", 128.0),
    ("-129.0", -129.0),
    ("32767.0", 32767.0),
    ("-32768.0", -32768.0),
    ("32768.0", 32768.0),
    ("12.25", 12.25),
    ("0.001", 0.001),
    ("-0.5", -0.5),
    ("1.5", 1.5),
    ("2147483.647", 2147483.647),
    ("3.141592653589793", std::f64::consts::PI),
    ("1.0E300", 1e300),
    ("100000.0", 100000.0),
    ("1.0E-9", 1e-9),
];

/// The long strings the Java generator writes (`string_{len}`): length and character.
pub const LONG_STRINGS: [(usize, char); 7] = [
    (31, 'a'),
    (32, 'b'),
    (1023, 'c'),
    (1024, 'd'),
    (32768, 'e'),
    (32769, 'f'),
    (70000, 'g'),
];
