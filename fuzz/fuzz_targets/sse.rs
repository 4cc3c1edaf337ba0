//! Fuzz target `sse`: see [`mcp_fuzz_harness::sse`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_fuzz_harness::sse(data));
