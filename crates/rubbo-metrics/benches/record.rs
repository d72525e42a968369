//! What recording one call costs in [`rubbo_metrics::MethodStats`], the part of the
//! metrics filters that runs per call: Java's default series only, with the
//! histogram, with the sliding-window aggregates, and with both; on one thread, and
//! on two threads recording the same method at once (the contended case).
//!
//! Run with: `cargo bench -p rubbo-metrics --bench record` (`RECORD_CALLS` sets the
//! calls per case, default 2 000 000; each case is also bounded to 10 s).
//! `RECORD_CASE=0..3` runs that case alone, once, on one thread: the shape to count
//! instructions per call under callgrind (the difference between two call counts).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rubbo_common::Side;
use rubbo_metrics::{Aggregation, Ending, MethodStats, Metrics};

const CASE_BOUND: Duration = Duration::from_secs(10);

fn stats(histogram: bool, aggregation: bool) -> Arc<MethodStats> {
    let metrics = Metrics::new("bench")
        .with_histogram(histogram)
        .with_aggregation(aggregation.then(Aggregation::default));
    metrics.method(Side::Provider, "org.example.Bench", "", "1.0.0", "echo")
}

/// Records up to `calls` calls; returns the calls made and the time taken.
fn record(s: &MethodStats, calls: u64) -> (u64, Duration) {
    let start = Instant::now();
    let mut made = 0;
    while made < calls {
        // Checked every 4096 calls: the clock read stays out of the measured cost.
        if made % 4096 == 0 && start.elapsed() > CASE_BOUND {
            break;
        }
        let t0 = Instant::now();
        s.start_at(t0);
        let ending = if made % 100 == 0 {
            Ending::Business
        } else {
            Ending::Succeeded
        };
        let t1 = Instant::now();
        s.finish_at(black_box(ending), t1 - t0, t1);
        made += 1;
    }
    (made, start.elapsed())
}

fn main() {
    let calls: u64 = std::env::var("RECORD_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000_000);
    let cases = [
        ("default series", false, false),
        ("+ histogram", true, false),
        ("+ aggregation", false, true),
        ("+ histogram + aggregation", true, true),
    ];
    if let Some(case) = std::env::var("RECORD_CASE")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        let (name, histogram, aggregation) = cases[case.min(cases.len() - 1)];
        let (n, t) = record(&stats(histogram, aggregation), calls);
        println!("{name}: {n} calls in {t:?}");
        return;
    }
    println!(
        "per-call recording cost (start + finish, two clock reads included), {calls} calls per case, best of 3"
    );
    println!(
        "{:<28} {:>12} {:>16}",
        "case", "1 thread", "2 threads (each)"
    );
    for (name, histogram, aggregation) in cases {
        // The best of three runs: the machine may be shared.
        let (mut one, mut two) = (f64::MAX, f64::MAX);
        for _ in 0..3 {
            let s = stats(histogram, aggregation);
            let (n, t) = record(&s, calls);
            one = one.min(t.as_nanos() as f64 / n as f64);
            let s2 = stats(histogram, aggregation);
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let s2 = s2.clone();
                    std::thread::spawn(move || record(&s2, calls))
                })
                .collect();
            let each: f64 = threads
                .into_iter()
                .map(|h| {
                    let (n, t) = h.join().expect("bench thread");
                    t.as_nanos() as f64 / n as f64
                })
                .sum::<f64>()
                / 2.0;
            two = two.min(each);
        }
        println!("{name:<28} {one:>9.1} ns {two:>13.1} ns");
    }
}
