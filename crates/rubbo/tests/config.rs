//! `RubboBuilder::config`: what the property tree puts on provider URLs and references,
//! and how it ranks against builder calls.

use std::sync::Arc;

use rubbo::config::Config;
use rubbo::{RpcError, Rubbo};

/// The service the tests export.
#[rubbo::service(interface = "org.rubbo.test.Conf", version = "1.0.0")]
pub trait Conf {
    /// `String ping()`.
    async fn ping(&self) -> Result<String, RpcError>;
}

struct Impl;

impl Conf for Impl {
    async fn ping(&self) -> Result<String, RpcError> {
        Ok("pong".into())
    }
}

const YAML: &str = "\
dubbo:
  application:
    name: conf-app
  protocol:
    port: 0
    host: 127.0.0.1
  provider:
    timeout: 1000
    retries: 5
    loadbalance: leastactive
  consumer:
    check: false
  services:
    org.rubbo.test.Conf:
      timeout: 3000
      methods:
        ping:
          retries: 0
";

fn config() -> Config {
    let loaded = Config::loader()
        .yaml("application.yml", YAML)
        .and_then(|l| l.load());
    match loaded {
        Ok(c) => c,
        Err(e) => panic!("the test's YAML: {e}"),
    }
}

#[test]
fn provider_url_layers_defaults_code_and_service_settings() {
    let app = Rubbo::builder()
        .config(&config())
        .param("retries", "7")
        .build()
        .unwrap();
    assert_eq!(app.application(), "conf-app");
    let url = app.provider_url(&ConfClient::SERVICE).unwrap();
    // The service's own setting beats the builder's param and the provider default.
    assert_eq!(url.get_param("timeout"), Some("3000"));
    // The builder's param beats the provider default.
    assert_eq!(url.get_param("retries"), Some("7"));
    assert_eq!(url.get_param("loadbalance"), Some("leastactive"));
    // Method-level, as Java writes it.
    assert_eq!(url.get_param("ping.retries"), Some("0"));
    // Consumer defaults stay off provider URLs.
    assert_eq!(url.get_param("check"), None);
}

#[test]
fn builder_calls_after_config_win() {
    let app = Rubbo::builder()
        .config(&config())
        .application("from-code")
        .build()
        .unwrap();
    assert_eq!(app.application(), "from-code");
    let app = Rubbo::from_config(&config()).unwrap();
    assert_eq!(app.application(), "conf-app");
}

#[tokio::test]
async fn a_yaml_configured_provider_serves_on_its_configured_protocol() {
    let app = Rubbo::from_config(&config()).unwrap();
    let url = app.export(ConfServer::new(Arc::new(Impl))).await.unwrap();
    assert_eq!(url.host(), Some("127.0.0.1"));
    assert_ne!(url.port(), 0);
    let client = ConfClient::new(
        app.refer_url(&ConfClient::SERVICE, &format!("dubbo://{}", url.address()))
            .await
            .unwrap(),
    );
    let pong = tokio::time::timeout(std::time::Duration::from_secs(10), client.ping()).await;
    assert_eq!(pong.unwrap().unwrap(), "pong");
    app.shutdown().await;
}

#[test]
fn registries_from_the_tree_are_checked_at_build() {
    let config = Config::loader()
        .set("dubbo.application.name", "x")
        .set("dubbo.registries.r1.address", "nosuch://127.0.0.1:1")
        .load()
        .unwrap();
    let err = Rubbo::from_config(&config).unwrap_err();
    assert!(err.to_string().contains("nosuch"), "{err}");
}
