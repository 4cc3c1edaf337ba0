//! Fuzz target `header`: see [`mcp_fuzz_harness::header`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_fuzz_harness::header(data));
