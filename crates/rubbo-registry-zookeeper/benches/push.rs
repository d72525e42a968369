//! A push of 20,000 providers where one changed: the cost of `ChildCache::update`.
//! Run with `cargo bench -p rubbo-registry-zookeeper --bench push`.

use std::time::{Duration, Instant};

use rubbo_common::Url;
use rubbo_registry_zookeeper::{ChildCache, paths};

const N: usize = 20_000;

fn node(i: usize) -> String {
    paths::node_name(
        &Url::parse(&format!(
            "dubbo://10.{}.{}.{}:20880/org.apache.dubbo.demo.DemoService?anyhost=true&application=demo-provider&deprecated=false&dubbo=2.0.2&dynamic=true&generic=false&interface=org.apache.dubbo.demo.DemoService&methods=sayHello,sayHelloAsync&pid=1234&prefer.serialization=hessian2,fastjson2&release=3.3.1&service-name-mapping=true&side=provider&timestamp=1700000000000",
            i / 65536,
            (i / 256) % 256,
            i % 256
        ))
        .expect("url"),
    )
}

fn main() {
    let sub = Url::parse("consumer://10.0.0.9/org.apache.dubbo.demo.DemoService?interface=org.apache.dubbo.demo.DemoService&category=providers").expect("url");
    let names: Vec<String> = (0..N).map(node).collect();
    let mut cache = ChildCache::new(sub, "providers");
    let t = Instant::now();
    let first = cache.update(names.clone());
    println!(
        "initial push of {N}: {:?} ({} urls)",
        t.elapsed(),
        first.urls.len()
    );

    let rounds = 100;
    let mut times = Vec::with_capacity(rounds);
    let mut frees = Vec::with_capacity(rounds);
    for r in 0..rounds {
        // One provider replaced by another; the list itself is built outside the timing,
        // as the ZooKeeper client hands it over.
        let mut next = names.clone();
        next[r % N] = node(N + r);
        let t = Instant::now();
        let up = cache.update_names(&next);
        let e = t.elapsed();
        // The watch frees the names after delivering the list.
        drop(next);
        frees.push(t.elapsed() - e);
        assert_eq!((up.added, up.urls.len()), (1, N));
        times.push(e);
        drop(up);
        // Back to the original list for the next round.
        cache.update(names.clone());
    }
    report(
        "push of {N} with one change, to the list to deliver",
        &mut times,
    );
    report("then freeing the {N} names", &mut frees);

    // The same children in another order (ZooKeeper's order changes when its set of
    // children is resized): nothing lines up, every name is looked up.
    let mut shuffled = Vec::with_capacity(rounds);
    for r in 0..20 {
        let mut next = names.clone();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ r;
        for i in (1..N).rev() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            next.swap(i, (seed % (i as u64 + 1)) as usize);
        }
        let t = Instant::now();
        let up = cache.update_names(&next);
        shuffled.push(t.elapsed());
        assert!(!up.changed);
    }
    report("push of the same {N} in a shuffled order", &mut shuffled);
}

fn report(what: &str, times: &mut [Duration]) {
    times.sort();
    let n = times.len();
    let total: Duration = times.iter().sum();
    println!(
        "{} over {n} rounds: min {:?}, median {:?}, mean {:?}, max {:?}",
        what.replace("{N}", &N.to_string()),
        times[0],
        times[n / 2],
        total / n as u32,
        times[n - 1]
    );
}
