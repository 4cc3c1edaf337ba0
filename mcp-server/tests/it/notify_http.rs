//! The Streamable HTTP GET stream over a real socket on 127.0.0.1, on the legacy revisions
//! that have it: the session's subscribed updates and the list changes, each an SSE event
//! whose id is the hub cursor, and a `Last-Event-ID` reconnect that gets every later event
//! exactly once. Every message is validated against the revision's schema.

use crate::raw_http;
use crate::support;

use mcp_server::http::HttpConfig;
use mcp_server::{NoArgs, Resource, ResourceRequest, Revision, Server, Tool};
use raw_http::{RawRequest, RawStream, Running};
use serde_json::{Value, json};

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

async fn config(_: ResourceRequest) -> String {
    "{}".to_owned()
}

async fn hello(_: NoArgs) -> String {
    "hello".to_owned()
}

fn post(revision: Revision, session: Option<&str>, body: &Value) -> RawRequest<'static> {
    let mut request = RawRequest::new("POST", "/mcp").header("Accept", ACCEPT_BOTH);
    // The version header goes with every request after `initialize`.
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
        if revision >= Revision::V2025_06_18 {
            request = request.header("MCP-Protocol-Version", revision.as_str());
        }
    }
    request.json(body)
}

async fn open_session(running: &Running, revision: Revision) -> String {
    let init = post(
        revision,
        None,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": revision.as_str(), "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .send(running.addr)
    .await;
    assert_eq!(init.status, 200, "{revision}");
    let session = init.header("mcp-session-id").expect("a session").to_owned();
    let done = post(
        revision,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .send(running.addr)
    .await;
    assert_eq!(done.status, 202);
    session
}

async fn open_get(
    running: &Running,
    revision: Revision,
    session: &str,
    last_event_id: Option<&str>,
) -> RawStream {
    let mut request = RawRequest::new("GET", "/mcp")
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", session);
    if revision >= Revision::V2025_06_18 {
        request = request.header("MCP-Protocol-Version", revision.as_str());
    }
    if let Some(id) = last_event_id {
        request = request.header("Last-Event-ID", id);
    }
    let mut stream = request.open(running.addr).await;
    assert_eq!(stream.status, 200, "{revision}");
    if revision == Revision::V2025_11_25 {
        let priming = stream.event().await.expect("the priming event");
        assert!(priming.id.is_some() && priming.data.is_empty());
    }
    stream
}

/// The next event: its id and its validated message.
async fn next_event(stream: &mut RawStream, revision: Revision) -> (String, Value) {
    let event = stream.event().await.expect("an event");
    let message: Value = serde_json::from_str(&event.data).expect("JSON data");
    support::check(revision, "JSONRPCMessage", &message);
    support::check(revision, "ServerNotification", &message);
    (event.id.expect("an event id"), message)
}

#[tokio::test]
async fn the_get_stream_delivers_subscribed_updates_and_resumes_from_last_event_id() {
    for revision in [
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
    ] {
        let server = Server::builder("notify-http", "1.0")
            .tool(Tool::new("hello", hello))
            .resource(Resource::new("config://app", "config", config))
            .resource(Resource::new("config://other", "other", config))
            .build()
            .unwrap();
        let notifier = server.notifier();
        let running = Running::start(server, HttpConfig::new()).await;
        let session = open_session(&running, revision).await;
        let mut stream = open_get(&running, revision, &session, None).await;

        let subscribed = post(
            revision,
            Some(&session),
            &json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
                "params": {"uri": "config://app"}}),
        )
        .send(running.addr)
        .await;
        assert_eq!(subscribed.status, 200);
        assert_eq!(subscribed.messages()[0]["result"], json!({}));

        notifier.resource_updated("config://other").await.unwrap();
        let c1 = notifier.resource_updated("config://app").await.unwrap();
        let c2 = notifier.tools_changed().await.unwrap();
        let (id, update) = next_event(&mut stream, revision).await;
        assert_eq!(id, c1.to_string());
        assert_eq!(
            update,
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                "params": {"uri": "config://app"}})
        );
        let (id, tools) = next_event(&mut stream, revision).await;
        assert_eq!(id, c2.to_string());
        assert_eq!(tools["method"], "notifications/tools/list_changed");
        drop(stream);

        // While disconnected: an update, a change nobody gets (no prompts), a list change.
        let c3 = notifier.resource_updated("config://app").await.unwrap();
        notifier.prompts_changed().await.unwrap();
        let c4 = notifier.resources_changed().await.unwrap();
        let mut resumed = open_get(&running, revision, &session, Some(&id)).await;
        let c5 = notifier.resource_updated("config://app").await.unwrap();
        let mut ids = Vec::new();
        for _ in 0..3 {
            ids.push(next_event(&mut resumed, revision).await.0);
        }
        assert_eq!(
            ids,
            [c3.to_string(), c4.to_string(), c5.to_string()],
            "{revision}: every later event, once"
        );
        running.stop().await;
    }
}

#[tokio::test]
async fn listen_over_http_streams_tagged_notifications_and_ends_with_its_result_at_shutdown() {
    let revision = Revision::V2026_07_28;
    let server = Server::builder("notify-http", "1.0")
        .tool(Tool::new("hello", hello))
        .resource(Resource::new("config://app", "config", config))
        .build()
        .unwrap();
    let notifier = server.notifier();
    let running = Running::start(server, HttpConfig::new()).await;
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "subscriptions/listen", "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
        "notifications": {"toolsListChanged": true, "resourceSubscriptions": ["config://app"]},
    }});
    let mut stream = RawRequest::new("POST", "/mcp")
        .header("Accept", ACCEPT_BOTH)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "subscriptions/listen")
        .json(&body)
        .open(running.addr)
        .await;
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    let ack = stream.message().await.expect("the acknowledgement");
    support::check(revision, "JSONRPCMessage", &ack);
    support::check(revision, "SubscriptionsAcknowledgedNotification", &ack);
    notifier.resource_updated("config://app").await.unwrap();
    let update = stream.message().await.expect("the update");
    support::check(revision, "ResourceUpdatedNotification", &update);
    assert_eq!(
        update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        3
    );
    // Shutting down ends the listen gracefully: its result, then the end of the stream.
    let stopping = tokio::spawn(running.stop());
    let result = stream.message().await.expect("the listen result");
    support::check(revision, "JSONRPCMessage", &result);
    support::check(revision, "SubscriptionsListenResult", &result["result"]);
    assert_eq!(result["id"], 3);
    stopping.await.unwrap();
}
