//! Every revision through the socket-free entry point: describe, lists, tools, resources,
//! prompts, completion, pagination, progress, logging and asking.

use crate::support;

use mcp_server::{
    CacheScope, Completer, CompletionRequest, ContentBlock, Context, Exchange, Json, LogLevel,
    NoArgs, Prompt, Question, Resource, ResourceError, ResourceRequest, ResourceTemplate, Revision,
    Server, Tool, ToolError,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use support::{Client, check, next};

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: i64,
}

async fn add(args: AddArgs) -> Json<Sum> {
    Json(Sum {
        sum: args.a + args.b,
    })
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

async fn echo(args: EchoArgs) -> String {
    args.text
}

async fn boom(_: NoArgs) -> Result<String, ToolError> {
    Err(ToolError::new("it broke"))
}

async fn panics(_: NoArgs) -> String {
    panic!("handler bug")
}

#[derive(Deserialize, JsonSchema)]
struct DeployArgs {
    service: String,
}

async fn deploy(args: DeployArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex
        .ask(
            "confirm",
            Question::elicit(format!("Deploy {}?", args.service)),
        )
        .await?;
    Ok(if answer.accepted() {
        format!("deployed {}", args.service)
    } else {
        format!("kept {}", args.service)
    })
}

/// Asks twice: the second question only after the first is answered.
async fn two_step(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let first = ex.ask("first", Question::elicit("First?")).await?;
    let second = ex.ask("second", Question::elicit("Second?")).await?;
    Ok(format!("{} {}", first.accepted(), second.accepted()))
}

/// A question the client may answer up front (a name), then one it may not (a confirmation).
async fn greet_then_confirm(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let name = ex
        .ask(
            "name",
            Question::elicit_with(
                "Your name?",
                json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            )
            .answerable_up_front(),
        )
        .await?;
    let sure = ex.ask("confirm", Question::elicit("Sure?")).await?;
    Ok(format!(
        "{} {}",
        name.get("name").and_then(|n| n.as_str()).unwrap_or("?"),
        sure.accepted()
    ))
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    to: u32,
}

async fn count(args: CountArgs, ex: Exchange) -> String {
    for i in 1..=args.to {
        ex.progress(f64::from(i), Some(f64::from(args.to)), Some("counting"));
        ex.log(LogLevel::Debug, "debug detail");
        ex.log(LogLevel::Warning, format!("counted {i}"));
    }
    format!("counted to {}", args.to)
}

/// Reports that it started, then waits to be cancelled.
async fn wait(_: NoArgs, ex: Exchange) -> String {
    ex.progress(0.0, None, Some("started"));
    ex.cancelled().await;
    "cancelled".to_owned()
}

async fn whoami(_: NoArgs, ex: Exchange) -> String {
    ex.client_info()
        .and_then(|i| i.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_owned()
}

async fn mixed(_: NoArgs) -> Vec<ContentBlock> {
    vec![
        ContentBlock::text("plain"),
        ContentBlock::resource_link("config://app", "config"),
        ContentBlock::audio(b"ab", "audio/wav"),
    ]
}

async fn config(_: ResourceRequest) -> String {
    "{\"mode\":\"test\"}".to_owned()
}

async fn item(request: ResourceRequest) -> Result<String, ResourceError> {
    match request.var("id") {
        Some("gone") => Err(ResourceError::NotFound(request.uri.clone())),
        Some(id) => Ok(format!("item {id}")),
        None => Err("no id".into()),
    }
}

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Whom to greet.
    name: String,
}

async fn greet(args: GreetArgs) -> String {
    format!("Greet {}.", args.name)
}

async fn complete(request: CompletionRequest) -> Vec<String> {
    ["Alice", "Albert", "Bob"]
        .iter()
        .filter(|n| n.starts_with(&request.value))
        .map(|n| (*n).to_owned())
        .collect()
}

fn server(page_size: usize) -> Server {
    Server::builder("test-server", "1.2.3")
        .title("Test")
        .description("A server for tests")
        .instructions("Use the tools.")
        .tool(Tool::new("add", add).title("Add").read_only())
        .tool(Tool::new("echo", echo))
        .tool(Tool::new("boom", boom))
        .tool(Tool::new("panics", panics))
        .tool(Tool::new("deploy", deploy).destructive())
        .tool(Tool::new("two_step", two_step))
        .tool(Tool::new("greet_then_confirm", greet_then_confirm))
        .tool(Tool::new("count", count))
        .tool(Tool::new("mixed", mixed))
        .tool(Tool::new("wait", wait))
        .tool(Tool::new("whoami", whoami))
        .tool(Tool::new("modern_only", echo).min_revision(Revision::V2026_07_28))
        .resource(
            Resource::new("config://app", "config", config)
                .mime_type("application/json")
                .cache(60_000, CacheScope::Public),
        )
        .resource(Resource::new("config://other", "other", config))
        .resource_template(ResourceTemplate::new("res://items/{id}", "item", item).title("Item"))
        .prompt(Prompt::new("greet", greet).title("Greeting"))
        .completion(Completer::new(complete))
        .page_size(page_size)
        .build()
        .unwrap()
}

fn elicit_caps() -> Value {
    json!({"elicitation": {}})
}

#[tokio::test]
async fn describe_on_every_revision() {
    let server = server(100);
    for revision in Revision::ALL {
        let mut client = Client::new(&server, revision, json!({})).await;
        if client.legacy() {
            // Client::new checked the InitializeResult; the revision sticks to the connection.
            assert_eq!(client.ctx.revision(), Some(revision));
            let pong = client.ok("ping", json!({})).await;
            assert_eq!(pong, json!({}));
        } else {
            let result = client.ok("server/discover", json!({})).await;
            check(revision, "DiscoverResult", &result);
            assert_eq!(result["resultType"], "complete");
            assert_eq!(result["supportedVersions"][0], "2026-07-28");
            assert_eq!(
                result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
                "test-server"
            );
            assert_eq!(result["ttlMs"], 0);
            assert_eq!(result["instructions"], "Use the tools.");
            assert!(result["capabilities"]["completions"].is_object());
            assert_eq!(
                client.ctx.revision(),
                None,
                "discover keeps the connection stateless"
            );
        }
    }
}

#[tokio::test]
async fn initialize_negotiates_and_sticks() {
    let server = server(100);
    let ctx = Context::connection();
    let out = server
        .handle_all(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}),
            &ctx,
        )
        .await;
    let result = out[0].to_value();
    assert_eq!(
        result["result"]["protocolVersion"], "2025-11-25",
        "an unknown version gets the newest with a handshake"
    );
    // A modern request on a legacy connection is served by the connection's revision.
    let out = server
        .handle_all(
            json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {}}),
            &ctx,
        )
        .await;
    assert_eq!(out[0].to_value()["error"]["code"], -32601);
}

#[tokio::test]
async fn lists_paginate_in_order_on_every_revision() {
    let server = server(2);
    for revision in Revision::ALL {
        let mut client = Client::new(&server, revision, json!({})).await;
        let mut names = Vec::new();
        let mut cursor: Option<Value> = None;
        loop {
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            let result = client.ok("tools/list", params).await;
            check(revision, "ListToolsResult", &result);
            let page = result["tools"].as_array().unwrap();
            assert!(page.len() <= 2);
            names.extend(page.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
            match result.get("nextCursor") {
                Some(next) => cursor = Some(next.clone()),
                None => break,
            }
        }
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted, "{revision}: deterministic order");
        assert_eq!(
            names.contains(&"modern_only".to_owned()),
            revision == Revision::V2026_07_28,
            "{revision}"
        );
        let error = client
            .err("tools/list", json!({"cursor": "not-a-cursor"}))
            .await;
        assert_eq!(error["code"], -32602, "{revision}");
        // A cursor from another list is unknown too.
        let first = client.ok("resources/list", json!({})).await;
        check(revision, "ListResourcesResult", &first);
        let resource_cursor = first["nextCursor"].clone();
        assert!(resource_cursor.is_null(), "two resources fit one page");
        let prompts = client.ok("prompts/list", json!({})).await;
        check(revision, "ListPromptsResult", &prompts);
        assert_eq!(
            prompts["prompts"][0]["arguments"][0],
            json!({"name": "name", "description": "Whom to greet.", "required": true})
        );
        let templates = client.ok("resources/templates/list", json!({})).await;
        check(revision, "ListResourceTemplatesResult", &templates);
        let has_title = templates["resourceTemplates"][0].get("title").is_some();
        assert_eq!(
            has_title,
            revision >= Revision::V2025_06_18,
            "{revision}: titles"
        );
    }
}

#[tokio::test]
async fn tool_calls_on_every_revision() {
    let server = server(100);
    for revision in Revision::ALL {
        let mut client = Client::new(&server, revision, json!({})).await;
        let call = |name: &str, arguments: Value| json!({"name": name, "arguments": arguments});

        let text = client
            .ok("tools/call", call("echo", json!({"text": "hi"})))
            .await;
        check(revision, "CallToolResult", &text);
        assert_eq!(text["content"][0], json!({"type": "text", "text": "hi"}));

        let structured = client
            .ok("tools/call", call("add", json!({"a": 2, "b": 3})))
            .await;
        check(revision, "CallToolResult", &structured);
        assert_eq!(structured["content"][0]["text"], "{\"sum\":5}");
        let expect_structured = revision >= Revision::V2025_06_18;
        assert_eq!(
            structured.get("structuredContent").is_some(),
            expect_structured,
            "{revision}"
        );

        let failed = client.ok("tools/call", call("boom", json!({}))).await;
        check(revision, "CallToolResult", &failed);
        assert_eq!(failed["isError"], true);
        assert_eq!(failed["content"][0]["text"], "it broke");

        let invalid = client
            .ok("tools/call", call("add", json!({"a": "two"})))
            .await;
        assert_eq!(invalid["isError"], true, "{revision}");
        let message = invalid["content"][0]["text"].as_str().unwrap();
        assert!(message.starts_with("invalid arguments"), "{message}");

        let panicked = client.err("tools/call", call("panics", json!({}))).await;
        assert_eq!(panicked["code"], -32603);
        // The client learns what failed, not the panic's message (it goes to the log).
        assert_eq!(
            panicked["message"], "tool \"panics\" failed unexpectedly",
            "{revision}"
        );
        assert!(!panicked.to_string().contains("handler bug"), "{panicked}");
        // The server keeps serving after a panic.
        let again = client
            .ok("tools/call", call("echo", json!({"text": "still here"})))
            .await;
        assert_eq!(again["content"][0]["text"], "still here");

        let unknown = client.err("tools/call", call("nope", json!({}))).await;
        assert!(
            unknown["code"] == -32602 || unknown["code"] == -32601,
            "{unknown}"
        );

        let mixed = client.ok("tools/call", call("mixed", json!({}))).await;
        check(revision, "CallToolResult", &mixed);
        let kinds: Vec<&str> = mixed["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        let expected: &[&str] = if revision == Revision::V2024_11_05 {
            &["text", "text", "text"]
        } else if revision == Revision::V2025_03_26 {
            &["text", "text", "audio"]
        } else {
            &["text", "resource_link", "audio"]
        };
        assert_eq!(kinds, expected, "{revision}");

        if !client.legacy() {
            assert_eq!(text["resultType"], "complete");
            assert!(text.get("ttlMs").is_none(), "tools/call is not cacheable");
        }
    }
}

#[tokio::test]
async fn resources_on_every_revision() {
    let server = server(100);
    for revision in Revision::ALL {
        let mut client = Client::new(&server, revision, json!({})).await;
        let fixed = client
            .ok("resources/read", json!({"uri": "config://app"}))
            .await;
        check(revision, "ReadResourceResult", &fixed);
        assert_eq!(
            fixed["contents"][0],
            json!({"uri": "config://app", "mimeType": "application/json", "text": "{\"mode\":\"test\"}"})
        );
        if !client.legacy() {
            assert_eq!(fixed["ttlMs"], 60_000);
            assert_eq!(fixed["cacheScope"], "public");
        }
        let templated = client
            .ok("resources/read", json!({"uri": "res://items/a%2Fb"}))
            .await;
        check(revision, "ReadResourceResult", &templated);
        assert_eq!(templated["contents"][0]["text"], "item a/b");
        let missing_code = if client.legacy() { -32002 } else { -32602 };
        for uri in ["nothing://here", "res://items/gone", "res://items/x/y"] {
            let error = client.err("resources/read", json!({"uri": uri})).await;
            assert_eq!(error["code"], missing_code, "{revision} {uri}");
        }
    }
}

#[tokio::test]
async fn prompts_and_completion_on_every_revision() {
    let server = server(100);
    for revision in Revision::ALL {
        let mut client = Client::new(&server, revision, json!({})).await;
        let prompt = client
            .ok(
                "prompts/get",
                json!({"name": "greet", "arguments": {"name": "Ada"}}),
            )
            .await;
        check(revision, "GetPromptResult", &prompt);
        assert_eq!(
            prompt["messages"][0],
            json!({"role": "user", "content": {"type": "text", "text": "Greet Ada."}})
        );
        let missing = client
            .err("prompts/get", json!({"name": "greet", "arguments": {}}))
            .await;
        assert_eq!(missing["code"], -32602);
        let unknown = client.err("prompts/get", json!({"name": "nope"})).await;
        assert!(unknown["code"] == -32602 || unknown["code"] == -32601);
        let completion = client
            .ok("completion/complete", json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "Al"}}))
            .await;
        check(revision, "CompleteResult", &completion);
        assert_eq!(
            completion["completion"]["values"],
            json!(["Alice", "Albert"])
        );
    }
}

#[tokio::test]
async fn progress_and_logging_as_each_revision_allows() {
    let server = server(100);
    for revision in Revision::ALL {
        let mut client = Client::new(&server, revision, json!({})).await;
        let mut params =
            json!({"name": "count", "arguments": {"to": 2}, "_meta": {"progressToken": "tok"}});
        // Without a level, no log messages.
        let (before, response) = client.request("tools/call", params.clone()).await;
        assert_eq!(response["result"]["content"][0]["text"], "counted to 2");
        assert!(
            before
                .iter()
                .all(|m| m["method"] == "notifications/progress"),
            "{before:?}"
        );
        assert_eq!(before.len(), 2);
        for (i, progress) in before.iter().enumerate() {
            check(revision, "ProgressNotification", progress);
            assert_eq!(progress["params"]["progressToken"], "tok");
            assert_eq!(progress["params"]["progress"], json!(i as f64 + 1.0));
            assert_eq!(
                progress["params"].get("message").is_some(),
                revision != Revision::V2024_11_05,
                "{revision}"
            );
        }
        // At warning: the warning messages are sent, the debug ones are not.
        if client.legacy() {
            assert_eq!(
                client
                    .ok("logging/setLevel", json!({"level": "warning"}))
                    .await,
                json!({})
            );
            let error = client
                .err("logging/setLevel", json!({"level": "loud"}))
                .await;
            assert_eq!(error["code"], -32602);
        } else {
            params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("warning");
        }
        let (before, _) = client.request("tools/call", params).await;
        let logs: Vec<&Value> = before
            .iter()
            .filter(|m| m["method"] == "notifications/message")
            .collect();
        assert_eq!(logs.len(), 2, "{revision}: {before:?}");
        for log in logs {
            check(revision, "LoggingMessageNotification", log);
            assert_eq!(log["params"]["level"], "warning");
        }
        // No token, no progress.
        let (before, _) = client
            .request(
                "tools/call",
                json!({"name": "count", "arguments": {"to": 1}}),
            )
            .await;
        assert!(
            before
                .iter()
                .all(|m| m["method"] != "notifications/progress")
        );
    }
}

#[tokio::test]
async fn mrtr_asks_in_the_result_and_binds_the_retry() {
    let server = server(100);
    let revision = Revision::V2026_07_28;

    // A client that did not declare elicitation gets -32021 naming the capability.
    let mut silent = Client::new(&server, revision, json!({})).await;
    let error = silent
        .err(
            "tools/call",
            json!({"name": "deploy", "arguments": {"service": "web"}}),
        )
        .await;
    assert_eq!(error["code"], -32021);
    assert!(
        error["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{error}"
    );

    let mut client = Client::new(&server, revision, elicit_caps()).await;
    let call = json!({"name": "deploy", "arguments": {"service": "web"}});
    let first = client.ok("tools/call", call.clone()).await;
    check(revision, "InputRequiredResult", &first);
    assert_eq!(first["resultType"], "input_required");
    assert_eq!(
        first["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    assert_eq!(
        first["inputRequests"]["confirm"]["params"]["message"],
        "Deploy web?"
    );
    assert!(first.get("ttlMs").is_none());
    let state = first["requestState"].as_str().unwrap().to_owned();

    // Answers without state are ignored: the question comes again.
    let mut unbound = call.clone();
    unbound["inputResponses"] = json!({"confirm": {"action": "accept", "content": {}}});
    let again = client.ok("tools/call", unbound).await;
    assert_eq!(
        again["resultType"], "input_required",
        "a client cannot pre-answer"
    );

    // State bound to other arguments is refused (and used up).
    let mut other = call.clone();
    other["arguments"]["service"] = json!("db");
    other["inputResponses"] = json!({"confirm": {"action": "accept", "content": {}}});
    other["requestState"] = json!(state);
    assert_eq!(client.err("tools/call", other).await["code"], -32602);

    // A fresh round, answered properly.
    let first = client.ok("tools/call", call.clone()).await;
    let state = first["requestState"].as_str().unwrap().to_owned();
    let mut retry = call.clone();
    retry["inputResponses"] =
        json!({"confirm": {"action": "accept", "content": {}}, "unasked": {"action": "accept"}});
    retry["requestState"] = json!(state);
    let done = client.ok("tools/call", retry.clone()).await;
    check(revision, "CallToolResult", &done);
    assert_eq!(done["content"][0]["text"], "deployed web");
    // State is single use.
    assert_eq!(client.err("tools/call", retry).await["code"], -32602);
    // Tampered state is refused.
    let mut forged = call.clone();
    forged["requestState"] = json!("AAAA");
    assert_eq!(client.err("tools/call", forged).await["code"], -32602);

    // A decline is not an acceptance.
    let first = client.ok("tools/call", call.clone()).await;
    let mut declined = call.clone();
    declined["inputResponses"] = json!({"confirm": {"action": "decline"}});
    declined["requestState"] = first["requestState"].clone();
    assert_eq!(
        client.ok("tools/call", declined).await["content"][0]["text"],
        "kept web"
    );

    // Two questions: the client sends every answer so far on each round.
    let call = json!({"name": "two_step", "arguments": {}});
    let round1 = client.ok("tools/call", call.clone()).await;
    assert!(round1["inputRequests"].get("first").is_some());
    let mut retry = call.clone();
    retry["inputResponses"] = json!({"first": {"action": "accept", "content": {}}});
    retry["requestState"] = round1["requestState"].clone();
    let round2 = client.ok("tools/call", retry).await;
    assert!(round2["inputRequests"].get("second").is_some(), "{round2}");
    let mut retry = call.clone();
    retry["inputResponses"] =
        json!({"first": {"action": "accept", "content": {}}, "second": {"action": "cancel"}});
    retry["requestState"] = round2["requestState"].clone();
    assert_eq!(
        client.ok("tools/call", retry).await["content"][0]["text"],
        "true false"
    );
}

#[tokio::test]
async fn only_questions_marked_up_front_take_answers_sent_before_they_are_asked() {
    let server = server(100);
    let mut client = Client::new(&server, Revision::V2026_07_28, elicit_caps()).await;
    let call = json!({"name": "greet_then_confirm", "arguments": {}});

    // Unasked: the name is asked first.
    let first = client.ok("tools/call", call.clone()).await;
    assert!(first["inputRequests"].get("name").is_some(), "{first}");

    // Answers sent with the first call: the name is taken, the confirmation (not marked) and
    // unknown keys are ignored, so only the confirmation is asked.
    let mut eager = call.clone();
    eager["inputResponses"] = json!({
        "name": {"action": "accept", "content": {"name": "Ann"}},
        "confirm": {"action": "accept", "content": {}},
        "unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}},
    });
    let round = client.ok("tools/call", eager).await;
    check(Revision::V2026_07_28, "InputRequiredResult", &round);
    let keys: Vec<&String> = round["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["confirm"], "{round}");

    // A malformed answer is no answer: the question is asked.
    let mut malformed = call.clone();
    malformed["inputResponses"] = json!({"name": 12345});
    let round2 = client.ok("tools/call", malformed).await;
    assert!(round2["inputRequests"].get("name").is_some(), "{round2}");
    let mut no_action = call.clone();
    no_action["inputResponses"] = json!({"name": {"content": {"name": "Ann"}}});
    let round2 = client.ok("tools/call", no_action).await;
    assert!(round2["inputRequests"].get("name").is_some(), "{round2}");

    // The retry answers the confirmation under the state and resends the name.
    let mut retry = call.clone();
    retry["inputResponses"] = json!({
        "name": {"action": "accept", "content": {"name": "Ann"}},
        "confirm": {"action": "accept", "content": {}},
    });
    retry["requestState"] = round["requestState"].clone();
    assert_eq!(
        client.ok("tools/call", retry).await["content"][0]["text"],
        "Ann true"
    );
}

#[tokio::test]
async fn prompts_ask_only_where_the_revision_can_carry_it() {
    async fn careful(_: NoArgs, ex: Exchange) -> Result<String, mcp_server::PromptError> {
        let answer = ex.ask("sure", Question::elicit("Sure?")).await?;
        Ok(format!("sure: {}", answer.accepted()))
    }
    let server = Server::builder("p", "1")
        .prompt(Prompt::new("careful", careful))
        .build()
        .unwrap();
    // 2026-07-28: the question is the result of prompts/get too.
    let mut modern = Client::new(&server, Revision::V2026_07_28, elicit_caps()).await;
    let first = modern.ok("prompts/get", json!({"name": "careful"})).await;
    assert_eq!(first["resultType"], "input_required");
    let retry = json!({"name": "careful", "inputResponses": {"sure": {"action": "accept", "content": {}}}, "requestState": first["requestState"]});
    let done = modern.ok("prompts/get", retry).await;
    check(Revision::V2026_07_28, "GetPromptResult", &done);
    assert_eq!(done["messages"][0]["content"]["text"], "sure: true");
    // 2025-03-26 asks only in tool arguments: a prompt that asks fails, it is never
    // answered with a tool-shaped result.
    let mut legacy = Client::new(&server, Revision::V2025_03_26, json!({})).await;
    let error = legacy.err("prompts/get", json!({"name": "careful"})).await;
    assert_eq!(error["code"], -32603);
}

#[tokio::test]
async fn expired_request_state_is_refused() {
    let server = Server::builder("s", "1")
        .tool(Tool::new("deploy", deploy))
        .request_state_ttl(std::time::Duration::ZERO)
        .build()
        .unwrap();
    let mut client = Client::new(&server, Revision::V2026_07_28, elicit_caps()).await;
    let call = json!({"name": "deploy", "arguments": {"service": "web"}});
    let first = client.ok("tools/call", call.clone()).await;
    let mut retry = call;
    retry["inputResponses"] = json!({"confirm": {"action": "accept", "content": {}}});
    retry["requestState"] = first["requestState"].clone();
    assert_eq!(client.err("tools/call", retry).await["code"], -32602);
}

#[tokio::test]
async fn pushed_questions_wait_for_the_reply() {
    let server = server(100);
    for revision in [Revision::V2025_06_18, Revision::V2025_11_25] {
        for (reply, expected) in [
            (
                json!({"result": {"action": "accept", "content": {}}}),
                "deployed web",
            ),
            (json!({"result": {"action": "decline"}}), "kept web"),
            // An error reply is a refusal, never an acceptance.
            (
                json!({"error": {"code": -32603, "message": "cannot"}}),
                "kept web",
            ),
        ] {
            let mut client = Client::new(&server, revision, elicit_caps()).await;
            let (id, mut stream) = client.start(
                "tools/call",
                json!({"name": "deploy", "arguments": {"service": "web"}}),
            );
            let question = next(&mut stream).await;
            check(revision, "JSONRPCMessage", &question);
            check(revision, "ElicitRequest", &question);
            assert_eq!(question["method"], "elicitation/create");
            let mut answer = json!({"jsonrpc": "2.0", "id": question["id"]});
            answer
                .as_object_mut()
                .unwrap()
                .extend(reply.as_object().unwrap().clone());
            let waiting = tokio::spawn(async move {
                let response = next(&mut stream).await;
                (response, stream)
            });
            client.send(answer).await;
            let (response, _) = waiting.await.unwrap();
            assert_eq!(response["id"], id);
            assert_eq!(
                response["result"]["content"][0]["text"], expected,
                "{revision}"
            );
        }
        // Without the capability the server does not ask.
        let mut client = Client::new(&server, revision, json!({})).await;
        let error = client
            .err(
                "tools/call",
                json!({"name": "deploy", "arguments": {"service": "web"}}),
            )
            .await;
        assert_eq!(error["code"], -32603, "{revision}");
    }
}

#[tokio::test]
async fn questions_ride_in_the_arguments_before_elicitation() {
    let server = server(100);
    for revision in [Revision::V2025_03_26, Revision::V2024_11_05] {
        let mut client = Client::new(&server, revision, json!({})).await;
        let tools = client.ok("tools/list", json!({})).await;
        let schema_of = |name: &str| {
            tools["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == name)
                .unwrap()["inputSchema"]
                .clone()
        };
        assert!(
            schema_of("deploy")["properties"]
                .get("mcpAnswers")
                .is_some(),
            "tools that can ask get the arguments"
        );
        assert!(schema_of("deploy")["properties"].get("mcpState").is_some());
        assert!(
            schema_of("echo")["properties"].get("mcpAnswers").is_none(),
            "other tools keep their schema"
        );

        let call = json!({"name": "deploy", "arguments": {"service": "web"}});
        let first = client.ok("tools/call", call.clone()).await;
        check(revision, "CallToolResult", &first);
        assert_ne!(
            first.get("isError"),
            Some(&json!(true)),
            "an unfinished call is not an error"
        );
        let text = first["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("mcpAnswers") && text.contains("Deploy web?"),
            "{text}"
        );
        let meta = &first["_meta"][mcp_adapters::INPUT_REQUIRED_META];
        assert_eq!(
            meta["inputRequests"]["confirm"]["method"],
            "elicitation/create"
        );
        let state = meta["requestState"].clone();

        let mut retry = call.clone();
        retry["arguments"]["mcpAnswers"] = json!({"confirm": {"action": "accept", "content": {}}});
        retry["arguments"]["mcpState"] = state;
        let done = client.ok("tools/call", retry).await;
        assert_eq!(done["content"][0]["text"], "deployed web", "{revision}");
    }
}

#[tokio::test]
async fn cancelled_requests_stop_and_get_no_response() {
    let server = server(100);
    for revision in Revision::ALL {
        let mut client = Client::new(&server, revision, json!({})).await;
        let (id, mut stream) = client.start(
            "tools/call",
            json!({"name": "wait", "arguments": {}, "_meta": {"progressToken": 1}}),
        );
        let started = next(&mut stream).await;
        assert_eq!(started["method"], "notifications/progress");
        let mut cancel = json!({"requestId": id});
        if !client.legacy() {
            cancel = client.params(cancel);
        }
        client.notify("notifications/cancelled", cancel).await;
        use futures::StreamExt as _;
        assert!(
            stream.next().await.is_none(),
            "{revision}: a cancelled request gets no response"
        );
    }
}

#[tokio::test]
async fn the_connection_remembers_who_the_client_is() {
    let server = server(100);
    for revision in Revision::ALL {
        let mut client = Client::new(&server, revision, json!({})).await;
        let result = client
            .ok("tools/call", json!({"name": "whoami", "arguments": {}}))
            .await;
        let expected = if client.legacy() { "test" } else { "unknown" };
        assert_eq!(result["content"][0]["text"], expected, "{revision}");
    }
}

#[tokio::test]
async fn dropping_a_reply_stream_cancels_the_call_and_frees_its_id() {
    let server = server(100);
    let mut client = Client::new(&server, Revision::V2025_11_25, json!({})).await;
    let (id, mut stream) = client.start(
        "tools/call",
        json!({"name": "wait", "arguments": {}, "_meta": {"progressToken": 1}}),
    );
    assert_eq!(next(&mut stream).await["method"], "notifications/progress");
    drop(stream);
    let again = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
    let out = server.handle_all(again, &client.ctx).await;
    assert_eq!(
        out[0].to_value()["result"],
        json!({}),
        "the id is free again"
    );
}

#[tokio::test]
async fn a_request_id_in_flight_cannot_be_reused() {
    let server = server(100);
    let mut client = Client::new(&server, Revision::V2025_11_25, json!({})).await;
    let (id, mut stream) = client.start(
        "tools/call",
        json!({"name": "wait", "arguments": {}, "_meta": {"progressToken": 1}}),
    );
    assert_eq!(next(&mut stream).await["method"], "notifications/progress");
    let duplicate = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
    let out = server.handle_all(duplicate, &client.ctx).await;
    assert_eq!(out[0].to_value()["error"]["code"], -32600);
    assert!(client.ctx.cancel(&mcp_wire::jsonrpc::Id::Number(id)));
    use futures::StreamExt as _;
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn header_bindings_are_served_per_revision() {
    use mcp_adapters::{Adapter, ToolHeaders as _};
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)] // only the derived schema matters here
    struct Routed {
        region: String,
    }
    async fn routed(_: Routed) -> String {
        String::new()
    }
    let server = Server::builder("h", "1")
        .tool(Tool::new("routed", routed).header("region", "Region"))
        .build()
        .unwrap();
    let modern = server.tool_headers(Adapter::new(Revision::V2026_07_28));
    assert_eq!(modern.header_bindings("routed").map(<[_]>::len), Some(1));
    assert!(modern.header_bindings("missing").is_none());
    let legacy = server.tool_headers(Adapter::new(Revision::V2025_06_18));
    assert_eq!(legacy.header_bindings("routed").map(<[_]>::len), Some(0));
}

/// One handle: a clone of the server made before a runtime change sees the change, in its
/// header checks as in what it serves; nothing has to be refreshed by hand.
#[tokio::test]
async fn every_clone_follows_runtime_changes() {
    use mcp_adapters::{Adapter, ToolHeaders as _};
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)] // only the derived schema matters here
    struct Routed {
        region: String,
    }
    async fn routed(_: Routed) -> String {
        "routed".into()
    }
    let server = Server::builder("h", "1").build().unwrap();
    let earlier = server.clone();
    let modern = Adapter::new(Revision::V2026_07_28);
    assert!(
        earlier
            .tool_headers(modern)
            .header_bindings("routed")
            .is_none()
    );
    server
        .add_tool(Tool::new("routed", routed).header("region", "Region"))
        .await
        .unwrap();
    assert_eq!(
        earlier
            .tool_headers(modern)
            .header_bindings("routed")
            .map(<[_]>::len),
        Some(1)
    );
    let mut client = Client::new(&earlier, Revision::V2025_11_25, json!({})).await;
    let listed = client.ok("tools/list", json!({})).await;
    assert_eq!(listed["tools"][0]["name"], "routed", "{listed}");
    server.remove_tool("routed").await.unwrap();
    assert!(
        earlier
            .tool_headers(modern)
            .header_bindings("routed")
            .is_none()
    );
    let listed = client.ok("tools/list", json!({})).await;
    assert_eq!(listed["tools"], json!([]), "{listed}");
}

#[tokio::test]
async fn batches_only_where_the_revision_has_them() {
    let server = server(100);
    let client = Client::new(&server, Revision::V2025_03_26, json!({})).await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 10, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 11, "method": "bogus"}
    ]);
    let out = server.handle_all(batch.clone(), &client.ctx).await;
    assert_eq!(out.len(), 1);
    let answers = out[0].to_value();
    assert_eq!(
        answers[0],
        json!({"jsonrpc": "2.0", "id": 10, "result": {}})
    );
    assert_eq!(answers[1]["error"]["code"], -32601);
    let other = Client::new(&server, Revision::V2025_06_18, json!({})).await;
    let out = server.handle_all(batch, &other.ctx).await;
    assert_eq!(out[0].to_value()["error"]["code"], -32600);
}

#[tokio::test]
async fn bad_input_is_answered_not_fatal() {
    let server = server(100);
    let ctx = Context::connection();
    let cases: &[(&[u8], Option<i64>)] = &[
        (b"{not json", Some(-32700)),
        (b"[]", Some(-32600)),
        (br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, Some(-32600)),
        (
            br#"{"jsonrpc":"2.0","method":"notifications/unknown"}"#,
            None,
        ),
        (br#"{"jsonrpc":"2.0","id":"x","result":{}}"#, None),
    ];
    for (bytes, code) in cases {
        let out = server.handle_all(*bytes, &ctx).await;
        match code {
            Some(code) => assert_eq!(
                out[0].to_value()["error"]["code"],
                *code,
                "{}",
                String::from_utf8_lossy(bytes)
            ),
            None => assert!(out.is_empty(), "{out:?}"),
        }
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn arbitrary_input_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200), method in "[a-z/]{0,20}") {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                let server = server(3);
                let ctx = Context::connection();
                let _ = server.handle_all(bytes, &ctx).await;
                let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"name": "echo", "arguments": {"text": 1}}});
                let out = server.handle_all(message, &ctx).await;
                assert_eq!(out.len(), 1);
            });
        }
    }
}
