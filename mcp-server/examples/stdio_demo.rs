//! The stdio demo server (the same program as the `mcp-stdio-demo` binary): a tool that asks
//! (`deploy`), plain tools, a resource, a template and a prompt.
//!
//! Run it with `cargo run -p everymcp-server --example stdio_demo` and type JSON-RPC lines.

include!("../src/bin/demo/server.rs");
