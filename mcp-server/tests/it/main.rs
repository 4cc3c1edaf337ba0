//! The integration tests of `mcp-server`, in one binary: one module per topic, and the shared
//! support modules compiled once. A new test file `NAME.rs` in this folder needs `mod NAME;`
//! below.

#[path = "support/backends.rs"]
mod backends;
#[cfg(feature = "otel")]
#[path = "support/otlp.rs"]
mod otlp;
#[path = "support/raw_http.rs"]
mod raw_http;
mod support;

mod ask_http;
mod auth_dpop;
mod auth_flow;
mod auth_hardening;
mod auth_http;
mod auth_jwt;
mod auth_sse;
mod axum_mount;
mod bodiless_refusals;
mod client_context;
mod dispatch;
mod extensions;
mod handlers;
mod health;
mod hostile;
mod http_client;
mod http_fuzz;
mod http_limits;
mod http_routes;
mod http_serve;
mod http_session_fixes;
mod http_sse_local;
mod http_status;
mod http_tls;
mod http_workers;
mod metrics;
mod notify;
mod notify_http;
mod notify_stdio;
mod notify_workers;
mod otel_layer;
mod otel_stdio;
mod panics;
mod post_resume;
mod postgres_fault;
mod rate_limits;
mod readme;
mod refusals;
mod registration;
mod session_flood;
mod session_pipeline;
mod session_quota;
mod skills;
mod stdio;
mod stdio_limits;
mod tasks;
mod tasks_process;
mod tool_handler;
mod tool_schemas;
mod tracing_spans;

/// Installs the one global tracing subscriber of this test binary, once: `panics` keeps the
/// server's ERROR events and `tracing_spans` its DEBUG spans. Under `cargo test` every test of
/// the binary shares one process, where a second `set_global_default` would fail, so both
/// capturing layers live in this one subscriber, each behind its own filter.
fn install_capture() {
    use tracing_subscriber::Layer;
    use tracing_subscriber::filter::{EnvFilter, LevelFilter};
    use tracing_subscriber::layer::SubscriberExt;

    static ONCE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        let subscriber = tracing_subscriber::registry()
            .with(panics::Capture.with_filter(LevelFilter::ERROR))
            .with(tracing_spans::Capture.with_filter(EnvFilter::new("mcp_server=debug")));
        tracing::subscriber::set_global_default(subscriber).unwrap();
    });
}
