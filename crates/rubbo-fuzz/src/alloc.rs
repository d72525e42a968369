//! The allocation probe: the largest single allocation each thread made since it last
//! asked, so a decoder that trusts a declared length (a 2 GiB list, a 2 GiB body) is
//! caught even when the machine could grant the memory.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    /// The largest allocation (or growth target) of this thread since the last reset.
    static BIGGEST: Cell<usize> = const { Cell::new(0) };
}

/// The system allocator, recording sizes.
struct Probe;

#[global_allocator]
static PROBE: Probe = Probe;

fn record(size: usize) {
    // `try_with`: a thread being torn down has no slot left; nothing to record then.
    let _ = BIGGEST.try_with(|b| b.set(b.get().max(size)));
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the
// only addition is a store into a const-initialised thread-local `Cell`, which neither
// allocates nor unwinds.
unsafe impl GlobalAlloc for Probe {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        // SAFETY: forwarded as received.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        // SAFETY: forwarded as received.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as received.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record(new_size);
        // SAFETY: forwarded as received.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The largest allocation this thread made since the last call, and a reset.
pub(crate) fn take_biggest() -> usize {
    BIGGEST.try_with(|b| b.replace(0)).unwrap_or(0)
}
