//! The integration tests of `mcp-schema`, in one binary: one module per topic, and the shared
//! support modules compiled once. A new test file `NAME.rs` in this folder needs `mod NAME;`
//! below.

mod common;

mod projection_rules;
mod properties;
mod spec_schemas;
