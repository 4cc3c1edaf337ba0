//! The MCP server: one registry of handler declarations served on every protocol revision.
//!
//! It will own the registry, typed handlers, the `Exchange` handed to a handler, the socket-free
//! dispatch entry point, and the stdio and HTTP transports (Streamable HTTP and HTTP+SSE).
//!
//! **Layering:** depends on `mcp-wire`, `mcp-schema`, `mcp-adapters` and `mcp-hub`.
