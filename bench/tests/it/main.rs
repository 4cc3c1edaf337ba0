//! The integration tests of `bench`, in one binary: one module per topic, and the shared
//! support modules compiled once. A new test file `NAME.rs` in this folder needs `mod NAME;`
//! below.

mod ask;
mod loopback;
mod tasks;
