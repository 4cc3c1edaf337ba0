//! Over stdio, the server's request span is the child of the client's (issue 49): the stdio
//! demo, spawned by our client with a trace context, exports its spans over OTLP/HTTP to a
//! receiver in the test (`support/otlp.rs`) when its input ends.

#![cfg(feature = "otel")]

use mcp_client::trace::TraceContext;
use mcp_client::transport::Stdio;
use mcp_client::{Client, Revision, TracePropagation};
use serde_json::json;

use crate::otlp::{Receiver, assert_call_span, client_span, in_trace};

#[tokio::test]
async fn the_stdio_servers_span_is_the_child_of_the_clients() {
    let receiver = Receiver::start().await;
    for (tag, revision) in [(21, Revision::V2025_06_18), (22, Revision::V2026_07_28)] {
        let parent = client_span(tag);
        let stdio = Stdio::builder(env!("CARGO_BIN_EXE_mcp-stdio-demo"))
            .args(["--otlp-endpoint", &receiver.endpoint()]);
        let client = Client::builder()
            .timeout(std::time::Duration::from_secs(20))
            .revision(revision)
            .trace_context(TracePropagation::Context(TraceContext::new(parent)))
            .connect_stdio(stdio)
            .await
            .unwrap();
        client
            .call_tool("add", json!({"a": 1, "b": 1}))
            .await
            .unwrap();
        client.close().await.unwrap();
        let spans = receiver
            .wait_for(1, |g| in_trace(parent)(g) && g.name == "tools/call add")
            .await;
        assert_call_span(&spans[0], parent, "add", revision.as_str());
        assert_eq!(spans[0].service, "mcp-stdio-demo");
    }
}
