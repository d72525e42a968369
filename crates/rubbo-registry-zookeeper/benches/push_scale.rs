//! Address push at scale: one consumer subscribed to many interfaces with many providers
//! each (by default 110 x 20,000 = 2,200,000 provider URLs of about 1 KB of text), then
//! churn (1% of one interface's providers replaced per push, 100 pushes), without a
//! ZooKeeper server: [`ChildCache::update`] gets the child-name lists directly, which is
//! exactly what a watch delivers.
//!
//! Three consumers run, each in its own child process (so resident memory is not mixed):
//! - `rubbo`: one `ChildCache` per interface, keeping the last delivered list, fed the
//!   whole child list on every push ([`ChildCache::update`]): what a one-shot child
//!   watch gives (ZooKeeper before 3.6, `zk.watch=oneshot`), and what every consumer
//!   does at start and after a reconnection;
//! - `events`: the same caches, fed only the children created and deleted
//!   ([`ChildCache::apply`]): what a persistent recursive watch gives (ZooKeeper 3.6+,
//!   the default); its initial push is the full list, as in `rubbo`;
//! - `naive`: every name of a push parsed with `Url::parse_encoded` into a fresh list that
//!   replaces the last one (no cache, no diff).
//!
//! Reported: heap bytes per provider URL (live bytes counted by the allocator below) and
//! resident bytes per URL (`/proc/self/statm`), after the initial push and after the
//! churn; time and allocations per push (a push of one interface where one provider
//! changed, and a 1% churn push).
//!
//! A push is timed as a ZooKeeper watch sees it: from the list of names the client
//! returned (a fresh `Vec<String>`, built before the clock starts) until the listener
//! holds the new list. Two frees can wait until after the delivery: the watch's names
//! (the watch frees them after notifying) and the list the new one replaced (the
//! listener's business). Their time is reported on its own, and in the total.
//!
//! Run with `cargo bench -p rubbo-registry-zookeeper --bench push_scale`.
//! Scale: `PUSH_SCALE_INTERFACES` (110), `PUSH_SCALE_PROVIDERS` (20000),
//! `PUSH_SCALE_PUSHES` (100), `PUSH_SCALE_MODES` (`rubbo,events,naive`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::process::Command;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rubbo_common::Url;
use rubbo_common::url::encode;
use rubbo_registry_zookeeper::ChildCache;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is delegated unchanged to the system allocator; the wrapper only
// counts calls and live bytes, so it upholds exactly the system allocator's contract.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Clone, Copy)]
struct Scale {
    interfaces: usize,
    providers: usize,
    pushes: usize,
}

impl Scale {
    fn from_env() -> Scale {
        Scale {
            interfaces: env_usize("PUSH_SCALE_INTERFACES", 110).max(1),
            providers: env_usize("PUSH_SCALE_PROVIDERS", 20_000).max(100),
            pushes: env_usize("PUSH_SCALE_PUSHES", 100),
        }
    }
    fn total(&self) -> usize {
        self.interfaces * self.providers
    }
}

fn interface(k: usize) -> String {
    format!("com.example.platform.service{}.OrderQueryService{k}", k % 7)
}

/// The node name of provider instance `id` of interface `k`: a Java 3.3-like provider
/// URL (about 1 KB encoded) where host, port, pid and timestamp differ per provider.
fn node(k: usize, id: u32) -> String {
    let iface = interface(k);
    let url = format!(
        "dubbo://10.{}.{}.{}:{}/{iface}?anyhost=true&application=order-query-provider\
&background=false&cluster=failover&connections=1&delay=-1&deprecated=false&dubbo=2.0.2&dynamic=true\
&environment=product&executor-management-mode=isolation&file-cache=true&generic=false\
&getOrder.loadbalance=consistenthash&getOrder.timeout=500&heartbeat=60000&interface={iface}\
&listOrders.timeout=10000&loadbalance=random&metadata-type=local\
&methods=cancelOrder,getOrder,getOrderAsync,listOrders,queryStatus,streamOrders,updateOrder\
&organization=rubbo&owner=platform-team&payload=8388608&pid={}&prefer.serialization=hessian2,fastjson2\
&qos.enable=false&register-mode=all&release=3.3.1&retries=2&revision=1.0.0&serialization=hessian2\
&service-name-mapping=true&side=provider&threads=200&timeout=3000&timestamp={}&token=false\
&validation=false&version=1.0.0&warmup=600000&weight=100",
        (id >> 16) & 0xff,
        (id >> 8) & 0xff,
        id & 0xff,
        20880 + id % 4,
        1000 + id % 4_000_000,
        1_700_000_000_000u64 + u64::from(id) * 7919 % 86_400_000,
    );
    encode(&url)
}

fn names(k: usize, ids: &[u32]) -> Vec<String> {
    ids.iter().map(|&id| node(k, id)).collect()
}

/// The resident set size in bytes, from `/proc/self/statm` (0 where unavailable).
fn rss() -> usize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<usize>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

fn allocs() -> usize {
    ALLOCS.load(Ordering::Relaxed)
}

/// One consumer implementation under test.
trait Consumer {
    /// Delivers the list for interface `k` from `names`; returns its length and the
    /// list it replaced (freed by the caller after the delivery).
    fn push(&mut self, k: usize, names: &[String]) -> (usize, Vec<Url>);

    /// Delivers the list for interface `k` after the children `created` and `deleted`
    /// (a persistent watch's events); `None` if this consumer cannot.
    fn apply(
        &mut self,
        _k: usize,
        _created: &[String],
        _deleted: &[String],
    ) -> Option<(usize, Vec<Url>)> {
        None
    }
}

struct Rubbo {
    caches: Vec<ChildCache>,
    delivered: Vec<Vec<Url>>,
}

impl Rubbo {
    fn new(scale: Scale) -> Rubbo {
        Rubbo {
            caches: (0..scale.interfaces)
                .map(|k| {
                    let iface = interface(k);
                    let sub = Url::parse(&format!(
                        "consumer://10.9.9.9/{iface}?interface={iface}&version=1.0.0&category=providers&side=consumer"
                    ))
                    .expect("subscription url");
                    ChildCache::new(sub, "providers")
                })
                .collect(),
            delivered: vec![Vec::new(); scale.interfaces],
        }
    }
}

impl Consumer for Rubbo {
    fn push(&mut self, k: usize, names: &[String]) -> (usize, Vec<Url>) {
        let up = self.caches[k].update_names(names);
        self.deliver(k, up)
    }

    fn apply(
        &mut self,
        k: usize,
        created: &[String],
        deleted: &[String],
    ) -> Option<(usize, Vec<Url>)> {
        let up = self.caches[k].apply(created, deleted);
        Some(self.deliver(k, up))
    }
}

impl Rubbo {
    fn deliver(
        &mut self,
        k: usize,
        up: rubbo_registry_zookeeper::ChildUpdate,
    ) -> (usize, Vec<Url>) {
        let n = up.urls.len();
        if up.changed {
            (n, std::mem::replace(&mut self.delivered[k], up.urls))
        } else {
            (n, Vec::new())
        }
    }
}

struct Naive {
    delivered: Vec<Vec<Url>>,
}

impl Consumer for Naive {
    fn push(&mut self, k: usize, names: &[String]) -> (usize, Vec<Url>) {
        let urls: Vec<Url> = names
            .iter()
            .filter_map(|n| Url::parse_encoded(n).ok())
            .collect();
        (urls.len(), std::mem::replace(&mut self.delivered[k], urls))
    }
}

struct PushStats {
    /// Until the listener holds the new list.
    times: Vec<Duration>,
    /// Then freeing the names and the list the new one replaced.
    frees: Vec<Duration>,
    allocs: Vec<usize>,
}

fn median<T: Ord + Copy + Default>(v: &[T]) -> T {
    let mut v = v.to_vec();
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

impl PushStats {
    fn new() -> PushStats {
        PushStats {
            times: Vec::new(),
            frees: Vec::new(),
            allocs: Vec::new(),
        }
    }
    /// One push of `names` to `consumer`: delivery, then freeing the names and the
    /// previous list.
    fn push(&mut self, consumer: &mut dyn Consumer, k: usize, names: Vec<String>) -> usize {
        let a = allocs();
        let t = Instant::now();
        let (n, previous) = consumer.push(k, &names);
        let delivered = t.elapsed();
        drop(names);
        drop(previous);
        self.frees.push(t.elapsed() - delivered);
        self.times.push(delivered);
        self.allocs.push(allocs() - a);
        n
    }
    /// One push of the children `created` and `deleted` (the event path).
    fn apply(
        &mut self,
        consumer: &mut dyn Consumer,
        k: usize,
        created: Vec<String>,
        deleted: Vec<String>,
    ) -> usize {
        let a = allocs();
        let t = Instant::now();
        let (n, previous) = consumer
            .apply(k, &created, &deleted)
            .expect("this consumer takes events");
        let delivered = t.elapsed();
        drop((created, deleted));
        drop(previous);
        self.frees.push(t.elapsed() - delivered);
        self.times.push(delivered);
        self.allocs.push(allocs() - a);
        n
    }
    /// Medians: time to delivery, allocations, time with the freeing.
    fn median(&self) -> (Duration, usize, Duration) {
        let totals: Vec<Duration> = self
            .times
            .iter()
            .zip(&self.frees)
            .map(|(t, f)| *t + *f)
            .collect();
        (median(&self.times), median(&self.allocs), median(&totals))
    }
}

/// Runs one consumer in this process; prints one `result` line.
fn run(mode: &str, scale: Scale) {
    let n = scale.providers;
    let churn = (n / 100).max(1);
    // Provider ids per interface (bench bookkeeping, allocated before the baseline).
    let mut ids: Vec<Vec<u32>> = (0..scale.interfaces)
        .map(|k| {
            (0..n)
                .map(|j| u32::try_from(k * n + j).expect("id"))
                .collect()
        })
        .collect();
    let mut next_id = u32::try_from(scale.total()).expect("id");
    let events = mode == "events";
    let mut consumer: Box<dyn Consumer> = match mode {
        "naive" => Box::new(Naive {
            delivered: vec![Vec::new(); scale.interfaces],
        }),
        _ => Box::new(Rubbo::new(scale)),
    };
    // Warm the shared tables (interned strings, parameter sets) and the name buffers
    // with one interface that is then dropped again.
    {
        let mut warm = Rubbo::new(Scale {
            interfaces: 1,
            ..scale
        });
        drop(warm.push(0, &names(0, &ids[0][..100])));
    }
    let (live0, rss0) = (live(), rss());
    let started = Instant::now();
    let mut initial = PushStats::new();
    for (k, list) in ids.iter().enumerate() {
        let names = names(k, list);
        let got = initial.push(&mut *consumer, k, names);
        assert_eq!(got, n, "interface {k}");
    }
    let initial_wall = started.elapsed();
    let (live1, rss1) = (live(), rss());

    // Churn: push p replaces 1% of interface p % interfaces.
    let mut churned = PushStats::new();
    for p in 0..scale.pushes {
        let k = p % scale.interfaces;
        let at = (p / scale.interfaces * churn) % n;
        let (mut created, mut deleted) = (Vec::new(), Vec::new());
        for slot in ids[k].iter_mut().skip(at).take(churn) {
            deleted.push(*slot);
            created.push(next_id);
            *slot = next_id;
            next_id += 1;
        }
        let got = if events {
            churned.apply(&mut *consumer, k, names(k, &created), names(k, &deleted))
        } else {
            churned.push(&mut *consumer, k, names(k, &ids[k]))
        };
        assert_eq!(got, n);
    }
    let (live2, rss2) = (live(), rss());

    // One provider of one interface replaced per push.
    let rounds = if mode == "naive" { 5 } else { 50 };
    let mut one = PushStats::new();
    for r in 0..rounds {
        let slot = (r * 7919) % n;
        let gone = ids[0][slot];
        ids[0][slot] = next_id;
        next_id += 1;
        let got = if events {
            one.apply(
                &mut *consumer,
                0,
                names(0, &[ids[0][slot]]),
                names(0, &[gone]),
            )
        } else {
            one.push(&mut *consumer, 0, names(0, &ids[0]))
        };
        assert_eq!(got, n);
    }
    // And a push where nothing changed (for events: a child created that is known).
    let mut same = PushStats::new();
    for _ in 0..rounds {
        if events {
            same.apply(&mut *consumer, 0, names(0, &ids[0][..1]), Vec::new());
        } else {
            same.push(&mut *consumer, 0, names(0, &ids[0]));
        }
    }
    let total = scale.total() as f64;
    let per = |bytes: isize| bytes as f64 / total;
    let (one_t, one_a, one_total) = one.median();
    let (churn_t, churn_a, _) = churned.median();
    let (same_t, same_a, _) = same.median();
    let (init_t, init_a, _) = initial.median();
    let free_t = median(&one.frees);
    println!(
        "result mode={mode} urls={} heap_initial={:.1} rss_initial={:.1} heap_churn={:.1} rss_churn={:.1} \
init_push_ms={:.2} init_push_allocs={init_a} initial_wall_s={:.1} one_ms={:.3} one_allocs={one_a} \
one_total_ms={:.3} free_ms={:.3} churn_ms={:.3} churn_allocs={churn_a} same_ms={:.3} same_allocs={same_a}",
        scale.total(),
        per(live1 - live0),
        per(rss1 as isize - rss0 as isize),
        per(live2 - live0),
        per(rss2 as isize - rss0 as isize),
        init_t.as_secs_f64() * 1e3,
        initial_wall.as_secs_f64(),
        one_t.as_secs_f64() * 1e3,
        one_total.as_secs_f64() * 1e3,
        free_t.as_secs_f64() * 1e3,
        churn_t.as_secs_f64() * 1e3,
        same_t.as_secs_f64() * 1e3,
    );
    black_box(consumer);
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or("-")
}

fn main() {
    let scale = Scale::from_env();
    if let Ok(mode) = std::env::var("PUSH_SCALE_ROLE") {
        run(&mode, scale);
        return;
    }
    let modes =
        std::env::var("PUSH_SCALE_MODES").unwrap_or_else(|_| "rubbo,events,naive".to_owned());
    println!(
        "push_scale: {} interfaces x {} providers = {} provider URLs, {} churn pushes of 1%, name of {} bytes",
        scale.interfaces,
        scale.providers,
        scale.total(),
        scale.pushes,
        node(0, 0).len()
    );
    let exe = std::env::current_exe().expect("current exe");
    let mut rows = Vec::new();
    for mode in modes.split(',').filter(|m| !m.is_empty()) {
        let t = Instant::now();
        let out = Command::new(&exe)
            .env("PUSH_SCALE_ROLE", mode)
            .output()
            .expect("run child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        match stdout.lines().find(|l| l.starts_with("result ")) {
            Some(line) => {
                println!("{line} (run {:.1} s)", t.elapsed().as_secs_f64());
                rows.push(line.to_owned());
            }
            None => {
                eprintln!(
                    "{mode} failed: {}\n{}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
                std::process::exit(1);
            }
        }
    }
    println!();
    println!(
        "| consumer | heap B/URL initial | RSS B/URL initial | heap B/URL after churn | RSS B/URL after churn | push, 1 of {n} replaced, to delivery | allocs | then freeing the names and the previous list | both | 1% churn push | allocs | unchanged push | initial push of {n} |",
        n = scale.providers
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for l in &rows {
        println!(
            "| {} | {} | {} | {} | {} | {} ms | {} | {} ms | {} ms | {} ms | {} | {} ms | {} ms |",
            match field(l, "mode") {
                "rubbo" => "rubbo, full list (one-shot watch; start, reconnect)",
                "events" => "rubbo, events (persistent watch)",
                other => other,
            },
            field(l, "heap_initial"),
            field(l, "rss_initial"),
            field(l, "heap_churn"),
            field(l, "rss_churn"),
            field(l, "one_ms"),
            field(l, "one_allocs"),
            field(l, "free_ms"),
            field(l, "one_total_ms"),
            field(l, "churn_ms"),
            field(l, "churn_allocs"),
            field(l, "same_ms"),
            field(l, "init_push_ms"),
        );
    }
    println!();
    println!(
        "Times are medians per push of one interface, from the list of names in hand until \
the listener holds the new list; the names and the replaced list are freed after the \
delivery (\"then freeing ...\"); \"both\" is the median of the sums. A change \
replaces providers: as many children deleted as created (events: one batch)."
    );
}
