//! The QoS operations commands on real sockets over 127.0.0.1, against a provider and
//! a consumer through a memory registry: `count` reads the provider metrics, `invoke`
//! calls the service through the generic client (telnet and HTTP), bad input gets an
//! answer and the port keeps serving, `switchLogLevel` without a reload handle says
//! so, and the router snapshot commands record the consumer's routings only while
//! enabled.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rubbo::{RpcError, Rubbo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod qos_client;
use qos_client::http;

/// A calculator.
#[rubbo::service(interface = "org.rubbo.test.Calc")]
pub trait Calc {
    /// The sum.
    async fn add(&self, a: i32, b: i32) -> Result<i32, RpcError>;
    /// A greeting.
    async fn greet(&self, name: String) -> Result<String, RpcError>;
}

struct Impl;

impl Calc for Impl {
    async fn add(&self, a: i32, b: i32) -> Result<i32, RpcError> {
        Ok(a + b)
    }
    async fn greet(&self, name: String) -> Result<String, RpcError> {
        Ok(format!("hello {name}"))
    }
}

const BOUND: Duration = Duration::from_secs(20);

/// One telnet session: each line's answer (before its prompt).
async fn telnet(addr: SocketAddr, lines: &[&str]) -> Vec<String> {
    tokio::time::timeout(BOUND, async {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let mut answers = Vec::new();
        // The logo's prompt first.
        let mut seen = 0;
        for line in lines {
            s.write_all(format!("{line}\r\n").as_bytes()).await.unwrap();
            while String::from_utf8_lossy(&buf).matches("dubbo>").count() < seen + 2 {
                let n = s.read(&mut chunk).await.unwrap();
                assert!(n > 0, "closed after {line}");
                buf.extend_from_slice(&chunk[..n]);
            }
            seen += 1;
            let text = String::from_utf8_lossy(&buf).into_owned();
            let answer = text.split("dubbo>").nth(seen).unwrap();
            answers.push(answer.trim_end_matches("\r\n").to_owned());
        }
        answers
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_invoke_log_level_and_router_snapshots_over_http_and_telnet() {
    let factories = Arc::new(rubbo::registry_factories());
    let reg = "memory://127.0.0.1/qos-ops";
    let provider = Rubbo::builder()
        .application("calc")
        .registry(reg)
        .port(0)
        .qos_port(0)
        .metrics(true)
        .registry_factories(factories.clone())
        .build()
        .unwrap();
    provider
        .export(CalcServer::new(Arc::new(Impl)))
        .await
        .unwrap();
    let consumer = Rubbo::builder()
        .application("calc-consumer")
        .registry(reg)
        .qos_port(0)
        .registry_factories(factories.clone())
        .build()
        .unwrap();
    let client = CalcClient::new(consumer.refer(&CalcClient::SERVICE).await.unwrap());
    let p = provider.qos_address().unwrap();
    let c = consumer.qos_address().unwrap();

    for i in 0..5 {
        assert_eq!(
            client.greet(format!("n{i}")).await.unwrap(),
            format!("hello n{i}")
        );
    }
    assert_eq!(client.add(1, 2).await.unwrap(), 3);

    // count: the calls made, from the provider metrics.
    let (status, table) = http(p, "count?s=org.rubbo.test.Calc&m=greet").await;
    assert_eq!(status, 200);
    let row = table.lines().find(|l| l.starts_with("| greet")).unwrap();
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(&cells[1..5], ["greet", "5", "0", "0"], "{table}");

    // invoke over telnet: the generic client, overloads by JSON kinds, bad input.
    let answers = telnet(
        p,
        &[
            "invoke Calc.add(2, 3)",
            "invoke org.rubbo.test.Calc.greet(\"a b\")",
            "invoke Calc.greet({oops)",
            "invoke Nope.greet(\"x\")",
            "invoke Calc.nope()",
            "count Calc",
            "switchLogLevel debug",
        ],
    )
    .await;
    assert!(
        answers[0].starts_with("Use default service Calc.\r\nresult: 5\r\nelapsed: "),
        "{answers:?}"
    );
    assert!(
        answers[1].contains("\r\nresult: \"hello a b\"\r\n"),
        "{answers:?}"
    );
    assert!(
        answers[2].starts_with("Invalid json argument, cause: "),
        "{answers:?}"
    );
    assert_eq!(
        answers[3],
        "Use default service Nope.\r\nNo such service Nope"
    );
    assert_eq!(
        answers[4],
        "Use default service Calc.\r\nNo such method nope in service Calc"
    );
    // `invoke` calls the service itself, past the metrics filter, as Java's does.
    assert!(answers[5].contains("| add    | 1     |"), "{answers:?}");
    assert!(answers[5].contains("| greet  | 5     |"), "{answers:?}");
    assert!(
        answers[6].contains("registered no reloadable log filter"),
        "{answers:?}"
    );
    // And over HTTP.
    let (status, body) = http(p, "invoke?c=Calc.add(40,2)").await;
    assert_eq!(status, 200);
    assert!(body.contains("result: 42"), "{body}");

    // Router snapshots on the consumer: off until enabled.
    let _ = client.greet("x".into()).await.unwrap();
    assert_eq!(http(c, "getRecentRouterSnapshot").await.1, "");
    assert_eq!(
        http(c, "enableRouterSnapshot?p=org.rubbo.test.Calc")
            .await
            .1,
        "OK. Found service count: 1. This will cause performance degradation, please be careful!"
    );
    assert_eq!(
        http(c, "getEnabledRouterSnapshot").await.1,
        "org.rubbo.test.Calc"
    );
    assert_eq!(client.add(1, 1).await.unwrap(), 2);
    let recent = telnet(c, &["getRecentRouterSnapshot"]).await.remove(0);
    assert!(
        recent.contains("Service: org.rubbo.test.Calc Method: add"),
        "{recent}"
    );
    assert!(recent.contains("[ Parent Invokers: 1 -> 1 ]"), "{recent}");
    let state = http(c, "getRouterSnapshot?p=org.rubbo.test.Calc").await.1;
    assert!(
        state.starts_with("org.rubbo.test.Calc\n[ All Invokers:1 ] [ Valid Invokers: 1 ]"),
        "{state}"
    );
    assert_eq!(
        http(c, "disableRouterSnapshot?p=.*Calc").await.1,
        "OK. Found service count: 1"
    );
    assert_eq!(client.add(1, 1).await.unwrap(), 2);
    assert_eq!(http(c, "getRecentRouterSnapshot").await.1, "");

    consumer.shutdown().await;
    provider.shutdown().await;
}
