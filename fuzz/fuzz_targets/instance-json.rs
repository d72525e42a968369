//! cargo-fuzz target `instance-json`: the check of `rubbo_fuzz::targets::INSTANCE_JSON` (generated).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rubbo_fuzz::targets::INSTANCE_JSON.run(data));
