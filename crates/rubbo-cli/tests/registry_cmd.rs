//! `rubbo registry`: the development registry as its own process, used by a provider
//! and a consumer through `dubbo://127.0.0.1:<port>`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use interop::{InteropService, InteropServiceClient};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_and_a_consumer_meet_through_the_registry_process() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rubbo"))
        .args(["registry", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start rubbo registry");
    let stdout = child.stdout.take().unwrap();
    let port = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line.trim()
            .strip_prefix("READY registry ")
            .map(str::to_owned)
    });
    let port = tokio::time::timeout(Duration::from_secs(20), port)
        .await
        .expect("READY within 20 s")
        .unwrap()
        .expect("a READY registry <port> line");
    let address = format!("dubbo://127.0.0.1:{port}");

    let provider = interop::serve(
        "registry-test",
        "127.0.0.1",
        0,
        std::slice::from_ref(&address),
    )
    .await
    .unwrap();
    let consumer = rubbo::Rubbo::builder()
        .application("registry-test-consumer")
        .registry(address.as_str())
        .build()
        .unwrap();
    let client = InteropServiceClient::new(
        consumer
            .refer(&InteropServiceClient::SERVICE)
            .await
            .unwrap(),
    );
    assert_eq!(
        client.whoami().await.unwrap(),
        Some(format!("registry-test@127.0.0.1:{}", provider.addr.port()))
    );
    provider.shutdown().await;
    consumer.shutdown().await;
    let _ = child.kill();
    let _ = child.wait();
}
