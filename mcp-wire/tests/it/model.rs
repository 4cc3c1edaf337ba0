//! Behaviour of the MCP model beyond the published examples: ordering, dispatch between union
//! members, pass-through of unknown members, numbers, typed messages and legacy shapes.

use mcp_wire::jsonrpc::{self, ErrorObject, Id};
use mcp_wire::model::*;
use mcp_wire::names::{error_code, meta};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn round_trip<T: Serialize + DeserializeOwned>(value: Value) -> T {
    let typed: T = serde_json::from_value(value.clone()).expect("deserializes");
    assert_eq!(serde_json::to_value(&typed).unwrap(), value);
    typed
}

#[test]
fn logging_levels_are_ordered_from_debug_to_emergency() {
    use LoggingLevel::*;
    let ordered = [
        Debug, Info, Notice, Warning, Error, Critical, Alert, Emergency,
    ];
    assert_eq!(LoggingLevel::ALL, ordered);
    for pair in ordered.windows(2) {
        assert!(pair[0] < pair[1], "{} < {}", pair[0], pair[1]);
    }
    assert!(Warning >= Notice && Warning < Error);
    let names = [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ];
    for (level, name) in ordered.into_iter().zip(names) {
        assert_eq!(level.as_str(), name);
        assert_eq!(name.parse::<LoggingLevel>().unwrap(), level);
        assert_eq!(serde_json::to_value(level).unwrap(), json!(name));
        assert_eq!(
            serde_json::from_value::<LoggingLevel>(json!(name)).unwrap(),
            level
        );
    }
    assert!("fatal".parse::<LoggingLevel>().is_err());
    assert!("WARNING".parse::<LoggingLevel>().is_err());
    assert!(serde_json::from_value::<LoggingLevel>(json!("verbose")).is_err());
}

#[test]
fn numbers_keep_their_integer_form() {
    for (progress, text) in [(50.0, "50"), (0.5, "0.5"), (-3.0, "-3"), (1e300, "1e+300")] {
        let params = ProgressNotificationParams {
            progress_token: Id::from("t"),
            progress,
            total: Some(100.0),
            message: None,
            meta: None,
            extra: Extra::new(),
        };
        let json = serde_json::to_string(&params).unwrap();
        assert!(json.contains(&format!("\"progress\":{text}")), "{json}");
        assert!(json.contains("\"total\":100"), "{json}");
        let back: ProgressNotificationParams = serde_json::from_str(&json).unwrap();
        assert_eq!(back.progress, progress);
    }
}

#[test]
fn unknown_members_pass_through_at_every_level() {
    let tool = json!({
        "name": "t",
        "inputSchema": {"type": "object", "x-vendor": [1, 2]},
        "annotations": {"readOnlyHint": true, "futureHint": "yes"},
        "icons": [{"src": "https://example.com/i.png", "futureSize": 3}],
        "_meta": {"com.example/owner": "me"},
        "futureMember": {"nested": null}
    });
    let tool: Tool = round_trip(tool);
    assert_eq!(tool.extra["futureMember"], json!({"nested": null}));
    assert_eq!(tool.annotations.unwrap().extra["futureHint"], "yes");
    assert_eq!(tool.meta.unwrap()["com.example/owner"], "me");
}

#[test]
fn structured_content_null_is_kept_and_absent_stays_absent() {
    let with_null: CallToolResult = round_trip(json!({"content": [], "structuredContent": null}));
    assert_eq!(with_null.structured_content, Some(Value::Null));
    let without: CallToolResult = round_trip(json!({"content": []}));
    assert_eq!(without.structured_content, None);
    // `content` is required by the schemas but read as empty when a peer omits it.
    let lenient: CallToolResult = serde_json::from_value(json!({"isError": true})).unwrap();
    assert!(lenient.content.is_empty());
}

#[test]
fn result_type_values() {
    let cases = [
        ("complete", ResultType::Complete),
        ("input_required", ResultType::InputRequired),
        ("task", ResultType::Task),
        ("something_new", ResultType::Other("something_new".into())),
    ];
    for (text, expected) in cases {
        let result: EmptyResult = round_trip(json!({"resultType": text}));
        assert_eq!(result.result_type, Some(expected));
    }
    let legacy: EmptyResult = round_trip(json!({}));
    assert_eq!(legacy.result_type, None);
}

#[test]
fn mrtr_results_dispatch_on_result_type() {
    let cases = [
        (
            json!({"resultType": "input_required", "requestState": "s"}),
            true,
        ),
        (json!({"resultType": "complete", "contents": []}), false),
        // A server of an earlier revision sends no resultType: complete.
        (json!({"contents": []}), false),
    ];
    for (value, input_required) in cases {
        let result: MrtrResult<ReadResourceResult> = round_trip(value.clone());
        assert_eq!(
            matches!(result, MrtrResult::InputRequired(_)),
            input_required,
            "{value}"
        );
    }
    assert!(!InputRequiredResult::default().is_well_formed());
    // The tag is enforced.
    assert!(
        serde_json::from_value::<InputRequiredResult>(json!({"resultType": "complete"})).is_err()
    );
}

#[test]
fn input_requests_and_responses_dispatch() {
    let requests: InputRequests = round_trip(json!({
        "a": {"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://x"}},
        "b": {"method": "roots/list"},
        "c": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
    }));
    assert!(
        matches!(&requests["a"], InputRequest::Elicit(r) if matches!(r.params, ElicitRequestParams::Url(_)))
    );
    assert_eq!(requests["b"].method(), "roots/list");
    assert!(matches!(requests["c"], InputRequest::CreateMessage(_)));
    let unknown = json!({"x": {"method": "tools/call", "params": {}}});
    assert!(serde_json::from_value::<InputRequests>(unknown).is_err());

    let responses: InputResponses = round_trip(json!({
        "a": {"action": "decline"},
        "b": {"roots": []},
        "c": {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}
    }));
    assert!(matches!(
        responses["a"],
        InputResponse::Elicit(ElicitResult {
            action: ElicitAction::Decline,
            ..
        })
    ));
    assert!(matches!(responses["b"], InputResponse::ListRoots(_)));
    assert!(matches!(responses["c"], InputResponse::CreateMessage(_)));
}

#[test]
fn elicitation_modes() {
    let legacy: ElicitRequestParams = round_trip(json!({
        "message": "m",
        "requestedSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}
    }));
    let ElicitRequestParams::Form(form) = legacy else {
        panic!("form expected")
    };
    assert_eq!(form.mode, None);
    assert!(matches!(
        form.requested_schema.properties["n"],
        PrimitiveSchema::Number(NumberSchema {
            kind: NumberKind::Integer,
            ..
        })
    ));

    let explicit: ElicitRequestParams = round_trip(json!({
        "mode": "form", "message": "m", "requestedSchema": {"type": "object", "properties": {}}
    }));
    assert!(matches!(
        explicit,
        ElicitRequestParams::Form(ElicitRequestFormParams { mode: Some(_), .. })
    ));

    // 2025-11-25 URL mode with elicitationId.
    let url: ElicitRequestParams = round_trip(json!({
        "mode": "url", "message": "m", "url": "https://x", "elicitationId": "e1"
    }));
    assert!(matches!(
        url,
        ElicitRequestParams::Url(ElicitRequestUrlParams {
            elicitation_id: Some(_),
            ..
        })
    ));

    // A form with a wrong mode constant is rejected rather than misread.
    let bad = json!({"mode": "popup", "message": "m", "requestedSchema": {"type": "object", "properties": {}}});
    assert!(serde_json::from_value::<ElicitRequestParams>(bad).is_err());

    let capability = ElicitationCapability::default();
    assert!(capability.supports_form() && !capability.supports_url());
    let url_only: ElicitationCapability = serde_json::from_value(json!({"url": {}})).unwrap();
    assert!(!url_only.supports_form() && url_only.supports_url());
}

#[test]
fn primitive_schema_dispatch() {
    let cases = [
        (
            json!({"type": "string", "enum": ["a"], "enumNames": ["A"]}),
            "LegacyTitledEnum",
        ),
        (
            json!({"type": "string", "enum": ["a"]}),
            "UntitledSingleSelectEnum",
        ),
        (
            json!({"type": "string", "oneOf": [{"const": "a", "title": "A"}]}),
            "TitledSingleSelectEnum",
        ),
        (json!({"type": "string", "format": "date"}), "String"),
        (json!({"type": "number", "minimum": 1.5}), "Number"),
        (json!({"type": "boolean"}), "Boolean"),
        (
            json!({"type": "array", "items": {"type": "string", "enum": ["a"]}}),
            "UntitledMultiSelectEnum",
        ),
        (
            json!({"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}}),
            "TitledMultiSelectEnum",
        ),
        (json!({"type": "object", "properties": {}}), "Other"),
        (json!({"enum": ["no type"]}), "Other"),
    ];
    for (value, variant) in cases {
        let schema: PrimitiveSchema = round_trip(value.clone());
        let debug = format!("{schema:?}");
        assert!(
            debug.starts_with(&format!("{variant}(")),
            "{value} gave {debug}"
        );
    }
}

#[test]
fn request_meta_view() {
    let params: CallToolRequestParams = round_trip(json!({
        "name": "get_weather",
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "io.modelcontextprotocol/logLevel": "warning",
            "progressToken": 7,
            "com.example/trace": "abc"
        }
    }));
    let map = params.meta.clone().unwrap();
    let view = RequestMeta::from_meta(&map).unwrap();
    assert_eq!(view.protocol_version.as_deref(), Some("2026-07-28"));
    assert!(
        view.client_capabilities
            .as_ref()
            .unwrap()
            .elicitation
            .is_some()
    );
    assert_eq!(view.client_info.as_ref().unwrap().name, "c");
    assert_eq!(view.log_level, Some(LoggingLevel::Warning));
    assert_eq!(view.progress_token, Some(Id::Number(7)));
    assert_eq!(view.extra["com.example/trace"], "abc");
    assert_eq!(view.into_meta(), map);

    let mut bad = map;
    bad.insert(meta::LOG_LEVEL.into(), json!("loud"));
    assert!(RequestMeta::from_meta(&bad).is_err());

    let result_meta = json!({"io.modelcontextprotocol/subscriptionId": "listen-1"});
    let view = ResultMeta::from_meta(result_meta.as_object().unwrap()).unwrap();
    assert_eq!(view.subscription_id, Some(Id::from("listen-1")));
}

#[test]
fn typed_requests() {
    // Absent params read as empty for all-optional params types; params are always written.
    let bare = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let list: ListToolsRequest = serde_json::from_value(bare).unwrap();
    assert_eq!(list.params, PaginatedRequestParams::default());
    assert_eq!(
        serde_json::to_value(&list).unwrap(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}})
    );

    // The method must match.
    let other = json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/list", "params": {}});
    assert!(serde_json::from_value::<ListToolsRequest>(other.clone()).is_err());
    let raw: jsonrpc::Request = serde_json::from_value(other).unwrap();
    assert!(matches!(
        ListToolsRequest::from_request(raw),
        Err(ConvertError::WrongMethod { .. })
    ));

    // Required params must be present.
    let missing = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call"});
    assert!(serde_json::from_value::<CallToolRequest>(missing).is_err());

    // Raw to typed and back.
    let call = CallToolRequest::new(Id::from("x"), CallToolRequestParams::new("t", None));
    let raw = call.clone().into_request().unwrap();
    assert_eq!(raw.method, "tools/call");
    assert_eq!(CallToolRequest::from_request(raw).unwrap(), call);
}

#[test]
fn typed_responses() {
    let ok = jsonrpc::Response::success(
        Id::Number(1),
        json!({"resultType": "input_required", "requestState": "s"}),
    );
    let typed = CallToolResultResponse::from_response(ok).unwrap();
    assert!(matches!(typed.result, MrtrResult::InputRequired(_)));

    let err = jsonrpc::Response::error(Some(Id::Number(1)), ErrorObject::method_not_found("x"));
    assert!(matches!(
        CallToolResultResponse::from_response(err),
        Err(ConvertError::ErrorResponse(_))
    ));

    let typed_error = errors_as_responses();
    assert_eq!(typed_error["id"], Value::Null);
}

fn errors_as_responses() -> Value {
    let error = unsupported_protocol_version(vec!["2026-07-28".into()], "1900-01-01");
    let response = UnsupportedProtocolVersionError {
        id: None,
        error: error.clone(),
    };
    let value = serde_json::to_value(&response).unwrap();
    assert_eq!(
        value["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "1900-01-01"})
    );
    // Absent and null ids both read as None.
    let mut without_id = value.clone();
    without_id.as_object_mut().unwrap().remove("id");
    let read: UnsupportedProtocolVersionError = serde_json::from_value(without_id).unwrap();
    assert_eq!(read, response);
    // Typed data converts to and from the untyped wire object.
    let untyped = error.into_untyped().unwrap();
    assert_eq!(untyped.code, error_code::UNSUPPORTED_PROTOCOL_VERSION);
    let data: UnsupportedProtocolVersionData = untyped.data_as().unwrap().unwrap();
    assert_eq!(data.requested, "1900-01-01");
    value
}

#[test]
fn legacy_shapes() {
    // 2024-11-05 initialize.
    let _: InitializeRequest = round_trip(json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2024-11-05",
                   "capabilities": {"roots": {"listChanged": true}, "sampling": {}},
                   "clientInfo": {"name": "c", "version": "1"}}
    }));
    let result: InitializeResultResponse = round_trip(json!({
        "jsonrpc": "2.0", "id": 0,
        "result": {"protocolVersion": "2024-11-05",
                   "capabilities": {"logging": {}, "tools": {"listChanged": true},
                                    "resources": {"subscribe": true}},
                   "serverInfo": {"name": "s", "version": "2"},
                   "instructions": "be nice"}
    }));
    assert_eq!(result.result.server_info.name, "s");
    // 2024-11-05 completion reference to a resource.
    let complete: CompleteRequestParams = round_trip(json!({
        "ref": {"type": "ref/resource", "uri": "file:///{p}"},
        "argument": {"name": "p", "value": "a"}
    }));
    assert!(matches!(
        complete.reference,
        CompletionReference::Resource(_)
    ));
    // 2025-11-25 task and URL elicitation required.
    let task: TaskResult = round_trip(json!({
        "taskId": "t1", "status": "input_required", "createdAt": "2025-01-01T00:00:00Z",
        "lastUpdatedAt": "2025-01-01T00:00:01Z", "ttl": null, "pollInterval": 500,
        "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t1"}}
    }));
    assert_eq!(task.task.status, TaskStatus::InputRequired);
    assert_eq!(task.task.ttl, None);
    let _: UrlElicitationRequiredError = round_trip(json!({
        "jsonrpc": "2.0", "id": 4,
        "error": {"code": -32042, "message": "URL elicitation required",
                  "data": {"elicitations": [{"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e"}]}}
    }));
    // Sampling with a single block and legacy includeContext.
    let _: CreateMessageRequestParams = round_trip(json!({
        "messages": [{"role": "user", "content": {"type": "image", "data": "AA==", "mimeType": "image/png"}}],
        "includeContext": "thisServer", "temperature": 0.7, "maxTokens": 10, "stopSequences": ["\n"]
    }));
    // Cancellation without requestId (allowed in 2025-11-25).
    let _: CancelledNotification = round_trip(json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"reason": "r"}
    }));
}

#[test]
fn content_blocks_reject_unknown_types() {
    assert!(serde_json::from_value::<ContentBlock>(json!({"type": "video", "data": ""})).is_err());
    assert!(serde_json::from_value::<ContentBlock>(json!({"text": "no type"})).is_err());
    let block = ContentBlock::text("hi");
    assert_eq!(
        serde_json::to_value(&block).unwrap(),
        json!({"type": "text", "text": "hi"})
    );
    assert_eq!(block.as_text(), Some("hi"));
}

#[test]
fn tool_display_name_precedence() {
    let mut tool = Tool::new("name", json!({"type": "object"}));
    assert_eq!(tool.display_name(), "name");
    tool.annotations = Some(ToolAnnotations {
        title: Some("annotated".into()),
        ..Default::default()
    });
    assert_eq!(tool.display_name(), "annotated");
    tool.title = Some("titled".into());
    assert_eq!(tool.display_name(), "titled");
}
