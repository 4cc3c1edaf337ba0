//! The integration tests of `tests`, in one binary: one module per topic, and the shared
//! support modules compiled once. A new test file `NAME.rs` in this folder needs `mod NAME;`
//! below.

mod added_revision;
mod conformance_checker;
mod negotiation;
mod pairing;
mod same_bytes;
