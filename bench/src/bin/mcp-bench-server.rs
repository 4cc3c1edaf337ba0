//! `mcp-bench-server`: our server with an `add` tool, for the harness's own rows.
//!
//! ```text
//! mcp-bench-server --port PORT --store memory|redis [--redis-url URL]
//! ```
//!
//! Contract (see the crate docs, "Server contract"): Streamable HTTP at `/mcp` for every
//! revision from 2025-03-26 on, HTTP+SSE at `GET /sse` for 2024-11-05, and an `add` tool taking
//! `{a, b}` integers and returning `{"sum": a + b}` as structured content.
//!
//! Our HTTP transport (issue 7) does not exist yet, so for now this binary exits with
//! `mcp_bench::EXIT_NOT_AVAILABLE` and the harness reports its rows as "not available".

use std::process::ExitCode;

fn main() -> ExitCode {
    eprintln!(
        "mcp-bench-server: not available yet: mcp-server has no HTTP transport (issue 7); \
         this row will be measured once it does"
    );
    ExitCode::from(mcp_bench::EXIT_NOT_AVAILABLE as u8)
}
