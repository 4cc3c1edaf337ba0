//! The conformance suite of the MCP workspace: every cross-crate pairing, per revision,
//! transport and hub backend, and the `mcp-conformance` checker for any server.
//!
//! - [`fixture`]: the server every pairing runs against (also the `pairing-server` binary).
//! - [`recording`]: a client [`Transport`](mcp_client::transport::Transport) wrapper that
//!   records every message both ways.
//! - [`schema`]: validation against the official `schema.json` of each revision.
//! - [`pairing`]: the checks, one per feature, written once for every axis.
//! - [`gaps`]: the known gaps (`tests/known-gaps.toml`).
//! - [`conformance`]: the probes of the `mcp-conformance` binary.
//!
//! This crate is not published. It may depend on every workspace crate.

pub mod conformance;
pub mod fixture;
pub mod gaps;
pub mod pairing;
pub mod recording;
pub mod schema;
