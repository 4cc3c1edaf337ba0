//! Notifications through the socket-free entry point, on every revision: resource
//! subscriptions and updates, list changes after runtime registry changes, the 2026-07-28
//! `subscriptions/listen` stream, progress and log messages, cancellation, and resuming a
//! notification stream from a hub cursor. Every notification is validated against its
//! revision's schema.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use mcp_adapters::Adapter;
use mcp_hub::{Cursor, HubConfig, MemoryHub, Namespace, RetentionConfig};
use mcp_server::{
    ChangeError, Context, Exchange, LogLevel, NoArgs, NotificationFilter, NotificationStream,
    NotifyError, Prompt, Resource, ResourceRequest, ResourceTemplate, Revision, Server, Tool,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use support::{Client, check, next};

/// A guard against a hung test, never a synchronisation: every wait is for a real event.
const LIMIT: Duration = Duration::from_secs(20);

const LEGACY: [Revision; 4] = [
    Revision::V2024_11_05,
    Revision::V2025_03_26,
    Revision::V2025_06_18,
    Revision::V2025_11_25,
];

async fn config(_: ResourceRequest) -> String {
    "{}".to_owned()
}

async fn hello(_: NoArgs) -> String {
    "hello".to_owned()
}

async fn greeting(_: NoArgs) -> String {
    "Say hello.".to_owned()
}

/// Sends progress and a message at every level, then answers.
async fn report(_: NoArgs, ex: Exchange) -> String {
    ex.progress(1.0, Some(2.0), Some("half way"));
    for level in LogLevel::ALL {
        ex.log_to(level, Some("report"), json!({"level": level.as_str()}));
    }
    ex.progress(2.0, Some(2.0), Some("done"));
    "reported".to_owned()
}

fn builder() -> mcp_server::ServerBuilder {
    Server::builder("notify-test", "1.0")
        .tool(Tool::new("hello", hello))
        .tool(Tool::new("report", report))
        .resource(Resource::new("config://app", "config", config))
        .resource(Resource::new("config://other", "other", config))
        .resource_template(ResourceTemplate::new("file:///{name}", "file", config))
        .prompt(Prompt::new("greeting", greeting))
}

/// Validates a server notification of `revision` as a message and as its own type.
fn check_notification(revision: Revision, message: &Value) {
    check(revision, "JSONRPCMessage", message);
    check(revision, "ServerNotification", message);
    let type_name = match message["method"].as_str().unwrap_or_default() {
        "notifications/resources/updated" => "ResourceUpdatedNotification",
        "notifications/tools/list_changed" => "ToolListChangedNotification",
        "notifications/prompts/list_changed" => "PromptListChangedNotification",
        "notifications/resources/list_changed" => "ResourceListChangedNotification",
        "notifications/progress" => "ProgressNotification",
        "notifications/message" => "LoggingMessageNotification",
        "notifications/subscriptions/acknowledged" => "SubscriptionsAcknowledgedNotification",
        other => panic!("unexpected notification {other}"),
    };
    check(revision, type_name, message);
}

async fn next_notification(stream: &mut NotificationStream, revision: Revision) -> (Cursor, Value) {
    let (cursor, message) = tokio::time::timeout(LIMIT, stream.next())
        .await
        .expect("a notification in time")
        .expect("the stream goes on")
        .expect("no error");
    check_notification(revision, &message);
    (cursor, message)
}

#[tokio::test]
async fn capabilities_advertise_subscribe_and_list_changed() {
    let server = builder().build().unwrap();
    for revision in Revision::ALL {
        let mut client = Client::new(&server, revision, json!({})).await;
        let result = if client.legacy() {
            let ctx = Context::connection();
            let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": revision.as_str(), "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}});
            let out = server.handle_all(init, &ctx).await;
            out[0].to_value()["result"].clone()
        } else {
            client.ok("server/discover", json!({})).await
        };
        let caps = &result["capabilities"];
        assert_eq!(caps["resources"]["subscribe"], true, "{revision}");
        assert_eq!(caps["resources"]["listChanged"], true, "{revision}");
        assert_eq!(caps["tools"]["listChanged"], true, "{revision}");
        assert_eq!(caps["prompts"]["listChanged"], true, "{revision}");
    }
}

#[tokio::test]
async fn subscribed_updates_and_list_changes_reach_a_legacy_connection() {
    for revision in LEGACY {
        let server = builder().build().unwrap();
        let notifier = server.notifier();
        let mut client = Client::new(&server, revision, json!({})).await;
        let mut stream = server
            .connection_notifications(&client.ctx, None)
            .await
            .unwrap();

        assert_eq!(
            client
                .ok("resources/subscribe", json!({"uri": "config://app"}))
                .await,
            json!({})
        );
        assert_eq!(client.ctx.subscriptions(), vec!["config://app".to_owned()]);
        let error = client
            .err("resources/subscribe", json!({"uri": "nothing://here"}))
            .await;
        assert_eq!(error["code"], -32002, "{revision}");

        notifier.resource_updated("config://other").await.unwrap();
        let published = notifier.resource_updated("config://app").await.unwrap();
        notifier.tools_changed().await.unwrap();
        let (cursor, update) = next_notification(&mut stream, revision).await;
        assert_eq!(cursor, published);
        assert_eq!(
            update,
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                "params": {"uri": "config://app"}}),
            "{revision}: only the subscribed URI, untagged"
        );
        let (_, tools) = next_notification(&mut stream, revision).await;
        assert_eq!(tools["method"], "notifications/tools/list_changed");

        // Unsubscribed: the update is skipped, the next list change comes through.
        client
            .ok("resources/unsubscribe", json!({"uri": "config://app"}))
            .await;
        assert!(!client.ctx.is_subscribed("config://app"));
        notifier.resource_updated("config://app").await.unwrap();
        notifier.prompts_changed().await.unwrap();
        let (_, prompts) = next_notification(&mut stream, revision).await;
        assert_eq!(
            prompts["method"], "notifications/prompts/list_changed",
            "{revision}: an unsubscribed URI is not delivered"
        );

        // Restoring a session record's subscriptions.
        client.ctx.set_subscriptions(["file:///a.txt"]);
        notifier.resource_updated("file:///a.txt").await.unwrap();
        let (_, file) = next_notification(&mut stream, revision).await;
        assert_eq!(file["params"]["uri"], "file:///a.txt");
    }
}

#[tokio::test]
async fn runtime_registry_changes_publish_list_changed_and_update_lists() {
    for revision in Revision::ALL {
        let server = builder().build().unwrap();
        let mut client = Client::new(&server, revision, json!({})).await;
        let adapter = Adapter::from(revision);
        let mut stream = server
            .notifications(
                &Namespace::root(),
                adapter,
                NotificationFilter::all_list_changes(),
                None,
            )
            .await
            .unwrap();
        let names = |list: &Value| -> Vec<String> {
            list["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(
            names(&client.ok("tools/list", json!({})).await),
            ["hello", "report"]
        );

        // An old clone of the server sees the change too: they share the registry.
        let old = server.clone();
        old.add_tool(Tool::new("added", hello)).await.unwrap();
        let (_, changed) = next_notification(&mut stream, revision).await;
        assert_eq!(changed["method"], "notifications/tools/list_changed");
        assert_eq!(
            names(&client.ok("tools/list", json!({})).await),
            ["added", "hello", "report"]
        );
        let called = client
            .ok("tools/call", json!({"name": "added", "arguments": {}}))
            .await;
        assert_eq!(called["content"][0]["text"], "hello");

        assert!(matches!(
            server.add_tool(Tool::new("added", hello)).await,
            Err(ChangeError::Registration(_))
        ));
        server.remove_tool("added").await.unwrap();
        let (_, changed) = next_notification(&mut stream, revision).await;
        assert_eq!(changed["method"], "notifications/tools/list_changed");
        assert_eq!(
            names(&client.ok("tools/list", json!({})).await),
            ["hello", "report"]
        );
        assert!(matches!(
            server.remove_tool("added").await,
            Err(ChangeError::NotRegistered { .. })
        ));

        server
            .add_prompt(Prompt::new("second", greeting))
            .await
            .unwrap();
        let (_, changed) = next_notification(&mut stream, revision).await;
        assert_eq!(changed["method"], "notifications/prompts/list_changed");
        let prompts = client.ok("prompts/list", json!({})).await;
        assert_eq!(prompts["prompts"].as_array().unwrap().len(), 2);

        server
            .add_resource(Resource::new("config://new", "new", config))
            .await
            .unwrap();
        let (_, changed) = next_notification(&mut stream, revision).await;
        assert_eq!(changed["method"], "notifications/resources/list_changed");
        let read = client
            .ok("resources/read", json!({"uri": "config://new"}))
            .await;
        assert_eq!(read["contents"][0]["text"], "{}");
        server.remove_resource("config://new").await.unwrap();
        let (_, changed) = next_notification(&mut stream, revision).await;
        assert_eq!(changed["method"], "notifications/resources/list_changed");
        let gone = client
            .err("resources/read", json!({"uri": "config://new"}))
            .await;
        assert!(gone["code"] == -32002 || gone["code"] == -32602, "{gone}");
    }
}

fn listen(id: i64, notifications: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
        "notifications": notifications,
    }})
}

async fn next_message(reply: &mut mcp_server::Reply) -> Value {
    let message = tokio::time::timeout(LIMIT, next(reply))
        .await
        .expect("a message in time");
    check(Revision::V2026_07_28, "JSONRPCMessage", &message);
    message
}

fn check_listen_result(message: &Value, id: i64) {
    check(Revision::V2026_07_28, "JSONRPCMessage", message);
    check(
        Revision::V2026_07_28,
        "SubscriptionsListenResult",
        &message["result"],
    );
    assert_eq!(message["id"], id);
    assert_eq!(message["result"]["resultType"], "complete");
    assert_eq!(
        message["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        id
    );
}

#[tokio::test]
async fn listen_acknowledges_filters_and_tags() {
    let revision = Revision::V2026_07_28;
    let server = builder().build().unwrap();
    let notifier = server.notifier();
    let ctx = Context::connection();
    let mut reply = server.handle(
        listen(
            7,
            json!({"toolsListChanged": true, "promptsListChanged": false,
            "resourcesListChanged": true, "unknownKind": true,
            "resourceSubscriptions": ["config://app", "file:///x.txt", "nope://x"]}),
        ),
        &ctx,
    );
    let ack = next_message(&mut reply).await;
    check_notification(revision, &ack);
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourcesListChanged": true,
            "resourceSubscriptions": ["config://app", "file:///x.txt"]})
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );

    // Not opted into: prompts, other URIs. Opted into: the rest, each tagged.
    notifier.prompts_changed().await.unwrap();
    notifier.resource_updated("config://other").await.unwrap();
    notifier.resource_updated("nope://x").await.unwrap();
    notifier.resource_updated("config://app").await.unwrap();
    notifier.tools_changed().await.unwrap();
    notifier.resources_changed().await.unwrap();
    let expected = [
        ("notifications/resources/updated", Some("config://app")),
        ("notifications/tools/list_changed", None),
        ("notifications/resources/list_changed", None),
    ];
    for (method, uri) in expected {
        let message = next_message(&mut reply).await;
        check_notification(revision, &message);
        assert_eq!(message["method"], method);
        assert_eq!(
            message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            7
        );
        if let Some(uri) = uri {
            assert_eq!(message["params"]["uri"], uri);
        }
    }

    // A graceful close sends the listen result and ends the stream.
    ctx.close_listeners();
    let result = next_message(&mut reply).await;
    check_listen_result(&result, 7);
    assert!(reply.next().await.is_none());
}

#[tokio::test]
async fn listen_with_nothing_honoured_closes_at_once() {
    let server = Server::builder("bare", "1.0")
        .tool(Tool::new("hello", hello))
        .build()
        .unwrap();
    let ctx = Context::connection();
    // No prompts or resources: only tools can be honoured, and they were not asked for.
    let out: Vec<Value> = server
        .handle_all(
            listen(
                1,
                json!({"promptsListChanged": true, "resourceSubscriptions": ["config://app"]}),
            ),
            &ctx,
        )
        .await
        .iter()
        .map(mcp_server::Outgoing::to_value)
        .collect();
    assert_eq!(out.len(), 2, "{out:?}");
    check_notification(Revision::V2026_07_28, &out[0]);
    assert_eq!(out[0]["params"]["notifications"], json!({}));
    check_listen_result(&out[1], 1);
}

#[tokio::test]
async fn server_close_streams_ends_listens_and_dropping_ends_the_subscription() {
    let server = builder().build().unwrap();
    let ctx = Context::connection();
    let mut first = server.handle(listen(1, json!({"toolsListChanged": true})), &ctx);
    assert_eq!(
        next_message(&mut first).await["method"],
        "notifications/subscriptions/acknowledged"
    );
    // Dropping the stream ends the subscription: its id is free again at once.
    drop(first);
    let mut again = server.handle(listen(1, json!({"toolsListChanged": true})), &ctx);
    assert_eq!(
        next_message(&mut again).await["method"],
        "notifications/subscriptions/acknowledged"
    );
    server.close_streams();
    check_listen_result(&next_message(&mut again).await, 1);
    assert!(again.next().await.is_none());
}

/// Runs `report` and returns what came before the response.
async fn run_report(client: &mut Client, meta: Value) -> Vec<Value> {
    let (before, response) = client
        .request(
            "tools/call",
            json!({"name": "report", "arguments": {}, "_meta": meta}),
        )
        .await;
    assert_eq!(response["result"]["content"][0]["text"], "reported");
    for message in &before {
        check_notification(client.revision, message);
    }
    before
}

fn levels(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| m["params"]["level"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn progress_and_logs_come_before_the_result_and_respect_the_level() {
    let server = builder().build().unwrap();
    for revision in Revision::ALL {
        let mut client = Client::new(&server, revision, json!({})).await;
        // Without a level or a token: nothing before the result.
        assert!(
            run_report(&mut client, json!({})).await.is_empty(),
            "{revision}"
        );

        let meta = if client.legacy() {
            client
                .ok("logging/setLevel", json!({"level": "warning"}))
                .await;
            json!({"progressToken": "tok"})
        } else {
            json!({"progressToken": "tok", "io.modelcontextprotocol/logLevel": "warning"})
        };
        let before = run_report(&mut client, meta).await;
        assert_eq!(before.len(), 2 + 5, "{revision}: {before:#?}");
        assert_eq!(before[0]["method"], "notifications/progress");
        assert_eq!(before[0]["params"]["progressToken"], "tok");
        assert_eq!(before[0]["params"]["progress"], 1.0);
        assert_eq!(before[0]["params"]["total"], 2.0);
        assert_eq!(
            before[0]["params"].get("message").is_some(),
            revision != Revision::V2024_11_05,
            "{revision}: progress message only where it exists"
        );
        assert_eq!(
            levels(&before),
            ["warning", "error", "critical", "alert", "emergency"]
        );
        assert_eq!(before[1]["params"]["logger"], "report");
        assert_eq!(before[6]["method"], "notifications/progress");
        assert_eq!(before[6]["params"]["progress"], 2.0);

        if client.legacy() {
            // The level holds for the connection; debug lets everything through.
            client
                .ok("logging/setLevel", json!({"level": "debug"}))
                .await;
            let before = run_report(&mut client, json!({})).await;
            assert_eq!(levels(&before).len(), 8, "{revision}");
        } else {
            // Per request: the next call without a level gets no messages.
            assert!(run_report(&mut client, json!({})).await.is_empty());
            let error = client
                .err(
                    "tools/call",
                    json!({"name": "report", "arguments": {},
                        "_meta": {"io.modelcontextprotocol/logLevel": "loud"}}),
                )
                .await;
            assert_eq!(error["code"], -32602);
        }
    }
}

/// A tool that reports it started, then waits for its cancellation signal and reports that
/// it observed it. `dropped` hears when its future is dropped.
fn waiting_server() -> (Server, mpsc::UnboundedReceiver<&'static str>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let tool = Tool::new("wait", move |_: NoArgs, ex: Exchange| {
        let tx = tx.clone();
        async move {
            struct OnDrop(mpsc::UnboundedSender<&'static str>);
            impl Drop for OnDrop {
                fn drop(&mut self) {
                    let _ = self.0.send("dropped");
                }
            }
            let _guard = OnDrop(tx.clone());
            // Work handed to another task still hears about the cancellation.
            let watcher = ex.clone();
            let spawned = tx.clone();
            tokio::spawn(async move {
                watcher.cancelled().await;
                let _ = spawned.send("spawned task saw cancellation");
            });
            let _ = tx.send("started");
            ex.cancelled().await;
            assert!(ex.is_cancelled());
            let _ = tx.send("handler saw cancellation");
            "too late".to_owned()
        }
    });
    (
        Server::builder("wait", "1.0").tool(tool).build().unwrap(),
        rx,
    )
}

/// Waits until every signal in `all` has come (in any order); returns every signal seen.
async fn expect(rx: &mut mpsc::UnboundedReceiver<&'static str>, all: &[&str]) -> Vec<&'static str> {
    let mut seen = Vec::new();
    while !all.iter().all(|what| seen.contains(what)) {
        let got = tokio::time::timeout(LIMIT, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("waiting for {all:?}; saw {seen:?}"))
            .expect("signal channel open");
        seen.push(got);
    }
    seen
}

#[tokio::test]
async fn notifications_cancelled_fires_the_handler_signal_and_sends_no_response() {
    for revision in Revision::ALL {
        let (server, mut signals) = waiting_server();
        let mut client = Client::new(&server, revision, json!({})).await;
        let (id, reply) = client.start("tools/call", json!({"name": "wait", "arguments": {}}));
        let collected = tokio::spawn(reply.collect::<Vec<_>>());
        expect(&mut signals, &["started"]).await;
        let cancel = client.params(json!({"requestId": id, "reason": "changed my mind"}));
        client.notify("notifications/cancelled", cancel).await;
        expect(
            &mut signals,
            &["handler saw cancellation", "spawned task saw cancellation"],
        )
        .await;
        let out = tokio::time::timeout(LIMIT, collected)
            .await
            .expect("the call ends")
            .unwrap();
        assert!(
            out.iter().all(|m| !m.is_response()),
            "{revision}: a cancelled request gets no response: {out:?}"
        );
    }
}

#[tokio::test]
async fn dropping_the_reply_cancels_the_handler() {
    // 2026-07-28 over HTTP: closing the response stream is cancellation.
    let (server, mut signals) = waiting_server();
    let mut client = Client::new(&server, Revision::V2026_07_28, json!({})).await;
    let (_, mut reply) = client.start("tools/call", json!({"name": "wait", "arguments": {}}));
    let first = tokio::select! {
        message = reply.next() => panic!("no message expected yet: {message:?}"),
        signal = signals.recv() => signal,
    };
    assert_eq!(first, Some("started"));
    drop(reply);
    // The spawned task hears the signal, and the handler's own work stops: its future is
    // dropped, not run to the end.
    let rest = expect(&mut signals, &["dropped", "spawned task saw cancellation"]).await;
    assert!(!rest.contains(&"handler saw cancellation"), "{rest:?}");
}

#[tokio::test]
async fn a_resumed_stream_yields_every_later_event_exactly_once_on_any_worker() {
    let hub = Arc::new(MemoryHub::new(HubConfig::default()));
    let worker = |name: &str| {
        builder()
            .event_log(hub.clone())
            .state_store(hub.clone())
            .build()
            .map(|s| (name.to_owned(), s))
            .unwrap()
    };
    let (_, a) = worker("a");
    let (_, b) = worker("b");
    for revision in LEGACY {
        let adapter = Adapter::from(revision);
        let filter = a.session_filter(adapter, ["config://app"]);
        assert_eq!(
            filter,
            NotificationFilter::all_list_changes().resource("config://app")
        );
        let ns = Namespace::root();
        let mut first = a
            .notifications(&ns, adapter, filter.clone(), None)
            .await
            .unwrap();
        let notifier = a.notifier();
        let mut published = Vec::new();
        for i in 0..6 {
            let cursor = if i % 2 == 0 {
                notifier.resource_updated("config://app").await.unwrap()
            } else {
                notifier.tools_changed().await.unwrap()
            };
            published.push(cursor);
        }
        // The client reads two events, then its stream drops.
        let (c1, _) = next_notification(&mut first, revision).await;
        let (c2, _) = next_notification(&mut first, revision).await;
        assert_eq!([c1, c2], [published[0], published[1]]);
        drop(first);

        // Last-Event-ID: c2, on the other worker.
        let last_event_id: Cursor = c2.to_string().parse().unwrap();
        let mut resumed = b
            .notifications(&ns, adapter, filter.clone(), Some(last_event_id))
            .await
            .unwrap();
        let late = b.notifier().prompts_changed().await.unwrap();
        let mut got = Vec::new();
        for _ in 0..5 {
            got.push(next_notification(&mut resumed, revision).await.0);
        }
        let mut expected = published[2..].to_vec();
        expected.push(late);
        assert_eq!(
            got, expected,
            "{revision}: every later event, once, in order"
        );
        assert_eq!(resumed.cursor(), late);
    }
}

#[tokio::test]
async fn a_cursor_beyond_retention_is_a_clear_error() {
    let hub = Arc::new(MemoryHub::new(
        HubConfig::new().retention(RetentionConfig::new().max_events(3)),
    ));
    let server = builder().event_log(hub).build().unwrap();
    let notifier = server.notifier();
    let first = notifier.tools_changed().await.unwrap();
    for _ in 0..5 {
        notifier.tools_changed().await.unwrap();
    }
    let adapter = Adapter::from(Revision::V2025_11_25);
    let err = server
        .notifications(
            &Namespace::root(),
            adapter,
            NotificationFilter::all_list_changes(),
            Some(first),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, NotifyError::CursorExpired { cursor } if cursor == first),
        "{err}"
    );
    assert!(err.to_string().contains("no longer retained"));

    // A cursor another hub issued is not silently accepted either.
    let other = builder().build().unwrap();
    let foreign = other.notifier().tools_changed().await.unwrap();
    let err = server
        .changes(&Namespace::root(), Some(foreign))
        .await
        .unwrap_err();
    assert!(matches!(err, NotifyError::UnknownCursor { .. }), "{err}");

    // Namespaces do not see each other's notifications.
    let tenant = Namespace::new("tenant-a");
    let mut stream = server
        .notifications(
            &tenant,
            adapter,
            NotificationFilter::all_list_changes(),
            None,
        )
        .await
        .unwrap();
    notifier.tools_changed().await.unwrap();
    let theirs = notifier.in_namespace(tenant.clone());
    let cursor = theirs.prompts_changed().await.unwrap();
    let (got, message) = next_notification(&mut stream, Revision::V2025_11_25).await;
    assert_eq!(got, cursor);
    assert_eq!(message["method"], "notifications/prompts/list_changed");
}
