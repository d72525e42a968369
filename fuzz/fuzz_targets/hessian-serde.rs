//! cargo-fuzz target `hessian-serde`: the check of `rubbo_fuzz::targets::HESSIAN_SERDE` (generated).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rubbo_fuzz::targets::HESSIAN_SERDE.run(data));
