//! Run with `cargo run -p protobuf-example`: serves `Hello` over Triple on a free port
//! of 127.0.0.1, calls it once and prints the reply.

use protobuf_example::hello::{Hello, HelloClient, SayRequest};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter("warn").init();
    let (provider, port) = protobuf_example::app(0).await?;
    let consumer = rubbo::Rubbo::builder()
        .application("hello-consumer")
        .build()?;
    let client = HelloClient::new(
        consumer
            .refer_url(&HelloClient::SERVICE, &format!("tri://127.0.0.1:{port}"))
            .await?,
    );
    let reply = client
        .say(SayRequest {
            name: "world".into(),
        })
        .await?;
    println!("{} (from /{}/Say)", reply.message, HelloClient::INTERFACE);
    consumer.shutdown().await;
    provider.shutdown().await;
    Ok(())
}
