//! Fuzz target: the receive counters of a UDP stream
//! (body and invariants: crates/fuzzcheck).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| stackmeter_fuzzcheck::udp_stream(data));
