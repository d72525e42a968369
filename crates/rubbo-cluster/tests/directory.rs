//! The dynamic directory: notifications, reuse, removal, snapshots.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rubbo_cluster::directory::{InvokerFactory, parse_url_list};
use rubbo_cluster::{ClusterContext, Directory, DynamicDirectory, Rand};
use rubbo_common::{BoxInvoker, RpcError, Url};
use support::*;

/// A factory recording what it made.
struct Factory {
    made: Mutex<HashMap<String, Arc<TestInvoker>>>,
    refers: AtomicUsize,
}

impl Factory {
    fn new() -> Arc<Self> {
        Arc::new(Factory {
            made: Mutex::new(HashMap::new()),
            refers: AtomicUsize::new(0),
        })
    }

    fn as_factory(self: &Arc<Self>) -> InvokerFactory {
        let me = self.clone();
        Arc::new(move |url: Url| {
            let me = me.clone();
            Box::pin(async move {
                me.refers.fetch_add(1, Ordering::SeqCst);
                if url.host() == Some("10.0.0.66") {
                    return Err(RpcError::network("refused"));
                }
                let slow = url.get_param("slow").is_some();
                let t = TestInvoker::new(&url.to_string(), move |_, _| {
                    if slow {
                        Reply::After(Duration::from_millis(200), Box::new(Reply::Ok))
                    } else {
                        Reply::Ok
                    }
                });
                me.made.lock().insert(url.address(), t.clone());
                Ok(t as BoxInvoker)
            })
        })
    }

    fn get(&self, addr: &str) -> Arc<TestInvoker> {
        self.made.lock().get(addr).cloned().unwrap()
    }
}

fn setup() -> (Arc<Factory>, Arc<DynamicDirectory>, ClusterContext) {
    let ctx = ClusterContext::with_rand(Rand::seeded(5));
    let consumer =
        Url::parse("consumer://10.0.0.99/org.demo.Greeter?application=web&timeout=3000").unwrap();
    let f = Factory::new();
    let dir = ctx.dynamic_directory(consumer, f.as_factory());
    (f, dir, ctx)
}

fn urls(s: &str) -> Vec<Url> {
    parse_url_list(s).unwrap()
}

fn addrs(d: &DynamicDirectory) -> Vec<String> {
    d.all_invokers().iter().map(|i| i.url().address()).collect()
}

#[tokio::test]
async fn notify_adds_reuses_removes_and_empties() {
    let (f, dir, _) = setup();
    dir.notify(urls(
        "dubbo://10.0.0.1:20880/org.demo.Greeter;dubbo://10.0.0.2:20880/org.demo.Greeter",
    ))
    .await;
    assert_eq!(addrs(&dir), ["10.0.0.1:20880", "10.0.0.2:20880"]);
    assert_eq!(f.refers.load(Ordering::SeqCst), 2);
    let first = dir.all_invokers()[0].clone();
    // Same list plus one: only the new one is referred; the old handle is reused.
    dir.notify(urls("dubbo://10.0.0.1:20880/org.demo.Greeter dubbo://10.0.0.2:20880/org.demo.Greeter dubbo://10.0.0.3:20880/org.demo.Greeter")).await;
    assert_eq!(addrs(&dir).len(), 3);
    assert_eq!(f.refers.load(Ordering::SeqCst), 3);
    assert!(Arc::ptr_eq(&first, &dir.all_invokers()[0]));
    // Remove one: it is destroyed, the others are not.
    dir.notify(urls(
        "dubbo://10.0.0.1:20880/org.demo.Greeter;dubbo://10.0.0.3:20880/org.demo.Greeter",
    ))
    .await;
    assert_eq!(addrs(&dir), ["10.0.0.1:20880", "10.0.0.3:20880"]);
    assert!(f.get("10.0.0.2:20880").destroyed.load(Ordering::SeqCst));
    assert!(!f.get("10.0.0.1:20880").destroyed.load(Ordering::SeqCst));
    // Changed parameters: a new invoker replaces the old one.
    dir.notify(urls(
        "dubbo://10.0.0.1:20880/org.demo.Greeter?weight=5;dubbo://10.0.0.3:20880/org.demo.Greeter",
    ))
    .await;
    assert_eq!(f.refers.load(Ordering::SeqCst), 4);
    assert!(!Arc::ptr_eq(&first, &dir.all_invokers()[0]));
    // empty:// empties.
    dir.notify(urls(
        "empty://10.0.0.99/org.demo.Greeter?category=providers",
    ))
    .await;
    assert!(addrs(&dir).is_empty());
    assert!(f.get("10.0.0.3:20880").destroyed.load(Ordering::SeqCst));
    dir.notify(urls("dubbo://10.0.0.4:20880/org.demo.Greeter"))
        .await;
    assert_eq!(addrs(&dir).len(), 1);
    dir.notify(urls(
        "empty://10.0.0.99/org.demo.Greeter?category=providers",
    ))
    .await;
    assert!(addrs(&dir).is_empty());
    assert!(!dir.is_available());
}

/// Java 3.3's `RegistryDirectory.refreshInvoker`: an empty list without `empty://`
/// keeps the invokers (empty protection), and so does a list giving no invoker; only
/// `empty://` destroys them.
#[tokio::test]
async fn only_empty_protocol_destroys_the_invokers() {
    let (f, dir, _) = setup();
    dir.notify(urls(
        "dubbo://10.0.0.1:20880/org.demo.Greeter;dubbo://10.0.0.3:20880/org.demo.Greeter",
    ))
    .await;
    assert_eq!(addrs(&dir), ["10.0.0.1:20880", "10.0.0.3:20880"]);
    dir.notify(vec![]).await;
    assert_eq!(
        addrs(&dir),
        ["10.0.0.1:20880", "10.0.0.3:20880"],
        "empty protection"
    );
    assert!(!f.get("10.0.0.1:20880").destroyed.load(Ordering::SeqCst));
    // Every URL fails to refer (10.0.0.66 does) or is no provider: kept too.
    dir.notify(urls(
        "dubbo://10.0.0.66:20880/org.demo.Greeter;override://0.0.0.0/org.demo.Greeter?timeout=1",
    ))
    .await;
    assert_eq!(
        addrs(&dir),
        ["10.0.0.1:20880", "10.0.0.3:20880"],
        "no invoker from the list"
    );
    assert!(dir.is_available());
    // A list with one usable provider replaces them.
    dir.notify(urls(
        "dubbo://10.0.0.66:20880/org.demo.Greeter;dubbo://10.0.0.3:20880/org.demo.Greeter",
    ))
    .await;
    assert_eq!(addrs(&dir), ["10.0.0.3:20880"]);
    assert!(f.get("10.0.0.1:20880").destroyed.load(Ordering::SeqCst));
    dir.notify(urls(
        "empty://10.0.0.99/org.demo.Greeter?category=providers",
    ))
    .await;
    assert!(addrs(&dir).is_empty());
    assert!(f.get("10.0.0.3:20880").destroyed.load(Ordering::SeqCst));
}

#[tokio::test]
async fn provider_urls_are_merged_with_the_consumer_url() {
    let (f, dir, _) = setup();
    dir.notify(urls("dubbo://10.0.0.1:20880/org.demo.Greeter?application=prov&timeout=500&threads=200&m.timeout=90")).await;
    let t = f.get("10.0.0.1:20880");
    let url = rubbo_common::Invoker::url(&*t).clone();
    assert_eq!(url.get_param("timeout"), Some("3000"));
    assert_eq!(url.get_method_param("m", "timeout"), Some("90"));
    assert_eq!(url.get_param("threads"), None);
    assert_eq!(url.get_param("remote.application"), Some("prov"));
}

#[tokio::test]
async fn failed_refers_and_non_provider_urls_are_skipped() {
    let (_, dir, _) = setup();
    dir.notify(urls("dubbo://10.0.0.66:20880/org.demo.Greeter;dubbo://10.0.0.1:20880/org.demo.Greeter;override://0.0.0.0/org.demo.Greeter?timeout=1;route://0.0.0.0/org.demo.Greeter?category=routers")).await;
    assert_eq!(addrs(&dir), ["10.0.0.1:20880"]);
}

#[tokio::test]
async fn removal_does_not_disturb_calls_in_flight() {
    let (f, dir, ctx) = setup();
    dir.notify(urls("dubbo://10.0.0.1:20880/org.demo.Greeter?slow=1"))
        .await;
    let invoker = ctx.join(dir.clone()).unwrap();
    let call = tokio::spawn(invoker.invoke(inv("m")));
    // Wait (bounded) until the call is in flight.
    let t = f.get("10.0.0.1:20880");
    bounded(async {
        while t.calls() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    dir.notify(urls("dubbo://10.0.0.2:20880/org.demo.Greeter"))
        .await;
    assert!(
        !t.destroyed.load(Ordering::SeqCst),
        "destroyed while a call was in flight"
    );
    let r = bounded(call).await.unwrap().unwrap();
    assert_eq!(answered_by(&r), "10.0.0.1:20880");
    assert!(
        t.destroyed.load(Ordering::SeqCst),
        "destroyed once the call finished"
    );
    // New calls go to the new provider.
    let r = bounded(invoker.invoke(inv("m"))).await.unwrap();
    assert_eq!(answered_by(&r), "10.0.0.2:20880");
}

#[tokio::test]
async fn consumer_protocol_filter() {
    let ctx = ClusterContext::default();
    let consumer = Url::parse("consumer://10.0.0.99/org.demo.Greeter?protocol=tri").unwrap();
    let f = Factory::new();
    let dir = ctx.dynamic_directory(consumer, f.as_factory());
    dir.notify(urls(
        "dubbo://10.0.0.1:20880/org.demo.Greeter;tri://10.0.0.2:50051/org.demo.Greeter",
    ))
    .await;
    assert_eq!(addrs(&dir), ["10.0.0.2:50051"]);
}

#[tokio::test]
async fn concurrent_calls_during_notifications() {
    let (_, dir, ctx) = setup();
    dir.notify(urls(
        "dubbo://10.0.0.1:20880/org.demo.Greeter;dubbo://10.0.0.2:20880/org.demo.Greeter",
    ))
    .await;
    let invoker = ctx.join(dir.clone()).unwrap();
    let callers: Vec<_> = (0..4)
        .map(|_| {
            let invoker = invoker.clone();
            tokio::spawn(async move {
                for _ in 0..200 {
                    invoker.invoke(inv("m")).await.unwrap();
                }
            })
        })
        .collect();
    for i in 0..50 {
        let a = 1 + i % 3;
        dir.notify(urls(&format!(
            "dubbo://10.0.0.{a}:20880/org.demo.Greeter;dubbo://10.0.0.9:20880/org.demo.Greeter"
        )))
        .await;
    }
    for c in callers {
        bounded(c).await.unwrap();
    }
}

#[tokio::test]
async fn static_directory_from_a_url_list() {
    let ctx = ClusterContext::with_rand(Rand::seeded(6));
    let f = Factory::new();
    let consumer =
        Url::parse("consumer://10.0.0.99/org.demo.Greeter?timeout=3000&loadbalance=roundrobin")
            .unwrap();
    let dir = ctx
        .static_directory_from_urls(
            consumer.clone(),
            "dubbo://10.0.0.1:20880/org.demo.Greeter?timeout=1;dubbo://10.0.0.2:20880/org.demo.Greeter",
            f.as_factory(),
        )
        .await
        .unwrap();
    assert_eq!(dir.all_invokers().len(), 2);
    assert_eq!(
        rubbo_common::Invoker::url(&*f.get("10.0.0.1:20880")).get_param("timeout"),
        Some("3000")
    );
    let invoker = ctx.join(dir).unwrap();
    let a = answered_by(&bounded(invoker.invoke(inv("m"))).await.unwrap());
    let b = answered_by(&bounded(invoker.invoke(inv("m"))).await.unwrap());
    assert_ne!(a, b, "round robin alternates");
    // A provider that cannot be referred fails the whole list.
    let err = ctx
        .static_directory_from_urls(
            consumer,
            "dubbo://10.0.0.66:20880/org.demo.Greeter",
            f.as_factory(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), rubbo_common::ErrorKind::Network);
}

/// The invokers' URLs (merged with the consumer's), sorted.
fn contents(d: &DynamicDirectory) -> Vec<String> {
    let mut v: Vec<String> = d
        .all_invokers()
        .iter()
        .map(|i| i.url().to_full_string())
        .collect();
    v.sort();
    v
}

/// A sequence of joins, leaves and parameter changes (a new revision: same address,
/// other URL), applied as deltas to one directory and as whole lists to another: both
/// hold the same invokers after every step, the delta one never refers a URL it holds
/// again, and keeps the invoker of every URL that stayed.
#[tokio::test]
async fn deltas_give_what_whole_lists_give() {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    let (fd, by_delta, _) = setup();
    let (_, by_list, _) = setup();
    let empty = urls("empty://10.0.0.99/org.demo.Greeter?category=providers");
    let url = |host: usize, rev: usize| {
        Url::parse(&format!(
            "dubbo://10.1.0.{host}:20880/org.demo.Greeter?revision={rev}"
        ))
        .unwrap()
    };
    let mut rng = StdRng::seed_from_u64(15);
    // host -> revision listed.
    let mut listed: std::collections::BTreeMap<usize, usize> = Default::default();
    let mut first = true;
    // A snapshot a call would hold for a while, and what it listed when taken: the
    // directory cannot reuse it, and it never changes under the call.
    let mut held: Vec<(Arc<Vec<BoxInvoker>>, Vec<String>)> = Vec::new();
    let listing =
        |l: &[BoxInvoker]| -> Vec<String> { l.iter().map(|i| i.url().to_full_string()).collect() };
    for step in 0..400 {
        for (snapshot, listed_then) in &held {
            assert_eq!(
                &listing(snapshot),
                listed_then,
                "step {step}: a held snapshot changed"
            );
        }
        if step % 3 == 0 {
            held.clear();
            let snapshot = by_delta.all_invokers();
            let listed_then = listing(&snapshot);
            held.push((snapshot, listed_then));
        }
        let previous: Vec<Url> = listed.iter().map(|(h, r)| url(*h, *r)).collect();
        let (mut added, mut removed) = (Vec::new(), Vec::new());
        for _ in 0..rng.random_range(1..4) {
            let host = rng.random_range(1..40);
            match listed.get(&host).copied() {
                Some(rev) if rng.random_bool(0.5) => {
                    listed.remove(&host);
                    removed.push(url(host, rev));
                }
                Some(rev) => {
                    listed.insert(host, rev + 1);
                    removed.push(url(host, rev));
                    added.push(url(host, rev + 1));
                }
                None => {
                    listed.insert(host, 0);
                    added.push(url(host, 0));
                }
            }
        }
        if step % 50 == 49 {
            // Every provider leaves.
            removed.extend(listed.iter().map(|(h, r)| url(*h, *r)));
            listed.clear();
        }
        // One host touched twice in a step: a URL it added and removed is not added
        // (a URL removed and added again stays, as a delta may say).
        let whole: Vec<Url> = listed.iter().map(|(h, r)| url(*h, *r)).collect();
        added.retain(|u| whole.contains(u));
        let before: HashMap<String, BoxInvoker> = by_delta
            .all_invokers()
            .iter()
            .map(|i| (i.url().address(), i.clone()))
            .collect();
        let refers = fd.refers.load(Ordering::SeqCst);
        if whole.is_empty() {
            // As the registry does: a list left empty is `empty://`.
            by_delta.notify(empty.clone()).await;
            by_list.notify(empty.clone()).await;
        } else if first {
            by_delta.notify(whole.clone()).await;
            by_list.notify(whole.clone()).await;
            first = false;
        } else {
            let fresh = added.iter().filter(|u| !previous.contains(u)).count();
            by_delta.notify_delta(added, removed).await;
            by_list.notify(whole.clone()).await;
            assert_eq!(
                fd.refers.load(Ordering::SeqCst) - refers,
                fresh,
                "step {step}: only what was added is referred"
            );
        }
        assert_eq!(contents(&by_delta), contents(&by_list), "step {step}");
        assert_eq!(by_delta.all_invokers().len(), whole.len(), "step {step}");
        for i in by_delta.all_invokers().iter() {
            if let Some(old) = before.get(&i.url().address()) {
                if old.url().get_param("revision") == i.url().get_param("revision") {
                    assert!(
                        Arc::ptr_eq(old, i),
                        "step {step}: an unchanged provider kept"
                    );
                }
            }
        }
    }
}

/// A delta refers what it adds, tries failed refers again at the next delta, and never
/// leaves the directory without invokers: a delta removing the last ones keeps them
/// (as a list giving no invoker does) until others come.
#[tokio::test]
async fn deltas_retry_failed_refers_and_never_empty_the_directory() {
    let (f, dir, _) = setup();
    let u = |s: &str| urls(s).remove(0);
    dir.notify(urls("dubbo://10.0.0.1:20880/org.demo.Greeter"))
        .await;
    let bad = u("dubbo://10.0.0.66:20880/org.demo.Greeter");
    dir.notify_delta(vec![bad.clone()], vec![]).await;
    assert_eq!(addrs(&dir), ["10.0.0.1:20880"]);
    let refers = f.refers.load(Ordering::SeqCst);
    dir.notify_delta(vec![u("dubbo://10.0.0.2:20880/org.demo.Greeter")], vec![])
        .await;
    assert_eq!(addrs(&dir), ["10.0.0.1:20880", "10.0.0.2:20880"]);
    assert_eq!(
        f.refers.load(Ordering::SeqCst) - refers,
        2,
        "the failed one is tried again"
    );
    // The failed one leaves: no longer tried.
    dir.notify_delta(vec![], vec![bad]).await;
    let refers = f.refers.load(Ordering::SeqCst);
    // Removing every provider by a delta keeps them.
    dir.notify_delta(
        vec![],
        vec![
            u("dubbo://10.0.0.1:20880/org.demo.Greeter"),
            u("dubbo://10.0.0.2:20880/org.demo.Greeter"),
        ],
    )
    .await;
    assert_eq!(addrs(&dir), ["10.0.0.1:20880", "10.0.0.2:20880"]);
    assert!(!f.get("10.0.0.1:20880").destroyed.load(Ordering::SeqCst));
    assert_eq!(f.refers.load(Ordering::SeqCst), refers);
    // Another provider comes: the kept ones go.
    dir.notify_delta(vec![u("dubbo://10.0.0.3:20880/org.demo.Greeter")], vec![])
        .await;
    assert_eq!(addrs(&dir), ["10.0.0.3:20880"]);
    assert!(f.get("10.0.0.1:20880").destroyed.load(Ordering::SeqCst));
    // Not a provider URL, another protocol than accepted: skipped as in a list.
    dir.notify_delta(
        vec![u("override://0.0.0.0/org.demo.Greeter?timeout=1")],
        vec![],
    )
    .await;
    assert_eq!(addrs(&dir), ["10.0.0.3:20880"]);
    // empty:// still empties through notify.
    dir.notify(urls(
        "empty://10.0.0.99/org.demo.Greeter?category=providers",
    ))
    .await;
    assert!(addrs(&dir).is_empty());
    assert!(f.get("10.0.0.3:20880").destroyed.load(Ordering::SeqCst));
}
