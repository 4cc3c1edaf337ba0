//! End to end with our own client over real sockets: HTTP+SSE (2024-11-05, and 2025-11-25
//! negotiated over it) and Streamable HTTP on every revision, including questions.

use crate::raw_http;
use crate::support;

include!("../../src/bin/demo/registry.rs");

use mcp_client::{Answer, Asks, Client, Revision};
use mcp_server::http::HttpConfig;
use raw_http::{RawRequest, Running, WAIT};
use serde_json::Value;

async fn demo_server() -> Running {
    Running::start(
        demo_builder("http-client-test").build().unwrap(),
        HttpConfig::new(),
    )
    .await
}

/// A client that accepts every question (with a name for form questions).
fn answering() -> mcp_client::ClientBuilder {
    Client::builder()
        .timeout(WAIT)
        .on_ask(Asks::none().elicitation(), |question| async move {
            if question
                .requested_schema()
                .is_some_and(|s| s["properties"].get("name").is_some())
            {
                Answer::accept(json!({"name": "renamed.txt"}))
            } else {
                Answer::accept(json!({}))
            }
        })
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

async fn exercise(client: &Client) {
    let revision = client.revision();
    let sum = client
        .call_tool("add", json!({"a": 40, "b": 2}))
        .await
        .unwrap();
    assert!(text(&sum).contains("42"), "{revision}: {sum}");
    let deployed = client
        .call_tool("deploy", json!({"service": "web"}))
        .await
        .unwrap();
    assert_eq!(text(&deployed), "deployed web", "{revision}");
    let renamed = client
        .call_tool("rename", json!({"path": "a.txt"}))
        .await
        .unwrap();
    assert_eq!(text(&renamed), "renamed a.txt to renamed.txt", "{revision}");
    let failed = client.call_tool("boom", json!({})).await.unwrap();
    assert_eq!(failed["isError"], true, "{revision}");
    let read = client.read_resource("res://items/7").await.unwrap();
    assert_eq!(read["contents"][0]["text"], "item 7", "{revision}");
    let prompt = client
        .get_prompt("greet", json!({"name": "Ada"}))
        .await
        .unwrap();
    assert!(prompt["messages"].is_array(), "{revision}");
    assert_eq!(client.list_tools().await.unwrap().len(), 9, "{revision}");
}

#[tokio::test]
async fn http_sse_with_a_2024_11_05_client() {
    let server = demo_server().await;
    let client = answering()
        .revision(Revision::V2024_11_05)
        .connect_sse(&server.url("/sse"))
        .await
        .unwrap();
    assert_eq!(client.revision(), Revision::V2024_11_05);
    exercise(&client).await;
    client.close().await.unwrap();
    server.stop().await;
}

#[tokio::test]
async fn http_sse_with_a_2025_11_25_client_negotiating() {
    let server = demo_server().await;
    let client = answering().connect_sse(&server.url("/sse")).await.unwrap();
    assert_eq!(client.revision(), Revision::V2025_11_25);
    // deploy and rename push elicitation requests on the stream: the capabilities declared
    // at initialize are kept for the life of the stream.
    exercise(&client).await;
    client.close().await.unwrap();
    server.stop().await;
}

#[tokio::test]
async fn streamable_http_on_every_revision() {
    let server = demo_server().await;
    for revision in Revision::ALL {
        let client = answering()
            .revision(revision)
            .connect_http(&server.url("/mcp"))
            .await
            .unwrap();
        assert_eq!(client.revision(), revision);
        exercise(&client).await;
        client.close().await.unwrap();
    }
    let negotiated = answering()
        .remember_era(false)
        .connect_http(&server.url("/mcp"))
        .await
        .unwrap();
    assert_eq!(negotiated.revision(), Revision::V2026_07_28);
    exercise(&negotiated).await;
    server.stop().await;
}

#[tokio::test]
async fn http_sse_by_hand() {
    let server = demo_server().await;
    let mut stream = RawRequest::new("GET", "/sse")
        .header("Accept", "text/event-stream")
        .open(server.addr)
        .await;
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("x-accel-buffering"), Some("no"));
    let endpoint = stream.event().await.unwrap();
    assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
    assert!(
        endpoint.data.starts_with("/messages?session_id="),
        "{}",
        endpoint.data
    );
    let post = |body: Value| RawRequest::new("POST", &endpoint.data).json(&body);
    let accepted = post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}))
    .send(server.addr)
    .await;
    assert_eq!(accepted.status, 202);
    let event = stream.event().await.unwrap();
    assert_eq!(event.event.as_deref(), Some("message"));
    let init: Value = serde_json::from_str(&event.data).unwrap();
    support::check(Revision::V2024_11_05, "JSONRPCResponse", &init);
    support::check(Revision::V2024_11_05, "InitializeResult", &init["result"]);
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05");
    // A 2026-07-28 request cannot use this transport.
    let modern = post(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}}),
    )
    .send(server.addr)
    .await;
    assert_eq!(modern.status, 202);
    let refused = stream.message().await.unwrap();
    support::check(Revision::V2024_11_05, "JSONRPCError", &refused);
    assert_eq!(refused["id"], 2);
    assert_eq!(
        refused["error"]["data"]["supported"],
        json!(["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
    );
    // Unknown stream: 404; no session: 400; not JSON: 415.
    let lost = RawRequest::new("POST", "/messages?session_id=nope")
        .json(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
        .send(server.addr)
        .await;
    assert_eq!(lost.status, 404);
    let none = RawRequest::new("POST", "/messages")
        .json(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
        .send(server.addr)
        .await;
    assert_eq!(none.status, 400);
    let not_json = RawRequest::new("POST", &endpoint.data)
        .header("Content-Type", "text/plain")
        .body("{}")
        .send(server.addr)
        .await;
    assert_eq!(not_json.status, 415);
    server.stop().await;
    // Shutdown ends the stream.
    while stream.event().await.is_some() {}
}
