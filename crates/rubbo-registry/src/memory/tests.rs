use std::sync::Arc;

use parking_lot::Mutex;
use rubbo_common::Url;

use super::*;
use crate::{SharedListener, empty_url, is_empty_url, subscribe_url};

fn u(s: &str) -> Url {
    Url::parse(s).unwrap()
}

type Seen = Arc<Mutex<Vec<Vec<Url>>>>;

fn recorder() -> (SharedListener, Seen) {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    (Arc::new(move |urls: Vec<Url>| sink.lock().push(urls)), seen)
}

fn registry() -> MemoryRegistry {
    MemoryRegistry::new(u("memory://local"))
}

const IFACE: &str = "org.demo.Greeter";

fn provider(host: &str) -> Url {
    u(&format!(
        "dubbo://{host}:20880/{IFACE}?interface={IFACE}&side=provider"
    ))
}

fn consumer() -> Url {
    subscribe_url(&u(&format!(
        "consumer://10.0.0.9/{IFACE}?interface={IFACE}&side=consumer"
    )))
}

#[tokio::test]
async fn subscribe_delivers_every_category_then_each_change() {
    let r = registry();
    r.register(provider("10.0.0.1")).await.unwrap();
    let (l, seen) = recorder();
    r.subscribe(consumer(), l).await.unwrap();
    {
        let seen = seen.lock();
        assert_eq!(seen.len(), 3, "one list per category: {seen:?}");
        assert_eq!(seen[0], vec![provider("10.0.0.1")]);
        assert_eq!(seen[1], vec![empty_url(&consumer(), "configurators")]);
        assert_eq!(seen[2], vec![empty_url(&consumer(), "routers")]);
    }
    r.register(provider("10.0.0.2")).await.unwrap();
    assert_eq!(
        seen.lock().last().unwrap(),
        &vec![provider("10.0.0.1"), provider("10.0.0.2")],
        "the whole list is delivered"
    );
    r.unregister(provider("10.0.0.1")).await.unwrap();
    r.unregister(provider("10.0.0.2")).await.unwrap();
    let last = seen.lock().last().unwrap().clone();
    assert_eq!(last.len(), 1);
    assert!(is_empty_url(&last[0]));
    assert_eq!(last[0].get_param("category"), Some("providers"));
    assert_eq!(seen.lock().len(), 6);
}

#[tokio::test]
async fn other_services_versions_and_categories_do_not_notify() {
    let r = registry();
    let (l, seen) = recorder();
    let c = consumer().with_param("version", "1.0");
    r.subscribe(c.clone(), l).await.unwrap();
    assert_eq!(seen.lock().len(), 3);
    r.register(u(
        "dubbo://10.0.0.1:1/other.Service?interface=other.Service",
    ))
    .await
    .unwrap();
    r.register(provider("10.0.0.1").with_param("version", "2.0"))
        .await
        .unwrap();
    r.register(consumer().with_param("category", "consumers"))
        .await
        .unwrap();
    assert_eq!(seen.lock().len(), 3);
    let route = u(&format!(
        "route://0.0.0.0/{IFACE}?category=routers&interface={IFACE}&version=1.0"
    ));
    r.register(route.clone()).await.unwrap();
    assert_eq!(seen.lock().last().unwrap(), &vec![route]);
    assert_eq!(r.lookup(c).await.unwrap().len(), 1);
}

#[tokio::test]
async fn unsubscribe_stops_and_duplicates_are_ignored() {
    let r = registry();
    let (l, seen) = recorder();
    r.subscribe(consumer(), l.clone()).await.unwrap();
    r.register(provider("10.0.0.1")).await.unwrap();
    r.register(provider("10.0.0.1")).await.unwrap();
    assert_eq!(seen.lock().len(), 4);
    assert_eq!(r.registered().len(), 1);
    r.unsubscribe(consumer(), l).await.unwrap();
    r.register(provider("10.0.0.2")).await.unwrap();
    assert_eq!(seen.lock().len(), 4);
}

#[tokio::test]
async fn a_panicking_listener_does_not_break_the_registry() {
    let r = registry();
    let bad: SharedListener = Arc::new(|_: Vec<Url>| panic!("listener bug"));
    let (good, seen) = recorder();
    r.subscribe(consumer(), bad).await.unwrap();
    r.subscribe(consumer(), good).await.unwrap();
    r.register(provider("10.0.0.1")).await.unwrap();
    assert_eq!(seen.lock().last().unwrap(), &vec![provider("10.0.0.1")]);
}

#[tokio::test]
async fn a_listener_may_call_the_registry() {
    let r = Arc::new(registry());
    let r2 = r.clone();
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    let l: SharedListener = Arc::new(move |urls: Vec<Url>| {
        sink.lock().push(urls.clone());
        if urls.iter().any(|u| u.host() == Some("10.0.0.1")) {
            let r3 = r2.clone();
            // Re-entrant call: queued, not deadlocked.
            futures::executor::block_on(r3.register(provider("10.0.0.2"))).unwrap();
        }
    });
    r.subscribe(consumer().with_param("category", "providers"), l)
        .await
        .unwrap();
    r.register(provider("10.0.0.1")).await.unwrap();
    assert_eq!(seen.lock().last().unwrap().len(), 2);
}

#[tokio::test]
async fn destroy_refuses_later_calls() {
    let r = registry();
    r.destroy().await;
    assert!(!r.is_available());
    assert!(matches!(
        r.register(provider("10.0.0.1")).await,
        Err(RegistryError::Destroyed(_))
    ));
}

#[tokio::test]
async fn factory_table_resolves_registry_urls() {
    let table = crate::registry_factories();
    let a = crate::get_registry(&table, &u("registry://local/x?registry=memory"))
        .await
        .unwrap();
    let b = crate::get_registry(&table, &u("memory://local"))
        .await
        .unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    let err = crate::get_registry(&table, &u("etcd://h:1"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("known: memory"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_changes_end_with_the_complete_list() {
    let r = Arc::new(registry());
    let (l, seen) = recorder();
    r.subscribe(consumer().with_param("category", "providers"), l)
        .await
        .unwrap();
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let r = r.clone();
            tokio::spawn(async move {
                for i in 0..50 {
                    r.register(provider(&format!("10.0.{t}.{i}")))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let seen = seen.lock();
    assert_eq!(seen.len(), 1 + 400, "one notification per change");
    assert_eq!(seen.last().unwrap().len(), 400, "the last list is complete");
    // Lists only grow: delivered in order.
    assert!(
        seen.windows(2)
            .skip(1)
            .all(|w| w[1].len() == w[0].len() + 1)
    );
}
