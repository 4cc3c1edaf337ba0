//! Fuzz target `jsonrpc`: see [`mcp_fuzz_harness::jsonrpc`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_fuzz_harness::jsonrpc(data));
