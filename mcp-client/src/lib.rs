//! The MCP client for every protocol revision and transport.
//!
//! It will own the Streamable HTTP, HTTP+SSE and stdio transports, revision negotiation,
//! sessions, and answering questions whatever mechanism the server uses.
//!
//! **Layering:** depends on `mcp-wire`, `mcp-schema` and `mcp-adapters` only; never on
//! `mcp-server` or `mcp-hub`.
