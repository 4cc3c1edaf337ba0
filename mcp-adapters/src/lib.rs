//! One adapter per MCP protocol revision, and per-request selection.
//!
//! The adapters are where the revisions differ, so that nothing above them does. Each is a pure,
//! stateless value shared by every request: it decodes a POST body plus headers into normalized
//! calls, checks the revision's headers, maps failure kinds to the revision's JSON-RPC code and
//! HTTP status, encodes outcomes, projects definitions, and declares what it can do
//! (`can_ask`, `can_push_ask`, `asks_in_arguments`, batching, handshake ...).
//!
//! **Layering:** depends on `mcp-wire` and `mcp-schema` only. No runtime or I/O crate.
