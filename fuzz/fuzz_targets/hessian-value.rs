//! cargo-fuzz target `hessian-value`: the check of `rubbo_fuzz::targets::HESSIAN_VALUE` (generated).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rubbo_fuzz::targets::HESSIAN_VALUE.run(data));
