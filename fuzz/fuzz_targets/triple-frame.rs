//! cargo-fuzz target `triple-frame`: the check of `rubbo_fuzz::targets::TRIPLE_FRAME` (generated).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rubbo_fuzz::targets::TRIPLE_FRAME.run(data));
