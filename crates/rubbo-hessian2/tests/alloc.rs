//! Encoding allocates nothing beyond the output buffer once the encoder's
//! tables are warm, and decoding a stream whose class definitions were seen
//! before allocates only the decoded values (counted with a counting global
//! allocator).

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use rubbo_hessian2::Encoder;

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts (thread-locally).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> usize {
    ALLOCS.with(Cell::get)
}

#[test]
fn encoding_users_allocates_nothing_after_warm_up() {
    let one = support::user(1);
    let many: Vec<_> = (0..1000).map(support::user).collect();
    let mut buf = Vec::with_capacity(1 << 20);
    let mut enc = Encoder::new(&mut buf);
    // warm up: the class tables get their capacity
    enc.write(&one).expect("warm");
    enc.write(&many).expect("warm");
    for _ in 0..3 {
        enc.get_mut().clear();
        enc.reset();
        let before = allocs();
        enc.write(&one).expect("one");
        assert_eq!(allocs() - before, 0, "one user");
        enc.get_mut().clear();
        enc.reset();
        let before = allocs();
        enc.write(&many).expect("many");
        assert_eq!(allocs() - before, 0, "1000 users");
        enc.get_mut().clear();
        enc.reset();
        let before = allocs();
        enc.write_string("2.0.2").expect("s");
        enc.write_args(&(&one, 42i32, "x")).expect("args");
        assert_eq!(allocs() - before, 0, "args");
    }
}

#[test]
fn decoding_a_repeated_user_allocates_only_its_values() {
    let one = support::user(1);
    let bytes = rubbo_hessian2::to_vec(&one).expect("encode");
    let json = serde_json::to_vec(&one).expect("json");
    // the first stream on this thread caches the class definitions
    let first: support::User = rubbo_hessian2::from_slice(&bytes).expect("first");
    assert_eq!(first, one);
    let before = allocs();
    let u: support::User = serde_json::from_slice(&json).expect("json");
    let json_allocs = allocs() - before;
    assert_eq!(u, one);
    for _ in 0..3 {
        let before = allocs();
        let u: support::User = rubbo_hessian2::from_slice(&bytes).expect("again");
        let n = allocs() - before;
        assert_eq!(u, one);
        // the strings, the list and the map of the value, as serde_json
        assert!(
            n <= json_allocs,
            "{n} allocations, serde_json {json_allocs}"
        );
    }
}
