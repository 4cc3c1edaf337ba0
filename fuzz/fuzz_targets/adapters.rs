//! Fuzz target `adapters`: see [`mcp_fuzz_harness::adapters`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_fuzz_harness::adapters(data));
