//! Against a running Java Dubbo 3.3.6 provider (`interop/java`), skipped by default:
//!
//! ```text
//! interop/java/run-java.sh InteropProvider --port 20880 --registry N/A &
//! RUBBO_JAVA_DUBBO=127.0.0.1:20880 RUBBO_JAVA_DUBBO_PID=$! \
//!     cargo test -p rubbo-remoting --test java_live -- --ignored --test-threads 1
//! ```
//!
//! The `shutdown` test stops the provider (SIGTERM) and runs last by name order
//! only when `RUBBO_JAVA_DUBBO_PID` is set.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::PathBuf;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::future::join_all;

use rubbo_remoting::*;
use support::*;

fn provider() -> String {
    std::env::var("RUBBO_JAVA_DUBBO").expect("RUBBO_JAVA_DUBBO=host:port of a Java provider")
}

/// (request body, response body) of a captured call.
fn captured(name: &str) -> (Bytes, Bytes) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop/fixtures/dubbo");
    let body = |kind: &str| {
        let wire = std::fs::read(dir.join(format!("{name}.{kind}.bin"))).unwrap();
        let mut buf = BytesMut::from(&wire[..]);
        match Decoder::new(0).decode(&mut buf).unwrap().unwrap() {
            Decoded::Request(r) => r.body,
            Decoded::Response(r) => r.body,
            other => panic!("{other:?}"),
        }
    };
    (body("request"), body("response"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Java provider: RUBBO_JAVA_DUBBO=host:port"]
async fn a_java_provider_answers_captured_calls_concurrently() {
    let client = ExchangeClient::connect(&provider(), client_config())
        .await
        .unwrap();
    for name in [
        "echo",
        "echo_int",
        "echo_user",
        "list_users",
        "echo_bytes_chunked",
        "fail",
    ] {
        let (req, want) = captured(name);
        let got = client.request(req, HESSIAN2, LONG).await.unwrap();
        assert_eq!(got.status, Status::OK, "{name}");
        if name != "fail" {
            // `fail` carries a stack trace that differs per run
            assert_eq!(got.body, want, "{name}");
        }
    }
    let (req, want) = captured("echo");
    let calls = (0..2000).map(|_| client.request(req.clone(), HESSIAN2, LONG));
    for r in bounded("2000 calls", Duration::from_secs(60), join_all(calls)).await {
        assert_eq!(r.unwrap().body, want);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Java provider: RUBBO_JAVA_DUBBO=host:port"]
async fn b_java_provider_answers_our_heartbeats() {
    let hb = Duration::from_millis(200);
    let client = ExchangeClient::connect(&provider(), client_config().with_heartbeat(hb))
        .await
        .unwrap();
    let local = client.local_addr();
    // idle for 2.5 x the 600 ms heartbeat timeout: only Java's replies keep it open
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(client.is_available());
    assert_eq!(client.local_addr(), local, "no reconnect");
    let (req, want) = captured("echo");
    assert_eq!(
        client.request(req, HESSIAN2, LONG).await.unwrap().body,
        want
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Java provider and its pid: RUBBO_JAVA_DUBBO_PID"]
async fn c_java_provider_shutdown_sends_readonly() {
    let Ok(pid) = std::env::var("RUBBO_JAVA_DUBBO_PID") else {
        eprintln!("RUBBO_JAVA_DUBBO_PID not set: provider shutdown not tested");
        return;
    };
    let client = ExchangeClient::connect(&provider(), client_config())
        .await
        .unwrap();
    assert!(client.is_available());
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    wait_until("readonly or closed", Duration::from_secs(20), || {
        !client.is_available()
    })
    .await;
    let readonly_seen = client.is_connected();
    eprintln!("readonly seen while connected: {readonly_seen}");
    wait_until(
        "provider closed the connection",
        Duration::from_secs(30),
        || !client.is_connected(),
    )
    .await;
    assert!(
        readonly_seen,
        "the provider marked the connection readonly before closing it"
    );
}
