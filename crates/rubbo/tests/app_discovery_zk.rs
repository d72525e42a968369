//! Application-level discovery on a real ZooKeeper: a Rust provider with
//! `register-mode=instance` and a Rust consumer with `FORCE_APPLICATION` (the instance
//! node, the mapping node and MetadataService over dubbo); a provider that joins later
//! is found through the watched mapping and instance nodes. A Triple provider serves
//! its metadata through MetadataService V2.
#![allow(missing_docs)]

mod zk;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rubbo::{RpcError, Rubbo};

#[rubbo::service(interface = "org.rubbo.test.ZkWho", version = "1.0.0")]
pub trait ZkWho {
    /// `String who()`.
    async fn who(&self) -> Result<String, RpcError>;
}

struct Named(&'static str);

impl ZkWho for Named {
    async fn who(&self) -> Result<String, RpcError> {
        Ok(self.0.into())
    }
}

const WAIT: Duration = Duration::from_secs(15);

fn provider(zk: &zk::ZkServer) -> Result<Rubbo, RpcError> {
    Rubbo::builder()
        .application("zk-ad-provider")
        .registry(zk.url())
        .port(0)
        .register_mode("instance")
        .build()
}

#[tokio::test]
async fn a_rust_consumer_finds_rust_providers_by_instance_on_zookeeper() {
    let zk = zk::ZkServer::start();
    let p1 = provider(&zk).unwrap();
    p1.export(ZkWhoServer::new(Arc::new(Named("one"))))
        .await
        .unwrap();

    let c = Rubbo::builder()
        .application("zk-ad-consumer")
        .registry(zk.url())
        .migration("FORCE_APPLICATION")
        .build()
        .unwrap();
    let who = ZkWhoClient::new(c.refer(&ZkWhoClient::SERVICE).await.unwrap());
    assert_eq!(who.who().await.unwrap(), "one");

    // A second instance of the application joins: calls spread over both.
    let p2 = provider(&zk).unwrap();
    p2.export(ZkWhoServer::new(Arc::new(Named("two"))))
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "only saw {seen:?}");
        if let Ok(s) = who.who().await {
            seen.insert(s);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // The first leaves (its instance node goes first): only the second answers.
    p1.shutdown().await;
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut twos = 0;
    while twos < 10 {
        assert!(tokio::time::Instant::now() < deadline, "p1 still called");
        match who.who().await.as_deref() {
            Ok("two") => twos += 1,
            _ => twos = 0,
        }
    }
    p2.shutdown().await;
    c.shutdown().await;
}

#[tokio::test]
async fn a_rust_consumer_fetches_metadata_over_v2_from_a_triple_provider_on_zookeeper() {
    let zk = zk::ZkServer::start();
    let v2_calls = Arc::new(AtomicUsize::new(0));
    let seen = v2_calls.clone();
    let count_v2 = rubbo::filter_fn(move |inv: rubbo::Invocation, next: rubbo::BoxInvoker| {
        if inv.method() == "GetMetadataInfo" {
            seen.fetch_add(1, Ordering::SeqCst);
        }
        next.invoke(inv)
    })
    .with_activate(rubbo::filter::Activate::provider(0));
    let p = Rubbo::builder()
        .application("zk-v2-provider")
        .registry(zk.url())
        .protocol("tri", 0)
        .register_mode("instance")
        .filter("count-v2", count_v2)
        .build()
        .unwrap();
    p.export(ZkWhoServer::new(Arc::new(Named("tri"))))
        .await
        .unwrap();

    let c = Rubbo::builder()
        .application("zk-v2-consumer")
        .registry(zk.url())
        .migration("FORCE_APPLICATION")
        .build()
        .unwrap();
    let who = ZkWhoClient::new(c.refer(&ZkWhoClient::SERVICE).await.unwrap());
    assert_eq!(who.who().await.unwrap(), "tri");
    assert_eq!(
        v2_calls.load(Ordering::SeqCst),
        1,
        "the metadata came from MetadataService V2"
    );
    p.shutdown().await;
    c.shutdown().await;
}

#[tokio::test]
async fn a_rust_consumer_reads_remote_metadata_from_the_metadata_report() {
    let zk = zk::ZkServer::start();
    // Storage type `remote`: the provider publishes /dubbo/metadata/{app}/{revision},
    // and its MetadataService refuses every call, so only the report can answer.
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = asked.clone();
    let refuse = rubbo::filter_fn(move |inv: rubbo::Invocation, next: rubbo::BoxInvoker| {
        if matches!(inv.method(), "getMetadataInfo" | "GetMetadataInfo") {
            seen.fetch_add(1, Ordering::SeqCst);
            return Box::pin(async {
                Err(RpcError::new(
                    rubbo::ErrorKind::Biz,
                    "injected: ask the metadata report",
                ))
            }) as rubbo::InvokeFuture;
        }
        next.invoke(inv)
    })
    .with_activate(rubbo::filter::Activate::provider(0));
    let config = rubbo::config::Config::loader()
        .set("dubbo.application.name", "zk-remote-provider")
        .set("dubbo.application.metadata-type", "remote")
        .set("dubbo.application.register-mode", "instance")
        .load()
        .unwrap();
    let p = Rubbo::builder()
        .config(&config)
        .registry(zk.url())
        .port(0)
        .filter("refuse-metadata", refuse)
        .build()
        .unwrap();
    p.export(ZkWhoServer::new(Arc::new(Named("remote"))))
        .await
        .unwrap();

    let c = Rubbo::builder()
        .application("zk-remote-consumer")
        .registry(zk.url())
        .migration("FORCE_APPLICATION")
        .build()
        .unwrap();
    let who = ZkWhoClient::new(c.refer(&ZkWhoClient::SERVICE).await.unwrap());
    assert_eq!(who.who().await.unwrap(), "remote");
    assert_eq!(
        asked.load(Ordering::SeqCst),
        0,
        "the metadata came from the report, not from MetadataService"
    );
    p.shutdown().await;
    c.shutdown().await;
}
