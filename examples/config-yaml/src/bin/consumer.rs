//! The consumer, configured by `consumer.yml` (and the environment): calls `hello`,
//! then `slow` past its method-level timeout.
//!
//! Run with: `cargo run -p config-yaml --bin config-yaml-consumer` (with the provider
//! running)

use anyhow::Result;
use config_yaml::Greeter;

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = rubbo::load_config(config_yaml::loader("consumer.yml")?).await?;
    let (rubbo, client) = config_yaml::consumer_app(&config).await?;
    println!("{}", client.hello("yaml".into()).await?);
    match client.slow(1000).await {
        Ok(v) => println!("slow(1000) = {v}"),
        Err(e) => println!("slow(1000) failed as configured: {e}"),
    }
    rubbo.shutdown().await;
    Ok(())
}
