//! The conformance suite of the MCP workspace: every cross-crate pairing, per revision,
//! transport and hub backend.
//!
//! This crate is not published. It may depend on every workspace crate.
