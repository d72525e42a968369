//! cargo-fuzz target `dubbo-body`: the check of `rubbo_fuzz::targets::DUBBO_BODY` (generated).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rubbo_fuzz::targets::DUBBO_BODY.run(data));
