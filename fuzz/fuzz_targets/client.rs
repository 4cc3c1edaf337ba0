//! Fuzz target `client`: see [`mcp_fuzz_harness::client`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_fuzz_harness::client(data));
