//! Fuzz target: the status record a responder answers with
//! (body and invariants: crates/fuzzcheck).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| stackmeter_fuzzcheck::status(data));
