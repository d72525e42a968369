//! Java's optional metrics end to end over 127.0.0.1, scraped from `GET /metrics` on
//! the QoS ports: the response time histogram (`dubbo.metrics.histogram.enabled`) and
//! the sliding-window aggregates (`dubbo.metrics.aggregation.enabled`) of real calls
//! between a provider and a consumer; the registry series (register, subscribe,
//! notify, directory) and the config center counter through a real ZooKeeper.
#![allow(clippy::unwrap_used)]

mod qos_client;
mod zk;

use std::sync::Arc;
use std::time::{Duration, Instant};

use qos_client::{sample, scrape};
use rubbo::{RpcError, Rubbo};
use rubbo_registry::DynamicConfiguration;
use rubbo_registry_zookeeper::ZookeeperDynamicConfiguration;
use zk::{ZkServer, wait_until};

/// A service with a fast, a slow and a failing method.
#[rubbo::service(interface = "org.rubbo.test.Windowed", version = "1.0.0")]
pub trait Windowed {
    /// Answers at once.
    async fn ok(&self, n: i32) -> Result<String, RpcError>;
    /// Answers after `millis`.
    async fn slow(&self, millis: i32) -> Result<String, RpcError>;
    /// Throws a business exception.
    async fn boom(&self) -> Result<String, RpcError>;
}

struct Impl;

impl Windowed for Impl {
    async fn ok(&self, n: i32) -> Result<String, RpcError> {
        Ok(n.to_string())
    }
    async fn slow(&self, millis: i32) -> Result<String, RpcError> {
        tokio::time::sleep(Duration::from_millis(millis as u64)).await;
        Ok("late".into())
    }
    async fn boom(&self) -> Result<String, RpcError> {
        Err(RpcError::biz(
            "java.lang.IllegalStateException",
            Some("boom".into()),
        ))
    }
}

const BOUND: Duration = Duration::from_secs(20);
const IFACE: &str = "org.rubbo.test.Windowed";
const SERVICE_KEY: &str = "org.rubbo.test.Windowed:1.0.0";

fn method(m: &'static str) -> [(&'static str, &'static str); 2] {
    [("interface", IFACE), ("method", m)]
}

/// An application with metrics, the histogram and the aggregates on.
fn app(name: &str) -> rubbo::RubboBuilder {
    Rubbo::builder()
        .application(name)
        .qos_port(0)
        .metrics(true)
        .metrics_param("metrics.histogram.enabled", "true")
        .metrics_param("metrics.aggregation.enabled", "true")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histogram_and_windows_count_real_calls() {
    let provider = app("windowed-provider").port(0).build().unwrap();
    let url = provider
        .export(WindowedServer::new(Arc::new(Impl)))
        .await
        .unwrap();
    let consumer = app("windowed-consumer")
        .param("retries", "0")
        .build()
        .unwrap();
    let client = WindowedClient::new(
        consumer
            .refer_url(
                &WindowedClient::SERVICE,
                &format!("dubbo://127.0.0.1:{}", url.port()),
            )
            .await
            .unwrap(),
    );

    // 30 fast calls, 10 of 120 ms (5 at a time), 2 that throw; each timed here.
    let mut observed = Vec::new();
    for n in 0..30 {
        let t = Instant::now();
        assert_eq!(client.ok(n).await.unwrap(), n.to_string());
        observed.push(t.elapsed());
    }
    for _ in 0..2 {
        let mut batch = Vec::new();
        for _ in 0..5 {
            let c = client.clone();
            batch.push(tokio::spawn(async move {
                let t = Instant::now();
                assert_eq!(c.slow(120).await.unwrap(), "late");
                t.elapsed()
            }));
        }
        for b in batch {
            observed.push(b.await.unwrap());
        }
    }
    for _ in 0..2 {
        assert!(client.boom().await.unwrap_err().is_biz());
    }
    let longest = observed.iter().max().unwrap().as_secs_f64() * 1000.0;

    for (side, qos) in [
        ("provider", provider.qos_address().unwrap()),
        ("consumer", consumer.qos_address().unwrap()),
    ] {
        let text = scrape(qos).await;
        let name = |s: &str| format!("dubbo_{side}_{s}");
        // The histogram: Java's timer, in seconds; the +Inf bucket is the count and
        // the buckets hold exactly the calls made.
        let hist = |m: &'static str, suffix: &str, le: Option<&'static str>| {
            let mut want = method(m).to_vec();
            if let Some(le) = le {
                want.push(("le", le));
            }
            sample(
                &text,
                &name(&format!("rt_milliseconds_histogram_seconds_{suffix}")),
                &want,
            )
        };
        for (m, calls) in [("ok", 30.0), ("slow", 10.0), ("boom", 2.0)] {
            assert_eq!(hist(m, "count", None), Some(calls), "{side} {m}\n{text}");
            assert_eq!(
                hist(m, "bucket", Some("+Inf")),
                Some(calls),
                "{side} {m}\n{text}"
            );
        }
        assert_eq!(hist("slow", "bucket", Some("0.1")), Some(0.0), "{side}");
        assert_eq!(hist("slow", "bucket", Some("0.3")), Some(10.0), "{side}");
        // Micrometer's `_max` beside the timer: the slowest call, in seconds.
        let max = sample(
            &text,
            &name("rt_milliseconds_histogram_seconds_max"),
            &method("slow"),
        )
        .unwrap();
        assert!((0.12..=longest / 1000.0).contains(&max), "{side} max {max}");
        let slow_sum = hist("slow", "sum", None).unwrap();
        assert!(
            (1.2..=10.0 * longest / 1000.0).contains(&slow_sum),
            "{side} slow sum {slow_sum}"
        );

        // The windows: the counters count the calls of the last two minutes.
        let agg = |s: &str, m: &'static str| sample(&text, &name(s), &method(m));
        assert_eq!(
            agg("requests_total_aggregate", "ok"),
            Some(30.0),
            "{side}\n{text}"
        );
        assert_eq!(
            agg("requests_succeed_aggregate", "ok"),
            Some(30.0),
            "{side}"
        );
        assert_eq!(
            agg("requests_succeed_aggregate", "slow"),
            Some(10.0),
            "{side}"
        );
        assert_eq!(
            agg("requests_business_failed_aggregate", "boom"),
            Some(2.0),
            "{side}"
        );
        assert_eq!(
            agg("requests_failed_total_aggregate", "boom"),
            Some(2.0),
            "{side}"
        );
        assert_eq!(
            agg("requests_failed_total_aggregate", "ok"),
            Some(0.0),
            "{side}"
        );
        assert!(agg("qps_total", "ok").unwrap() > 0.0, "{side}");
        // Quantiles lie within the response times seen: the slow calls are the top
        // quarter, so p99 is one of them and p50 a fast one.
        let (min, max) = (
            agg("rt_min_milliseconds_aggregate", "slow").unwrap(),
            agg("rt_max_milliseconds_aggregate", "slow").unwrap(),
        );
        assert!(min >= 120.0 && max <= longest, "{side} slow {min}..{max}");
        let p99 = agg("rt_milliseconds_p99", "slow").unwrap();
        assert!(
            (min..=max).contains(&p99),
            "{side} p99 {p99} not in {min}..{max}"
        );
        let p50 = agg("rt_milliseconds_p50", "ok").unwrap();
        let ok_max = agg("rt_max_milliseconds_aggregate", "ok").unwrap();
        assert!(p50 <= ok_max && p50 < 120.0, "{side} p50 {p50}");
        let avg = agg("rt_avg_milliseconds_aggregate", "slow").unwrap();
        assert!((min..=max).contains(&avg), "{side} avg {avg}");
    }
    consumer.shutdown().await;
    provider.shutdown().await;
}

/// A provider of the test service registered in `registry`, with metrics.
async fn provider(registry: &str) -> Rubbo {
    let p = app("windowed-zk-provider")
        .registry(registry)
        .port(0)
        .build()
        .unwrap();
    p.export(WindowedServer::new(Arc::new(Impl))).await.unwrap();
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registry_and_config_center_series_move_with_zookeeper() {
    let server = ZkServer::start();
    let reg = server.url();
    let p1 = provider(&reg).await;
    let zk = [("registry_cluster", "default")];

    // The provider registered its URL once, successfully.
    let text = scrape(p1.qos_address().unwrap()).await;
    let svc = [("interface", SERVICE_KEY), ("registry_cluster", "default")];
    assert_eq!(
        sample(&text, "dubbo_registry_register_service_total", &svc),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "dubbo_registry_register_service_succeed_total", &svc),
        Some(1.0)
    );
    // Java shows a service-level failure count only once one happened.
    assert_eq!(
        sample(&text, "dubbo_registry_register_service_failed_total", &svc),
        None
    );
    assert!(sample(&text, "dubbo_register_service_rt_milliseconds_max", &svc).is_some());
    // And its application instance (register-mode `all`, Java's default), once.
    assert_eq!(
        sample(&text, "dubbo_registry_register_requests_total", &zk),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "dubbo_registry_register_requests_succeed_total", &zk),
        Some(1.0)
    );
    assert!(sample(&text, "dubbo_register_rt_milliseconds_last", &zk).is_some());

    // A consumer subscribes (interface level) and is notified of the one provider.
    let consumer = app("windowed-zk-consumer")
        .registry(&reg)
        .migration("FORCE_INTERFACE")
        .build()
        .unwrap();
    let client = WindowedClient::new(consumer.refer(&WindowedClient::SERVICE).await.unwrap());
    assert_eq!(client.ok(7).await.unwrap(), "7");
    let c_qos = consumer.qos_address().unwrap();
    let text = scrape(c_qos).await;
    assert_eq!(
        sample(&text, "dubbo_registry_subscribe_num_total", &zk),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "dubbo_registry_subscribe_num_succeed_total", &zk),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, "dubbo_registry_subscribe_num_failed_total", &zk),
        Some(0.0)
    );
    // Java writes the subscribe times without the registry.
    let c_app = [("application_name", "windowed-zk-consumer")];
    assert!(sample(&text, "dubbo_subscribe_rt_milliseconds_last", &c_app).is_some());
    let key = [("interface", SERVICE_KEY)];
    assert_eq!(
        sample(&text, "dubbo_registry_notify_num_last", &key),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, "dubbo_registry_directory_num_all", &key),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, "dubbo_registry_directory_num_valid_total", &key),
        Some(1.0)
    );
    let directory = [
        ("interface", SERVICE_KEY),
        ("register_mode", "interface"),
        ("registry", "default"),
    ];
    assert_eq!(
        sample(
            &text,
            "dubbo_registry_directory_num_to_reconnect_total",
            &directory
        ),
        Some(0.0)
    );
    let notified = sample(&text, "dubbo_registry_notify_requests_total", &[]).unwrap();
    assert!(notified >= 1.0, "{text}");

    // A second provider: the consumer is notified again, of two.
    let p2 = provider(&reg).await;
    wait_until("a notification of two providers", BOUND, || async {
        let text = scrape(c_qos).await;
        sample(&text, "dubbo_registry_notify_num_last", &key) == Some(2.0)
            && sample(&text, "dubbo_registry_directory_num_valid_total", &key) == Some(2.0)
            && sample(&text, "dubbo_registry_notify_requests_total", &[]).unwrap() > notified
    })
    .await;

    // A rule written in the config center (the registry serves as one): the consumer
    // counts the change of the key it listens to.
    let rule_key = format!("{IFACE}:1.0.0:.configurators");
    let admin = ZookeeperDynamicConfiguration::connect(reg.parse().unwrap())
        .await
        .unwrap();
    let changes = |text: &str| {
        sample(
            text,
            "dubbo_configcenter_total",
            &[
                ("key", rule_key.as_str()),
                ("config_center", "zookeeper"),
                ("group", "dubbo"),
            ],
        )
    };
    assert_eq!(changes(&scrape(c_qos).await), None);
    let rule = format!(
        "configVersion: v3.0\nscope: service\nkey: {IFACE}:1.0.0\nenabled: true\nconfigs:\n  - side: consumer\n    parameters: {{timeout: 4000}}\n"
    );
    admin
        .publish_config(&rule_key, "dubbo", &rule)
        .await
        .unwrap();
    wait_until("the rule change counted", BOUND, || async {
        changes(&scrape(c_qos).await) == Some(1.0)
    })
    .await;
    let text = scrape(c_qos).await;
    let line = text
        .lines()
        .find(|l| l.starts_with("dubbo_configcenter_total{") && l.contains(&rule_key))
        .unwrap();
    assert!(line.contains("change_type=\"added\""), "{line}");
    assert!(
        line.contains("application_name=\"windowed-zk-consumer\""),
        "{line}"
    );

    // Interface level subscribes no service's instances.
    let svc_sub = [("interface", SERVICE_KEY), ("registry_cluster", "default")];
    assert_eq!(
        sample(
            &text,
            "dubbo_registry_subscribe_service_num_total",
            &svc_sub
        ),
        None
    );
    // An application-level consumer counts its service subscription, once.
    let app_consumer = app("windowed-zk-app-consumer")
        .registry(&reg)
        .migration("FORCE_APPLICATION")
        .build()
        .unwrap();
    let app_client =
        WindowedClient::new(app_consumer.refer(&WindowedClient::SERVICE).await.unwrap());
    assert_eq!(app_client.ok(8).await.unwrap(), "8");
    let text = scrape(app_consumer.qos_address().unwrap()).await;
    assert_eq!(
        sample(
            &text,
            "dubbo_registry_subscribe_service_num_total",
            &svc_sub
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "dubbo_registry_subscribe_service_num_succeed_total",
            &svc_sub
        ),
        Some(1.0)
    );
    assert!(
        sample(
            &text,
            "dubbo_subscribe_service_rt_milliseconds_last",
            &svc_sub
        )
        .is_some()
    );
    app_consumer.shutdown().await;

    admin.close().await;
    consumer.shutdown().await;
    p2.shutdown().await;
    p1.shutdown().await;
}
