//! `TracePropagation::CurrentSpan` (feature `otel`): a request made inside a `tracing` span
//! that `tracing-opentelemetry` records carries that span's context, so the server's request
//! span (and what its handler sees, `Exchange::trace_context`) is in the caller's trace.

#![cfg(feature = "otel")]

use mcp_client::{Client, Revision, TracePropagation};
use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown};
use mcp_server::{Exchange, NoArgs, Server, Tool};
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use serde_json::json;
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::layer::SubscriberExt as _;

/// The trace the handler's request belongs to, as 32 hex digits.
async fn whose_trace(_: NoArgs, ex: Exchange) -> String {
    ex.trace_context()
        .map_or_else(|| "none".to_owned(), |c| c.traceparent.trace_id_hex())
}

#[tokio::test]
async fn requests_carry_the_current_spans_context() {
    // Client and server share this thread's subscriber (a current-thread runtime).
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("trace-test")));
    let _default = tracing::subscriber::set_default(subscriber);

    let server = Server::builder("trace", "1.0")
        .tool(Tool::new("whose_trace", whose_trace))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let endpoint = HttpEndpoint::new(server, HttpConfig::new());
    let served = tokio::spawn(
        async move {
            let _ = serve_with_shutdown(listener, endpoint, async {
                let _ = stopped.await;
            })
            .await;
        }
        .in_current_span(),
    );

    for revision in [Revision::V2026_07_28, Revision::V2025_11_25] {
        let client = Client::builder()
            .revision(revision)
            .trace_context(TracePropagation::CurrentSpan)
            .connect_http(&url)
            .await
            .unwrap();
        let caller = tracing::info_span!("caller");
        let expected = caller
            .context()
            .span()
            .span_context()
            .trace_id()
            .to_string();
        assert_eq!(expected.len(), 32);
        let seen = client
            .call_tool("whose_trace", json!({}))
            .instrument(caller)
            .await
            .unwrap();
        assert_eq!(seen["content"][0]["text"], expected, "{revision}: {seen}");

        // Outside any span the request carries nothing: the server's span starts a trace of
        // its own.
        let alone = client.call_tool("whose_trace", json!({})).await.unwrap();
        assert_ne!(alone["content"][0]["text"], expected, "{revision}: {alone}");
        client.close().await.unwrap();
    }
    let _ = stop.send(());
    served.await.unwrap();
}
