//! The benchmark harness behind `cargo xtask bench`: a load generator, a bare hyper floor server,
//! and the rows that compare our server and client with them and with peer implementations.
//!
//! This crate is not published. It may depend on every workspace crate.
