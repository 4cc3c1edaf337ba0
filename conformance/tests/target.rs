//! The fixture server answers what the suite's scenario descriptions ask for, on the revisions
//! the requirement sets run at. Socket-free (through `Server::handle_all`); every message the
//! server sends is validated against the revision's official `schema.json`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use mcp_conformance_peers::target;
use mcp_server::{Context, Outgoing, Revision, Server};
use serde_json::{Value, json};

/// `MCP_SPEC_SCHEMAS`, or `../shared/spec-schemas` beside the workspace; with `CI=true` a
/// missing folder fails the test.
fn schemas_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("MCP_SPEC_SCHEMAS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/spec-schemas"),
        PathBuf::from,
    );
    if dir.join("2026-07-28").join("schema.json").is_file() {
        return Some(dir);
    }
    assert_ne!(
        std::env::var("CI").as_deref(),
        Ok("true"),
        "the official schemas are missing at {} (set MCP_SPEC_SCHEMAS)",
        dir.display()
    );
    eprintln!(
        "notice: no official schemas at {}; not validating",
        dir.display()
    );
    None
}

/// Panics unless `message` is a valid `JSONRPCMessage` of `revision`.
fn validate(revision: Revision, message: &Value) {
    type Validators = Mutex<HashMap<Revision, Option<jsonschema::Validator>>>;
    static VALIDATORS: OnceLock<Validators> = OnceLock::new();
    let mut validators = VALIDATORS
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap();
    let validator = validators.entry(revision).or_insert_with(|| {
        let dir = schemas_dir()?;
        let path = dir.join(revision.as_str()).join("schema.json");
        let mut document: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("readable schema"))
                .expect("the schema is JSON");
        let defs = if document.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        };
        document["$ref"] = json!(format!("#/{defs}/JSONRPCMessage"));
        Some(jsonschema::validator_for(&document).expect("the schema compiles"))
    });
    if let Some(validator) = validator {
        let errors: Vec<String> = validator
            .iter_errors(message)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "invalid on {revision:?}: {errors:?}\n{message:#}"
        );
    }
}

/// One client connection, socket-free.
struct Peer {
    server: Server,
    ctx: Context,
    revision: Revision,
    next_id: i64,
}

/// The capabilities the test client declares: it can answer every kind of question.
fn capabilities() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {}})
}

impl Peer {
    async fn new(revision: Revision) -> Self {
        let mut peer = Self {
            server: target::server().expect("the fixture declarations are valid"),
            ctx: Context::connection(),
            revision,
            next_id: 0,
        };
        if revision != Revision::V2026_07_28 {
            let result = peer
                .ok(
                    "initialize",
                    json!({
                        "protocolVersion": revision.as_str(),
                        "capabilities": capabilities(),
                        "clientInfo": {"name": "fixture-test", "version": "1"},
                    }),
                )
                .await;
            assert_eq!(result["protocolVersion"], revision.as_str());
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            let out = peer.server.handle_all(initialized, &peer.ctx).await;
            assert!(out.is_empty(), "notifications/initialized got {out:?}");
        }
        peer
    }

    /// The response to one request (after validating everything the server sent).
    async fn request(&mut self, method: &str, mut params: Value) -> Value {
        if self.revision == Revision::V2026_07_28 {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": self.revision.as_str(),
                "io.modelcontextprotocol/clientCapabilities": capabilities(),
            });
        }
        self.next_id += 1;
        let message =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        let out = self.server.handle_all(message, &self.ctx).await;
        let messages: Vec<Value> = out.iter().map(Outgoing::to_value).collect();
        for message in &messages {
            validate(self.revision, message);
        }
        let response = messages.last().cloned().expect("a response");
        assert_eq!(response["id"], json!(self.next_id), "{response}");
        response
    }

    async fn ok(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params).await;
        assert!(response.get("error").is_none(), "{method}: {response}");
        response["result"].clone()
    }

    async fn names(&mut self, method: &str, field: &str, key: &str) -> Vec<String> {
        let result = self.ok(method, json!({})).await;
        let items = result[field].as_array().expect("a list").clone();
        for item in &items {
            assert!(
                item["description"].is_string(),
                "{method}: {item} has no description"
            );
        }
        items
            .iter()
            .map(|item| item[key].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

const TOOLS: &[&str] = &[
    "test_simple_text",
    "test_trace_context",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_error_handling",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "test_missing_capability",
    "test_streaming_elicitation",
    "test_logging_tool",
    "test_custom_headers",
];

const MRTR_TOOLS: &[&str] = &[
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
];

#[tokio::test]
async fn every_fixture_is_listed_with_a_description() {
    for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
        let mut peer = Peer::new(revision).await;
        let tools = peer.names("tools/list", "tools", "name").await;
        let mut expected: Vec<&str> = TOOLS.to_vec();
        if revision == Revision::V2026_07_28 {
            expected.extend(MRTR_TOOLS);
            expected.push("json_schema_2020_12_tool");
        }
        for name in expected {
            assert!(
                tools.iter().any(|t| t == name),
                "{revision:?}: no tool {name}"
            );
        }
        let resources = peer.names("resources/list", "resources", "uri").await;
        for uri in [
            "test://static-text",
            "test://static-binary",
            "test://watched-resource",
        ] {
            assert!(resources.iter().any(|r| r == uri), "{revision:?}: no {uri}");
        }
        let templates = peer
            .names(
                "resources/templates/list",
                "resourceTemplates",
                "uriTemplate",
            )
            .await;
        assert_eq!(templates, ["test://template/{id}/data"]);
        let prompts = peer.names("prompts/list", "prompts", "name").await;
        for name in [
            "test_simple_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image",
        ] {
            assert!(
                prompts.iter().any(|p| p == name),
                "{revision:?}: no prompt {name}"
            );
        }
    }
}

#[tokio::test]
async fn fixtures_answer_as_the_scenarios_describe() {
    for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
        let mut peer = Peer::new(revision).await;
        let call = |name: &str| json!({"name": name, "arguments": {}});

        let text = peer.ok("tools/call", call("test_simple_text")).await;
        assert_eq!(
            text["content"],
            json!([{"type": "text", "text": "This is a simple text response for testing."}])
        );
        let image = peer.ok("tools/call", call("test_image_content")).await;
        assert_eq!(image["content"][0]["type"], "image");
        assert_eq!(image["content"][0]["mimeType"], "image/png");
        let audio = peer.ok("tools/call", call("test_audio_content")).await;
        assert_eq!(audio["content"][0]["mimeType"], "audio/wav");
        let mixed = peer
            .ok("tools/call", call("test_multiple_content_types"))
            .await;
        let kinds: Vec<&str> = mixed["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["type"].as_str())
            .collect();
        assert_eq!(kinds, ["text", "image", "resource"]);
        let error = peer.ok("tools/call", call("test_error_handling")).await;
        assert_eq!(error["isError"], true);
        assert_eq!(
            error["content"][0]["text"],
            "This tool intentionally returns an error for testing"
        );

        let read = |uri: &str| json!({"uri": uri});
        let static_text = peer.ok("resources/read", read("test://static-text")).await;
        assert_eq!(
            static_text["contents"][0]["text"],
            "This is the content of the static text resource."
        );
        let binary = peer
            .ok("resources/read", read("test://static-binary"))
            .await;
        assert_eq!(binary["contents"][0]["mimeType"], "image/png");
        assert!(binary["contents"][0]["blob"].is_string());
        let data = peer
            .ok("resources/read", read("test://template/123/data"))
            .await;
        let body: Value =
            serde_json::from_str(data["contents"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(
            body,
            json!({"id": "123", "templateTest": true, "data": "Data for ID: 123"})
        );

        let prompt = peer
            .ok(
                "prompts/get",
                json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "hello", "arg2": "world"}}),
            )
            .await;
        assert_eq!(
            prompt["messages"][0]["content"]["text"],
            "Prompt with arguments: arg1='hello', arg2='world'"
        );
        let embedded = peer
            .ok(
                "prompts/get",
                json!({"name": "test_prompt_with_embedded_resource", "arguments": {"resourceUri": "test://x"}}),
            )
            .await;
        assert_eq!(
            embedded["messages"][0]["content"]["resource"]["uri"],
            "test://x"
        );
    }
}

/// One MRTR round on 2026-07-28: the result of `tools/call` with these extra params.
async fn round(peer: &mut Peer, tool: &str, extra: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": {}});
    for (key, value) in extra.as_object().unwrap() {
        params[key] = value.clone();
    }
    peer.ok("tools/call", params).await
}

#[tokio::test]
async fn multi_round_questions_keep_the_first_answer_in_request_state() {
    let mut peer = Peer::new(Revision::V2026_07_28).await;
    let tool = "test_input_required_result_multi_round";
    let first = round(&mut peer, tool, json!({})).await;
    assert_eq!(first["resultType"], "input_required");
    assert!(first["inputRequests"]["step1"].is_object(), "{first}");
    let answer = |content: Value| json!({"action": "accept", "content": content});
    let second = round(
        &mut peer,
        tool,
        json!({
            "inputResponses": {"step1": answer(json!({"name": "Alice"}))},
            "requestState": first["requestState"],
        }),
    )
    .await;
    assert_eq!(second["resultType"], "input_required");
    assert!(second["inputRequests"]["step2"].is_object(), "{second}");
    // The last round carries only the last answer, as a client does.
    let third = round(
        &mut peer,
        tool,
        json!({
            "inputResponses": {"step2": answer(json!({"color": "blue"}))},
            "requestState": second["requestState"],
        }),
    )
    .await;
    assert_eq!(third["content"][0]["text"], "Alice likes blue.", "{third}");
}

#[tokio::test]
async fn request_state_is_confirmed_on_the_retry() {
    let mut peer = Peer::new(Revision::V2026_07_28).await;
    let tool = "test_input_required_result_request_state";
    let first = round(&mut peer, tool, json!({})).await;
    assert_eq!(first["resultType"], "input_required");
    assert!(first["requestState"].is_string(), "{first}");
    let done = round(
        &mut peer,
        tool,
        json!({
            "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}},
            "requestState": first["requestState"],
        }),
    )
    .await;
    let text = done["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("state-ok"), "{done}");
}
