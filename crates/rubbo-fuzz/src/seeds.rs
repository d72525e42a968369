//! Seeds read from the repository's fixtures: frames and values captured from Java
//! Dubbo 3.3.

use std::path::{Path, PathBuf};

/// The repository root (this crate sits in `crates/rubbo-fuzz`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The files of `dir` (relative to the repository root) ending in `.bin`, smaller
/// than `max` bytes (large seeds only slow the run down). Panics when there are none:
/// a target without its seeds would only fuzz the first bytes of a format.
fn bins(dir: &str, max: usize) -> Vec<Vec<u8>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("seeds in {dir}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .collect();
    paths.sort();
    let seeds: Vec<Vec<u8>> = paths
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|b| b.len() <= max)
        .collect();
    assert!(!seeds.is_empty(), "no seeds in {dir}");
    seeds
}

/// Whole dubbo frames (16-byte header and body) captured from Java 3.3.
pub fn dubbo_frames() -> Vec<Vec<u8>> {
    bins("interop/fixtures/dubbo", 8 * 1024)
}

/// The bodies of those frames: Hessian 2 streams.
pub fn dubbo_bodies() -> Vec<Vec<u8>> {
    dubbo_frames()
        .into_iter()
        .filter(|f| f.len() > 16)
        .map(|f| f[16..].to_vec())
        .collect()
}

/// Single Hessian 2 values written by Java's hessian-lite.
pub fn hessian_values() -> Vec<Vec<u8>> {
    bins("crates/rubbo-hessian2/tests/fixtures/java", 4 * 1024)
}

/// Hessian 2 tags worth inserting: every tag family, and the list/map/object heads.
pub const HESSIAN_TAGS: &[&[u8]] = &[
    b"N",
    b"T",
    b"F",
    b"I",
    b"L",
    b"D",
    b"J",
    b"K",
    b"S",
    b"R",
    b"B",
    b"A",
    b"C",
    b"O",
    b"H",
    b"M",
    b"V",
    b"X",
    b"Q",
    b"Z",
    b"U",
    b"W",
    b"\x55",
    b"\x56",
    b"\x57",
    b"\x58",
    b"\x59",
    b"\x70",
    b"\x78",
    b"\x79",
    b"\x7a",
    b"\x60",
    b"\x30",
    b"\x34",
    b"\x20",
    b"\x5b",
    b"\x5c",
    b"\x5d",
    b"\x5e",
    b"\x5f",
    b"\x48",
    b"\x49\x7f\xff\xff\xff",
    b"\x58\x7f\xff\xff\xff",
    b"\x56\x04[int\x95",
    b"C\x0bjava.io.Foo\x91\x01a",
];

/// `docs` as byte seeds.
pub fn texts(docs: &[&str]) -> Vec<Vec<u8>> {
    docs.iter().map(|d| d.as_bytes().to_vec()).collect()
}
