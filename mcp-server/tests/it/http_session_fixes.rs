//! Streamable HTTP and HTTP+SSE session fixes over real sockets on 127.0.0.1: `initialize`
//! with a version header, replies to pushed questions bound to their session, and
//! `notifications/cancelled` reaching a call that runs in an earlier POST.

use crate::raw_http;
use crate::support;

include!("../../src/bin/demo/registry.rs");

use mcp_server::Revision;
use mcp_server::http::HttpConfig;
use raw_http::{RawRequest, RawResponse, Running, WAIT};
use serde_json::Value;

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// Revisions whose Streamable HTTP requests carry `MCP-Protocol-Version`.
const WITH_HEADER: [Revision; 2] = [Revision::V2025_11_25, Revision::V2025_06_18];

fn validated(revision: Revision, response: &RawResponse) -> Vec<Value> {
    let messages = response.messages();
    for message in &messages {
        support::check(revision, "JSONRPCMessage", message);
    }
    messages
}

fn post(revision: Revision, session: Option<&str>, body: &Value) -> RawRequest<'static> {
    let mut request = RawRequest::new("POST", "/mcp")
        .header("Accept", ACCEPT_BOTH)
        .header("MCP-Protocol-Version", revision.as_str());
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    request.json(body)
}

/// `initialize` (sent with the version header, as some clients always do) and
/// `notifications/initialized`; returns the session id.
async fn open_session(server: &Running, revision: Revision, capabilities: Value) -> String {
    let init = post(
        revision,
        None,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": revision.as_str(), "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .send(server.addr)
    .await;
    assert_eq!(
        init.status,
        200,
        "{revision}: {}",
        String::from_utf8_lossy(&init.body)
    );
    let result = &validated(revision, &init)[0]["result"];
    assert_eq!(result["protocolVersion"], revision.as_str());
    let session = init
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let done = post(
        revision,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .send(server.addr)
    .await;
    assert_eq!(done.status, 202, "{revision}");
    session
}

#[tokio::test]
async fn initialize_with_a_version_header_needs_no_session() {
    let server = Running::start(demo_builder("fixes").build().unwrap(), HttpConfig::new()).await;
    for revision in WITH_HEADER {
        let session = open_session(&server, revision, json!({})).await;
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}}});
        let response = post(revision, Some(&session), &call)
            .send(server.addr)
            .await;
        assert_eq!(response.status, 200, "{revision}");
        let messages = validated(revision, &response);
        assert_eq!(messages[0]["result"]["structuredContent"]["sum"], 3);
    }
    // The header may even name another revision: the body's protocolVersion negotiates.
    let init = post(
        Revision::V2026_07_28,
        None,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .send(server.addr)
    .await;
    assert_eq!(init.status, 200);
    assert_eq!(
        validated(Revision::V2025_06_18, &init)[0]["result"]["protocolVersion"],
        "2025-06-18"
    );
    assert!(init.header("mcp-session-id").is_some());
    server.stop().await;
}

fn elicit_reply(id: &Value, action: &str) -> Value {
    let mut result = json!({"action": action});
    if action == "accept" {
        result["content"] = json!({});
    }
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

#[tokio::test]
async fn a_reply_posted_in_another_session_answers_nothing() {
    let server = Running::start(demo_builder("fixes").build().unwrap(), HttpConfig::new()).await;
    let revision = Revision::V2025_11_25;
    let caps = json!({"elicitation": {}});
    let asker = open_session(&server, revision, caps.clone()).await;
    let other = open_session(&server, revision, caps).await;
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "deploy", "arguments": {"service": "web"}}});
    let mut stream = post(revision, Some(&asker), &call).open(server.addr).await;
    let question = tokio::time::timeout(WAIT, stream.message())
        .await
        .expect("the question in time")
        .expect("a question");
    support::check(revision, "JSONRPCMessage", &question);
    assert_eq!(question["method"], "elicitation/create", "{question}");
    // The other session accepts: the transport takes the reply, nobody receives it.
    let stolen = post(
        revision,
        Some(&other),
        &elicit_reply(&question["id"], "accept"),
    )
    .send(server.addr)
    .await;
    assert_eq!(stolen.status, 202);
    // The asking session declines: that is the answer the call gets.
    let own = post(
        revision,
        Some(&asker),
        &elicit_reply(&question["id"], "decline"),
    )
    .send(server.addr)
    .await;
    assert_eq!(own.status, 202);
    let response = tokio::time::timeout(WAIT, stream.message())
        .await
        .expect("the result in time")
        .expect("a result");
    support::check(revision, "JSONRPCMessage", &response);
    assert_eq!(response["id"], 5);
    assert_eq!(
        response["result"]["content"][0]["text"], "stopped at decline",
        "{response}"
    );
    server.stop().await;
}

#[tokio::test]
async fn touch_reaches_a_subscribed_get_stream() {
    let server = Running::start(build_demo("fixes", |b| b).unwrap(), HttpConfig::new()).await;
    let revision = Revision::V2025_11_25;
    let session = open_session(&server, revision, json!({})).await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
        "params": {"uri": "config://app"}});
    let answer = post(revision, Some(&session), &subscribe)
        .send(server.addr)
        .await;
    assert_eq!(answer.status, 200);
    assert!(validated(revision, &answer)[0].get("result").is_some());
    let mut stream = RawRequest::new("GET", "/mcp")
        .header("Accept", "text/event-stream")
        .header("MCP-Protocol-Version", revision.as_str())
        .header("Mcp-Session-Id", &session)
        .open(server.addr)
        .await;
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    let touch = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "touch", "arguments": {}}});
    let response = post(revision, Some(&session), &touch)
        .send(server.addr)
        .await;
    assert_eq!(response.status, 200);
    assert_eq!(
        validated(revision, &response)[0]["result"]["content"][0]["text"],
        "touched config://app"
    );
    let update = stream.message().await.expect("an update");
    support::check(revision, "JSONRPCMessage", &update);
    assert_eq!(update["method"], "notifications/resources/updated");
    assert_eq!(update["params"]["uri"], "config://app");
    server.stop().await;
}

/// Signals of the `wait` tool: it started; its cancellation signal fired.
#[derive(Clone, Default)]
struct Signals {
    started: std::sync::Arc<tokio::sync::Notify>,
    cancelled: std::sync::Arc<tokio::sync::Notify>,
}

/// The demo plus `wait`, which runs until it is cancelled, on `hub`.
fn waiting_server(signals: &Signals, hub: &std::sync::Arc<mcp_hub::MemoryHub>) -> Server {
    let signals = signals.clone();
    let wait = move |_: NoArgs, ex: Exchange| {
        let signals = signals.clone();
        async move {
            signals.started.notify_one();
            ex.cancelled().await;
            signals.cancelled.notify_one();
            "cancelled".to_owned()
        }
    };
    demo_builder("fixes")
        .tool(Tool::new("wait", wait).description("Runs until cancelled."))
        .state_store(hub.clone())
        .event_log(hub.clone())
        .build()
        .unwrap()
}

fn memory_hub() -> std::sync::Arc<mcp_hub::MemoryHub> {
    std::sync::Arc::new(mcp_hub::MemoryHub::new(mcp_hub::HubConfig::default()))
}

/// Starts `wait` in `session` on `calls`, cancels it with a POST to `cancels` (the same
/// worker or another one), and checks the handler saw its signal and no response was sent.
async fn cancel_across(calls: &Running, cancels: &Running, signals: &Signals) {
    let revision = Revision::V2025_11_25;
    let session = open_session(calls, revision, json!({})).await;
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "wait", "arguments": {}}});
    let request = post(revision, Some(&session), &call);
    let addr = calls.addr;
    let pending = tokio::spawn(async move { request.send(addr).await });
    tokio::time::timeout(WAIT, signals.started.notified())
        .await
        .expect("the call starts");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 9, "reason": "test"}});
    let posted = post(revision, Some(&session), &cancel)
        .send(cancels.addr)
        .await;
    assert_eq!(posted.status, 202);
    tokio::time::timeout(WAIT, signals.cancelled.notified())
        .await
        .expect("the handler's cancellation signal fires");
    let response = tokio::time::timeout(WAIT, pending)
        .await
        .expect("the call's request ends")
        .unwrap();
    let answers: Vec<Value> = response
        .messages()
        .into_iter()
        .filter(|m| m.get("id") == Some(&json!(9)))
        .collect();
    assert!(
        answers.is_empty(),
        "a cancelled call got a response: {answers:?}"
    );
}

#[tokio::test]
async fn a_later_cancellation_reaches_the_call_on_the_same_worker() {
    let signals = Signals::default();
    let server = Running::start(waiting_server(&signals, &memory_hub()), HttpConfig::new()).await;
    cancel_across(&server, &server, &signals).await;
    server.stop().await;
}

#[tokio::test]
async fn a_later_cancellation_reaches_the_call_on_another_worker() {
    let signals = Signals::default();
    let hub = memory_hub();
    let one = Running::start(waiting_server(&signals, &hub), HttpConfig::new()).await;
    let two = Running::start(waiting_server(&signals, &hub), HttpConfig::new()).await;
    cancel_across(&one, &two, &signals).await;
    one.stop().await;
    two.stop().await;
}

#[tokio::test]
async fn a_later_cancellation_reaches_an_http_sse_call_on_another_worker() {
    let signals = Signals::default();
    let hub = memory_hub();
    let one = Running::start(waiting_server(&signals, &hub), HttpConfig::new()).await;
    let two = Running::start(waiting_server(&signals, &hub), HttpConfig::new()).await;
    let mut stream = RawRequest::new("GET", "/sse")
        .header("Accept", "text/event-stream")
        .open(one.addr)
        .await;
    let endpoint = stream.event().await.unwrap().data;
    let send = |body: Value| RawRequest::new("POST", &endpoint).json(&body);
    let accepted = send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .send(one.addr)
    .await;
    assert_eq!(accepted.status, 202);
    let init = stream.message().await.unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send(one.addr)
        .await;
    let accepted = send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "wait", "arguments": {}}}))
    .send(one.addr)
    .await;
    assert_eq!(accepted.status, 202);
    tokio::time::timeout(WAIT, signals.started.notified())
        .await
        .expect("the call starts");
    let accepted = send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2}}),
    )
    .send(two.addr)
    .await;
    assert_eq!(accepted.status, 202);
    tokio::time::timeout(WAIT, signals.cancelled.notified())
        .await
        .expect("the handler's cancellation signal fires");
    // The cancelled call answers nothing: the next message on the stream is the ping's.
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
        .send(two.addr)
        .await;
    let next = stream.message().await.unwrap();
    support::check(Revision::V2025_11_25, "JSONRPCMessage", &next);
    assert_eq!(next["id"], 3, "{next}");
    one.stop().await;
    two.stop().await;
}
