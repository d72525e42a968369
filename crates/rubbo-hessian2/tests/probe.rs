//! Fixed workloads for counting instructions with callgrind (stable on a
//! shared machine, unlike wall time). Each `#[inline(never)]` function is one
//! decode, so callgrind can count just it:
//!
//! ```text
//! cargo test --release -p rubbo-hessian2 --test probe --no-run
//! PROBE_ITERS=1000 valgrind --tool=callgrind --toggle-collect='probe::hessian_one' \
//!     target/release/deps/probe-<hash> --exact probe_user --test-threads=1
//! ```
//!
//! As ordinary tests they decode once and check the result.

mod support;

use std::hint::black_box;

use rubbo_hessian2::from_slice;
use support::{User, user};

fn iters() -> usize {
    std::env::var("PROBE_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

#[inline(never)]
fn hessian_one(bytes: &[u8]) -> User {
    from_slice::<User>(black_box(bytes)).expect("decode")
}

#[inline(never)]
fn json_one(bytes: &[u8]) -> User {
    serde_json::from_slice::<User>(black_box(bytes)).expect("decode")
}

#[inline(never)]
fn hessian_many(bytes: &[u8]) -> Vec<User> {
    from_slice::<Vec<User>>(black_box(bytes)).expect("decode")
}

#[inline(never)]
fn json_many(bytes: &[u8]) -> Vec<User> {
    serde_json::from_slice::<Vec<User>>(black_box(bytes)).expect("decode")
}

#[test]
fn probe_user() {
    let one = user(1);
    let h = rubbo_hessian2::to_vec(&one).expect("hessian");
    let j = serde_json::to_vec(&one).expect("json");
    for _ in 0..iters() {
        assert_eq!(black_box(hessian_one(&h)), one);
        assert_eq!(black_box(json_one(&j)), one);
    }
}

#[test]
fn probe_users_1000() {
    let many: Vec<User> = (0..1000).map(user).collect();
    let h = rubbo_hessian2::to_vec(&many).expect("hessian");
    let j = serde_json::to_vec(&many).expect("json");
    for _ in 0..iters().div_ceil(100) {
        assert_eq!(black_box(hessian_many(&h)), many);
        assert_eq!(black_box(json_many(&j)), many);
    }
}

/// With `PROBE_TIME=1`: the best of 200 batches of each decode (one User),
/// and of 30 decodes (1,000 Users), interleaved (the minimum is what a busy
/// shared machine disturbs least).
#[test]
fn probe_time() {
    if std::env::var("PROBE_TIME").is_err() {
        return;
    }
    let one = user(1);
    let h = rubbo_hessian2::to_vec(&one).expect("hessian");
    let j = serde_json::to_vec(&one).expect("json");
    let (mut bh, mut bj) = (f64::MAX, f64::MAX);
    for _ in 0..200 {
        let t = std::time::Instant::now();
        for _ in 0..2000 {
            black_box(hessian_one(&h));
        }
        bh = bh.min(t.elapsed().as_secs_f64() / 2000.0);
        let t = std::time::Instant::now();
        for _ in 0..2000 {
            black_box(json_one(&j));
        }
        bj = bj.min(t.elapsed().as_secs_f64() / 2000.0);
    }
    eprintln!(
        "one User decode: hessian {:.0} ns, json {:.0} ns, ratio {:.2}x",
        bh * 1e9,
        bj * 1e9,
        bj / bh
    );
    let many: Vec<User> = (0..1000).map(user).collect();
    let h = rubbo_hessian2::to_vec(&many).expect("hessian");
    let j = serde_json::to_vec(&many).expect("json");
    let (mut bh, mut bj) = (f64::MAX, f64::MAX);
    for _ in 0..30 {
        let t = std::time::Instant::now();
        black_box(hessian_many(&h));
        bh = bh.min(t.elapsed().as_secs_f64());
        let t = std::time::Instant::now();
        black_box(json_many(&j));
        bj = bj.min(t.elapsed().as_secs_f64());
    }
    eprintln!(
        "1,000 Users decode: hessian {:.0} us, json {:.0} us, ratio {:.2}x",
        bh * 1e6,
        bj * 1e6,
        bj / bh
    );
}
