//! Prometheus metrics end to end over 127.0.0.1: a provider exported on dubbo and
//! Triple, one consumer on each protocol, calls that succeed, throw and time out,
//! some of them concurrent; `GET /metrics` on each QoS port is scraped during and
//! after the load, and the series (Java Dubbo 3.3's names and labels) count exactly
//! the calls made.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use rubbo::{RpcError, Rubbo};

mod qos_client;
use qos_client::{http, sample};

/// A service whose methods end each way a call can.
#[rubbo::service(interface = "org.rubbo.test.Counted", version = "1.0.0", group = "g1")]
pub trait Counted {
    /// Answers at once.
    async fn ok(&self, n: i32) -> Result<String, RpcError>;
    /// Throws a business exception.
    async fn boom(&self) -> Result<String, RpcError>;
    /// Answers after `millis`.
    async fn slow(&self, millis: i32) -> Result<String, RpcError>;
}

struct Impl;

impl Counted for Impl {
    async fn ok(&self, n: i32) -> Result<String, RpcError> {
        Ok(n.to_string())
    }
    async fn boom(&self) -> Result<String, RpcError> {
        Err(RpcError::biz(
            "java.lang.IllegalStateException",
            Some("boom".into()),
        ))
    }
    async fn slow(&self, millis: i32) -> Result<String, RpcError> {
        tokio::time::sleep(Duration::from_millis(millis as u64)).await;
        Ok("late".into())
    }
}

const BOUND: Duration = Duration::from_secs(20);

/// The labels of method `m` of the test service.
fn method(app: &'static str, m: &'static str) -> [(&'static str, &'static str); 5] {
    [
        ("application_name", app),
        ("interface", "org.rubbo.test.Counted"),
        ("group", "g1"),
        ("version", "1.0.0"),
        ("method", m),
    ]
}

async fn consumer(name: &str, address: &str) -> (Rubbo, CountedClient) {
    let c = Rubbo::builder()
        .application(name)
        .qos_port(0)
        .metrics(true)
        .param("slow.timeout", "150")
        // One provider call per consumer call, a timed-out one included.
        .param("retries", "0")
        .build()
        .unwrap();
    let client = CountedClient::new(c.refer_url(&CountedClient::SERVICE, address).await.unwrap());
    (c, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_every_call_with_javas_names_and_labels() {
    let provider = Rubbo::builder()
        .application("counted-provider")
        .protocol("dubbo", 0)
        .protocol("tri", 0)
        .qos_port(0)
        .metrics(true)
        .build()
        .unwrap();
    provider
        .export(CountedServer::new(Arc::new(Impl)))
        .await
        .unwrap();
    let ports = servers(&provider).await;
    let dubbo = ports.iter().find(|(p, _)| p == "dubbo").unwrap().1.clone();
    let tri = ports.iter().find(|(p, _)| p == "tri").unwrap().1.clone();
    let p_qos = provider.qos_address().unwrap();

    // Before any call: the method's series are there at 0, as Java initializes them.
    let before = http(p_qos, "metrics").await;
    assert_eq!(before.0, 200);
    let ok_labels = method("counted-provider", "ok");
    assert_eq!(
        sample(&before.1, "dubbo_provider_requests_total", &ok_labels),
        Some(0.0),
        "{}",
        before.1
    );

    let (c_dubbo, over_dubbo) = consumer("counted-dubbo", &format!("dubbo://{dubbo}")).await;
    let (c_tri, over_tri) = consumer("counted-tri", &format!("tri://{tri}")).await;

    // A load of concurrent calls on both protocols, scraped while it runs.
    const PER_TASK: i32 = 50;
    let mut tasks = Vec::new();
    for t in 0..4 {
        let client = if t % 2 == 0 {
            over_dubbo.clone()
        } else {
            over_tri.clone()
        };
        tasks.push(tokio::spawn(async move {
            for n in 0..PER_TASK {
                assert_eq!(client.ok(n).await.unwrap(), n.to_string());
            }
        }));
    }
    let mut last = 0.0;
    let start = Instant::now();
    while !tasks.iter().all(|t| t.is_finished()) {
        assert!(start.elapsed() < BOUND, "the load did not end");
        let text = http(p_qos, "metrics").await.1;
        let now = sample(&text, "dubbo_provider_requests_total", &ok_labels).unwrap();
        assert!(now >= last, "requests went down: {last} -> {now}");
        let processing = sample(&text, "dubbo_provider_requests_processing", &ok_labels).unwrap();
        assert!((0.0..=4.0).contains(&processing), "{processing}");
        last = now;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for t in tasks {
        t.await.unwrap();
    }
    for client in [&over_dubbo, &over_tri] {
        let e = client.boom().await.unwrap_err();
        assert!(e.is_biz(), "{e}");
    }
    let e = over_dubbo.slow(600).await.unwrap_err();
    assert_eq!(e.kind(), rubbo::ErrorKind::Timeout, "{e}");

    // The provider: both protocols count in the same series.
    let total = f64::from(4 * PER_TASK);
    let boom = method("counted-provider", "boom");
    let slow = method("counted-provider", "slow");
    // The slow call ends on the provider after the consumer gave up on it.
    let start = Instant::now();
    let text = loop {
        let text = http(p_qos, "metrics").await.1;
        if sample(&text, "dubbo_provider_requests_succeed_total", &slow) == Some(1.0) {
            break text;
        }
        assert!(
            start.elapsed() < BOUND,
            "the slow call never ended:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let p = |name: &str, labels: &[(&str, &str)]| sample(&text, name, labels);
    assert_eq!(p("dubbo_provider_requests_total", &ok_labels), Some(total));
    assert_eq!(
        p("dubbo_provider_requests_succeed_total", &ok_labels),
        Some(total)
    );
    assert_eq!(
        p("dubbo_provider_requests_failed_total", &ok_labels),
        Some(0.0)
    );
    assert_eq!(
        p("dubbo_provider_requests_processing", &ok_labels),
        Some(0.0)
    );
    assert_eq!(p("dubbo_provider_requests_total", &boom), Some(2.0));
    assert_eq!(
        p("dubbo_provider_requests_business_failed_total", &boom),
        Some(2.0)
    );
    assert_eq!(p("dubbo_provider_requests_failed_total", &boom), Some(2.0));
    assert_eq!(p("dubbo_provider_requests_succeed_total", &boom), Some(0.0));
    assert_eq!(p("dubbo_provider_requests_total", &slow), Some(1.0));
    assert_eq!(p("dubbo_provider_requests_processing", &slow), Some(0.0));
    let min = p("dubbo_provider_rt_milliseconds_min", &slow).unwrap();
    let max = p("dubbo_provider_rt_milliseconds_max", &slow).unwrap();
    assert!(min >= 600.0 && max >= min, "{min} {max}");
    assert!(p("dubbo_provider_rt_milliseconds_avg", &ok_labels).is_some());
    assert!(p("dubbo_provider_rt_milliseconds_sum", &ok_labels).is_some());
    assert!(p("dubbo_provider_rt_milliseconds_last", &ok_labels).is_some());
    // No timeout happened on the provider: Java exports no such series then.
    assert!(
        !text.contains("dubbo_provider_requests_timeout_total"),
        "{text}"
    );
    assert!(!text.contains("dubbo_consumer_"), "{text}");
    let info = [
        ("application_name", "counted-provider"),
        ("ip", "127.0.0.1"),
        ("application_version", env!("CARGO_PKG_VERSION")),
    ];
    assert_eq!(p("dubbo_application_info_total", &info), Some(1.0));
    assert!(
        text.contains("# TYPE dubbo_provider_requests counter"),
        "{text}"
    );
    // Each server's execution bound as Java's thread pool of its port (fixed, 200).
    for addr in [&dubbo, &tri] {
        let port = addr.rsplit_once(':').unwrap().1;
        let name = format!("DubboServerHandler-{port}");
        let pool = [
            ("application_name", "counted-provider"),
            ("ip", "127.0.0.1"),
            ("thread_pool_name", name.as_str()),
        ];
        let g = |n: &str| p(n, &pool).unwrap_or_else(|| panic!("no {n} for {name}:\n{text}"));
        assert_eq!(g("dubbo_thread_pool_core_size"), 200.0);
        assert_eq!(g("dubbo_thread_pool_max_size"), 200.0);
        // Two tasks of the load ran on each protocol, at once or not.
        let largest = g("dubbo_thread_pool_largest_size");
        assert!((1.0..=3.0).contains(&largest), "{largest}");
        assert_eq!(g("dubbo_thread_pool_thread_count"), largest);
        assert_eq!(g("dubbo_thread_pool_active_size"), 0.0);
        assert_eq!(g("dubbo_thread_pool_queue_size"), 0.0);
        assert_eq!(g("dubbo_thread_pool_reject_thread_count"), 0.0);
    }

    // Each consumer counts its own calls, the timeout among them.
    let text = http(c_dubbo.qos_address().unwrap(), "metrics").await.1;
    let c = |name: &str, m| sample(&text, name, &method("counted-dubbo", m));
    assert_eq!(c("dubbo_consumer_requests_total", "ok"), Some(total / 2.0));
    assert_eq!(
        c("dubbo_consumer_requests_succeed_total", "ok"),
        Some(total / 2.0)
    );
    assert_eq!(
        c("dubbo_consumer_requests_business_failed_total", "boom"),
        Some(1.0)
    );
    assert_eq!(
        c("dubbo_consumer_requests_timeout_total", "slow"),
        Some(1.0)
    );
    assert_eq!(c("dubbo_consumer_requests_failed_total", "slow"), Some(1.0));
    assert_eq!(
        c("dubbo_consumer_requests_succeed_total", "slow"),
        Some(0.0)
    );
    assert_eq!(c("dubbo_consumer_requests_processing", "ok"), Some(0.0));
    assert!(!text.contains("dubbo_provider_"), "{text}");
    let text = http(c_tri.qos_address().unwrap(), "metrics").await.1;
    let c = |name: &str, m| sample(&text, name, &method("counted-tri", m));
    assert_eq!(c("dubbo_consumer_requests_total", "ok"), Some(total / 2.0));
    assert_eq!(
        c("dubbo_consumer_requests_business_failed_total", "boom"),
        Some(1.0)
    );
    // The same text in code.
    assert!(
        c_tri
            .metrics()
            .unwrap()
            .encode()
            .contains("dubbo_consumer_requests_total{")
    );

    for app in [c_dubbo, c_tri, provider] {
        app.shutdown().await;
    }
}

/// The protocol servers of `app`: (protocol, host:port), from QoS `ps -l`.
async fn servers(app: &Rubbo) -> Vec<(String, String)> {
    let (status, body) = http(app.qos_address().unwrap(), "ps?l=-l").await;
    assert_eq!(status, 200, "{body}");
    body.lines()
        .filter_map(|l| l.trim().split_once("://"))
        .map(|(p, a)| (p.to_owned(), a.to_owned()))
        .collect()
}

#[tokio::test]
async fn without_metrics_the_qos_port_has_no_metrics_command() {
    let app = Rubbo::builder()
        .application("plain")
        .port(0)
        .qos_port(0)
        .build()
        .unwrap();
    assert!(app.metrics().is_none());
    assert_eq!(http(app.qos_address().unwrap(), "metrics").await.0, 404);
    app.shutdown().await;
}

#[tokio::test]
async fn the_configuration_turns_metrics_on_with_javas_keys() {
    let yaml = "dubbo:\n  application:\n    name: configured\n  protocol:\n    port: 0\n  \
                metrics:\n    protocol: prometheus\n    rpc-level: SERVICE\n";
    let config = rubbo::config::Config::loader()
        .yaml("application.yml", yaml)
        .unwrap()
        .load()
        .unwrap();
    assert!(
        config.unknown_keys().is_empty(),
        "{:?}",
        config.unknown_keys()
    );
    let app = Rubbo::from_config(&config).unwrap();
    let url = app
        .export(CountedServer::new(Arc::new(Impl)))
        .await
        .unwrap();
    let client = CountedClient::new(
        app.refer_url(
            &CountedClient::SERVICE,
            &format!("dubbo://{}", url.address()),
        )
        .await
        .unwrap(),
    );
    client.ok(1).await.unwrap();
    client.boom().await.unwrap_err();
    let text = app.metrics().unwrap().encode();
    // Service level: one series for the service, its method label empty.
    let service = [("interface", "org.rubbo.test.Counted"), ("method", "")];
    assert_eq!(
        sample(&text, "dubbo_provider_requests_total", &service),
        Some(2.0)
    );
    assert_eq!(
        sample(&text, "dubbo_consumer_requests_total", &service),
        Some(2.0)
    );
    app.shutdown().await;
}
