//! JSON Schema projection of MCP tool schemas onto every protocol revision.
//!
//! A tool is declared once, with a full JSON Schema 2020-12 `inputSchema` (and an optional
//! `outputSchema`). Older revisions cannot hold all of that. This crate decides, as pure
//! functions over `serde_json::Value`, what each revision is shown: local `$ref`s inlined,
//! nullable unions collapsed, `x-mcp-header` annotations stripped, and anything that cannot be
//! simplified losslessly reported as "not offered". It also extracts `x-mcp-header`
//! annotations and validates arguments with validators compiled once.
//!
//! **Layering:** depends on `mcp-wire` only (plus `serde_json`, `jsonschema`, `thiserror`).
//! No runtime, no I/O.
