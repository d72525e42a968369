//! The cargo-fuzz project in `fuzz/` matches the target table: every target has its
//! libFuzzer binary, a committed corpus holding its seeds, and a dictionary; and every
//! corpus input (the seeds and each crash found, kept as a regression) passes its
//! check here, on stable, in every `cargo test`.
//!
//! `RUBBO_FUZZ_BLESS=1 cargo test -p rubbo-fuzz --test corpus` writes the seeds, the
//! dictionaries and the target sources after a seed or a target changed.

use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use rubbo_fuzz::targets::{ALL, Target};

/// The largest seed kept in a corpus (libFuzzer's default `-max_len` follows the
/// largest corpus input; bigger seeds only slow it down).
const CORPUS_MAX: usize = 16 * 1024;

fn fuzz_dir() -> PathBuf {
    rubbo_fuzz::seeds::root().join("fuzz")
}

fn bless() -> bool {
    std::env::var_os("RUBBO_FUZZ_BLESS").is_some_and(|v| v == "1")
}

/// FNV-1a, 64 bits: a stable name for a seed.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// libFuzzer's dictionary format: one quoted token a line, `\xNN` escapes.
fn dictionary(t: &Target) -> String {
    let mut out = format!(
        "# {}: tokens from rubbo_fuzz::targets (generated)\n",
        t.name
    );
    for token in t.dict {
        out.push('"');
        for b in *token {
            match b {
                b'"' | b'\\' => {
                    out.push('\\');
                    out.push(char::from(*b));
                }
                0x20..=0x7e => out.push(char::from(*b)),
                _ => {
                    let _ = write!(out, "\\x{b:02x}");
                }
            }
        }
        out.push_str("\"\n");
    }
    out
}

fn const_name(t: &Target) -> String {
    t.name.to_uppercase().replace('-', "_")
}

fn target_source(t: &Target) -> String {
    format!(
        "//! cargo-fuzz target `{name}`: the check of `rubbo_fuzz::targets::{c}` (generated).\n\
         #![no_main]\n\n\
         libfuzzer_sys::fuzz_target!(|data: &[u8]| rubbo_fuzz::targets::{c}.run(data));\n",
        name = t.name,
        c = const_name(t)
    )
}

/// `path` holds `want`, or (blessing) is written with it.
fn expect_file(path: &Path, want: &[u8], problems: &mut Vec<String>) {
    if std::fs::read(path).is_ok_and(|have| have == want) {
        return;
    }
    if bless() {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        }
        std::fs::write(path, want).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    } else {
        problems.push(format!("{} is missing or stale", path.display()));
    }
}

#[test]
fn every_target_has_a_binary_a_corpus_and_a_dictionary() {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    let mut problems = Vec::new();
    for t in ALL {
        if !manifest.contains(&format!("name = \"{}\"", t.name)) {
            problems.push(format!("fuzz/Cargo.toml has no [[bin]] {}", t.name));
        }
        let source = fuzz_dir()
            .join("fuzz_targets")
            .join(format!("{}.rs", t.name));
        expect_file(&source, target_source(t).as_bytes(), &mut problems);
        let dict = fuzz_dir().join("dict").join(format!("{}.dict", t.name));
        expect_file(&dict, dictionary(t).as_bytes(), &mut problems);
        let corpus = fuzz_dir().join("corpus").join(t.name);
        let mut kept = 0;
        for seed in (t.seeds)().iter().filter(|s| s.len() <= CORPUS_MAX) {
            let path = corpus.join(format!("seed-{:016x}", fnv(seed)));
            expect_file(&path, seed, &mut problems);
            kept += 1;
        }
        assert!(kept > 0, "{}: no seed small enough for the corpus", t.name);
    }
    assert!(
        problems.is_empty(),
        "run `RUBBO_FUZZ_BLESS=1 cargo test -p rubbo-fuzz --test corpus`:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_corpus_input_passes_its_check() {
    let mut failures = Vec::new();
    let mut replayed = 0;
    for t in ALL {
        let dir = fuzz_dir().join("corpus").join(t.name);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            let input = std::fs::read(&path).unwrap();
            replayed += 1;
            if catch_unwind(AssertUnwindSafe(|| t.run(&input))).is_err() {
                failures.push(path.display().to_string());
            }
        }
    }
    println!("replayed {replayed} corpus inputs");
    assert!(
        failures.is_empty(),
        "failing inputs:\n{}",
        failures.join("\n")
    );
}
