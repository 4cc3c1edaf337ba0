//! Fuzz target `schema`: see [`mcp_fuzz_harness::schema`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_fuzz_harness::schema(data));
