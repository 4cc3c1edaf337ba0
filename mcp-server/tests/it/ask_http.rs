//! Asking the user over real HTTP on 127.0.0.1, on every revision: the question is the result
//! (2026-07-28, MRTR), a request pushed on the call's stream (2025-11-25, 2025-06-18), or a
//! result naming the `mcpAnswers`/`mcpState` arguments (2025-03-26, 2024-11-05). One question,
//! two in one call, decline and cancel, sampling, roots and URL mode, a timeout, a client that
//! cannot be asked, tampered/replayed/expired/foreign state and answers nobody asked for; every
//! message the server sends is validated against the revision's official schema.

use crate::raw_http;
use crate::support;

use std::time::Duration;

use mcp_server::http::HttpConfig;
use mcp_server::{
    AnswerAction, Context, Exchange, Interrupt, NoArgs, Prompt, PromptError, Question, Resource,
    ResourceError, ResourceRequest, Revision, Server, ServerBuilder, Tool, ToolError,
};
use raw_http::{RawRequest, RawResponse, Running};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const META_KEY: &str = "rs.mcp-adapters/inputRequired";

fn action_name(action: AnswerAction) -> &'static str {
    match action {
        AnswerAction::Accept => "accept",
        AnswerAction::Decline => "decline",
        AnswerAction::Cancel => "cancel",
    }
}

#[derive(Deserialize, JsonSchema)]
struct TargetArgs {
    /// What the question is about.
    target: String,
}

async fn one(args: TargetArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex
        .ask(
            "confirm",
            Question::elicit(format!("Go ahead with {}?", args.target)),
        )
        .await?;
    Ok(if answer.accepted() {
        format!("went ahead with {}", args.target)
    } else {
        format!("stopped at {}", action_name(answer.action()))
    })
}

async fn two(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let schema =
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    let named = ex
        .ask("name", Question::elicit_with("Your name?", schema))
        .await?;
    let name = named
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("nobody")
        .to_owned();
    let sure = ex.ask("sure", Question::elicit("Sure?")).await?;
    Ok(format!("{name} and {}", action_name(sure.action())))
}

async fn sample(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex
        .ask("draft", Question::sample("Write a haiku", 50))
        .await?;
    Ok(format!(
        "model said {}",
        answer.content()["content"]["text"]
            .as_str()
            .unwrap_or("nothing")
    ))
}

async fn roots(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex.ask("roots", Question::list_roots()).await?;
    let count = answer.content()["roots"].as_array().map_or(0, Vec::len);
    Ok(format!("{count} roots"))
}

async fn login(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex
        .ask(
            "login",
            Question::elicit_url("Sign in", "https://example.com/login"),
        )
        .await?;
    Ok(format!("login {}", action_name(answer.action())))
}

/// Handles a timeout itself: the outcome is distinct from a user's cancel.
async fn patient(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    match ex.ask("confirm", Question::elicit("Still there?")).await {
        Ok(answer) => Ok(format!("answered {}", action_name(answer.action()))),
        Err(Interrupt::TimedOut(after)) => Ok(format!("no answer within {}ms", after.as_millis())),
        Err(other) => Err(other.into()),
    }
}

async fn careful(_: NoArgs, ex: Exchange) -> Result<String, PromptError> {
    let answer = ex.ask("sure", Question::elicit("Sure?")).await?;
    Ok(format!("sure: {}", action_name(answer.action())))
}

async fn guarded(_: ResourceRequest, ex: Exchange) -> Result<String, ResourceError> {
    let answer = ex.ask("sure", Question::elicit("Read it?")).await?;
    Ok(format!("read: {}", action_name(answer.action())))
}

fn builder() -> ServerBuilder {
    Server::builder("ask-http", "1.0")
        .tool(Tool::new("one", one))
        .tool(Tool::new("two", two))
        .tool(Tool::new("sample", sample))
        .tool(Tool::new("roots", roots))
        .tool(Tool::new("login", login))
        .tool(Tool::new("patient", patient))
        .prompt(Prompt::new("careful", careful))
        .resource(Resource::new("secret://doc", "doc", guarded))
}

async fn start(builder: ServerBuilder) -> Running {
    Running::start(builder.build().unwrap(), HttpConfig::new()).await
}

/// Every capability a client can declare for questions.
fn all_caps() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}})
}

fn pushes(revision: Revision) -> bool {
    [Revision::V2025_11_25, Revision::V2025_06_18].contains(&revision)
}

fn in_arguments(revision: Revision) -> bool {
    [Revision::V2025_03_26, Revision::V2024_11_05].contains(&revision)
}

/// Validates one message the server sent, and what it carries.
fn validate(revision: Revision, message: &Value) {
    support::check(revision, "JSONRPCMessage", message);
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        let kind = match method {
            "elicitation/create" => "ElicitRequest",
            "sampling/createMessage" => "CreateMessageRequest",
            "roots/list" => "ListRootsRequest",
            _ => return,
        };
        support::check(revision, kind, message);
        return;
    }
    let Some(result) = message.get("result") else {
        return;
    };
    if result["resultType"] == "input_required" {
        support::check(revision, "InputRequiredResult", result);
        for request in result["inputRequests"].as_object().unwrap().values() {
            support::check(revision, "InputRequest", request);
        }
    } else if result.get("content").is_some() {
        support::check(revision, "CallToolResult", result);
        if let Some(asked) = result["_meta"].get(META_KEY) {
            for request in asked["inputRequests"].as_object().unwrap().values() {
                match request["method"].as_str() {
                    Some("sampling/createMessage") => {
                        support::check(revision, "CreateMessageRequest", request);
                    }
                    Some("roots/list") => support::check(revision, "ListRootsRequest", request),
                    // Neither legacy revision has elicitation in its schema.
                    _ => assert!(request["params"]["message"].is_string(), "{request}"),
                }
            }
        }
    } else if result.get("messages").is_some() {
        support::check(revision, "GetPromptResult", result);
    } else if result.get("contents").is_some() {
        support::check(revision, "ReadResourceResult", result);
    }
}

fn validated(revision: Revision, response: &RawResponse) -> Vec<Value> {
    let messages = response.messages();
    for message in &messages {
        validate(revision, message);
    }
    messages
}

/// A raw client of one revision: a session on revisions with a handshake (capabilities
/// declared at `initialize`), capabilities restated in `_meta` on 2026-07-28.
struct Peer {
    addr: std::net::SocketAddr,
    revision: Revision,
    caps: Value,
    session: Option<String>,
    next_id: i64,
}

impl Peer {
    async fn new(server: &Running, revision: Revision, caps: Value) -> Self {
        let mut peer = Self {
            addr: server.addr,
            revision,
            caps,
            session: None,
            next_id: 1,
        };
        if revision != Revision::V2026_07_28 {
            let init = peer
                .request(
                    &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": revision.as_str(), "capabilities": peer.caps,
                    "clientInfo": {"name": "raw", "version": "1"}}}),
                )
                .send(peer.addr)
                .await;
            assert_eq!(init.status, 200, "{revision}");
            validated(revision, &init);
            peer.session = init.header("mcp-session-id").map(str::to_owned);
            assert!(peer.session.is_some(), "{revision}: a session");
            let done = peer
                .request(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .send(peer.addr)
                .await;
            assert_eq!(done.status, 202);
        }
        peer
    }

    fn request(&self, body: &Value) -> RawRequest<'static> {
        let mut request = RawRequest::new("POST", "/mcp").header("Accept", ACCEPT_BOTH);
        // Not on `initialize`, which names its revision in the body.
        if self.revision >= Revision::V2025_06_18
            && body["method"] != "initialize"
            && body["method"] != "notifications/initialized"
            || self.session.is_some() && self.revision >= Revision::V2025_06_18
        {
            request = request.header("MCP-Protocol-Version", self.revision.as_str());
        }
        if let Some(session) = &self.session {
            request = request.header("Mcp-Session-Id", session);
        }
        if self.revision == Revision::V2026_07_28
            && let Some(method) = body.get("method").and_then(Value::as_str)
        {
            request = request.header("Mcp-Method", method);
            let params = &body["params"];
            if let Some(name) = params
                .get("name")
                .or_else(|| params.get("uri"))
                .and_then(Value::as_str)
            {
                request = request.header("Mcp-Name", name);
            }
        }
        request.json(body)
    }

    /// A request body with a fresh id (and `_meta` on 2026-07-28).
    fn body(&mut self, method: &str, mut params: Value) -> (i64, Value) {
        if self.revision == Revision::V2026_07_28 {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": self.caps,
            });
        }
        self.next_id += 1;
        let id = self.next_id;
        (
            id,
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
    }

    /// Sends one request and reads the whole response (validated).
    async fn send(&mut self, method: &str, params: Value) -> (u16, Value) {
        let (id, body) = self.body(method, params);
        let response = self.request(&body).send(self.addr).await;
        let messages = validated(self.revision, &response);
        let last = messages.last().cloned().expect("a response");
        assert_eq!(last["id"], id, "{}: {last}", self.revision);
        (response.status, last)
    }

    /// Runs a call to its end, answering every question with `answer(key or method, request)`
    /// by whatever mechanism the revision has. Returns the final response and how many
    /// questions were asked.
    async fn run(
        &mut self,
        method: &str,
        params: Value,
        answer: impl Fn(&str, &Value) -> Value,
    ) -> (Value, usize) {
        if pushes(self.revision) {
            return self.run_pushed(method, params, answer).await;
        }
        let mut asked = 0;
        let mut answers = serde_json::Map::new();
        let mut state = Value::Null;
        for _ in 0..8 {
            let mut params = params.clone();
            if !answers.is_empty() || !state.is_null() {
                if in_arguments(self.revision) {
                    params["arguments"]["mcpAnswers"] = Value::Object(answers.clone());
                    params["arguments"]["mcpState"] = state.clone();
                } else {
                    params["inputResponses"] = Value::Object(answers.clone());
                    if !state.is_null() {
                        params["requestState"] = state.clone();
                    }
                }
            }
            let (_, response) = self.send(method, params).await;
            let result = &response["result"];
            let questions = if result["resultType"] == "input_required" {
                result.clone()
            } else if let Some(asked) = result["_meta"].get(META_KEY) {
                assert_ne!(result["isError"], true, "an unfinished call is no error");
                let text = result["content"][0]["text"].as_str().unwrap();
                assert!(
                    text.contains("mcpAnswers") && text.contains("mcpState"),
                    "{text}"
                );
                asked.clone()
            } else {
                return (response, asked);
            };
            state = questions["requestState"].clone();
            for (key, request) in questions["inputRequests"].as_object().unwrap() {
                asked += 1;
                answers.insert(key.clone(), answer(key, request));
            }
        }
        panic!("{}: the call never finished", self.revision);
    }

    async fn run_pushed(
        &mut self,
        method: &str,
        params: Value,
        answer: impl Fn(&str, &Value) -> Value,
    ) -> (Value, usize) {
        let (id, body) = self.body(method, params);
        let mut stream = self.request(&body).open(self.addr).await;
        assert_eq!(stream.header("content-type"), Some("text/event-stream"));
        let mut asked = 0;
        loop {
            let message = stream.message().await.expect("a message");
            validate(self.revision, &message);
            if message.get("method").is_some() {
                asked += 1;
                let key = message["method"].as_str().unwrap();
                let mut reply = json!({"jsonrpc": "2.0", "id": message["id"]});
                let outcome = answer(key, &message);
                if outcome.get("error").is_some() {
                    reply["error"] = outcome["error"].clone();
                } else {
                    reply["result"] = outcome;
                }
                let posted = self.request(&reply).send(self.addr).await;
                assert_eq!(posted.status, 202, "{}", self.revision);
            } else {
                assert_eq!(message["id"], id);
                return (message, asked);
            }
        }
    }
}

fn text(response: &Value) -> String {
    let result = &response["result"];
    result["content"][0]["text"]
        .as_str()
        .or_else(|| result["messages"][0]["content"]["text"].as_str())
        .or_else(|| result["contents"][0]["text"].as_str())
        .unwrap_or_else(|| panic!("no text in {response}"))
        .to_owned()
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

#[tokio::test]
async fn one_question_accepted_declined_cancelled_and_refused_on_every_revision() {
    let server = start(builder()).await;
    for revision in Revision::ALL {
        let mut peer = Peer::new(&server, revision, all_caps()).await;
        let call = json!({"name": "one", "arguments": {"target": "web"}});
        let (done, asked) = peer
            .run("tools/call", call.clone(), |_, _| accept(json!({})))
            .await;
        assert_eq!(text(&done), "went ahead with web", "{revision}");
        assert_eq!(asked, 1, "{revision}");
        for action in ["decline", "cancel"] {
            let (done, _) = peer
                .run("tools/call", call.clone(), |_, _| json!({"action": action}))
                .await;
            assert_eq!(text(&done), format!("stopped at {action}"), "{revision}");
        }
        // Whatever is not an explicit accept does not accept.
        let (done, _) = peer
            .run("tools/call", call.clone(), |_, _| json!({"content": {}}))
            .await;
        assert_eq!(text(&done), "stopped at decline", "{revision}");
        if pushes(revision) {
            // A JSON-RPC error in reply is a refusal, never an acceptance.
            let (done, _) = peer
                .run(
                    "tools/call",
                    call.clone(),
                    |_, _| json!({"error": {"code": -32603, "message": "no UI"}}),
                )
                .await;
            assert_eq!(text(&done), "stopped at cancel", "{revision}");
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn two_questions_in_one_call_on_every_revision() {
    let server = start(builder()).await;
    for revision in Revision::ALL {
        let mut peer = Peer::new(&server, revision, all_caps()).await;
        let (done, asked) = peer
            .run(
                "tools/call",
                json!({"name": "two", "arguments": {}}),
                |_, request| {
                    let params = request.get("params").unwrap();
                    if params["requestedSchema"]["properties"]
                        .get("name")
                        .is_some()
                    {
                        accept(json!({"name": "Ada"}))
                    } else {
                        json!({"action": "decline"})
                    }
                },
            )
            .await;
        assert_eq!(text(&done), "Ada and decline", "{revision}");
        assert_eq!(asked, 2, "{revision}");
    }
    server.stop().await;
}

#[tokio::test]
async fn sampling_roots_and_url_mode_where_the_revision_has_them() {
    let server = start(builder()).await;
    for revision in Revision::ALL {
        let mut peer = Peer::new(&server, revision, all_caps()).await;
        let (done, _) = peer
            .run(
                "tools/call",
                json!({"name": "sample", "arguments": {}}),
                |_, request| {
                    assert!(request["params"]["messages"].is_array(), "{request}");
                    json!({"role": "assistant", "content": {"type": "text", "text": "autumn moon"},
                       "model": "m", "stopReason": "endTurn"})
                },
            )
            .await;
        assert_eq!(text(&done), "model said autumn moon", "{revision}");
        let (done, _) = peer
            .run(
                "tools/call",
                json!({"name": "roots", "arguments": {}}),
                |_, _| json!({"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}),
            )
            .await;
        assert_eq!(text(&done), "2 roots", "{revision}");
        if [Revision::V2025_11_25, Revision::V2026_07_28].contains(&revision) {
            let (done, _) = peer
                .run(
                    "tools/call",
                    json!({"name": "login", "arguments": {}}),
                    |_, request| {
                        let params = request.get("params").unwrap();
                        assert_eq!(params["mode"], "url");
                        assert_eq!(params["url"], "https://example.com/login");
                        json!({"action": "accept"})
                    },
                )
                .await;
            assert_eq!(text(&done), "login accept", "{revision}");
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn prompts_and_resources_ask_where_they_can_and_fail_clearly_where_not() {
    let server = start(builder()).await;
    for revision in Revision::ALL {
        let mut peer = Peer::new(&server, revision, all_caps()).await;
        if in_arguments(revision) {
            for (method, params) in [
                ("prompts/get", json!({"name": "careful"})),
                ("resources/read", json!({"uri": "secret://doc"})),
            ] {
                let (status, response) = peer.send(method, params).await;
                assert_eq!(status, 200);
                assert_eq!(response["error"]["code"], -32603, "{revision}: {response}");
                let message = response["error"]["message"].as_str().unwrap();
                assert!(
                    message.contains(method) && message.contains("only tools can ask"),
                    "{message}"
                );
                assert!(response.get("result").is_none());
            }
            continue;
        }
        let (done, _) = peer
            .run("prompts/get", json!({"name": "careful"}), |_, _| {
                accept(json!({}))
            })
            .await;
        assert_eq!(text(&done), "sure: accept", "{revision}");
        let (done, _) = peer
            .run(
                "resources/read",
                json!({"uri": "secret://doc"}),
                |_, _| json!({"action": "decline"}),
            )
            .await;
        assert_eq!(text(&done), "read: decline", "{revision}");
    }
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_cannot_be_asked() {
    let server = start(builder()).await;
    for revision in Revision::ALL {
        let mut peer = Peer::new(&server, revision, json!({})).await;
        let call = json!({"name": "one", "arguments": {"target": "web"}});
        if in_arguments(revision) {
            // Asking in the arguments needs no declaration: every client can answer.
            let (done, asked) = peer.run("tools/call", call, |_, _| accept(json!({}))).await;
            assert_eq!((text(&done).as_str(), asked), ("went ahead with web", 1));
            continue;
        }
        let (status, response) = peer.send("tools/call", call).await;
        let error = &response["error"];
        if revision == Revision::V2026_07_28 {
            assert_eq!(status, 400);
            assert_eq!(error["code"], -32021, "{response}");
            assert_eq!(
                error["data"]["requiredCapabilities"],
                json!({"elicitation": {"form": {}}})
            );
        } else {
            assert_eq!(status, 200);
            assert_eq!(error["code"], -32603, "{revision}: {response}");
            assert!(error["message"].as_str().unwrap().contains("elicitation"));
        }
        // Declaring one capability is not declaring another.
        let mut peer = Peer::new(&server, revision, json!({"elicitation": {}})).await;
        let (_, response) = peer
            .send("tools/call", json!({"name": "sample", "arguments": {}}))
            .await;
        assert!(
            response["error"]["message"]
                .as_str()
                .unwrap()
                .contains("sampling"),
            "{revision}: {response}"
        );
        if revision == Revision::V2026_07_28 {
            assert_eq!(
                response["error"]["data"]["requiredCapabilities"],
                json!({"sampling": {}})
            );
        }
    }
    // 2025-06-18 has no URL mode, and a form-only client cannot be sent to a URL.
    let mut peer = Peer::new(&server, Revision::V2025_11_25, json!({"elicitation": {}})).await;
    let (_, response) = peer
        .send("tools/call", json!({"name": "login", "arguments": {}}))
        .await;
    assert_eq!(response["error"]["code"], -32603, "{response}");
    // A pushed question needs a stream: a client that accepts only JSON cannot be asked.
    let mut peer = Peer::new(&server, Revision::V2025_11_25, all_caps()).await;
    let (_, body) = peer.body(
        "tools/call",
        json!({"name": "one", "arguments": {"target": "web"}}),
    );
    let mut request = peer.request(&body);
    request.headers.retain(|(name, _)| name != "Accept");
    let response = request
        .header("Accept", "application/json")
        .send(peer.addr)
        .await;
    let message = &validated(Revision::V2025_11_25, &response)[0];
    assert_eq!(message["error"]["code"], -32603, "{message}");
    server.stop().await;
}

#[tokio::test]
async fn a_pushed_question_times_out_as_a_distinct_outcome() {
    let server = start(builder().ask_timeout(Duration::from_millis(50))).await;
    for revision in [Revision::V2025_11_25, Revision::V2025_06_18] {
        let mut peer = Peer::new(&server, revision, all_caps()).await;
        // The client reads the question and never answers.
        let (id, body) = peer.body("tools/call", json!({"name": "patient", "arguments": {}}));
        let mut stream = peer.request(&body).open(peer.addr).await;
        let question = stream.message().await.unwrap();
        validate(revision, &question);
        assert_eq!(question["method"], "elicitation/create");
        let done = stream.message().await.unwrap();
        validate(revision, &done);
        assert_eq!(done["id"], id);
        assert_eq!(text(&done), "no answer within 50ms", "{revision}");
        // A handler that passes the timeout on ends with an error result naming it.
        let (id, body) = peer.body(
            "tools/call",
            json!({"name": "one", "arguments": {"target": "x"}}),
        );
        let mut stream = peer.request(&body).open(peer.addr).await;
        let question = stream.message().await.unwrap();
        let done = stream.message().await.unwrap();
        validate(revision, &done);
        assert_eq!(done["id"], id);
        assert_eq!(done["result"]["isError"], true);
        assert!(text(&done).contains("did not answer within"), "{done}");
        // A reply that comes after the timeout reaches nobody and harms nothing.
        let late = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {}}});
        assert_eq!(peer.request(&late).send(peer.addr).await.status, 202);
    }
    server.stop().await;
}

/// The first round of `one` on an MRTR or in-arguments revision: (params, state).
async fn first_round(peer: &mut Peer, target: &str) -> (Value, Value) {
    let call = json!({"name": "one", "arguments": {"target": target}});
    let (_, response) = peer.send("tools/call", call.clone()).await;
    let result = &response["result"];
    let state = if in_arguments(peer.revision) {
        result["_meta"][META_KEY]["requestState"].clone()
    } else {
        assert_eq!(result["resultType"], "input_required");
        result["requestState"].clone()
    };
    assert!(state.is_string(), "{response}");
    (call, state)
}

/// `call` again with `answers` and `state`, the revision's way.
fn retry(revision: Revision, call: &Value, answers: Value, state: Value) -> Value {
    let mut params = call.clone();
    if in_arguments(revision) {
        params["arguments"]["mcpAnswers"] = answers;
        params["arguments"]["mcpState"] = state;
    } else {
        params["inputResponses"] = answers;
        if !state.is_null() {
            params["requestState"] = state;
        }
    }
    params
}

fn assert_invalid_state(revision: Revision, status: u16, response: &Value) {
    assert_eq!(response["error"]["code"], -32602, "{revision}: {response}");
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("requestState"),
        "{response}"
    );
    assert_eq!(status, 200);
}

#[tokio::test]
async fn tampered_replayed_foreign_and_expired_state_is_refused() {
    let server = start(builder()).await;
    let expiring = start(builder().request_state_ttl(Duration::ZERO)).await;
    let yes = json!({"confirm": {"action": "accept", "content": {}}});
    for revision in [
        Revision::V2026_07_28,
        Revision::V2025_03_26,
        Revision::V2024_11_05,
    ] {
        let mut peer = Peer::new(&server, revision, all_caps()).await;
        // Tampered: one character changed.
        let (call, state) = first_round(&mut peer, "web").await;
        let mut forged = state.as_str().unwrap().to_owned();
        let flipped = if forged.ends_with('A') { "B" } else { "A" };
        forged.replace_range(forged.len() - 1.., flipped);
        let (status, response) = peer
            .send(
                "tools/call",
                retry(revision, &call, yes.clone(), json!(forged)),
            )
            .await;
        assert_invalid_state(revision, status, &response);
        // Not a string, or made up.
        for bad in [json!(42), json!("made-up"), json!({"id": 1})] {
            let (status, response) = peer
                .send("tools/call", retry(revision, &call, yes.clone(), bad))
                .await;
            if in_arguments(revision) {
                // mcpState is a tool argument: a malformed one is the tool's bad input.
                assert!(
                    response["error"]["code"] == -32602 || response["result"]["isError"] == true,
                    "{revision}: {response}"
                );
            } else {
                assert!(
                    response["error"]["code"] == -32602,
                    "{revision}: {response}"
                );
                let _ = status;
            }
        }
        // The genuine state works once ...
        let (_, done) = peer
            .send(
                "tools/call",
                retry(revision, &call, yes.clone(), state.clone()),
            )
            .await;
        assert_eq!(text(&done), "went ahead with web", "{revision}");
        // ... and is refused when replayed.
        let (status, response) = peer
            .send("tools/call", retry(revision, &call, yes.clone(), state))
            .await;
        assert_invalid_state(revision, status, &response);
        // Bound to the call: other arguments, or another tool, are refused.
        let (_, state) = first_round(&mut peer, "web").await;
        let other = json!({"name": "one", "arguments": {"target": "db"}});
        let (status, response) = peer
            .send("tools/call", retry(revision, &other, yes.clone(), state))
            .await;
        assert_invalid_state(revision, status, &response);
        let (_, state) = first_round(&mut peer, "web").await;
        let other = json!({"name": "two", "arguments": {}});
        let (status, response) = peer
            .send("tools/call", retry(revision, &other, json!({}), state))
            .await;
        assert_invalid_state(revision, status, &response);
        // Another session on the same server cannot use it either when bound to a principal
        // (see the socket-free test below); here, expired:
        let mut late = Peer::new(&expiring, revision, all_caps()).await;
        let (call, state) = first_round(&mut late, "web").await;
        let (status, response) = late
            .send("tools/call", retry(revision, &call, yes.clone(), state))
            .await;
        assert_invalid_state(revision, status, &response);
    }
    server.stop().await;
    expiring.stop().await;
}

#[tokio::test]
async fn answers_nobody_asked_for_are_ignored() {
    let server = start(builder()).await;
    let yes = json!({"action": "accept", "content": {}});
    for revision in Revision::ALL {
        let mut peer = Peer::new(&server, revision, all_caps()).await;
        let call = json!({"name": "one", "arguments": {"target": "web"}});
        if pushes(revision) {
            // A reply to a request the server never pushed is accepted and goes nowhere.
            let stray = json!({"jsonrpc": "2.0", "id": "mcp-q-guessed", "result": yes});
            assert_eq!(peer.request(&stray).send(peer.addr).await.status, 202);
            let (done, asked) = peer
                .run("tools/call", call, |_, _| json!({"action": "decline"}))
                .await;
            assert_eq!((text(&done).as_str(), asked), ("stopped at decline", 1));
            continue;
        }
        // Answers on the first call, without state: the question is asked all the same.
        let (_, response) = peer
            .send(
                "tools/call",
                retry(revision, &call, json!({"confirm": yes}), Value::Null),
            )
            .await;
        let result = &response["result"];
        let questions = if in_arguments(revision) {
            &result["_meta"][META_KEY]
        } else {
            assert_eq!(result["resultType"], "input_required", "{response}");
            result
        };
        assert!(
            questions["inputRequests"].get("confirm").is_some(),
            "{response}"
        );
        // With genuine state for the first question, an answer to the second one (not yet
        // asked) is ignored: the second question is still put.
        let two = json!({"name": "two", "arguments": {}});
        let (_, first) = peer.send("tools/call", two.clone()).await;
        let state = if in_arguments(revision) {
            first["result"]["_meta"][META_KEY]["requestState"].clone()
        } else {
            first["result"]["requestState"].clone()
        };
        let answers =
            json!({"name": {"action": "accept", "content": {"name": "Ada"}}, "sure": yes});
        let (_, second) = peer
            .send("tools/call", retry(revision, &two, answers, state))
            .await;
        let result = &second["result"];
        let asked = if in_arguments(revision) {
            &result["_meta"][META_KEY]["inputRequests"]
        } else {
            &result["inputRequests"]
        };
        assert!(asked.get("sure").is_some(), "{revision}: {second}");
        assert!(asked.get("name").is_none(), "{revision}: {second}");
    }
    server.stop().await;
}

/// The transport's principal and session, socket-free: state issued to one principal is
/// refused to another, and a reply to a pushed question counts only from the same session.
#[tokio::test]
async fn state_and_replies_are_bound_to_the_principal_and_session() {
    let server = builder().build().unwrap();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    let call = |id: i64, extra: Value| {
        let mut params = json!({"_meta": meta, "name": "one", "arguments": {"target": "web"}});
        params
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    };
    let alice = Context::connection().with_principal("issuer|alice");
    let bob = Context::connection().with_principal("issuer|bob");
    let first = server.handle_all(call(1, json!({})), &alice).await;
    let first = first.last().unwrap().to_value();
    validate(Revision::V2026_07_28, &first);
    let state = first["result"]["requestState"].clone();
    let answers = json!({"inputResponses": {"confirm": {"action": "accept", "content": {}}}, "requestState": state});
    let stolen = server.handle_all(call(2, answers.clone()), &bob).await;
    let stolen = stolen.last().unwrap().to_value();
    validate(Revision::V2026_07_28, &stolen);
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");

    // Pushed: a reply from another session does not reach the question.
    use futures::StreamExt as _;
    let init = |caps: Value| {
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": caps,
            "clientInfo": {"name": "raw", "version": "1"}}})
    };
    let asking = Context::connection().with_session("session-a");
    let other = Context::connection().with_session("session-b");
    let same = Context::connection().with_session("session-a");
    for ctx in [&asking, &other, &same] {
        server
            .handle_all(init(json!({"elicitation": {}})), ctx)
            .await;
    }
    let mut reply = server.handle(
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
               "params": {"name": "one", "arguments": {"target": "web"}}}),
        &asking,
    );
    let question = reply.next().await.unwrap().to_value();
    validate(Revision::V2025_11_25, &question);
    let waiting = tokio::spawn(async move {
        let done = reply.next().await.unwrap().to_value();
        (done, reply)
    });
    let yes = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {}}});
    let no = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}});
    // The foreign session's accept goes nowhere; the asking session's decline is read.
    assert!(server.handle_all(yes, &other).await.is_empty());
    assert!(server.handle_all(no, &same).await.is_empty());
    let (done, _) = tokio::time::timeout(raw_http::WAIT, waiting)
        .await
        .unwrap()
        .unwrap();
    validate(Revision::V2025_11_25, &done);
    assert_eq!(text(&done), "stopped at decline");
}

/// The bundled client answers every mechanism through one `on_ask`: two questions, sampling
/// and roots on every revision, over Streamable HTTP.
#[tokio::test]
async fn mcp_client_answers_every_mechanism() {
    use mcp_client::{Answer, Asks, Client, QuestionKind};
    let server = start(builder()).await;
    for revision in Revision::ALL {
        let client = Client::builder()
            .timeout(raw_http::WAIT)
            .revision(revision)
            .on_ask(
                Asks::none().elicitation().sampling().roots(),
                |question| async move {
                    match question.kind() {
                        QuestionKind::Sampling => Answer::result(json!({
                            "role": "assistant", "model": "m",
                            "content": {"type": "text", "text": "autumn moon"}})),
                        QuestionKind::Roots => {
                            Answer::result(json!({"roots": [{"uri": "file:///a"}]}))
                        }
                        _ if question
                            .requested_schema()
                            .is_some_and(|s| s["properties"].get("name").is_some()) =>
                        {
                            Answer::accept(json!({"name": "Ada"}))
                        }
                        _ => Answer::decline(),
                    }
                },
            )
            .connect_http(&server.url("/mcp"))
            .await
            .unwrap();
        let call = |name: &'static str| {
            let client = &client;
            async move {
                let result = client.call_tool(name, json!({})).await.unwrap();
                result["content"][0]["text"].as_str().unwrap().to_owned()
            }
        };
        assert_eq!(call("two").await, "Ada and decline", "{revision}");
        assert_eq!(call("sample").await, "model said autumn moon", "{revision}");
        assert_eq!(call("roots").await, "1 roots", "{revision}");
        client.close().await.unwrap();
    }
    server.stop().await;
}

/// An event log whose first `failures` polls of a question's reply topic fail as a backend
/// outage would (Redis or a database restarting); everything else goes to the memory hub.
struct Outage {
    hub: mcp_hub::MemoryHub,
    failures: std::sync::atomic::AtomicUsize,
    failed: std::sync::atomic::AtomicUsize,
}

impl mcp_hub::EventLog for Outage {
    fn publish<'a>(
        &'a self,
        topic: &'a mcp_hub::Topic,
        message: bytes::Bytes,
    ) -> futures::future::BoxFuture<'a, Result<mcp_hub::Cursor, mcp_hub::LogError>> {
        self.hub.publish(topic, message)
    }

    fn publish_existing<'a>(
        &'a self,
        topic: &'a mcp_hub::Topic,
        message: bytes::Bytes,
    ) -> futures::future::BoxFuture<'a, Result<Option<mcp_hub::Cursor>, mcp_hub::LogError>> {
        self.hub.publish_existing(topic, message)
    }

    fn position<'a>(
        &'a self,
        topic: &'a mcp_hub::Topic,
    ) -> futures::future::BoxFuture<'a, Result<mcp_hub::Cursor, mcp_hub::LogError>> {
        self.hub.position(topic)
    }

    fn poll<'a>(
        &'a self,
        topic: &'a mcp_hub::Topic,
        after: mcp_hub::Cursor,
        timeout: Duration,
    ) -> futures::future::BoxFuture<'a, Result<Vec<mcp_hub::Event>, mcp_hub::LogError>> {
        use std::sync::atomic::Ordering;
        if topic.as_str().contains("ask/")
            && self
                .failures
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                .is_ok()
        {
            self.failed.fetch_add(1, Ordering::AcqRel);
            return Box::pin(async {
                Err(mcp_hub::LogError::Backend(
                    mcp_hub::BackendError::connection("the backend restarts"),
                ))
            });
        }
        self.hub.poll(topic, after, timeout)
    }

    fn delete<'a>(
        &'a self,
        topic: &'a mcp_hub::Topic,
    ) -> futures::future::BoxFuture<'a, Result<(), mcp_hub::LogError>> {
        self.hub.delete(topic)
    }
}

#[tokio::test]
async fn a_pushed_question_waits_through_a_hub_outage() {
    let log = std::sync::Arc::new(Outage {
        hub: mcp_hub::MemoryHub::new(mcp_hub::HubConfig::default()),
        failures: 3.into(),
        failed: 0.into(),
    });
    let server = start(builder().event_log(log.clone())).await;
    let mut peer = Peer::new(&server, Revision::V2025_11_25, all_caps()).await;
    let (id, body) = peer.body(
        "tools/call",
        json!({"name": "one", "arguments": {"target": "x"}}),
    );
    let mut stream = peer.request(&body).open(peer.addr).await;
    let question = stream.message().await.unwrap();
    assert_eq!(question["method"], "elicitation/create");
    let yes = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {}}});
    assert_eq!(peer.request(&yes).send(peer.addr).await.status, 202);
    let done = stream.message().await.unwrap();
    validate(Revision::V2025_11_25, &done);
    assert_eq!(done["id"], id);
    assert_eq!(text(&done), "went ahead with x", "{done}");
    assert_eq!(log.failed.load(std::sync::atomic::Ordering::Acquire), 3);
    server.stop().await;
}
