use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rubbo_common::{BoxFuture, Url};

use super::*;
use crate::{MemoryRegistry, SharedListener, is_empty_url, subscribe_url};

fn u(s: &str) -> Url {
    Url::parse(s).unwrap()
}

/// A memory registry that can be taken down (every call fails) or made slow.
#[derive(Debug)]
struct Flaky {
    url: Url,
    mem: MemoryRegistry,
    up: AtomicBool,
    delay_ms: AtomicU64,
}

impl Flaky {
    fn new(url: Url, up: bool) -> Arc<Flaky> {
        Arc::new(Flaky {
            mem: MemoryRegistry::new(url.clone()),
            url,
            up: AtomicBool::new(up),
            delay_ms: AtomicU64::new(0),
        })
    }

    async fn gate(&self) -> RegistryResult<()> {
        let d = self.delay_ms.load(Ordering::SeqCst);
        if d > 0 {
            tokio::time::sleep(Duration::from_millis(d)).await;
        }
        if self.up.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(RegistryError::unavailable("flaky", "down"))
        }
    }
}

impl Registry for Flaky {
    fn url(&self) -> &Url {
        &self.url
    }
    fn is_available(&self) -> bool {
        self.up.load(Ordering::SeqCst)
    }
    fn register(&self, url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move {
            self.gate().await?;
            self.mem.register(url).await
        })
    }
    fn unregister(&self, url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move {
            self.gate().await?;
            self.mem.unregister(url).await
        })
    }
    fn subscribe(&self, url: Url, l: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move {
            self.gate().await?;
            self.mem.subscribe(url, l).await
        })
    }
    fn unsubscribe(&self, url: Url, l: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move {
            self.gate().await?;
            self.mem.unsubscribe(url, l).await
        })
    }
    fn lookup(&self, url: Url) -> BoxFuture<'_, RegistryResult<Vec<Url>>> {
        Box::pin(async move {
            self.gate().await?;
            self.mem.lookup(url).await
        })
    }
    fn destroy(&self) -> BoxFuture<'_, ()> {
        self.mem.destroy()
    }
}

type Seen = Arc<Mutex<Vec<Vec<Url>>>>;

fn recorder() -> (SharedListener, Seen) {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    (Arc::new(move |urls: Vec<Url>| sink.lock().push(urls)), seen)
}

async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

const IFACE: &str = "org.demo.Greeter";

fn provider() -> Url {
    u(&format!("dubbo://10.0.0.1:20880/{IFACE}?interface={IFACE}"))
}

fn consumer() -> Url {
    subscribe_url(&u(&format!(
        "consumer://10.0.0.9/{IFACE}?interface={IFACE}"
    )))
}

fn registry_url(extra: &str) -> Url {
    u(&format!(
        "flaky://h:1?retry.period=50&timeout=300&file.cache=false&{extra}"
    ))
}

#[tokio::test]
async fn failed_register_is_retried_in_the_background() {
    let flaky = Flaky::new(registry_url("check=false"), false);
    let fb = FailbackRegistry::new(flaky.clone());
    fb.register(provider()).await.unwrap();
    assert_eq!(fb.pending_retries(), 1);
    flaky.up.store(true, Ordering::SeqCst);
    wait_until("retried registration", || flaky.mem.registered().len() == 1).await;
    wait_until("no pending retries", || fb.pending_retries() == 0).await;
}

#[tokio::test]
async fn check_true_reports_the_first_failure_and_still_retries() {
    let flaky = Flaky::new(registry_url(""), false);
    let fb = FailbackRegistry::new(flaky.clone());
    let err = fb.register(provider()).await.unwrap_err();
    assert!(matches!(err, RegistryError::Unavailable { .. }), "{err}");
    let (l, _) = recorder();
    assert!(fb.subscribe(consumer(), l).await.is_err());
    flaky.up.store(true, Ordering::SeqCst);
    wait_until("retried registration", || flaky.mem.registered().len() == 1).await;
}

#[tokio::test]
async fn failed_subscribe_is_retried_and_then_notified() {
    let flaky = Flaky::new(registry_url("check=false"), false);
    let fb = FailbackRegistry::new(flaky.clone());
    let (l, seen) = recorder();
    fb.subscribe(consumer(), l).await.unwrap();
    assert!(
        seen.lock().is_empty(),
        "check=false starts with no provider"
    );
    flaky.up.store(true, Ordering::SeqCst);
    flaky.mem.register(provider()).await.unwrap();
    wait_until("notification after retry", || {
        seen.lock().iter().any(|l| l == &vec![provider()])
    })
    .await;
}

#[tokio::test]
async fn slow_registry_does_not_block_callers() {
    let flaky = Flaky::new(registry_url("check=false"), true);
    flaky.delay_ms.store(10_000, Ordering::SeqCst);
    let fb = FailbackRegistry::new(flaky.clone());
    let start = Instant::now();
    fb.register(provider()).await.unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(fb.pending_retries(), 1);
    flaky.delay_ms.store(0, Ordering::SeqCst);
    wait_until("registered after slowness", || {
        flaky.mem.registered().len() == 1
    })
    .await;
}

#[tokio::test]
async fn cache_file_feeds_a_consumer_started_during_an_outage() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("registry.cache");
    let url = u(&format!(
        "flaky://h:1?retry.period=50&timeout=300&file={}",
        file.display()
    ));
    // First run: the registry is up; the lists land in the cache file.
    {
        let flaky = Flaky::new(url.clone(), true);
        flaky.mem.register(provider()).await.unwrap();
        let fb = FailbackRegistry::new(flaky.clone());
        let (l, seen) = recorder();
        fb.subscribe(consumer(), l).await.unwrap();
        assert_eq!(seen.lock().len(), 3);
        fb.destroy().await;
    }
    assert!(file.exists());
    // Second run: the registry is down at start (check=true: the cache makes it fine).
    let flaky = Flaky::new(url, false);
    let fb = FailbackRegistry::new(flaky.clone());
    let (l, seen) = recorder();
    fb.subscribe(consumer(), l).await.unwrap();
    {
        let seen = seen.lock();
        assert!(seen.iter().any(|l| l == &vec![provider()]), "{seen:?}");
        assert!(seen.iter().any(|l| l.len() == 1 && is_empty_url(&l[0])));
    }
    assert_eq!(fb.lookup(consumer()).await.unwrap(), vec![provider()]);
    // The registry comes back: the real lists replace the cached ones.
    flaky.up.store(true, Ordering::SeqCst);
    let cached = seen.lock().len();
    wait_until("live empty provider list", || {
        seen.lock().iter().skip(cached).any(|l| {
            l.len() == 1 && is_empty_url(&l[0]) && l[0].get_param("category") == Some("providers")
        })
    })
    .await;
}

#[tokio::test]
async fn unsubscribe_and_destroy() {
    let flaky = Flaky::new(registry_url(""), true);
    let fb = FailbackRegistry::new(flaky.clone());
    let (l, seen) = recorder();
    fb.subscribe(consumer(), l.clone()).await.unwrap();
    fb.unsubscribe(consumer(), l).await.unwrap();
    flaky.mem.register(provider()).await.unwrap();
    assert_eq!(seen.lock().len(), 3);
    fb.destroy().await;
    assert!(matches!(
        fb.register(provider()).await,
        Err(RegistryError::Destroyed(_))
    ));
}

#[tokio::test]
async fn bad_input_is_reported_not_retried() {
    #[derive(Debug)]
    struct Refuses(Url);
    impl Registry for Refuses {
        fn url(&self) -> &Url {
            &self.0
        }
        fn is_available(&self) -> bool {
            true
        }
        fn register(&self, _: Url) -> BoxFuture<'_, RegistryResult<()>> {
            Box::pin(async { Err(RegistryError::Config("interface *".into())) })
        }
        fn unregister(&self, _: Url) -> BoxFuture<'_, RegistryResult<()>> {
            Box::pin(async { Ok(()) })
        }
        fn subscribe(&self, _: Url, _: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
            Box::pin(async { Err(RegistryError::Config("interface *".into())) })
        }
        fn unsubscribe(&self, _: Url, _: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
            Box::pin(async { Ok(()) })
        }
        fn lookup(&self, _: Url) -> BoxFuture<'_, RegistryResult<Vec<Url>>> {
            Box::pin(async { Ok(vec![]) })
        }
        fn destroy(&self) -> BoxFuture<'_, ()> {
            Box::pin(async {})
        }
    }
    let fb = FailbackRegistry::new(Arc::new(Refuses(registry_url("check=false"))));
    assert!(matches!(
        fb.register(provider()).await,
        Err(RegistryError::Config(_))
    ));
    let (l, _) = recorder();
    assert!(fb.subscribe(consumer(), l).await.is_err());
    assert_eq!(fb.pending_retries(), 0);
}

/// A registry that keeps the listeners it is given, for the test to notify.
#[derive(Debug)]
struct Capture {
    url: Url,
    listeners: Mutex<Vec<SharedListener>>,
}

impl Registry for Capture {
    fn url(&self) -> &Url {
        &self.url
    }
    fn is_available(&self) -> bool {
        true
    }
    fn register(&self, _url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async { Ok(()) })
    }
    fn unregister(&self, _url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async { Ok(()) })
    }
    fn subscribe(&self, _url: Url, l: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        self.listeners.lock().push(l);
        Box::pin(async { Ok(()) })
    }
    fn unsubscribe(&self, _url: Url, _l: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async { Ok(()) })
    }
    fn lookup(&self, _url: Url) -> BoxFuture<'_, RegistryResult<Vec<Url>>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn destroy(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Records whole lists and deltas apart.
#[derive(Debug, Default)]
struct DeltaRecorder {
    lists: Mutex<Vec<Vec<Url>>>,
    deltas: Mutex<Vec<UrlDelta>>,
}

impl NotifyListener for DeltaRecorder {
    fn notify(&self, urls: Vec<Url>) {
        self.lists.lock().push(urls);
    }
    fn notify_delta(&self, delta: UrlDelta, _full: &dyn Fn() -> Vec<Url>) {
        self.deltas.lock().push(delta);
    }
}

#[tokio::test]
async fn deltas_are_forwarded_and_the_cache_keeps_the_whole_list() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("registry.cache");
    let inner = Arc::new(Capture {
        url: u(&format!("capture://h:1?file={}", file.display())),
        listeners: Mutex::default(),
    });
    let fb = FailbackRegistry::new(inner.clone());
    let user = Arc::new(DeltaRecorder::default());
    fb.subscribe(consumer(), user.clone()).await.unwrap();
    let wrapped = inner.listeners.lock()[0].clone();
    let p1 = provider();
    let p2 = u(&format!("dubbo://10.0.0.2:20880/{IFACE}?interface={IFACE}"));
    wrapped.notify(vec![p1.clone()]);
    let delta = UrlDelta {
        added: vec![p2.clone()],
        removed: vec![],
    };
    let (a, b) = (p1.clone(), p2.clone());
    wrapped.notify_delta(delta.clone(), &move || vec![a.clone(), b.clone()]);
    assert_eq!(*user.lists.lock(), vec![vec![p1.clone()]]);
    assert_eq!(
        *user.deltas.lock(),
        vec![delta],
        "the delta itself reaches the user"
    );
    let mut cached = fb.cache().unwrap().get(&consumer());
    cached.sort_by_key(Url::to_full_string);
    assert_eq!(
        cached,
        vec![p1, p2],
        "the cache holds the list after the delta"
    );
    // A listener without deltas gets the whole list through the wrapper.
    let (plain, seen) = recorder();
    fb.subscribe(consumer().with_param("x", "1"), plain)
        .await
        .unwrap();
    let wrapped = inner.listeners.lock()[1].clone();
    let p3 = u(&format!("dubbo://10.0.0.3:20880/{IFACE}?interface={IFACE}"));
    let full = p3.clone();
    wrapped.notify_delta(
        UrlDelta {
            added: vec![p3],
            removed: vec![],
        },
        &move || vec![full.clone()],
    );
    assert_eq!(seen.lock().len(), 1);
    assert_eq!(seen.lock()[0][0].address(), "10.0.0.3:20880");
}
