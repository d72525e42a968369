//! cargo-fuzz target `url`: the check of `rubbo_fuzz::targets::URL` (generated).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rubbo_fuzz::targets::URL.run(data));
