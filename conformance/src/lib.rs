//! Peers for the official MCP conformance suite (`@modelcontextprotocol/conformance`).
//!
//! - [`target`]: the fixture server the suite's server scenarios expect (tools, resources and
//!   prompts with the suite's `test_*` names), declared once with `mcp-server` and served on
//!   every revision; the `conformance-target` binary serves it over Streamable HTTP.
//! - [`client`]: what the `conformance-client` binary does for each client scenario, with
//!   `mcp-client`.
//! - [`sample`]: values for JSON Schemas (tool arguments, elicitation answers).
//!
//! `cargo xtask conformance` installs the pinned suite, starts the target, runs both requirement
//! sets against it and against the client, and compares the outcome with
//! `conformance/expected-failures.yml`.

pub mod client;
pub mod sample;
pub mod target;
