//! The integration tests of `mcp-cli`, in one binary: one module per topic, and the shared
//! support modules compiled once. A new test file `NAME.rs` in this folder needs `mod NAME;`
//! below.

mod support;

mod args;
mod auth;
mod bench;
mod browser;
mod console;
mod hostile;
mod http;
mod https;
mod login_hardening;
mod login_tmux;
mod proxy;
mod pty;
mod rate_limited;
mod stdio;
mod tasks;
mod trace;
