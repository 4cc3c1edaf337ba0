//! One row per concern of the revision diff table (`shared/notes/spec.md`, section 3), checked
//! on each of the five revisions.
//!
//! Each row observes the adapter through its public API and renders what it saw as a short
//! string; the expected strings are in revision order 2024-11-05, 2025-03-26, 2025-06-18,
//! 2025-11-25, 2026-07-28.

use mcp_adapters::{
    Adapter, AdapterSet, CacheHint, CacheScope, Call, Failure, FailureKind, Incoming, InputRequest,
    NoTools, Operation, Outcome, ResultContext, Revision, ToolDefinition,
};
use mcp_wire::jsonrpc::{self, Id};
use serde_json::{Map, Value, json};

/// The table's columns: every published revision's descriptor, oldest first.
fn columns() -> Vec<Revision> {
    let mut columns = Revision::ALL.to_vec();
    columns.sort();
    columns
}

struct Row {
    concern: &'static str,
    expected: [&'static str; 5],
    observe: fn(Adapter) -> String,
}

fn yes(b: bool) -> String {
    if b { "yes" } else { "no" }.to_owned()
}

fn mapping(adapter: Adapter, kind: FailureKind) -> String {
    let m = adapter.failure_mapping(kind);
    format!("{} {}", m.status.as_u16(), m.code)
}

fn meta(adapter: Adapter) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": adapter.version(),
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// A request body for `method` with `params` (plus the 2026-07-28 `_meta`).
fn request(adapter: Adapter, method: &str, mut params: Map<String, Value>) -> Vec<u8> {
    if adapter.features().per_request_meta {
        params.insert("_meta".into(), meta(adapter));
    }
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}))
        .unwrap()
}

/// Decodes a body over HTTP with the headers the adapter's own client side would send.
fn decode_with_client_headers(adapter: Adapter, body: &[u8]) -> Incoming {
    let value: Value = serde_json::from_slice(body).unwrap();
    let params = value["params"].as_object().cloned().unwrap_or_default();
    let method = value["method"].as_str().unwrap();
    let headers = adapter
        .client_headers(method, &params, false, None)
        .unwrap();
    let decoded = adapter.decode_http(jsonrpc::decode(body), &headers, &NoTools);
    decoded.into_items().next().expect("one item")
}

fn call_of(item: Incoming) -> Box<Call> {
    match item {
        Incoming::Call(call) => call,
        other => panic!("expected a call, got {other:?}"),
    }
}

fn header_names(adapter: Adapter, method: &str, params: Value) -> String {
    let headers = adapter
        .client_headers(method, params.as_object().unwrap(), false, None)
        .unwrap();
    let names: Vec<String> = headers.into_iter().map(|(n, _)| n).collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(",")
    }
}

fn tool_view(adapter: Adapter, tool: Value) -> Option<Value> {
    adapter
        .project_tool(&ToolDefinition::new(tool, false))
        .definition
}

fn rows() -> Vec<Row> {
    vec![
        Row {
            concern: "server description",
            expected: [
                "initialize",
                "initialize",
                "initialize",
                "initialize",
                "server/discover",
            ],
            observe: |a| a.method(Operation::Describe).unwrap().to_owned(),
        },
        Row {
            concern: "handshake notification",
            expected: ["yes", "yes", "yes", "yes", "no"],
            observe: |a| yes(a.handshake_complete().is_some()),
        },
        Row {
            concern: "session (Mcp-Session-Id), lost session status",
            expected: ["yes 404", "yes 404", "yes 404", "yes 404", "no 400"],
            observe: |a| {
                let status = a
                    .failure_mapping(FailureKind::SessionNotFound)
                    .status
                    .as_u16();
                format!("{} {status}", yes(a.has_sessions()))
            },
        },
        Row {
            concern: "GET stream",
            expected: ["yes", "yes", "yes", "yes", "no"],
            observe: |a| yes(a.features().has_get_stream),
        },
        Row {
            concern: "MCP-Protocol-Version header on tools/list",
            expected: [
                "none",
                "none",
                "MCP-Protocol-Version",
                "MCP-Protocol-Version",
                "MCP-Protocol-Version,Mcp-Method",
            ],
            observe: |a| header_names(a, "tools/list", json!({})),
        },
        Row {
            concern: "Mcp-Name on tools/call",
            expected: [
                "none",
                "none",
                "MCP-Protocol-Version",
                "MCP-Protocol-Version",
                "MCP-Protocol-Version,Mcp-Method,Mcp-Name",
            ],
            observe: |a| header_names(a, "tools/call", json!({"name": "t", "arguments": {}})),
        },
        Row {
            concern: "missing Mcp-Method is refused",
            expected: ["accepted", "accepted", "accepted", "accepted", "400 -32020"],
            observe: |a| {
                let body = request(a, "tools/list", Map::new());
                let headers = vec![("MCP-Protocol-Version", a.version())];
                let decoded = a.decode_http(jsonrpc::decode(&body), &headers, &NoTools);
                match &decoded.items()[0] {
                    Incoming::Call(_) => "accepted".into(),
                    Incoming::Invalid(i) => mapping(a, i.failure.kind),
                    other => format!("{other:?}"),
                }
            },
        },
        Row {
            concern: "Mcp-Param-* mirrored from x-mcp-header",
            expected: ["none", "none", "none", "none", "Mcp-Param-Region"],
            observe: |a| {
                let tool = json!({"name": "t", "inputSchema": {"type": "object",
                    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}});
                let bindings = a.tool_header_bindings(&tool).unwrap();
                let params = json!({"name": "t", "arguments": {"region": "eu"}});
                let headers = a
                    .client_headers(
                        "tools/call",
                        params.as_object().unwrap(),
                        false,
                        Some(&bindings),
                    )
                    .unwrap();
                let params: Vec<String> = headers
                    .into_iter()
                    .filter(|(n, _)| n.starts_with("Mcp-Param-"))
                    .map(|(n, _)| n)
                    .collect();
                if params.is_empty() {
                    "none".into()
                } else {
                    params.join(",")
                }
            },
        },
        Row {
            concern: "batching",
            expected: ["refused", "2 items", "refused", "refused", "refused"],
            observe: |a| {
                let body = br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]"#;
                let decoded = a.decode(jsonrpc::decode(body));
                if decoded.is_batch() {
                    format!("{} items", decoded.items().len())
                } else {
                    assert!(
                        matches!(&decoded.items()[0], Incoming::Invalid(i) if i.failure.kind == FailureKind::InvalidRequest)
                    );
                    "refused".into()
                }
            },
        },
        Row {
            concern: "initialize in a batch",
            expected: ["n/a", "refused", "n/a", "n/a", "n/a"],
            observe: |a| {
                if !a.allows_batch() {
                    return "n/a".into();
                }
                let body = br#"[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}]"#;
                let decoded = a.decode(jsonrpc::decode(body));
                match &decoded.items()[0] {
                    Incoming::Invalid(i) if i.failure.kind == FailureKind::InvalidRequest => {
                        "refused".into()
                    }
                    other => format!("{other:?}"),
                }
            },
        },
        Row {
            concern: "unknown method",
            expected: [
                "200 -32601",
                "200 -32601",
                "200 -32601",
                "200 -32601",
                "404 -32601",
            ],
            observe: |a| mapping(a, FailureKind::UnknownMethod),
        },
        Row {
            concern: "header/body mismatch",
            expected: [
                "400 -32600",
                "400 -32600",
                "400 -32600",
                "400 -32600",
                "400 -32020",
            ],
            observe: |a| mapping(a, FailureKind::HeaderMismatch),
        },
        Row {
            concern: "unsupported version",
            expected: [
                "400 -32602",
                "400 -32602",
                "400 -32602",
                "400 -32602",
                "400 -32022",
            ],
            observe: |a| mapping(a, FailureKind::UnsupportedVersion),
        },
        Row {
            concern: "missing client capability",
            expected: [
                "200 -32603",
                "200 -32603",
                "200 -32603",
                "200 -32603",
                "400 -32021",
            ],
            observe: |a| mapping(a, FailureKind::MissingCapability),
        },
        Row {
            concern: "missing required _meta",
            expected: ["n/a", "n/a", "n/a", "n/a", "400 -32602"],
            observe: |a| {
                if !a.features().per_request_meta {
                    return "n/a".into();
                }
                let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
                match &a.decode(jsonrpc::decode(body)).items()[0] {
                    Incoming::Invalid(i) => mapping(a, i.failure.kind),
                    other => format!("{other:?}"),
                }
            },
        },
        Row {
            concern: "resultType on results",
            expected: ["none", "none", "none", "none", "complete"],
            observe: |a| {
                let body = a
                    .result_body(Operation::Ping, false, json!({}), &ResultContext::default())
                    .unwrap();
                body.get("resultType")
                    .and_then(Value::as_str)
                    .unwrap_or("none")
                    .to_owned()
            },
        },
        Row {
            concern: "serverInfo in result _meta",
            expected: ["no", "no", "no", "no", "yes"],
            observe: |a| {
                let info = json!({"name": "s", "version": "1"});
                let ctx = ResultContext {
                    server_info: Some(&info),
                    ..ResultContext::default()
                };
                let body = a
                    .result_body(Operation::ListTools, false, json!({"tools": []}), &ctx)
                    .unwrap();
                yes(body
                    .pointer("/_meta/io.modelcontextprotocol~1serverInfo")
                    .is_some())
            },
        },
        Row {
            concern: "server-to-client input",
            expected: [
                "InArguments",
                "InArguments",
                "Push",
                "Push",
                "InputRequired",
            ],
            observe: |a| format!("{:?}", a.features().ask),
        },
        Row {
            concern: "elicitation/create as a pushed request",
            expected: ["no", "no", "yes", "yes", "no"],
            observe: |a| {
                yes(a
                    .pushed_request(Id::from("q1"), &InputRequest::elicit("Go?", Value::Null))
                    .is_ok())
            },
        },
        Row {
            concern: "ttlMs/cacheScope on tools/list (and not on a retry)",
            expected: [
                "none",
                "none",
                "none",
                "none",
                "60000 public; retry 0 private",
            ],
            observe: |a| {
                let ctx = ResultContext {
                    cache: CacheHint {
                        ttl_ms: 60_000,
                        scope: CacheScope::Public,
                    },
                    ..ResultContext::default()
                };
                let fresh = a
                    .result_body(Operation::ListTools, false, json!({"tools": []}), &ctx)
                    .unwrap();
                let retry = a
                    .result_body(Operation::ReadResource, true, json!({"contents": []}), &ctx)
                    .unwrap();
                match (fresh.get("ttlMs"), fresh.get("cacheScope")) {
                    (Some(t), Some(s)) => format!(
                        "{t} {}; retry {} {}",
                        s.as_str().unwrap(),
                        retry["ttlMs"],
                        retry["cacheScope"].as_str().unwrap()
                    ),
                    _ => "none".into(),
                }
            },
        },
        Row {
            concern: "no cache hints on a non-cacheable result",
            expected: ["none", "none", "none", "none", "none"],
            observe: |a| {
                let body = a
                    .result_body(
                        Operation::CallTool,
                        false,
                        json!({"content": []}),
                        &ResultContext::default(),
                    )
                    .unwrap();
                if body.get("ttlMs").is_some() {
                    "ttlMs".into()
                } else {
                    "none".into()
                }
            },
        },
        Row {
            concern: "subscriptions/listen",
            expected: ["no", "no", "no", "no", "yes"],
            observe: |a| yes(a.operation("subscriptions/listen") == Some(Operation::Listen)),
        },
        Row {
            concern: "resources/subscribe",
            expected: ["yes", "yes", "yes", "yes", "no"],
            observe: |a| yes(a.operation("resources/subscribe").is_some()),
        },
        Row {
            concern: "inputSchema with a real union",
            expected: ["hidden", "hidden", "hidden", "hidden", "offered"],
            observe: |a| {
                let tool = json!({"name": "t", "inputSchema": {"type": "object", "properties": {
                    "v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}});
                if tool_view(a, tool).is_some() {
                    "offered".into()
                } else {
                    "hidden".into()
                }
            },
        },
        Row {
            concern: "x-mcp-header kept in the listed schema",
            expected: ["no", "no", "no", "no", "yes"],
            observe: |a| {
                let tool = json!({"name": "t", "inputSchema": {"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"}}}});
                let def = tool_view(a, tool).unwrap();
                yes(def
                    .pointer("/inputSchema/properties/region/x-mcp-header")
                    .is_some())
            },
        },
        Row {
            concern: "outputSchema (object root / non-object root)",
            expected: [
                "none/none",
                "none/none",
                "shown/none",
                "shown/none",
                "shown/shown",
            ],
            observe: |a| {
                let shown = |schema: Value| {
                    let def = tool_view(
                        a,
                        json!({"name": "t", "inputSchema": {"type": "object"},
                        "outputSchema": schema}),
                    )
                    .unwrap();
                    if def.get("outputSchema").is_some() {
                        "shown"
                    } else {
                        "none"
                    }
                };
                format!(
                    "{}/{}",
                    shown(json!({"type": "object"})),
                    shown(json!({"type": "array"}))
                )
            },
        },
        Row {
            concern: "structuredContent (object / array)",
            expected: [
                "text/text",
                "text/text",
                "object/text",
                "object/text",
                "object/array",
            ],
            observe: |a| {
                let kind = |structured: Value| {
                    let mut result = json!({"content": [], "structuredContent": structured});
                    a.project_tool_result(result.as_object_mut().unwrap());
                    match result.get("structuredContent") {
                        Some(Value::Object(_)) => "object",
                        Some(Value::Array(_)) => "array",
                        Some(_) => "other",
                        None => {
                            assert_eq!(result["content"][0]["type"], "text");
                            "text"
                        }
                    }
                };
                format!("{}/{}", kind(json!({"a": 1})), kind(json!([1, 2])))
            },
        },
        Row {
            concern: "display title",
            expected: ["none", "annotations.title", "title", "title", "title"],
            observe: |a| {
                let def = tool_view(
                    a,
                    json!({"name": "t", "title": "T", "inputSchema": {"type": "object"}}),
                )
                .unwrap();
                if def.get("title").is_some() {
                    "title".into()
                } else if def.pointer("/annotations/title").is_some() {
                    "annotations.title".into()
                } else {
                    "none".into()
                }
            },
        },
        Row {
            concern: "tool annotations",
            expected: ["no", "yes", "yes", "yes", "yes"],
            observe: |a| {
                let def = tool_view(
                    a,
                    json!({"name": "t", "inputSchema": {"type": "object"},
                    "annotations": {"readOnlyHint": true}}),
                )
                .unwrap();
                yes(def.get("annotations").is_some())
            },
        },
        Row {
            concern: "icons",
            expected: ["no", "no", "no", "yes", "yes"],
            observe: |a| {
                let r = a.project_resource(
                    &json!({"uri": "a:b", "name": "n", "icons": [{"src": "https://x/i.png"}]}),
                );
                yes(r.get("icons").is_some())
            },
        },
        Row {
            concern: "resource_link content",
            expected: [
                "text",
                "text",
                "resource_link",
                "resource_link",
                "resource_link",
            ],
            observe: |a| {
                let block = a.project_content(
                    &json!({"type": "resource_link", "uri": "file:///a", "name": "a"}),
                );
                block["type"].as_str().unwrap().to_owned()
            },
        },
        Row {
            concern: "audio content",
            expected: ["text", "audio", "audio", "audio", "audio"],
            observe: |a| {
                let block = a.project_content(
                    &json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}),
                );
                block["type"].as_str().unwrap().to_owned()
            },
        },
        Row {
            concern: "logging",
            expected: [
                "setLevel",
                "setLevel",
                "setLevel",
                "setLevel",
                "per-request _meta",
            ],
            observe: |a| {
                if a.features().per_request_log_level {
                    assert!(a.operation("logging/setLevel").is_none());
                    let mut params = Map::new();
                    params.insert(
                        "_meta".into(),
                        json!({
                        "io.modelcontextprotocol/protocolVersion": a.version(),
                        "io.modelcontextprotocol/clientCapabilities": {},
                        "io.modelcontextprotocol/logLevel": "warning"}),
                    );
                    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})).unwrap();
                    let call = call_of(
                        a.decode(jsonrpc::decode(&body))
                            .into_items()
                            .next()
                            .expect("one item"),
                    );
                    assert_eq!(call.log_level, Some(mcp_adapters::LogLevel::Warning));
                    "per-request _meta".into()
                } else {
                    let body = br#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}"#;
                    let call = call_of(
                        a.decode(jsonrpc::decode(body))
                            .into_items()
                            .next()
                            .expect("one item"),
                    );
                    assert_eq!(call.operation, Operation::SetLogLevel);
                    "setLevel".into()
                }
            },
        },
        Row {
            concern: "cancellation",
            expected: [
                "notification",
                "notification",
                "notification",
                "notification",
                "stream close",
            ],
            observe: |a| {
                assert_eq!(
                    a.operation("notifications/cancelled"),
                    Some(Operation::Cancelled)
                );
                if a.features().stream_close_cancels {
                    "stream close"
                } else {
                    "notification"
                }
                .into()
            },
        },
        Row {
            concern: "ping",
            expected: ["yes", "yes", "yes", "yes", "404 -32601"],
            observe: |a| {
                let body = request(a, "ping", Map::new());
                match decode_with_client_headers(a, &body) {
                    Incoming::Call(c) if c.operation == Operation::Ping => "yes".into(),
                    Incoming::Invalid(i) => mapping(a, i.failure.kind),
                    other => format!("{other:?}"),
                }
            },
        },
        Row {
            concern: "SSE resumability / polling",
            expected: ["no/no", "yes/no", "yes/no", "yes/yes", "no/no"],
            observe: |a| {
                format!(
                    "{}/{}",
                    yes(a.features().sse_resumable),
                    yes(a.features().sse_polling)
                )
            },
        },
        Row {
            concern: "core tasks",
            expected: ["no", "no", "no", "yes", "no"],
            observe: |a| yes(a.features().core_tasks),
        },
        Row {
            concern: "resource not found",
            expected: [
                "200 -32002",
                "200 -32002",
                "200 -32002",
                "200 -32002",
                "200 -32602",
            ],
            observe: |a| {
                let enc =
                    a.encode_failure(Some(Id::from(1)), &Failure::resource_not_found("file:///x"));
                assert_eq!(enc.to_value()["error"]["data"]["uri"], "file:///x");
                format!(
                    "{} {}",
                    enc.status.as_u16(),
                    enc.to_value()["error"]["code"]
                )
            },
        },
        Row {
            concern: "progress: message field / client-to-server",
            expected: ["no/yes", "yes/yes", "yes/yes", "yes/yes", "yes/no"],
            observe: |a| {
                let n = a.progress_notification(&Id::from(1), 1.0, None, Some("half"));
                format!(
                    "{}/{}",
                    yes(n["params"].get("message").is_some()),
                    yes(a.operation("notifications/progress").is_some())
                )
            },
        },
        Row {
            concern: "asking in tool arguments (mcpAnswers property)",
            expected: ["yes", "yes", "no", "no", "no"],
            observe: |a| {
                let def = a
                    .project_tool(&ToolDefinition::new(
                        json!({"name": "t", "inputSchema": {"type": "object"}}),
                        true,
                    ))
                    .definition
                    .unwrap();
                yes(def.pointer("/inputSchema/properties/mcpAnswers").is_some())
            },
        },
        Row {
            concern: "error without an id",
            expected: ["id null", "id null", "id null", "no id", "no id"],
            observe: |a| {
                let enc = a.encode_failure(None, &Failure::parse("x"));
                match enc.to_value().get("id") {
                    Some(Value::Null) => "id null".into(),
                    None => "no id".into(),
                    Some(other) => other.to_string(),
                }
            },
        },
        Row {
            concern: "extensions capability",
            expected: [
                "at initialize",
                "at initialize",
                "at initialize",
                "at initialize",
                "per request",
            ],
            observe: |a| {
                let caps =
                    a.project_server_capabilities(&json!({"tools": {}, "extensions": {"x": {}}}));
                match (
                    caps.get("extensions").is_some(),
                    a.features().per_request_meta,
                ) {
                    (false, _) => "no".into(),
                    (true, false) => "at initialize".into(),
                    (true, true) => "per request".into(),
                }
            },
        },
    ]
}

#[test]
fn every_concern_on_every_revision() {
    let mut failures = Vec::new();
    let columns = columns();
    for row in rows() {
        assert_eq!(
            row.expected.len(),
            columns.len(),
            "{}: a column per revision",
            row.concern
        );
        for (&revision, expected) in columns.iter().zip(row.expected) {
            let seen = (row.observe)(Adapter::new(revision));
            if seen != expected {
                failures.push(format!(
                    "{} on {revision}: expected {expected:?}, saw {seen:?}",
                    row.concern
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn negotiation_row() {
    // "Unsupported version" on handshake revisions: initialize negotiates down rather than
    // failing; only a modern-only server refuses.
    let set = AdapterSet::all();
    let body = jsonrpc::decode(
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2099-01-01","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
    );
    let headers: Vec<(&str, &str)> = Vec::new();
    let selected = set.select_http(&body, &headers, None, None).unwrap();
    assert_eq!(selected.adapter.revision(), Revision::V2025_11_25);
    let call = call_of(
        selected
            .adapter
            .decode(body)
            .into_items()
            .next()
            .expect("one item"),
    );
    assert_eq!(call.protocol_version.as_deref(), Some("2099-01-01"));
    let result = selected.adapter.describe_result(
        &set,
        &json!({"name": "s", "version": "1"}),
        &json!({}),
        None,
    );
    assert_eq!(result["protocolVersion"], "2025-11-25");
    let enc = selected
        .adapter
        .encode(
            &Call::new(Operation::Describe, Some(Id::from(1)), "initialize"),
            Outcome::Value(result),
            &ResultContext::default(),
        )
        .unwrap();
    assert_eq!(enc.to_value()["result"]["protocolVersion"], "2025-11-25");
}
