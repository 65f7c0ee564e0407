//! Fuzz target: control records of a throughput test, both directions
//! (body and invariants: crates/fuzzcheck).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| stackmeter_fuzzcheck::control(data));
