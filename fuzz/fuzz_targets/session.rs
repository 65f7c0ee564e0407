//! Fuzz target: the pure session machine driven by arbitrary bytes, calls and times
//! (body and invariants: crates/fuzzcheck).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| stackmeter_fuzzcheck::session(data));
