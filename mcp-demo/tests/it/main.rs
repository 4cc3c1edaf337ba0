//! The integration tests of `mcp-demo`, in one binary: the demo server as a process (its
//! flags, its hubs across processes and restarts, its metrics, the deployment example). A new
//! test file `NAME.rs` in this folder needs `mod NAME;` below.

// The support modules are mcp-server's (one copy in the workspace).
#[path = "../../../mcp-server/tests/it/support/backends.rs"]
mod backends;
#[cfg(feature = "otel")]
#[path = "../../../mcp-server/tests/it/support/otlp.rs"]
mod otlp;
#[path = "../../../mcp-server/tests/it/support/raw_http.rs"]
mod raw_http;
#[path = "../../../mcp-server/tests/it/support/mod.rs"]
mod support;

mod ask_workers;
mod auth_workers;
mod demo_auth;
mod demo_drain;
mod demo_flags;
mod demo_metrics;
// The worker process of the tests that run the demo on a shared hub.
#[cfg(any(feature = "redis", feature = "sqlite"))]
mod demo_process;
mod demo_sqlite_restart;
mod deploy_example;
mod otel_trace;
