//! Heap allocations per round trip (client and server in this process), counted by a
//! counting global allocator. Guards the hot path against accidental per-request
//! `String`/`Vec` allocations.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use futures::future::join_all;

use rubbo_remoting::*;
use support::*;

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: delegates every call to the system allocator, only counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allocations_per_round_trip_stay_small() {
    let echo = handler_fn(|req: Request, _c: ConnectionInfo| async move {
        Some(Response::ok(req.id, req.serialization, req.body))
    });
    let server = Server::bind("127.0.0.1:0", ServerConfig::default(), echo)
        .await
        .unwrap();
    let client = connect(&server).await;
    let body = Bytes::from_static(b"static body: no allocation for it");
    // warm up buffers, maps and the runtime
    for _ in 0..200 {
        client.request(body.clone(), HESSIAN2, LONG).await.unwrap();
    }
    const N: usize = 2000;
    let before = ALLOCS.load(Ordering::Relaxed);
    for _ in 0..N {
        client.request(body.clone(), HESSIAN2, LONG).await.unwrap();
    }
    let sequential = (ALLOCS.load(Ordering::Relaxed) - before) as f64 / N as f64;

    let before = ALLOCS.load(Ordering::Relaxed);
    for _ in 0..(N / 500) {
        let calls = (0..500).map(|_| client.request(body.clone(), HESSIAN2, LONG));
        for r in join_all(calls).await {
            r.unwrap();
        }
    }
    let concurrent = (ALLOCS.load(Ordering::Relaxed) - before) as f64 / N as f64;
    eprintln!(
        "allocations per round trip: sequential {sequential:.2}, 500 in flight {concurrent:.2}"
    );
    // client: oneshot; server: task, handler future, read-buffer refills
    assert!(
        sequential < 8.0,
        "sequential: {sequential:.2} allocations per call"
    );
    assert!(
        concurrent < 10.0,
        "concurrent: {concurrent:.2} allocations per call"
    );
}
