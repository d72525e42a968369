//! A time-boxed mutation fuzzer that runs in `cargo test`, on stable, for every
//! decoder that reads peer or operator input (the tests in `tests/`, one per decoder),
//! and the checks the cargo-fuzz targets in `fuzz/` share with it ([`targets`]).
//!
//! Each target starts from seed inputs taken from real frames and documents, and
//! mutates them (bit flips, interesting bytes and lengths, inserted, deleted,
//! duplicated and spliced runs, dictionary tokens). Every input must:
//! - not panic;
//! - not hang: the whole run is watched, and a single input over [`SLOW_INPUT`] fails;
//! - not allocate more than [`MAX_ALLOC`] at once, whatever length it declares.
//!
//! A failure names the target, the seed of the run and the input in hex, to become a
//! regression test. The budget per target is a count and a wall-clock cap:
//! `RUBBO_FUZZ_SECS` (default 4) and `RUBBO_FUZZ_EXECS` (default 1 000 000);
//! `RUBBO_FUZZ_SEED` replays a run.
//!
//! ```
//! rubbo_fuzz::fuzz("utf8", &[b"hello".to_vec()], &[], |input| {
//!     let _ = std::str::from_utf8(input);
//! });
//! ```
// The allocation probe is a `GlobalAlloc`, which is unsafe to implement; nothing else
// here uses unsafe.
#![deny(unsafe_code)]

#[allow(unsafe_code)]
mod alloc;
mod mutate;
pub mod seeds;
pub mod targets;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use mutate::Rng;

/// The largest single allocation an input may cause: 64 MiB (the default payload
/// limit is 8 MiB; a decoder may hold a few copies of a frame, never a declared 2 GiB).
pub const MAX_ALLOC: usize = 64 << 20;

/// The longest one input may take (debug build, a loaded 2-core machine).
pub const SLOW_INPUT: Duration = Duration::from_secs(5);

/// Extra time the watcher gives a run past its cap before it calls the run hung.
const HANG_SLACK: Duration = Duration::from_secs(30);

/// What one target's run did.
#[derive(Debug, Clone, Copy)]
pub struct Report {
    /// Inputs run.
    pub execs: u64,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
    /// The largest single allocation any input caused.
    pub biggest_alloc: usize,
    /// The seed of the run (`RUBBO_FUZZ_SEED` replays it).
    pub seed: u64,
}

fn env_num(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.trim().parse().ok()
}

/// Runs `check` on mutations of `seeds` (plus the seeds themselves and the empty
/// input) within the budget, and panics with the input on a panic, a hang, a slow
/// input or an oversized allocation. `dict` holds tokens worth inserting (tags, keys).
pub fn fuzz<F>(name: &'static str, seeds: &[Vec<u8>], dict: &[&[u8]], check: F) -> Report
where
    F: Fn(&[u8]) + Send + 'static,
{
    let secs = env_num("RUBBO_FUZZ_SECS").unwrap_or(4);
    let max_execs = env_num("RUBBO_FUZZ_EXECS").unwrap_or(1_000_000);
    let seed = env_num("RUBBO_FUZZ_SEED").unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let cap = Duration::from_secs(secs);
    let seeds: Vec<Vec<u8>> = seeds.to_vec();
    let dict: Vec<Vec<u8>> = dict.iter().map(|d| d.to_vec()).collect();
    // The input being run, for the hang report.
    let current = Arc::new(Mutex::new(Vec::new()));
    let (done_tx, done_rx) = mpsc::channel();
    let worker_current = current.clone();
    let worker = std::thread::Builder::new()
        .name(format!("fuzz-{name}"))
        .spawn(move || {
            let outcome = run(
                &seeds,
                &dict,
                &check,
                Budget {
                    cap,
                    max_execs,
                    seed,
                },
                &worker_current,
            );
            let _ = done_tx.send(outcome);
        });
    if let Err(e) = worker {
        panic!("fuzz {name}: cannot start the worker thread: {e}");
    }
    match done_rx.recv_timeout(cap + HANG_SLACK) {
        Ok(Ok(report)) => {
            println!(
                "fuzz {name}: {} execs in {:.1} s, biggest allocation {} bytes, seed {}",
                report.execs,
                report.elapsed.as_secs_f64(),
                report.biggest_alloc,
                report.seed
            );
            report
        }
        Ok(Err(failure)) => panic!("fuzz {name} (seed {seed}): {failure}"),
        Err(_) => {
            let input = current.lock().map(|c| hex(&c)).unwrap_or_default();
            panic!("fuzz {name} (seed {seed}): hung on input {input}")
        }
    }
}

struct Budget {
    cap: Duration,
    max_execs: u64,
    seed: u64,
}

fn run<F: Fn(&[u8])>(
    seeds: &[Vec<u8>],
    dict: &[Vec<u8>],
    check: &F,
    budget: Budget,
    current: &Mutex<Vec<u8>>,
) -> Result<Report, String> {
    let start = Instant::now();
    let mut rng = Rng::new(budget.seed);
    let mut biggest_alloc = 0;
    let mut execs = 0u64;
    // The seeds as they are first, then mutations.
    let fixed: Vec<Vec<u8>> = std::iter::once(Vec::new())
        .chain(seeds.iter().cloned())
        .collect();
    let mut input = Vec::new();
    while execs < budget.max_execs && (execs < fixed.len() as u64 || start.elapsed() < budget.cap) {
        match fixed.get(execs as usize) {
            Some(f) => input.clone_from(f),
            None => mutate::mutate(&mut rng, seeds, dict, &mut input),
        }
        if let Ok(mut c) = current.lock() {
            c.clone_from(&input);
        }
        alloc::take_biggest();
        let began = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| check(&input)));
        let took = began.elapsed();
        let allocated = alloc::take_biggest();
        execs += 1;
        if let Err(panic) = outcome {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            return Err(format!("panicked ({msg}) on input {}", hex(&input)));
        }
        if took > SLOW_INPUT {
            return Err(format!(
                "took {} ms on input {}",
                took.as_millis(),
                hex(&input)
            ));
        }
        if allocated > MAX_ALLOC {
            return Err(format!(
                "allocated {allocated} bytes at once on input {}",
                hex(&input)
            ));
        }
        biggest_alloc = biggest_alloc.max(allocated);
    }
    Ok(Report {
        execs,
        elapsed: start.elapsed(),
        biggest_alloc,
        seed: budget.seed,
    })
}

/// `bytes` as lowercase hex, for failure reports and regression tests.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes from lowercase or uppercase hex (whitespace ignored), for regression tests.
/// Panics on bad hex: it is test data.
pub fn unhex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|p| {
            let text = std::str::from_utf8(p).unwrap_or("");
            match u8::from_str_radix(text, 16) {
                Ok(b) => b,
                Err(_) => panic!("bad hex {text:?}"),
            }
        })
        .collect()
}

/// A text decoder's view of an input: the bytes as UTF-8, invalid sequences
/// replaced.
pub fn text(input: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(input)
}

/// The bytes of a `Bytes`-based decoder's input.
pub fn bytes(input: &[u8]) -> bytes::Bytes {
    bytes::Bytes::copy_from_slice(input)
}
