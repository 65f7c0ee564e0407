//! Fuzz target: object mode: header, requests, responses, LIST body
//! (body and invariants: crates/fuzzcheck).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| stackmeter_fuzzcheck::objects(data));
