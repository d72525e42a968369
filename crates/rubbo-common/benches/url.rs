//! URL parse / format / lookup throughput, and the memory of 100,000 provider URLs that
//! differ only in host and port (bytes per URL, counted by a counting allocator).
//!
//! Run with `cargo bench -p rubbo-common --bench url`.
#![allow(missing_docs)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use rubbo_common::Url;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: delegates every call to the system allocator, only counting live bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A realistic Java 3.3 provider URL, about 1 KB of text.
fn provider_url(i: u32) -> String {
    format!(
        "dubbo://10.{}.{}.{}:{}/org.apache.dubbo.demo.DemoService?anyhost=true&application=demo-provider\
&background=false&delay=-1&deprecated=false&dubbo=2.0.2&dynamic=true&executor-management-mode=isolation\
&file-cache=true&generic=false&interface=org.apache.dubbo.demo.DemoService&ipv6=fd00:6cd0:b3ec:f5d2:0:0:0:1\
&methods=sayHello,sayHelloAsync,sayHelloStream,sayHelloServerStream,getUser,listUsers,updateUser,deleteUser\
&pid=48271&prefer.serialization=hessian2,fastjson2&release=3.3.1&retries=2&revision=1.0.0&service-name-mapping=true\
&side=provider&threads=200&timeout=3000&timestamp=1700000000000&token=false&version=1.0.0&weight=100\
&sayHello.timeout=500&sayHello.retries=0&getUser.loadbalance=consistenthash&listUsers.timeout=10000\
&register-mode=all&qos.enable=false&metadata-type=local&owner=platform-team&organization=rubbo\
&environment=product&validation=false&serialization=hessian2&payload=8388608&heartbeat=60000\
&connections=1&accesslog=false&warmup=600000&cluster=failover&loadbalance=random",
        i / 65536,
        (i / 256) % 256,
        i % 256,
        20000 + i % 10000
    )
}

fn report_memory() {
    const N: u32 = 100_000;
    let texts: Vec<String> = (0..N).map(provider_url).collect();
    let text_bytes: usize = texts.iter().map(String::len).sum();
    // Warm the shared tables with one URL so the per-URL figure excludes them.
    let first = Url::parse(&texts[0]).expect("valid");
    let before = LIVE.load(Ordering::Relaxed);
    let urls: Vec<Url> = texts[1..]
        .iter()
        .map(|t| Url::parse(t).expect("valid"))
        .collect();
    let after = LIVE.load(Ordering::Relaxed);
    let per_url = (after - before) as f64 / f64::from(N - 1);
    println!(
        "url memory: {per_url:.1} bytes per provider URL resident ({} URLs, {:.0} bytes of text each, Vec slot of {} bytes included)",
        N,
        text_bytes as f64 / f64::from(N),
        std::mem::size_of::<Url>()
    );
    black_box((first, urls));
}

fn benches(c: &mut Criterion) {
    report_memory();
    let text = provider_url(7);
    let url = Url::parse(&text).expect("valid");
    c.bench_function("url/parse 1KB provider URL", |b| {
        b.iter(|| Url::parse(black_box(&text)))
    });
    let encoded = rubbo_common::url::encode(&text);
    c.bench_function("url/parse_encoded 1KB node name", |b| {
        b.iter(|| Url::parse_encoded(black_box(&encoded)))
    });
    c.bench_function("url/format to_full_string", |b| {
        b.iter(|| black_box(&url).to_full_string())
    });
    c.bench_function("url/get_param", |b| {
        b.iter(|| black_box(&url).get_param(black_box("timeout")))
    });
    c.bench_function("url/get_method_param (hit)", |b| {
        b.iter(|| black_box(&url).get_method_param(black_box("sayHello"), black_box("timeout")))
    });
    c.bench_function("url/param::<Timeout> method level", |b| {
        b.iter(|| {
            black_box(&url).method_param::<rubbo_common::keys::Timeout>(black_box("listUsers"))
        })
    });
    c.bench_function("url/clone", |b| b.iter(|| black_box(&url).clone()));
}

criterion_group! {
    name = url;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = benches
}
criterion_main!(url);
