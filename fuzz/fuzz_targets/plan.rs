//! Fuzz target: TOML plans as `suite` loads them
//! (body and invariants: crates/fuzzcheck).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| stackmeter_fuzzcheck::plan(data));
