//! The integration tests of `mcp-wire`, in one binary: one module per topic, and the shared
//! support modules compiled once. A new test file `NAME.rs` in this folder needs `mod NAME;`
//! below.

mod examples;
mod header_props;
mod jsonrpc_props;
mod model;
mod ndjson_props;
mod sse_props;
