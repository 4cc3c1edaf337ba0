//! A demo MCP server on stdio: a plain tool, a structured tool, a tool that asks, a tool that
//! fails, a tool that reports progress, a resource, a resource template, a prompt and
//! completion. Logs go to stderr. The integration tests spawn it.

include!("demo/server.rs");
