//! Hessian vs serde_json on the interop `User` and a list of 1,000 users.
//!
//! Decoding runs on one thread, so after the first iteration the class
//! definitions come from the per-thread class cache, as on a long-lived
//! connection (the first stream of a thread reads them in full once).
//! On a busy machine, compare with `tests/probe.rs` (callgrind instruction
//! counts, and a best-of-batches timer that interleaves hessian and json).
//!
//! Run with: `cargo bench -p rubbo-hessian2 --bench codec -- --warm-up-time 1 --measurement-time 3`
#![allow(missing_docs)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rubbo_hessian2::{Decoder, Encoder, from_slice};
use support::{User, user};

fn bench(c: &mut Criterion) {
    let one = user(1);
    let many: Vec<User> = (0..1000).map(user).collect();

    for (name, n) in [("user", 1usize), ("users_1000", 1000)] {
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Elements(n as u64));
        let hessian = if n == 1 {
            rubbo_hessian2::to_vec(&one)
        } else {
            rubbo_hessian2::to_vec(&many)
        }
        .expect("hessian");
        let json = if n == 1 {
            serde_json::to_vec(&one)
        } else {
            serde_json::to_vec(&many)
        }
        .expect("json");

        let mut enc = Encoder::new(Vec::with_capacity(hessian.len() * 2));
        g.bench_function("hessian_encode", |b| {
            b.iter(|| {
                enc.get_mut().clear();
                enc.reset();
                if n == 1 {
                    enc.write(black_box(&one))
                } else {
                    enc.write(black_box(&many))
                }
                .expect("encode");
                black_box(enc.get_ref().len())
            })
        });
        let mut out = Vec::with_capacity(json.len() * 2);
        g.bench_function("json_encode", |b| {
            b.iter(|| {
                out.clear();
                if n == 1 {
                    serde_json::to_writer(&mut out, black_box(&one))
                } else {
                    serde_json::to_writer(&mut out, black_box(&many))
                }
                .expect("encode");
                black_box(out.len())
            })
        });
        g.bench_function("hessian_decode", |b| {
            b.iter(|| {
                if n == 1 {
                    black_box(from_slice::<User>(black_box(&hessian)).expect("decode"));
                } else {
                    black_box(from_slice::<Vec<User>>(black_box(&hessian)).expect("decode"));
                }
            })
        });
        g.bench_function("json_decode", |b| {
            b.iter(|| {
                if n == 1 {
                    black_box(serde_json::from_slice::<User>(black_box(&json)).expect("decode"));
                } else {
                    black_box(
                        serde_json::from_slice::<Vec<User>>(black_box(&json)).expect("decode"),
                    );
                }
            })
        });
        g.bench_function("hessian_decode_value", |b| {
            b.iter(|| {
                black_box(
                    Decoder::new(black_box(&hessian))
                        .read_value()
                        .expect("decode"),
                )
            })
        });
        g.bench_function("hessian_skip", |b| {
            b.iter(|| {
                Decoder::new(black_box(&hessian))
                    .skip_value()
                    .expect("skip")
            })
        });
        g.finish();
        println!(
            "{name}: hessian {} bytes, json {} bytes",
            hessian.len(),
            json.len()
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
