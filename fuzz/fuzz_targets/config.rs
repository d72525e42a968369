//! cargo-fuzz target `config`: the check of `rubbo_fuzz::targets::CONFIG` (generated).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rubbo_fuzz::targets::CONFIG.run(data));
