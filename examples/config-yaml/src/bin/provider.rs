//! The provider, configured by `provider.yml` (and the environment).
//!
//! Run with: `cargo run -p config-yaml --bin config-yaml-provider` (after
//! `cargo run -p rubbo-cli -- registry`)

use anyhow::Result;

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = rubbo::load_config(config_yaml::loader("provider.yml")?).await?;
    let (rubbo, url) = config_yaml::provider_app(&config).await?;
    println!("READY {}", url.address());
    let _ = tokio::signal::ctrl_c().await;
    rubbo.shutdown().await;
    Ok(())
}
