//! An injectable source of randomness for the balancers and strategies.

use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Where random numbers come from: the thread-local generator (default, no contention),
/// or a seeded generator shared behind a lock (reproducible tests).
///
/// ```
/// use rubbo_cluster::Rand;
/// let a = Rand::seeded(7);
/// let b = Rand::seeded(7);
/// let xs: Vec<usize> = (0..5).map(|_| a.below(100)).collect();
/// let ys: Vec<usize> = (0..5).map(|_| b.below(100)).collect();
/// assert_eq!(xs, ys);
/// ```
#[derive(Clone, Default)]
pub struct Rand(Option<Arc<Mutex<StdRng>>>);

impl Rand {
    /// The thread-local generator.
    pub fn thread() -> Self {
        Rand(None)
    }

    /// A generator seeded with `seed`: the same seed gives the same sequence.
    pub fn seeded(seed: u64) -> Self {
        Rand(Some(Arc::new(Mutex::new(StdRng::seed_from_u64(seed)))))
    }

    /// A number in `0..n` (`n` must be at least 1; 0 gives 0).
    pub fn below(&self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        match &self.0 {
            None => rand::rng().random_range(0..n),
            Some(m) => m.lock().random_range(0..n),
        }
    }
}

impl fmt::Debug for Rand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Rand(seeded)"
        } else {
            "Rand(thread)"
        })
    }
}
