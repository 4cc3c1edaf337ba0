//! Every message the adapters encode for revision R validates against R's official
//! `schema.json`: results, errors, notifications, pushed requests, input-required results,
//! and the client's own requests.

use crate::common;

use std::collections::BTreeMap;

use common::assert_valid;
use mcp_adapters::{
    Adapter, AdapterSet, Answers, CacheHint, CacheScope, Call, ClientContext, Failure, FailureKind,
    InputRequest, Operation, Outcome, ResultContext, Revision, ToolDefinition,
};
use mcp_wire::jsonrpc::Id;
use serde_json::{Map, Value, json};

fn server_info() -> Value {
    json!({"name": "srv", "version": "1.2.3", "title": "Server", "websiteUrl": "https://example.com",
           "icons": [{"src": "https://example.com/i.png"}], "description": "d"})
}

fn ctx(info: &Value) -> ResultContext<'_> {
    ResultContext {
        server_info: Some(info),
        server_info_projected: false,
        cache: CacheHint {
            ttl_ms: 1000,
            scope: CacheScope::Public,
        },
    }
}

fn call(op: Operation, method: &str) -> Call {
    Call::new(op, Some(Id::from(11)), method.to_owned())
}

fn declared_tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new(
            json!({"name": "weather", "title": "Weather", "description": "Forecast",
                "icons": [{"src": "https://example.com/w.png", "mimeType": "image/png"}],
                "annotations": {"readOnlyHint": true},
                "_meta": {"com.example/x": 1},
                "inputSchema": {"type": "object",
                    "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region"},
                        "day": {"anyOf": [{"$ref": "#/$defs/Day"}, {"type": "null"}]}
                    },
                    "required": ["region"],
                    "$defs": {"Day": {"type": "string", "enum": ["mon", "tue"]}}},
                "outputSchema": {"type": "object", "properties": {"temp": {"type": "number"}}}}),
            true,
        ),
        ToolDefinition::new(
            json!({"name": "list", "inputSchema": {"type": "object", "additionalProperties": false},
                   "outputSchema": {"type": "array", "items": {"type": "integer"}}}),
            false,
        ),
        ToolDefinition::new(
            json!({"name": "union", "inputSchema": {"type": "object", "properties": {
                "v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}}),
            false,
        ),
    ]
}

fn all_content() -> Value {
    json!([
        {"type": "text", "text": "hello", "annotations": {"audience": ["user"], "priority": 0.5}},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "file:///a.txt", "name": "a", "title": "A file",
         "description": "the file", "mimeType": "text/plain",
         "icons": [{"src": "https://example.com/f.png"}]},
        {"type": "resource", "resource": {"uri": "file:///b.txt", "mimeType": "text/plain", "text": "b"}}
    ])
}

/// (definition, message) pairs an adapter encodes; each must validate.
fn server_messages(adapter: Adapter) -> Vec<(&'static str, Value)> {
    let r = adapter.revision();
    let modern = adapter.features().result_envelope;
    let info = server_info();
    let ctx = ctx(&info);
    let set = AdapterSet::all();
    let mut out: Vec<(&'static str, Value)> = Vec::new();
    let response = |result_def: &'static str| -> &'static str {
        if modern {
            match result_def {
                "ListToolsResult" => "ListToolsResultResponse",
                "CallToolResult" => "CallToolResultResponse",
                "ListPromptsResult" => "ListPromptsResultResponse",
                "GetPromptResult" => "GetPromptResultResponse",
                "ListResourcesResult" => "ListResourcesResultResponse",
                "ListResourceTemplatesResult" => "ListResourceTemplatesResultResponse",
                "ReadResourceResult" => "ReadResourceResultResponse",
                "CompleteResult" => "CompleteResultResponse",
                "DiscoverResult" => "DiscoverResultResponse",
                "SubscriptionsListenResult" => "SubscriptionsListenResultResponse",
                _ => "JSONRPCResultResponse",
            }
        } else {
            "JSONRPCResponse"
        }
    };
    let result = |def: &'static str, op: Operation, method: &str, value: Value| {
        let enc = adapter
            .encode(&call(op, method), Outcome::Value(value), &ctx)
            .unwrap();
        assert_eq!(enc.status.as_u16(), 200, "{r} {method}: {}", enc.to_value());
        [
            (def, enc.to_value()["result"].clone()),
            (response(def), enc.to_value()),
        ]
    };

    // Describe.
    let caps = json!({"tools": {"listChanged": true}, "resources": {"subscribe": true, "listChanged": true},
                      "prompts": {}, "logging": {}, "completions": {}, "extensions": {"com.example/x": {}},
                      "tasks": {"list": {}}});
    let describe = adapter.describe_result(&set, &info, &caps, Some("Be nice."));
    if adapter.has_handshake() {
        out.extend(result(
            "InitializeResult",
            Operation::Describe,
            "initialize",
            describe,
        ));
    } else {
        out.extend(result(
            "DiscoverResult",
            Operation::Describe,
            "server/discover",
            describe,
        ));
    }

    // Tools.
    let tools: Vec<Value> = declared_tools()
        .iter()
        .filter_map(|t| adapter.project_tool(t).definition)
        .collect();
    for tool in &tools {
        out.push(("Tool", tool.clone()));
    }
    out.extend(result(
        "ListToolsResult",
        Operation::ListTools,
        "tools/list",
        json!({"tools": tools, "nextCursor": "c2"}),
    ));
    for structured in [json!({"temp": 21.5}), json!([1, 2, 3]), Value::Null] {
        let mut value = json!({"content": all_content(), "isError": false});
        if !structured.is_null() {
            value["structuredContent"] = structured;
        }
        out.extend(result(
            "CallToolResult",
            Operation::CallTool,
            "tools/call",
            value,
        ));
    }
    out.extend(result(
        "CallToolResult",
        Operation::CallTool,
        "tools/call",
        json!({"content": [], "structuredContent": [1, 2]}),
    ));
    // A typed tool's structured output written from its JSON text.
    for output in [
        json!({"temp": 21.5, "note": "a \"b\"\n"}),
        json!([1, 2]),
        json!(7),
    ] {
        for structured in [true, false] {
            let json = mcp_adapters::ToolResult::output(&output).unwrap();
            let json = if structured {
                json
            } else {
                json.without_structured_content()
            };
            let enc = adapter
                .encode(
                    &call(Operation::CallTool, "tools/call"),
                    Outcome::Tool(json),
                    &ctx,
                )
                .unwrap();
            out.push(("CallToolResult", enc.to_value()["result"].clone()));
            out.push((response("CallToolResult"), enc.to_value()));
        }
    }

    // Prompts.
    let prompt = adapter.project_prompt(&json!({"name": "p", "title": "P", "description": "d",
        "icons": [{"src": "https://example.com/p.png"}],
        "arguments": [{"name": "a", "title": "A", "required": true}]}));
    out.push(("Prompt", prompt.clone()));
    out.extend(result(
        "ListPromptsResult",
        Operation::ListPrompts,
        "prompts/list",
        json!({"prompts": [prompt]}),
    ));
    let messages: Vec<Value> = all_content()
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!({"role": "user", "content": c}))
        .collect();
    out.extend(result(
        "GetPromptResult",
        Operation::GetPrompt,
        "prompts/get",
        json!({"description": "d", "messages": messages}),
    ));

    // Resources.
    let resource =
        adapter.project_resource(&json!({"uri": "file:///a.txt", "name": "a", "title": "A",
        "mimeType": "text/plain", "size": 3, "icons": [{"src": "https://example.com/a.png"}],
        "annotations": {"audience": ["assistant"]}, "_meta": {"com.example/y": true}}));
    out.push(("Resource", resource.clone()));
    out.extend(result(
        "ListResourcesResult",
        Operation::ListResources,
        "resources/list",
        json!({"resources": [resource]}),
    ));
    let template = adapter.project_resource(
        &json!({"uriTemplate": "file:///{path}", "name": "files", "title": "Files"}),
    );
    out.extend(result(
        "ListResourceTemplatesResult",
        Operation::ListResourceTemplates,
        "resources/templates/list",
        json!({"resourceTemplates": [template]}),
    ));
    out.extend(result(
        "ReadResourceResult",
        Operation::ReadResource,
        "resources/read",
        json!({"contents": [{"uri": "file:///a.txt", "mimeType": "text/plain", "text": "abc"},
                            {"uri": "file:///b.bin", "blob": "AAEC"}]}),
    ));
    out.extend(result(
        "CompleteResult",
        Operation::Complete,
        "completion/complete",
        json!({"completion": {"values": ["a", "b"], "total": 2, "hasMore": false}}),
    ));
    if adapter.features().has_ping {
        out.extend(result("EmptyResult", Operation::Ping, "ping", json!({})));
    }
    if adapter.features().has_listen {
        out.extend(result(
            "SubscriptionsListenResult",
            Operation::Listen,
            "subscriptions/listen",
            json!({"_meta": {"io.modelcontextprotocol/subscriptionId": 11}}),
        ));
    }

    // Errors, with an id.
    let error_def = if adapter.features().error_id_optional {
        "JSONRPCErrorResponse"
    } else {
        "JSONRPCError"
    };
    let failures = [
        Failure::parse("bad"),
        Failure::invalid_request("bad"),
        Failure::unknown_method("nope"),
        Failure::unknown_tool("nope"),
        Failure::resource_not_found("file:///missing"),
        Failure::invalid_params("bad"),
        Failure::missing_meta("missing _meta"),
        Failure::header_mismatch("Mcp-Name differs"),
        Failure::unsupported_version("1999-01-01", &Revision::ALL),
        Failure::missing_capability(json!({"elicitation": {}})),
        Failure::session_not_found(),
        Failure::new(FailureKind::OriginRejected, "origin"),
        Failure::internal("boom"),
        Failure::unavailable("the session store is unavailable"),
        Failure::new(FailureKind::Unauthorized, "no valid access token"),
        Failure::new(FailureKind::InsufficientScope, "the token lacks mcp:deploy"),
    ];
    for failure in &failures {
        let enc = adapter.encode_failure(Some(Id::from("e1")), failure);
        out.push((error_def, enc.to_value().clone()));
        if modern {
            // The three MCP errors are whole responses; the JSON-RPC ones are error objects.
            match failure.kind {
                FailureKind::HeaderMismatch => {
                    out.push(("HeaderMismatchError", enc.to_value().clone()))
                }
                FailureKind::UnsupportedVersion => {
                    out.push(("UnsupportedProtocolVersionError", enc.to_value().clone()));
                }
                FailureKind::MissingCapability => {
                    out.push((
                        "MissingRequiredClientCapabilityError",
                        enc.to_value().clone(),
                    ));
                }
                _ => {}
            }
            let object = match failure.kind {
                FailureKind::UnknownMethod => Some("MethodNotFoundError"),
                FailureKind::InvalidParams
                | FailureKind::MissingMeta
                | FailureKind::ResourceNotFound => Some("InvalidParamsError"),
                FailureKind::Parse => Some("ParseError"),
                FailureKind::InvalidRequest
                | FailureKind::Unauthorized
                | FailureKind::InsufficientScope => Some("InvalidRequestError"),
                FailureKind::Internal | FailureKind::Unavailable => Some("InternalError"),
                _ => None,
            };
            if let Some(def) = object {
                out.push((def, enc.to_value()["error"].clone()));
            }
        }
    }
    if adapter.features().error_id_optional {
        out.push((
            error_def,
            adapter
                .encode_failure(None, &Failure::parse("x"))
                .to_value(),
        ));
    }

    // Notifications.
    let progress = adapter.progress_notification(&Id::from("tok"), 1.0, Some(2.0), Some("half"));
    out.push(("ProgressNotification", progress.clone()));
    out.push(("JSONRPCNotification", progress));
    let log = adapter.log_notification(
        mcp_adapters::LogLevel::Warning,
        json!({"k": "v"}),
        Some("db"),
    );
    out.push(("LoggingMessageNotification", log.clone()));
    out.push(("JSONRPCNotification", log));
    let mut uri = Map::new();
    uri.insert("uri".into(), "file:///a.txt".into());
    let sub = Id::from(5);
    out.push((
        "ResourceUpdatedNotification",
        adapter.change_notification("notifications/resources/updated", Some(uri), Some(&sub)),
    ));
    out.push((
        "ToolListChangedNotification",
        adapter.change_notification("notifications/tools/list_changed", None, Some(&sub)),
    ));

    if adapter.features().has_listen {
        out.push((
            "SubscriptionsAcknowledgedNotification",
            adapter.subscriptions_acknowledged(
                &sub,
                json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///a.txt"]}),
            ),
        ));
    }
    out.push((
        "CancelledNotification",
        adapter.cancelled_notification(&Id::from(3), Some("user")),
    ));

    // Pushed requests.
    if adapter.has_handshake() {
        let sampling = InputRequest::create_message(
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 10})
                .as_object()
                .unwrap()
                .clone(),
        );
        let pushed = adapter.pushed_request(Id::from("s-1"), &sampling).unwrap();
        out.push(("CreateMessageRequest", pushed.clone()));
        out.push(("JSONRPCRequest", pushed));
        let roots = adapter
            .pushed_request(Id::from("s-2"), &InputRequest::list_roots())
            .unwrap();
        out.push(("ListRootsRequest", roots.clone()));
        out.push(("JSONRPCRequest", roots));
        if adapter.features().has_elicitation {
            let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
            let pushed = adapter
                .pushed_request(Id::from("q-1"), &InputRequest::elicit("Name?", schema))
                .unwrap();
            out.push(("ElicitRequest", pushed.clone()));
            out.push(("JSONRPCRequest", pushed));
        }
        if adapter.features().url_elicitation {
            let pushed = adapter
                .pushed_request(
                    Id::from("q-2"),
                    &InputRequest::elicit_url("Sign in", "https://example.com/login"),
                )
                .unwrap();
            out.push(("ElicitRequest", pushed.clone()));
            out.push(("JSONRPCRequest", pushed));
        }
    }

    // Input-required results.
    let mut requests = BTreeMap::new();
    requests.insert(
        "login".to_owned(),
        InputRequest::elicit(
            "Your GitHub login?",
            json!({"type": "object", "properties": {"name": {"type": "string"}, "ok": {"type": "boolean"}}}),
        ),
    );
    if adapter.features().ask != mcp_adapters::AskMechanism::Push {
        requests.insert("roots".to_owned(), InputRequest::list_roots());
        let mut tool_call = call(Operation::CallTool, "tools/call");
        let mut earlier = Answers::new();
        earlier.insert(
            "older",
            Ok(json!({"action": "accept", "content": {"x": 1}})),
        );
        tool_call.answers = Some(earlier);
        let enc = adapter
            .encode(
                &tool_call,
                Outcome::InputRequired {
                    requests: requests.clone(),
                    state: Some("st".into()),
                },
                &ctx,
            )
            .unwrap();
        assert_eq!(enc.status.as_u16(), 200);
        if modern {
            out.push(("InputRequiredResult", enc.to_value()["result"].clone()));
            out.push(("CallToolResultResponse", enc.to_value()));
            for (op, method, def) in [
                (
                    Operation::GetPrompt,
                    "prompts/get",
                    "GetPromptResultResponse",
                ),
                (
                    Operation::ReadResource,
                    "resources/read",
                    "ReadResourceResultResponse",
                ),
            ] {
                let enc = adapter
                    .encode(
                        &call(op, method),
                        Outcome::InputRequired {
                            requests: BTreeMap::new(),
                            state: Some("s".into()),
                        },
                        &ctx,
                    )
                    .unwrap();
                assert!(enc.to_value()["result"].get("ttlMs").is_none());
                out.push((def, enc.to_value()));
            }
        } else {
            out.push(("CallToolResult", enc.to_value()["result"].clone()));
            out.push(("JSONRPCResponse", enc.to_value()));
        }
    }
    out
}

/// The client's own messages.
fn client_messages(adapter: Adapter) -> Vec<(&'static str, Value)> {
    let client = ClientContext {
        info: Some(json!({"name": "cli", "version": "0.1", "title": "Client", "websiteUrl": "https://example.com"})),
        capabilities: Some(
            json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {"listChanged": true},
                   "extensions": {"x": {}}})
            .as_object()
            .unwrap()
            .clone(),
        ),
    };
    let mut out = Vec::new();
    let (method, params) = adapter.handshake_request(&client);
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    out.push((
        if adapter.has_handshake() {
            "InitializeRequest"
        } else {
            "DiscoverRequest"
        },
        request.clone(),
    ));
    out.push(("JSONRPCRequest", request));
    if let Some(done) = adapter.handshake_complete() {
        out.push(("InitializedNotification", done.clone()));
        out.push(("JSONRPCNotification", done));
    }
    let mut params = Map::new();
    params.insert("name".into(), "weather".into());
    params.insert("arguments".into(), json!({"region": "eu"}));
    let token = Id::from("p1");
    let mut params = adapter.client_params(
        params,
        &client,
        Some(mcp_adapters::LogLevel::Info),
        Some(&token),
    );
    let mut answers = Answers::new();
    answers.insert(
        "login",
        Ok(json!({"action": "accept", "content": {"name": "octocat"}})),
    );
    if adapter.features().carries_state() {
        adapter
            .attach_answers("tools/call", &mut params, &answers, Some("st"))
            .unwrap();
    }
    let request = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params});
    out.push(("CallToolRequest", request.clone()));
    out.push(("JSONRPCRequest", request));
    let list = adapter.client_params(Map::new(), &client, None, None);
    out.push((
        "ListToolsRequest",
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": list}),
    ));
    if adapter.has_handshake() {
        let reply = adapter.answer_pushed(Id::from("q-1"), Ok(json!({"roots": []})));
        out.push(("JSONRPCResponse", reply));
    }
    out
}

#[test]
fn every_server_message_validates() {
    for revision in Revision::ALL {
        let adapter = Adapter::new(revision);
        let messages = server_messages(adapter);
        assert!(
            messages.len() > 30,
            "{revision}: only {} messages",
            messages.len()
        );
        for (definition, message) in messages {
            assert_valid(revision, definition, &message);
        }
    }
}

#[test]
fn every_client_message_validates() {
    for revision in Revision::ALL {
        for (definition, message) in client_messages(Adapter::new(revision)) {
            assert_valid(revision, definition, &message);
        }
    }
}

#[test]
fn without_projection_some_messages_would_not_validate() {
    // The validation above is not vacuous: the unprojected superset fails older schemas.
    let raw_link = json!({"content": [{"type": "resource_link", "uri": "file:///a", "name": "a"}]});
    common::assert_invalid(Revision::V2025_03_26, "CallToolResult", &raw_link);
    common::assert_invalid(
        Revision::V2026_07_28,
        "ListToolsResult",
        &json!({"tools": []}),
    );
    common::assert_invalid(
        Revision::V2025_06_18,
        "CallToolResult",
        &json!({"content": [], "structuredContent": [1]}),
    );
}
