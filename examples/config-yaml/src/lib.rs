//! A provider and a consumer configured only by YAML files: `provider.yml` and
//! `consumer.yml` beside this crate, in Java's Spring Boot layout (`dubbo:` root).
//! Environment variables (`DUBBO_REGISTRY_ADDRESS`, `DUBBO_PROTOCOL_PORT`) override
//! the files, as in Java.
//!
//! Run with: `cargo run -p rubbo-cli -- registry` then
//! `cargo run -p config-yaml --bin config-yaml-provider` and
//! `cargo run -p config-yaml --bin config-yaml-consumer`

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rubbo::config::{Config, ConfigLoader};
use rubbo::{RpcError, Rubbo, Url};

/// The example's service.
#[rubbo::service(interface = "org.example.config.Greeter", version = "1.0.0")]
pub trait Greeter {
    /// `String hello(String name)`.
    async fn hello(&self, name: String) -> Result<String, RpcError>;
    /// `String slow(int millis)`: answers after `millis`.
    async fn slow(&self, millis: i32) -> Result<String, RpcError>;
}

/// The provider's implementation.
#[derive(Debug, Clone, Default)]
pub struct Greetings;

impl Greeter for Greetings {
    async fn hello(&self, name: String) -> Result<String, RpcError> {
        Ok(format!("hello, {name}"))
    }
    async fn slow(&self, millis: i32) -> Result<String, RpcError> {
        tokio::time::sleep(Duration::from_millis(u64::try_from(millis).unwrap_or(0))).await;
        Ok("done".to_owned())
    }
}

/// A YAML file of this example (`provider.yml`, `consumer.yml`).
pub fn example_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// A loader with the example's file `name` and the process's environment.
pub fn loader(name: &str) -> anyhow::Result<ConfigLoader> {
    Ok(Config::loader().file(example_file(name))?.process_env())
}

/// Starts the provider from `config`; returns the application and the exported URL.
pub async fn provider_app(config: &Config) -> Result<(Rubbo, Url), RpcError> {
    let rubbo = Rubbo::from_config(config)?;
    let url = rubbo
        .export(GreeterServer::new(Arc::new(Greetings)))
        .await?;
    Ok((rubbo, url))
}

/// The consumer from `config`: the application and a client.
pub async fn consumer_app(config: &Config) -> Result<(Rubbo, GreeterClient), RpcError> {
    let rubbo = Rubbo::from_config(config)?;
    let client = GreeterClient::new(rubbo.refer(&GreeterClient::SERVICE).await?);
    Ok((rubbo, client))
}
