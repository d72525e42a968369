//! cargo-fuzz target `qos`: the check of `rubbo_fuzz::targets::QOS` (generated).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rubbo_fuzz::targets::QOS.run(data));
