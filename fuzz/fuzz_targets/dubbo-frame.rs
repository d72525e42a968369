//! cargo-fuzz target `dubbo-frame`: the check of `rubbo_fuzz::targets::DUBBO_FRAME` (generated).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rubbo_fuzz::targets::DUBBO_FRAME.run(data));
