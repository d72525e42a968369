//! cargo-fuzz target `triple-wrapper`: the check of `rubbo_fuzz::targets::TRIPLE_WRAPPER` (generated).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rubbo_fuzz::targets::TRIPLE_WRAPPER.run(data));
