//! The integration tests of `mcp-hub`, in one binary: one module per topic, and the shared
//! support modules compiled once. A new test file `NAME.rs` in this folder needs `mod NAME;`
//! below.

mod contract;

mod memory;
mod postgres;
mod redis;
mod redis_fault;
mod sqlite;
