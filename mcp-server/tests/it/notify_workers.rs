//! Notifications across workers: two `Server`s sharing one hub (event log and state store),
//! each with its own connection, once per backend: Redis, PostgreSQL and SQLite (two hubs
//! opened on one file). See `support/backends.rs` for where each backend is and when a row is
//! skipped.

use crate::backends;
use crate::support;

use std::time::Duration;

use backends::{Backend, Place};
use futures::StreamExt as _;
use mcp_adapters::Adapter;
use mcp_hub::Namespace;
use mcp_server::{
    Context, NoArgs, NotificationFilter, NotificationStream, Resource, ResourceRequest, Revision,
    Server, Tool,
};
use serde_json::{Value, json};

use support::{Client, check, next};

/// A guard against a hung test, never a synchronisation: every wait is for a real event.
const LIMIT: Duration = Duration::from_secs(20);

async fn config(_: ResourceRequest) -> String {
    "{}".to_owned()
}

async fn hello(_: NoArgs) -> String {
    "hello".to_owned()
}

/// Two workers of one server, each with its own hub on `place`.
async fn workers(place: &Place) -> (Server, Server) {
    let mut servers = Vec::new();
    for _ in 0..2 {
        let hub = place.hub().await;
        servers.push(
            Server::builder("notify-workers", "1.0")
                .tool(Tool::new("hello", hello))
                .resource(Resource::new("config://app", "config", config))
                .event_log(hub.clone())
                .state_store(hub)
                .build()
                .unwrap(),
        );
    }
    let b = servers.pop().unwrap();
    let a = servers.pop().unwrap();
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

async fn next_notification(
    stream: &mut NotificationStream,
    revision: Revision,
) -> (mcp_hub::Cursor, Value) {
    let (cursor, message) = tokio::time::timeout(LIMIT, stream.next())
        .await
        .expect("a notification in time")
        .expect("the stream goes on")
        .expect("no error");
    check(revision, "JSONRPCMessage", &message);
    check(revision, "ServerNotification", &message);
    (cursor, message)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_on_one_worker_receives_what_another_publishes() {
    per_backend!(subscriber_row);
}

async fn subscriber_row(place: &Place) {
    let (a, b) = workers(place).await;
    for revision in Revision::ALL {
        let mut client = Client::new(&b, revision, json!({})).await;
        if client.legacy() {
            let mut stream = b.connection_notifications(&client.ctx, None).await.unwrap();
            client
                .ok("resources/subscribe", json!({"uri": "config://app"}))
                .await;
            let published = a.notifier().resource_updated("config://app").await.unwrap();
            let (cursor, update) = next_notification(&mut stream, revision).await;
            check(revision, "ResourceUpdatedNotification", &update);
            assert_eq!(cursor, published, "{revision}");
            assert_eq!(update["params"]["uri"], "config://app");

            // A runtime change on worker A reaches B's listener.
            a.add_tool(Tool::new("extra", hello)).await.unwrap();
            let (_, changed) = next_notification(&mut stream, revision).await;
            check(revision, "ToolListChangedNotification", &changed);
            a.remove_tool("extra").await.unwrap();
            let (_, changed) = next_notification(&mut stream, revision).await;
            assert_eq!(changed["method"], "notifications/tools/list_changed");
        } else {
            let ctx = Context::connection();
            let listen = json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen",
                "params": {"_meta": {
                    "io.modelcontextprotocol/protocolVersion": revision.as_str(),
                    "io.modelcontextprotocol/clientCapabilities": {}},
                "notifications": {"resourceSubscriptions": ["config://app"]}}});
            let mut reply = b.handle(listen, &ctx);
            let ack = tokio::time::timeout(LIMIT, next(&mut reply)).await.unwrap();
            check(revision, "SubscriptionsAcknowledgedNotification", &ack);
            a.notifier().tools_changed().await.unwrap();
            a.notifier().resource_updated("config://app").await.unwrap();
            let update = tokio::time::timeout(LIMIT, next(&mut reply)).await.unwrap();
            check(revision, "ResourceUpdatedNotification", &update);
            assert_eq!(
                update["params"],
                json!({"uri": "config://app",
                    "_meta": {"io.modelcontextprotocol/subscriptionId": "sub-1"}})
            );
            ctx.close_listeners();
            let result = tokio::time::timeout(LIMIT, next(&mut reply)).await.unwrap();
            check(revision, "JSONRPCMessage", &result);
            check(revision, "SubscriptionsListenResult", &result["result"]);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumed_on_another_worker_loses_and_repeats_nothing() {
    per_backend!(resume_row);
}

async fn resume_row(place: &Place) {
    let (a, b) = workers(place).await;
    let revision = Revision::V2025_11_25;
    let adapter = Adapter::from(revision);
    let ns = Namespace::root();
    let filter = NotificationFilter::all_list_changes().resource("config://app");
    let mut first = a
        .notifications(&ns, adapter, filter.clone(), None)
        .await
        .unwrap();
    let mut published = Vec::new();
    for i in 0..6 {
        let notifier = if i % 2 == 0 {
            a.notifier()
        } else {
            b.notifier()
        };
        published.push(notifier.resource_updated("config://app").await.unwrap());
    }
    let (c1, _) = next_notification(&mut first, revision).await;
    let (c2, _) = next_notification(&mut first, revision).await;
    assert_eq!([c1, c2], [published[0], published[1]]);
    drop(first);

    // The SSE event id travels as text and comes back as Last-Event-ID, on worker B.
    let last_event_id = c2.to_string().parse().unwrap();
    let mut resumed = b
        .notifications(&ns, adapter, filter, Some(last_event_id))
        .await
        .unwrap();
    let late = a.notifier().resources_changed().await.unwrap();
    let mut got = Vec::new();
    for _ in 0..5 {
        got.push(next_notification(&mut resumed, revision).await.0);
    }
    let mut expected = published[2..].to_vec();
    expected.push(late);
    assert_eq!(got, expected);
}
