//! The integration tests of `mcp-client`, in one binary: one module per topic, and the shared
//! support modules compiled once. A new test file `NAME.rs` in this folder needs `mod NAME;`
//! below.

mod support;

mod flood;
mod http;
mod https;
mod misbehaving;
mod oauth;
mod oauth_dpop;
mod oauth_hardening;
mod oauth_scope;
mod oauth_store;
mod our_http;
mod rate_limited;
mod rules;
mod stdio;
mod tasks;
mod trace;
