//! Process-wide request ids.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicI64, Ordering};

static NEXT_ID: LazyLock<AtomicI64> = LazyLock::new(|| {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(std::process::id().into());
    AtomicI64::new(h.finish() as i64)
});

/// The next request id: a process-wide counter that starts at a random value and
/// wraps, as in Java Dubbo.
pub fn next_id() -> i64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}
