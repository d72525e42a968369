//! The QoS port of a running application, end to end over 127.0.0.1: two providers
//! and a consumer through a shared `memory://` registry, calls running all along;
//! `offline` on one provider's QoS port (HTTP) takes it out of the consumer's address
//! list with no failed call while it still answers direct calls, `online` (telnet)
//! brings it back.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rubbo::{RpcError, Rubbo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod qos_client;
use qos_client::http;

/// A provider that counts the calls it serves.
#[rubbo::service(interface = "org.rubbo.test.Who", version = "1.0.0")]
pub trait Who {
    /// Answers the provider's name.
    async fn who(&self) -> Result<String, RpcError>;
}

struct Named(String, Arc<AtomicUsize>);

impl Who for Named {
    async fn who(&self) -> Result<String, RpcError> {
        self.1.fetch_add(1, Ordering::SeqCst);
        Ok(self.0.clone())
    }
}

const BOUND: Duration = Duration::from_secs(20);

/// Polls `f` until it holds, at most [`BOUND`].
async fn until(what: &str, mut f: impl AsyncFnMut() -> bool) {
    let start = Instant::now();
    while !f().await {
        assert!(start.elapsed() < BOUND, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs telnet `line` on a QoS port and answers its output (before the prompt).
async fn telnet(addr: SocketAddr, line: &str) -> String {
    tokio::time::timeout(BOUND, async {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let mut prompts = 0;
        s.write_all(format!("{line}\r\n").as_bytes()).await.unwrap();
        // The logo's prompt, then the answer's.
        while prompts < 2 {
            let n = s.read(&mut chunk).await.unwrap();
            assert!(n > 0);
            buf.extend_from_slice(&chunk[..n]);
            prompts = String::from_utf8_lossy(&buf).matches("dubbo>").count();
        }
        let text = String::from_utf8(buf).unwrap();
        let answer = text.split("dubbo>").nth(1).unwrap();
        answer.trim_end_matches("\r\n").to_owned()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_takes_a_provider_out_of_traffic_and_online_brings_it_back() {
    let factories = Arc::new(rubbo::registry_factories());
    let reg = "memory://127.0.0.1/qos-e2e";
    let mut providers = Vec::new();
    let mut served = Vec::new();
    for i in 0..2 {
        let count = Arc::new(AtomicUsize::new(0));
        let p = Rubbo::builder()
            .application(format!("who-{i}"))
            .registry(reg)
            .port(0)
            .qos_port(0)
            .registry_factories(factories.clone())
            .build()
            .unwrap();
        p.export(WhoServer::new(Arc::new(Named(
            format!("p{i}"),
            count.clone(),
        ))))
        .await
        .unwrap();
        providers.push(p);
        served.push(count);
    }
    let consumer = Rubbo::builder()
        .application("who-consumer")
        .registry(reg)
        .qos_port(0)
        .registry_factories(factories.clone())
        .build()
        .unwrap();
    let client = WhoClient::new(consumer.refer(&WhoClient::SERVICE).await.unwrap());
    let p0 = providers[0].qos_address().unwrap();
    let c = consumer.qos_address().unwrap();
    assert_eq!(http(p0, "ready").await, (200, "true".into()));

    // Calls all along, bounded.
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let load = {
        let (stop, ok, failed, client) = (stop.clone(), ok.clone(), failed.clone(), client.clone());
        tokio::spawn(async move {
            for _ in 0..2_000_000 {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                match client.who().await {
                    Ok(_) => ok.fetch_add(1, Ordering::SeqCst),
                    Err(_) => failed.fetch_add(1, Ordering::SeqCst),
                };
            }
        })
    };
    until("both providers serving", async || {
        served.iter().all(|s| s.load(Ordering::SeqCst) > 10)
    })
    .await;
    let ls = http(c, "ls").await.1;
    assert!(
        ls.contains("|org.rubbo.test.Who:1.0.0|memory-I(2)|"),
        "{ls}"
    );

    // offline over HTTP: unregistered, the server still up.
    assert_eq!(http(p0, "offline").await, (200, "OK".into()));
    let ls = http(p0, "ls").await.1;
    assert!(
        ls.contains("|org.rubbo.test.Who:1.0.0|memory-I(N)|"),
        "{ls}"
    );
    assert_eq!(http(p0, "ready").await, (503, "false".into()));
    until("the consumer listing one provider", async || {
        http(c, "ls").await.1.contains("memory-I(1)")
    })
    .await;
    // Once the call in flight (maybe routed before the change) is done, no call
    // reaches p0 ...
    let settled = ok.load(Ordering::SeqCst) + 1;
    until("the call in flight", async || {
        ok.load(Ordering::SeqCst) > settled
    })
    .await;
    let before = served[0].load(Ordering::SeqCst);
    let calls = ok.load(Ordering::SeqCst);
    until("200 more calls", async || {
        ok.load(Ordering::SeqCst) > calls + 200
    })
    .await;
    assert_eq!(
        served[0].load(Ordering::SeqCst),
        before,
        "a call reached the offline provider"
    );
    // ... but it answers a direct call.
    let direct_url = http(p0, "ps?a=-l").await.1;
    assert!(direct_url.starts_with("dubbo://127.0.0.1:"), "{direct_url}");
    let direct = WhoClient::new(
        consumer
            .refer_url(&WhoClient::SERVICE, &direct_url)
            .await
            .unwrap(),
    );
    assert_eq!(direct.who().await.unwrap(), "p0");

    // online over telnet: registered again, traffic comes back.
    assert_eq!(telnet(p0, "online org.rubbo.test.Who:1.0.0").await, "OK");
    assert_eq!(http(p0, "ready").await, (200, "true".into()));
    until("the consumer listing two providers", async || {
        http(c, "ls").await.1.contains("memory-I(2)")
    })
    .await;
    let back = served[0].load(Ordering::SeqCst);
    until("calls on p0 again", async || {
        served[0].load(Ordering::SeqCst) > back + 10
    })
    .await;

    stop.store(true, Ordering::SeqCst);
    tokio::time::timeout(BOUND, load).await.unwrap().unwrap();
    assert_eq!(failed.load(Ordering::SeqCst), 0, "failed calls");
    assert!(ok.load(Ordering::SeqCst) > 220);

    consumer.shutdown().await;
    for p in &providers {
        p.shutdown().await;
    }
    assert!(
        providers[0].qos_address().is_none(),
        "the QoS server stops with the application"
    );
}

#[tokio::test]
async fn qos_is_off_unless_asked_and_a_taken_port_is_logged_not_fatal() {
    let plain = Rubbo::builder().application("a").port(0).build().unwrap();
    assert!(plain.qos_address().is_none());

    let first = Rubbo::builder()
        .application("b")
        .port(0)
        .qos_port(0)
        .build()
        .unwrap();
    let taken = first.qos_address().unwrap().port();
    let second = Rubbo::builder()
        .application("c")
        .port(0)
        .qos_port(taken)
        .build()
        .unwrap();
    assert!(second.qos_address().is_none());
    let strict = Rubbo::builder()
        .application("d")
        .port(0)
        .qos_port(taken)
        .qos_param("qos.check", "true")
        .build();
    assert!(strict.is_err());

    // Before any export or reference: not started, not ready.
    let addr = first.qos_address().unwrap();
    assert_eq!(http(addr, "startup").await, (503, "false".into()));
    assert_eq!(http(addr, "ready").await, (503, "false".into()));
    assert_eq!(http(addr, "live").await, (200, "true".into()));
    assert_eq!(
        http(addr, "version").await.1,
        format!("dubbo version \"rubbo-{}\"", env!("CARGO_PKG_VERSION"))
    );
    first.shutdown().await;
}

#[tokio::test]
async fn configuration_keys_start_it() {
    let config = rubbo::config::Config::loader()
        .yaml(
            "application.yml",
            "dubbo:\n  application:\n    name: cfg\n    qos-port: 0\n    qos-accept-foreign-ip: false\n  protocol:\n    port: 0\n",
        )
        .unwrap()
        .load()
        .unwrap();
    let app = Rubbo::from_config(&config).unwrap();
    let addr = app.qos_address().unwrap();
    assert!(addr.ip().is_loopback());
    let cfg = http(addr, "getConfig?type=ApplicationConfig").await;
    assert_eq!(cfg.0, 200);
    assert!(cfg.1.contains("\"name\":\"cfg\""), "{}", cfg.1);

    let off = rubbo::config::Config::loader()
        .yaml(
            "application.yml",
            "dubbo:\n  application:\n    name: off\n    qos-port: 0\n    qos-enable: false\n",
        )
        .unwrap()
        .load()
        .unwrap();
    assert!(Rubbo::from_config(&off).unwrap().qos_address().is_none());
    app.shutdown().await;
}
