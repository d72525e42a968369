//! The `accesslog` and `tps` provider filters end to end: a provider and a consumer
//! built by the bootstrap, on 127.0.0.1.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use rubbo::{ErrorKind, RpcError, Rubbo};

/// A service with an argument.
#[rubbo::service(interface = "org.rubbo.test.Greeter", version = "1.0.0")]
pub trait Greeter {
    /// `String greet(String name)`.
    async fn greet(&self, name: String) -> Result<String, RpcError>;
}

struct Hello;

impl Greeter for Hello {
    async fn greet(&self, name: String) -> Result<String, RpcError> {
        Ok(format!("hello {name}"))
    }
}

/// A provider with `params`, and a client connected to it directly.
async fn serve(params: &[(&str, &str)]) -> (Rubbo, Rubbo, GreeterClient) {
    let mut builder = Rubbo::builder().application("filters-provider").port(0);
    for (k, v) in params {
        builder = builder.param(*k, *v);
    }
    let provider = builder.build().unwrap();
    let url = provider
        .export(GreeterServer::new(Arc::new(Hello)))
        .await
        .unwrap();
    let consumer = Rubbo::builder()
        .application("filters-consumer")
        .build()
        .unwrap();
    let client = GreeterClient::new(
        consumer
            .refer_url(
                &GreeterClient::SERVICE,
                &format!("dubbo://{}", url.address()),
            )
            .await
            .unwrap(),
    );
    (provider, consumer, client)
}

#[tokio::test]
async fn accesslog_to_a_file_records_a_served_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.log");
    let path_str = path.to_str().unwrap().to_owned();
    let (provider, consumer, client) = serve(&[("accesslog", &path_str)]).await;
    assert_eq!(client.greet("world".into()).await.unwrap(), "hello world");

    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if text.ends_with('\n') {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "no access log line in {path_str}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    let line = lines[0];
    assert!(
        line.ends_with(" - org.rubbo.test.Greeter:1.0.0 greet(java.lang.String) [\"world\"]"),
        "{line}"
    );
    // The consumer's address, then the provider's.
    let addrs = line.split("] ").nth(2).unwrap();
    let (remote, rest) = addrs.split_once(" -> ").unwrap();
    let local = rest.split_once(" - ").unwrap().0;
    assert!(remote.starts_with("127.0.0.1:"), "{line}");
    assert!(local.starts_with("127.0.0.1:"), "{line}");
    assert_ne!(remote, local, "{line}");
    consumer.shutdown().await;
    provider.shutdown().await;
}

#[tokio::test]
async fn tps_refuses_the_call_over_the_limit_unless_the_filter_is_removed() {
    let (provider, consumer, client) = serve(&[("tps", "2")]).await;
    for i in 0..2 {
        client
            .greet(format!("c{i}"))
            .await
            .unwrap_or_else(|e| panic!("call {i}: {e}"));
    }
    // The window is the default 60 s: the third call is within it.
    let err = client.greet("c2".into()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LimitExceeded, "{err}");
    assert!(err.message().contains("exceed max service tps"), "{err}");
    consumer.shutdown().await;
    provider.shutdown().await;

    let (provider, consumer, client) = serve(&[("tps", "2"), ("service.filter", "-tps")]).await;
    for i in 0..5 {
        client
            .greet(format!("c{i}"))
            .await
            .unwrap_or_else(|e| panic!("call {i} with -tps: {e}"));
    }
    consumer.shutdown().await;
    provider.shutdown().await;
}
