//! The example's provider and consumer, configured by their YAML files, call each
//! other on 127.0.0.1 through a development registry.

use std::time::Duration;

use config_yaml::{Greeter, consumer_app, loader, provider_app};
use rubbo::ErrorKind;
use rubbo::dev_registry::DevRegistryServer;

#[tokio::test]
async fn provider_and_consumer_from_yaml() {
    let registry = DevRegistryServer::serve("127.0.0.1", 0).await.unwrap();
    let address = registry.address();

    // The files as they are, but a free registry and port (code beats the file).
    let provider_config = loader("provider.yml")
        .unwrap()
        .code("dubbo.registry.address", address.as_str())
        .code("dubbo.protocol.port", "0")
        .load()
        .unwrap();
    assert!(provider_config.unknown_keys().is_empty());
    let (provider, url) = provider_app(&provider_config).await.unwrap();
    // From provider.yml: the application, the provider default and the service's own.
    assert_eq!(url.get_param("application"), Some("config-yaml-provider"));
    assert_eq!(url.get_param("timeout"), Some("2000"));
    assert_eq!(url.get_param("weight"), Some("50"));
    assert_ne!(url.port(), 20890);

    let consumer_config = loader("consumer.yml")
        .unwrap()
        .code("dubbo.registry.address", address.as_str())
        .load()
        .unwrap();
    let (consumer, client) = consumer_app(&consumer_config).await.unwrap();
    let call = tokio::time::timeout(Duration::from_secs(10), client.hello("yaml".into()));
    assert_eq!(call.await.unwrap().unwrap(), "hello, yaml");

    // consumer.yml gives `slow` a 200 ms timeout (and no retries): a 2 s call fails
    // with a timeout, quickly.
    let started = std::time::Instant::now();
    let slow = tokio::time::timeout(Duration::from_secs(10), client.slow(2000))
        .await
        .unwrap();
    assert_eq!(slow.unwrap_err().kind(), ErrorKind::Timeout);
    assert!(started.elapsed() < Duration::from_millis(1500));
    // Under the consumer default (3000 ms) a shorter call succeeds.
    let ok = tokio::time::timeout(Duration::from_secs(10), client.slow(10)).await;
    assert_eq!(ok.unwrap().unwrap(), "done");

    consumer.shutdown().await;
    provider.shutdown().await;
    registry.shutdown().await;
}
