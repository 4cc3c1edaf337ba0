//! Each transport gives a `tools/call` its request span (`mcp.request`, DEBUG) with the
//! OpenTelemetry semantic-convention attributes for MCP (revision, method, tool name, JSON-RPC
//! id, session), the outcome and duration, and the trace its `_meta` names, inside its
//! connection's span.

use crate::raw_http;

include!("../../src/bin/demo/registry.rs");

use std::collections::BTreeMap;
use std::sync::Mutex;

use mcp_client::{Client, Revision};
use mcp_server::http::HttpConfig;
use mcp_server::{StdioConfig, serve_stdio_with};
use raw_http::{Running, WAIT};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context as LayerContext;
use tracing_subscriber::registry::LookupSpan;

/// A closed span: its name, its fields and its parent's name.
#[derive(Clone, Debug, Default)]
struct Closed {
    name: String,
    fields: BTreeMap<String, String>,
    parent: Option<String>,
}

#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(
            field.name().to_owned(),
            format!("{value:?}").trim_matches('"').to_owned(),
        );
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

/// Keeps the fields of every span in its extensions and the closed ones in `CLOSED`.
pub(crate) struct Capture;

static CLOSED: Mutex<Vec<Closed>> = Mutex::new(Vec::new());

impl<S> Layer<S> for Capture
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: LayerContext<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: LayerContext<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<Fields>()
        {
            values.record(fields);
        }
    }

    fn on_close(&self, id: Id, ctx: LayerContext<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let fields = span
            .extensions()
            .get::<Fields>()
            .map(|f| f.0.clone())
            .unwrap_or_default();
        CLOSED.lock().unwrap().push(Closed {
            name: span.name().to_owned(),
            fields,
            parent: span.parent().map(|p| p.name().to_owned()),
        });
    }
}

/// Installs this binary's capturing subscriber (shared with `panics`, see
/// `crate::install_capture`), DEBUG for the server.
fn capture() {
    crate::install_capture();
}

/// The closed request span of the `tools/call` whose tool is `tool`, waiting for it to close
/// (the response can reach the client a moment before the span ends).
async fn request_span(tool: &str) -> Closed {
    let found = tokio::time::timeout(WAIT, async {
        loop {
            let hit = CLOSED
                .lock()
                .unwrap()
                .iter()
                .find(|c| {
                    c.name == "mcp.request"
                        && c.fields.get("mcp.method.name").map(String::as_str) == Some("tools/call")
                        && c.fields.get("gen_ai.tool.name").map(String::as_str) == Some(tool)
                })
                .cloned();
            if let Some(hit) = hit {
                return hit;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("no closed request span for {tool}"))
}

fn assert_fields(span: &Closed, revision: &str, tool: &str, session: bool) {
    let f = &span.fields;
    assert_eq!(f["mcp.protocol.version"], revision, "{span:?}");
    assert_eq!(f["mcp.method.name"], "tools/call", "{span:?}");
    assert_eq!(f["gen_ai.tool.name"], tool, "{span:?}");
    assert_eq!(f["gen_ai.operation.name"], "execute_tool", "{span:?}");
    assert_eq!(f["otel.name"], format!("tools/call {tool}"), "{span:?}");
    assert_eq!(f["otel.kind"], "server", "{span:?}");
    assert!(f.contains_key("jsonrpc.request.id"), "{span:?}");
    assert!(!f.contains_key("error.type"), "{span:?}");
    assert_eq!(f["outcome"], "ok", "{span:?}");
    assert!(f["duration_us"].parse::<u64>().is_ok(), "{span:?}");
    if session {
        // A prefix of the id: enough to correlate, never the credential itself.
        assert_eq!(f["mcp.session.id"].len(), 8, "{span:?}");
    }
}

/// A demo server whose `add` tool answers under another name per transport, so each
/// transport's span is told apart.
fn server(tool: &'static str) -> Server {
    demo_builder("tracing-test")
        .tool(Tool::new(tool, add))
        .build()
        .unwrap()
}

#[tokio::test]
async fn every_transport_gives_a_call_its_request_span() {
    capture();
    // Streamable HTTP, with a session (2025-11-25) and stateless (2026-07-28).
    for (revision, tool, session) in [
        (Revision::V2025_11_25, "add_streamable", true),
        (Revision::V2026_07_28, "add_stateless", false),
    ] {
        let running = Running::start(server(tool), HttpConfig::new()).await;
        let client = Client::builder()
            .timeout(WAIT)
            .revision(revision)
            .connect_http(&running.url("/mcp"))
            .await
            .unwrap();
        client
            .call_tool(tool, json!({"a": 1, "b": 2}))
            .await
            .unwrap();
        let span = request_span(tool).await;
        assert_fields(&span, revision.as_str(), tool, session);
        assert_eq!(span.parent.as_deref(), Some("mcp.connection"), "{span:?}");
    }
    // HTTP+SSE (2024-11-05): the call is served on the session's stream.
    let running = Running::start(server("add_sse"), HttpConfig::new()).await;
    let client = Client::builder()
        .timeout(WAIT)
        .revision(Revision::V2024_11_05)
        .connect_sse(&running.url("/sse"))
        .await
        .unwrap();
    client
        .call_tool("add_sse", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_fields(
        &request_span("add_sse").await,
        "2024-11-05",
        "add_sse",
        true,
    );

    // stdio, on in-process pipes.
    let (mut stdin, server_in) = tokio::io::duplex(64 * 1024);
    let (server_out, stdout) = tokio::io::duplex(64 * 1024);
    let task = tokio::spawn(serve_stdio_with(
        server("add_stdio"),
        server_in,
        server_out,
        StdioConfig::new(),
    ));
    let mut lines = BufReader::new(stdout).lines();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "add_stdio", "arguments": {"a": 1, "b": 2}}}),
    ] {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        stdin.write_all(&line).await.unwrap();
    }
    for _ in 0..2 {
        tokio::time::timeout(WAIT, lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
    let span = request_span("add_stdio").await;
    assert_fields(&span, "2025-06-18", "add_stdio", false);
    assert_eq!(span.fields["jsonrpc.request.id"], "2", "{span:?}");
    assert_eq!(span.parent.as_deref(), Some("mcp.connection"), "{span:?}");
    drop(stdin);
    task.await.unwrap().unwrap();

    // The socket-free entry: the span has no connection around it.
    let server = server("add_direct");
    let ctx = mcp_server::Context::connection();
    server
        .handle_all(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-03-26", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}),
            &ctx,
        )
        .await;
    let out = server
        .handle_all(
            json!({"jsonrpc": "2.0", "id": "x-9", "method": "tools/call",
                "params": {"name": "add_direct", "arguments": {"a": 1, "b": "two"}}}),
            &ctx,
        )
        .await;
    assert_eq!(out.len(), 1);
    let span = request_span("add_direct").await;
    assert_eq!(span.fields["mcp.protocol.version"], "2025-03-26");
    assert_eq!(span.fields["jsonrpc.request.id"], "x-9", "{span:?}");
    // Arguments that do not fit the tool's schema: a tool error (`isError`) on this revision.
    assert_eq!(span.fields["outcome"], "tool_error", "{span:?}");
    assert_eq!(span.fields["error.type"], "tool_error", "{span:?}");
    assert_eq!(span.fields["otel.status_code"], "ERROR", "{span:?}");
    assert!(!span.fields.contains_key("trace_id"), "{span:?}");

    // A call with a trace context in its `_meta` records the trace it belongs to; a
    // malformed context is ignored (the call is served as a new trace).
    let traced = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    for (tool, traceparent, recorded) in [
        (
            "add_traced",
            traced,
            Some("0af7651916cd43dd8448eb211c80319c"),
        ),
        (
            "add_untraced",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            None,
        ),
    ] {
        let server = self::server(tool);
        let out = server
            .handle_all(
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                    "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                              "io.modelcontextprotocol/clientCapabilities": {},
                              "traceparent": traceparent},
                    "name": tool, "arguments": {"a": 1, "b": 2}}}),
                &mcp_server::Context::connection(),
            )
            .await;
        assert_eq!(out.len(), 1);
        let answer = out[0].to_value();
        assert_eq!(answer["result"]["structuredContent"]["sum"], 3, "{answer}");
        let span = request_span(tool).await;
        assert_eq!(
            span.fields.get("trace_id").map(String::as_str),
            recorded,
            "{span:?}"
        );
    }
}

/// What a handler sees of the request's trace: `Exchange::trace_context`, as text.
async fn whose_trace(_: NoArgs, ex: Exchange) -> String {
    ex.trace_context()
        .map_or_else(|| "none".to_owned(), |c| c.traceparent.to_string())
}

#[tokio::test]
async fn a_handler_sees_the_trace_its_request_carried() {
    let server = demo_builder("trace-handler")
        .tool(Tool::new("whose_trace", whose_trace))
        .build()
        .unwrap();
    let traced = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    for (meta, expected) in [
        (json!({"traceparent": traced, "tracestate": "a=1"}), traced),
        (json!({}), "none"),
        (json!({"traceparent": "00-nope"}), "none"),
    ] {
        let mut meta = meta;
        meta["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
        meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
        let out = server
            .handle_all(
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                    "_meta": meta, "name": "whose_trace", "arguments": {}}}),
                &mcp_server::Context::connection(),
            )
            .await;
        let answer = out[0].to_value();
        assert_eq!(answer["result"]["content"][0]["text"], expected, "{answer}");
    }
}
