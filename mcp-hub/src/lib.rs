//! The shared event log and state store that lets several MCP server workers act as one.
//!
//! The hub knows nothing about MCP: it stores opaque messages under topics and records under
//! keys. The in-memory backend is the default; a Redis backend sits behind the `redis` feature.
//!
//! **Layering:** depends on no workspace crate. Only `mcp-server` uses it.
