//! Fuzz target: UDP datagrams: header, echo rule, stamp block
//! (body and invariants: crates/fuzzcheck).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| stackmeter_fuzzcheck::udp(data));
