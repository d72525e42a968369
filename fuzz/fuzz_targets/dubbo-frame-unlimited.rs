//! cargo-fuzz target `dubbo-frame-unlimited`: the check of `rubbo_fuzz::targets::DUBBO_FRAME_UNLIMITED` (generated).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rubbo_fuzz::targets::DUBBO_FRAME_UNLIMITED.run(data));
