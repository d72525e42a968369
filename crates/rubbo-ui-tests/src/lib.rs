//! Compile tests for `#[rubbo::service]` and `#[derive(JavaType)]`: misuse fails with a
//! clear message (`tests/ui`), and services in crates that deny unused and undocumented
//! items compile (`tests/ui-pass`). The crate has no code of its own; see
//! `tests/compile_fail.rs`.
