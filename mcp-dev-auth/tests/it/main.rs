//! The integration tests of `everymcp-dev-auth`, in one binary: the development authorization
//! server mounted on an MCP endpoint, over real sockets. A new test file `NAME.rs` in this
//! folder needs `mod NAME;` below.

// The raw HTTP helpers are mcp-server's (one copy in the workspace).
#[path = "../../../mcp-server/tests/it/support/raw_http.rs"]
mod raw_http;

mod auth_dev;
