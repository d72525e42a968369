//! cargo-fuzz target `hessian-stream`: the check of `rubbo_fuzz::targets::HESSIAN_STREAM` (generated).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rubbo_fuzz::targets::HESSIAN_STREAM.run(data));
