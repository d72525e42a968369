//! A real ZooKeeper server for tests: standalone, on a free 127.0.0.1 port, in a
//! temporary directory, killed on drop (and when the test process dies: the server
//! runs under a shell that kills it when its stdin closes).
#![allow(dead_code, unreachable_pub)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rubbo_common::Url;
use rubbo_registry::{NotifyListener, SharedListener};

const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";
const SLF4J_JAR: &str = "/usr/share/java/slf4j-simple.jar";

/// A standalone ZooKeeper server.
pub struct ZkServer {
    port: u16,
    dir: tempfile::TempDir,
    process: Option<(Child, ChildStdin)>,
}

impl ZkServer {
    /// Starts a server on a free port and waits until it answers `ruok`.
    pub fn start() -> ZkServer {
        assert!(
            Path::new(ZOOKEEPER_JAR).exists(),
            "ZooKeeper is not installed ({ZOOKEEPER_JAR} missing): run `apt-get install -y zookeeper`"
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("data")).expect("data dir");
        let cfg = format!(
            "tickTime=1000\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
             admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr,stat,mntr,cons,wchs\n\
             maxSessionTimeout=60000\nminSessionTimeout=2000\n",
            dir.path().join("data").display()
        );
        std::fs::write(dir.path().join("zoo.cfg"), cfg).expect("zoo.cfg");
        let mut server = ZkServer {
            port,
            dir,
            process: None,
        };
        server.spawn();
        server
    }

    /// `127.0.0.1:port`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The registry URL of this server with extra query parameters, plus
    /// `zk.watch=$ZK_WATCH` when that variable is set (to run every test with one-shot
    /// watches: `ZK_WATCH=oneshot cargo test`), unless `query` names a watch mode.
    pub fn registry_url(&self, query: &str) -> Url {
        let mut query = query.to_owned();
        if let Ok(mode) = std::env::var("ZK_WATCH")
            && !query.contains("zk.watch=")
        {
            query.push_str(&format!("&zk.watch={mode}"));
        }
        Url::parse(&format!("zookeeper://{}?{query}", self.address())).expect("registry url")
    }

    /// The server log.
    pub fn log(&self) -> PathBuf {
        self.dir.path().join("zookeeper.log")
    }

    fn spawn(&mut self) {
        let script = format!(
            "java -Xmx256m -cp {ZOOKEEPER_JAR}:{SLF4J_JAR} org.apache.zookeeper.server.ZooKeeperServerMain \"$1\" >>\"$2\" 2>&1 &\n\
             pid=$!\nread -r _\nkill -9 $pid 2>/dev/null\nwait $pid 2>/dev/null\nexit 0\n"
        );
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(script)
            .arg("zk")
            .arg(self.dir.path().join("zoo.cfg"))
            .arg(self.log())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot run bash/java: is a JRE installed? (`apt-get install -y zookeeper` brings one)");
        let stdin = child.stdin.take().expect("stdin");
        self.process = Some((child, stdin));
        self.wait_ready();
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            // `ruok` answers as soon as the port is open; `srvr` shows a mode only once
            // the server accepts sessions.
            if self.four_letter("ruok").as_deref() == Some("imok")
                && self
                    .four_letter("srvr")
                    .is_some_and(|s| s.contains("Mode:"))
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let log = std::fs::read_to_string(self.log()).unwrap_or_default();
        panic!(
            "ZooKeeper on {} not ready in 30 s; log:\n{log}",
            self.address()
        );
    }

    /// Sends a four-letter word; `None` when the server does not answer.
    pub fn four_letter(&self, word: &str) -> Option<String> {
        let addr: SocketAddr = self.address().parse().ok()?;
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        s.write_all(word.as_bytes()).ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        Some(out)
    }

    /// Kills the server (SIGKILL: as a crash), keeping its port and data.
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
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.four_letter("ruok").is_some() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts the server again on the same port and data directory.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A free port with nothing listening (a ZooKeeper that is down).
pub fn dead_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// Records every notification.
#[derive(Default)]
pub struct Recorder {
    pub seen: Mutex<Vec<Vec<Url>>>,
}

impl NotifyListener for Recorder {
    fn notify(&self, urls: Vec<Url>) {
        self.seen.lock().push(urls);
    }
}

impl Recorder {
    pub fn new() -> (Arc<Recorder>, SharedListener) {
        let r = Arc::new(Recorder::default());
        let l: SharedListener = r.clone();
        (r, l)
    }

    /// The last list of `category`.
    pub fn last(&self, category: &str) -> Option<Vec<Url>> {
        self.seen
            .lock()
            .iter()
            .rev()
            .find(|l| {
                l.first()
                    .is_some_and(|u| rubbo_registry::list_category(u) == category)
            })
            .cloned()
    }

    /// The hosts:ports of the last `providers` list (empty for `empty://`).
    pub fn providers(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .last("providers")
            .unwrap_or_default()
            .iter()
            .filter(|u| !rubbo_registry::is_empty_url(u))
            .map(|u| u.address())
            .collect();
        v.sort();
        v
    }

    /// Waits (bounded) until the last providers list is `want`.
    pub async fn wait_providers(&self, want: &[&str], within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let got = self.providers();
            let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
            want.sort();
            if got == want && self.last("providers").is_some() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "providers: waited {within:?} for {want:?}, last {got:?}; all: {:?}",
                self.seen.lock()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
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

/// Logs to the test output (`RUST_LOG=debug` for more).
pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,zookeeper_client=error".into()),
        )
        .with_test_writer()
        .try_init();
}
