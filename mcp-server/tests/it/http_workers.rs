//! Two server instances sharing one hub (state store and event log), once per backend:
//! Redis, PostgreSQL and SQLite (two hubs opened on one file); see `support/backends.rs` for
//! where each is and when a row is skipped. A session created on one instance is used on the
//! other, an HTTP+SSE stream held by one gets the answers to POSTs made to the other, and a
//! question pushed by one is answered through the other.

use crate::backends;
use crate::raw_http;
use crate::support;

include!("../../src/bin/demo/registry.rs");

use std::time::{Duration, Instant};

use backends::{Backend, Place};
use mcp_server::Revision;
use mcp_server::http::HttpConfig;
use raw_http::{RawRequest, Running};
use serde_json::Value;

/// Two instances on `place`, each with its own hub.
///
/// The session cache is off: these tests send a request to one instance right after a change
/// made on the other, and assert the change holds (strict reads across workers).
async fn pair(place: &Place) -> (Running, Running) {
    pair_with(place, HttpConfig::new().session_cache(Duration::ZERO)).await
}

/// [`pair`] with `config` on both instances.
async fn pair_with(place: &Place, http: HttpConfig) -> (Running, Running) {
    let mut instances = Vec::new();
    for _ in 0..2 {
        let hub = place.hub().await;
        let server = demo_builder("hub-pair")
            .state_store(hub.clone())
            .event_log(hub)
            .build()
            .unwrap();
        instances.push(Running::start(server, http.clone()).await);
    }
    let b = instances.pop().unwrap();
    let a = instances.pop().unwrap();
    (a, b)
}

/// Runs `body` once per backend that answers (see `support/backends.rs`).
macro_rules! per_backend {
    ($body:ident) => {
        for backend in Backend::all() {
            let Some(place) = backend.place().await else {
                continue;
            };
            eprintln!("row: {backend:?}");
            $body(&place).await;
        }
    };
}

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

fn post(session: Option<&str>, body: &Value) -> RawRequest<'static> {
    let mut request = RawRequest::new("POST", "/mcp")
        .header("Accept", ACCEPT_BOTH)
        .header("MCP-Protocol-Version", "2025-11-25");
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    request.json(body)
}

#[tokio::test]
async fn a_session_created_on_one_instance_is_used_on_the_other() {
    per_backend!(session_row);
}

async fn session_row(place: &Place) {
    let (a, b) = pair(place).await;
    let init = RawRequest::new("POST", "/mcp")
        .header("Accept", ACCEPT_BOTH)
        .json(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "pair", "version": "1"}}}),
        )
        .send(a.addr)
        .await;
    assert_eq!(init.status, 200);
    let session = init.header("mcp-session-id").unwrap().to_owned();
    // Used on B: served as 2025-11-25, with the capabilities declared on A.
    let list = post(
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .send(b.addr)
    .await;
    assert_eq!(list.status, 200);
    let tools = list.json();
    support::check(Revision::V2025_11_25, "JSONRPCResponse", &tools);
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 9);
    // The log level set on B holds on A.
    set_level(&b, &session, 2).await;
    assert_eq!(logs_of_count(&a, &session, 3).await, 2);
    // A question pushed by A is answered through B.
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "deploy", "arguments": {"service": "api"}}});
    let mut stream = post(Some(&session), &call).open(a.addr).await;
    let question = stream.message().await.unwrap();
    assert_eq!(question["method"], "elicitation/create");
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {}}});
    assert_eq!(post(Some(&session), &answer).send(b.addr).await.status, 202);
    let done = stream.message().await.unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "deployed api");
    // Ended on B: lost on A.
    let deleted = RawRequest::new("DELETE", "/mcp")
        .header("Mcp-Session-Id", &session)
        .send(b.addr)
        .await;
    assert_eq!(deleted.status, 204);
    let lost = post(
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
    )
    .send(a.addr)
    .await;
    assert_eq!(lost.status, 404);
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn an_http_sse_stream_on_one_instance_answers_posts_to_the_other() {
    per_backend!(http_sse_row);
}

async fn http_sse_row(place: &Place) {
    let (a, b) = pair(place).await;
    let mut stream = RawRequest::new("GET", "/sse")
        .header("Accept", "text/event-stream")
        .open(a.addr)
        .await;
    let endpoint = stream.event().await.unwrap().data;
    let send = |body: Value| RawRequest::new("POST", &endpoint).json(&body);
    let accepted = send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "pair", "version": "1"}}}),
    )
    .send(b.addr)
    .await;
    assert_eq!(accepted.status, 202);
    let init = stream.message().await.unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    // The negotiated revision and capabilities hold for later POSTs, on either instance.
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send(a.addr)
        .await;
    let accepted = send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "deploy", "arguments": {"service": "db"}}}))
    .send(b.addr)
    .await;
    assert_eq!(accepted.status, 202);
    let question = stream.message().await.unwrap();
    support::check(Revision::V2025_11_25, "JSONRPCRequest", &question);
    assert_eq!(question["method"], "elicitation/create");
    send(json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}}))
        .send(a.addr)
        .await;
    let done = stream.message().await.unwrap();
    assert_eq!(done["id"], 2);
    assert_eq!(done["result"]["content"][0]["text"], "stopped at decline");
    a.stop().await;
    b.stop().await;
}

/// Sets the log level of `session` to `info` on `at`.
async fn set_level(at: &Running, session: &str, id: u64) {
    let set = post(
        Some(session),
        &json!({"jsonrpc": "2.0", "id": id, "method": "logging/setLevel", "params": {"level": "info"}}),
    )
    .send(at.addr)
    .await;
    assert_eq!(set.status, 200);
}

/// The number of `notifications/message` a `count` call of `session` on `at` sends.
async fn logs_of_count(at: &Running, session: &str, id: u64) -> usize {
    let counted = post(
        Some(session),
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "count", "arguments": {"n": 2}}}),
    )
    .send(at.addr)
    .await;
    counted
        .messages()
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .count()
}

#[tokio::test]
async fn with_the_session_cache_a_change_on_one_instance_reaches_the_other_through_the_hub() {
    per_backend!(session_cache_row);
}

async fn session_cache_row(place: &Place) {
    // Records are trusted for a minute, so anything seen sooner came through the change feed.
    let (a, b) = pair_with(
        place,
        HttpConfig::new().session_cache(Duration::from_secs(60)),
    )
    .await;
    let init = RawRequest::new("POST", "/mcp")
        .header("Accept", ACCEPT_BOTH)
        .json(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "pair", "version": "1"}}}),
        )
        .send(a.addr)
        .await;
    let session = init.header("mcp-session-id").unwrap().to_owned();
    // A holds the record (no log level yet): no logs.
    assert_eq!(logs_of_count(&a, &session, 1).await, 0);
    set_level(&b, &session, 2).await;
    // The change reaches A through the hub, long before A's copy would expire.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut id = 3;
    while logs_of_count(&a, &session, id).await != 2 {
        assert!(
            Instant::now() < deadline,
            "the level set on B never reached A"
        );
        id += 1;
    }
    // Ended on B: A answers 404 once the notice arrives.
    let deleted = RawRequest::new("DELETE", "/mcp")
        .header("Mcp-Session-Id", &session)
        .send(b.addr)
        .await;
    assert_eq!(deleted.status, 204);
    loop {
        let listed = post(
            Some(&session),
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}),
        )
        .send(a.addr)
        .await;
        if listed.status == 404 {
            break;
        }
        assert_eq!(listed.status, 200);
        assert!(
            Instant::now() < deadline,
            "the session ended on B lives on A"
        );
        id += 1;
    }
    a.stop().await;
    b.stop().await;
}
