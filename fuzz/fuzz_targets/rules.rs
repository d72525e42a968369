//! cargo-fuzz target `rules`: the check of `rubbo_fuzz::targets::RULES` (generated).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rubbo_fuzz::targets::RULES.run(data));
