//! Against real Java Dubbo 3.3 (the interop app of `interop/java`) and a real ZooKeeper:
//! Rust reads the nodes Java writes, and Java reads the nodes Rust writes.
//!
//! Needs `interop/java/build.sh` to have run (it makes `interop/java/target/classpath.txt`),
//! hence ignored by default. Run with
//! `cargo test -p rubbo-registry-zookeeper --test java_interop -- --ignored`.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use rubbo_common::Url;
use rubbo_registry::{Registry, subscribe_url};
use rubbo_registry_zookeeper::{ZookeeperRegistry, paths};
use support::{Recorder, ZkServer, dead_port, init_tracing};

const IFACE: &str = "org.rubbo.interop.InteropService";

fn java_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop/java")
}

/// `java ... <main> <args>` with the interop classpath; stdout lines come on the channel.
fn spawn_java(main: &str, args: &[String]) -> (JavaProcess, mpsc::Receiver<String>) {
    let dir = java_dir();
    let classpath =
        std::fs::read_to_string(dir.join("target/classpath.txt")).unwrap_or_else(|_| {
            panic!(
                "interop/java is not built ({}): run interop/java/build.sh",
                dir.join("target/classpath.txt").display()
            )
        });
    let cp = format!(
        "{}:{}",
        dir.join("target/classes").display(),
        classpath.trim()
    );
    let mut child = Command::new("java")
        .args([
            "-Xmx256m",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-Djava.net.preferIPv4Stack=true",
            "-cp",
            &cp,
            &format!("org.rubbo.interop.{main}"),
        ])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("java");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (JavaProcess(child), rx)
}

struct JavaProcess(Child);

impl JavaProcess {
    /// SIGTERM (Dubbo's graceful shutdown unregisters), bounded wait, then SIGKILL.
    fn terminate(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        for _ in 0..300 {
            if self.0.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for JavaProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_line(rx: &mpsc::Receiver<String>, prefix: &str, within: Duration) -> String {
    let deadline = std::time::Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.starts_with(prefix) => return line,
            Ok(_) => {}
            Err(e) => panic!("no line starting with {prefix:?} within {within:?}: {e}"),
        }
    }
}

fn consumer() -> Url {
    subscribe_url(
        &Url::parse(&format!(
            "consumer://127.0.0.1/{IFACE}?application=rubbo-consumer&interface={IFACE}&side=consumer&version=1.0.0"
        ))
        .unwrap(),
    )
}

#[tokio::test]
#[ignore = "needs interop/java built (interop/java/build.sh)"]
async fn rust_reads_the_node_a_java_provider_writes() {
    init_tracing();
    let server = ZkServer::start();
    let port = dead_port();
    let (mut provider, out) = spawn_java(
        "InteropProvider",
        &[
            "--port".into(),
            port.to_string(),
            "--registry".into(),
            format!("zookeeper://{}", server.address()),
            "--host".into(),
            "127.0.0.1".into(),
            "--register-mode".into(),
            "interface".into(),
        ],
    );
    let out = tokio::task::spawn_blocking(move || {
        wait_line(&out, "READY", Duration::from_secs(120));
        out
    })
    .await
    .unwrap();

    let registry = ZookeeperRegistry::connect(server.registry_url("timeout=20000"))
        .await
        .unwrap();
    let (rec, l) = Recorder::new();
    registry.subscribe(consumer(), l).await.unwrap();
    let addr = format!("127.0.0.1:{port}");
    rec.wait_providers(&[addr.as_str()], Duration::from_secs(30))
        .await;
    let url = rec.last("providers").unwrap().remove(0);
    assert_eq!(url.protocol(), Some("dubbo"));
    assert_eq!(url.get_param("interface"), Some(IFACE));
    assert_eq!(url.get_param("version"), Some("1.0.0"));
    assert_eq!(url.get_param("side"), Some("provider"));
    assert!(
        url.get_param("methods")
            .is_some_and(|m| m.split(',').any(|x| x == "echo")),
        "{url}"
    );
    // Re-encoding what we parsed gives back Java's node name, byte for byte.
    let children = registry
        .client()
        .unwrap()
        .list_children(&format!("/dubbo/{IFACE}/providers"))
        .await
        .unwrap();
    assert_eq!(children, vec![paths::node_name(&url)]);

    // Graceful shutdown of the Java provider: the consumer sees the list empty.
    tokio::task::spawn_blocking(move || provider.terminate())
        .await
        .unwrap();
    drop(out);
    rec.wait_providers(&[], Duration::from_secs(30)).await;
    registry.destroy().await;
}

#[tokio::test]
#[ignore = "needs interop/java built (interop/java/build.sh)"]
async fn java_consumer_calls_a_provider_through_the_node_rust_wrote() {
    init_tracing();
    let server = ZkServer::start();
    let port = dead_port();
    // A Java provider that does not register itself.
    let (_provider, out) = spawn_java(
        "InteropProvider",
        &[
            "--port".into(),
            port.to_string(),
            "--registry".into(),
            "N/A".into(),
            "--host".into(),
            "127.0.0.1".into(),
        ],
    );
    tokio::task::spawn_blocking(move || wait_line(&out, "READY", Duration::from_secs(120)))
        .await
        .unwrap();

    // Rust registers it, as a Rust provider would register itself.
    let registry = ZookeeperRegistry::connect(server.registry_url("timeout=20000"))
        .await
        .unwrap();
    let provider = Url::parse(&format!(
        "dubbo://127.0.0.1:{port}/{IFACE}?anyhost=false&application=interop-provider&deprecated=false&dubbo=2.0.2&dynamic=true&generic=false&interface={IFACE}&methods=attachment,echo,echoBool,echoBytes,echoDouble,echoInt,echoList,echoLong,echoMap,echoUser,fail,listUsers,ping,slow,whoami&prefer.serialization=hessian2&release=3.3.6&revision=1.0.0&serialization=hessian2&side=provider&timestamp=1700000000000&version=1.0.0"
    ))
    .unwrap();
    registry.register(provider).await.unwrap();

    let zk = format!("zookeeper://{}", server.address());
    let status = tokio::task::spawn_blocking(move || {
        let (mut consumer, out) = spawn_java(
            "InteropConsumer",
            &[
                "--registry".into(),
                zk,
                "--migration".into(),
                "FORCE_INTERFACE".into(),
                "--only".into(),
                "echo".into(),
                "--wait".into(),
                "30000".into(),
                "--deadline".into(),
                "90000".into(),
            ],
        );
        let summary = wait_line(&out, "", Duration::from_secs(150));
        let mut last = summary;
        while let Ok(line) = out.recv_timeout(Duration::from_secs(120)) {
            last = line;
        }
        let status = consumer.0.wait().expect("consumer exit");
        (status, last)
    })
    .await
    .unwrap();
    assert!(status.0.success(), "java consumer failed: {}", status.1);
    assert!(
        status.1.ends_with(" 0 failed") && !status.1.starts_with("0 passed"),
        "{}",
        status.1
    );
    registry.destroy().await;
}
