//! cargo-fuzz target `k8s-metadata`: the check of `rubbo_fuzz::targets::K8S_METADATA` (generated).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rubbo_fuzz::targets::K8S_METADATA.run(data));
