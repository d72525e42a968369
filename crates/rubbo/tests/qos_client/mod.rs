//! The QoS port's HTTP form and its Prometheus text, as the black-box tests read them.
#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one exchange with the QoS port may take.
pub const EXCHANGE_BOUND: Duration = Duration::from_secs(20);

/// `GET /{path}` on a QoS port: (status, body).
pub async fn http(addr: SocketAddr, path: &str) -> (u16, String) {
    tokio::time::timeout(EXCHANGE_BOUND, async {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let req = format!("GET /{path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        let status = out[9..12].parse().unwrap();
        (status, out.split_once("\r\n\r\n").unwrap().1.to_owned())
    })
    .await
    .unwrap()
}

/// `GET /metrics` on a QoS port: the Prometheus text (the answer must be 200).
pub async fn scrape(addr: SocketAddr) -> String {
    let (status, body) = http(addr, "metrics").await;
    assert_eq!(status, 200, "{body}");
    body
}

/// A sample line's name, labels and value.
pub type Sample<'a> = (&'a str, Vec<(&'a str, &'a str)>, f64);

/// The labels of a sample line `name{k="v",...} value`, and its value.
pub fn parse_sample(line: &str) -> Option<Sample<'_>> {
    let (name, rest) = line.split_once('{')?;
    let (labels, value) = rest.rsplit_once("} ")?;
    let labels = labels
        .split("\",")
        .map(|kv| {
            let (k, v) = kv.split_once("=\"").unwrap();
            (k, v.trim_end_matches('"'))
        })
        .collect();
    Some((name, labels, value.parse().ok()?))
}

/// The value of the single `name` sample whose labels include `want`; `None` if
/// absent (two matching samples fail the test).
pub fn sample(text: &str, name: &str, want: &[(&str, &str)]) -> Option<f64> {
    let mut found = None;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((n, labels, value)) = parse_sample(line) else {
            continue;
        };
        if n == name && want.iter().all(|w| labels.contains(w)) {
            assert!(
                found.is_none(),
                "two {name} samples match {want:?}:\n{text}"
            );
            found = Some(value);
        }
    }
    found
}
