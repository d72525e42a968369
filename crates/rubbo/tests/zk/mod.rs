//! A real standalone ZooKeeper for the facade's tests (as the registry crate's test
//! support starts it): a free 127.0.0.1 port, a temporary directory, killed on drop
//! and when the test process dies (its shell kills it when stdin closes).
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";
const SLF4J_JAR: &str = "/usr/share/java/slf4j-simple.jar";

/// A standalone ZooKeeper server.
pub struct ZkServer {
    port: u16,
    dir: tempfile::TempDir,
    process: Option<(Child, ChildStdin)>,
}

impl ZkServer {
    /// Starts a server on a free port and waits until it serves.
    pub fn start() -> ZkServer {
        assert!(
            Path::new(ZOOKEEPER_JAR).exists(),
            "ZooKeeper is not installed ({ZOOKEEPER_JAR} missing): run `apt-get install -y zookeeper`"
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        let cfg = format!(
            "tickTime=1000\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
             admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr,cons\n\
             maxSessionTimeout=60000\nminSessionTimeout=2000\n",
            dir.path().join("data").display()
        );
        std::fs::write(dir.path().join("zoo.cfg"), cfg).unwrap();
        let mut server = ZkServer {
            port,
            dir,
            process: None,
        };
        server.spawn();
        server
    }

    /// `zookeeper://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("zookeeper://127.0.0.1:{}", self.port)
    }

    fn spawn(&mut self) {
        let log = self.dir.path().join("zookeeper.log");
        let script = format!(
            "java -Xmx256m -cp {ZOOKEEPER_JAR}:{SLF4J_JAR} org.apache.zookeeper.server.ZooKeeperServerMain \"$1\" >>\"$2\" 2>&1 &\n\
             pid=$!\nread -r _\nkill -9 $pid 2>/dev/null\nwait $pid 2>/dev/null\nexit 0\n"
        );
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(script)
            .arg("zk")
            .arg(self.dir.path().join("zoo.cfg"))
            .arg(&log)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        self.process = Some((child, stdin));
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self
                .four_letter("srvr")
                .is_some_and(|s| s.contains("Mode:"))
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "ZooKeeper not ready in 30 s: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
    }

    /// A four-letter word's answer; `None` when the server does not answer.
    pub fn four_letter(&self, word: &str) -> Option<String> {
        let addr: SocketAddr = format!("127.0.0.1:{}", self.port).parse().ok()?;
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        s.write_all(word.as_bytes()).ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        Some(out)
    }

    /// Kills the server (SIGKILL), keeping its port and data.
    pub fn stop(&mut self) {
        if let Some((mut child, stdin)) = self.process.take() {
            drop(stdin);
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts a stopped server again on the same port and data.
    pub fn start_again(&mut self) {
        self.stop();
        self.spawn();
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Polls `cond` every 20 ms until it holds, failing after `within`.
pub async fn wait_until<F, Fut>(what: &str, within: Duration, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    while !cond().await {
        assert!(
            Instant::now() < deadline,
            "timed out after {within:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
