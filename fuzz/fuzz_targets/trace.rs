//! Fuzz target `trace`: see [`mcp_fuzz_harness::trace`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_fuzz_harness::trace(data));
