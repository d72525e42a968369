//! cargo-fuzz target `triple-compressed`: the check of `rubbo_fuzz::targets::TRIPLE_COMPRESSED` (generated).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rubbo_fuzz::targets::TRIPLE_COMPRESSED.run(data));
