//! The integration tests of `mcp-adapters`, in one binary: one module per topic, and the shared
//! support modules compiled once. A new test file `NAME.rs` in this folder needs `mod NAME;`
//! below.

mod common;

mod ask;
mod decode;
mod diff_table;
mod props;
mod result_envelope;
mod schema_valid;
