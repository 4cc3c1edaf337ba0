//! Notifications over the stdio transport (`serve_stdio_with` on in-process pipes, so the test
//! holds the server's notifier), on every revision: subscribed updates and list changes as they
//! are published, `subscriptions/listen` with its acknowledgement, tags, cancellation and
//! end-of-input close, progress and log messages before the result, and cancellation of a
//! call. Every line the server writes is validated against the revision's schema.

use crate::support;

use std::time::Duration;

use mcp_server::{
    Exchange, LogLevel, NoArgs, Prompt, Resource, ResourceRequest, Revision, Server, StdioConfig,
    Tool, serve_stdio_with,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream, Lines};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use support::check;

/// A guard against a hung server, not a synchronisation: every read waits for a real line.
const READ_LIMIT: Duration = Duration::from_secs(20);

async fn config(_: ResourceRequest) -> String {
    "{}".to_owned()
}

async fn hello(_: NoArgs) -> String {
    "hello".to_owned()
}

async fn greeting(_: NoArgs) -> String {
    "Say hello.".to_owned()
}

async fn report(_: NoArgs, ex: Exchange) -> String {
    ex.progress(1.0, Some(2.0), Some("half way"));
    for level in LogLevel::ALL {
        ex.log(level, json!(level.as_str()));
    }
    ex.progress(2.0, Some(2.0), Some("done"));
    "reported".to_owned()
}

fn server(signals: mpsc::UnboundedSender<&'static str>) -> Server {
    let wait = Tool::new("wait", move |_: NoArgs, ex: Exchange| {
        let tx = signals.clone();
        async move {
            let _ = tx.send("started");
            ex.cancelled().await;
            let _ = tx.send("handler saw cancellation");
            "too late".to_owned()
        }
    });
    Server::builder("notify-stdio", "1.0")
        .tool(Tool::new("hello", hello))
        .tool(Tool::new("report", report))
        .tool(wait)
        .resource(Resource::new("config://app", "config", config))
        .resource(Resource::new("config://other", "other", config))
        .prompt(Prompt::new("greeting", greeting))
        .build()
        .unwrap()
}

struct Peer {
    stdin: Option<DuplexStream>,
    lines: Lines<BufReader<DuplexStream>>,
    task: JoinHandle<Result<(), mcp_server::StdioError>>,
    revision: Revision,
}

impl Peer {
    fn start(server: &Server, revision: Revision) -> Self {
        let (stdin, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, stdout) = tokio::io::duplex(64 * 1024);
        let task = tokio::spawn(serve_stdio_with(
            server.clone(),
            server_in,
            server_out,
            StdioConfig::new(),
        ));
        Self {
            stdin: Some(stdin),
            lines: BufReader::new(stdout).lines(),
            task,
            revision,
        }
    }

    async fn write(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        stdin.write_all(&line).await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn read(&mut self) -> Value {
        let line = tokio::time::timeout(READ_LIMIT, self.lines.next_line())
            .await
            .expect("the server writes in time")
            .unwrap()
            .expect("a line before end of output");
        let value: Value = serde_json::from_str(&line).expect("one JSON message per line");
        check(self.revision, "JSONRPCMessage", &value);
        if value.get("method").is_some() {
            check(self.revision, "ServerNotification", &value);
        }
        value
    }

    fn params(&self, mut params: Value) -> Value {
        if self.revision == Revision::V2026_07_28 {
            let meta = params
                .as_object_mut()
                .unwrap()
                .entry("_meta")
                .or_insert_with(|| json!({}));
            meta["io.modelcontextprotocol/protocolVersion"] = json!(self.revision.as_str());
            meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
        }
        params
    }

    async fn send(&mut self, id: i64, method: &str, params: Value) {
        let params = self.params(params);
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.write(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// Sends a request and returns its response (nothing else may come first).
    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(id, method, params).await;
        let response = self.read().await;
        assert_eq!(response["id"], id, "{response}");
        assert!(response.get("result").is_some(), "{response}");
        response["result"].clone()
    }

    async fn initialize(&mut self) {
        let revision = self.revision.as_str();
        let result = self
            .call(
                1,
                "initialize",
                json!({"protocolVersion": revision, "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}),
            )
            .await;
        check(self.revision, "InitializeResult", &result);
        self.notify("notifications/initialized", json!({})).await;
    }

    /// Closes stdin and waits for the end of output and of the server.
    async fn finish(mut self) -> Vec<Value> {
        self.stdin = None;
        let mut rest = Vec::new();
        while let Some(line) = tokio::time::timeout(READ_LIMIT, self.lines.next_line())
            .await
            .expect("the server ends in time")
            .unwrap()
        {
            rest.push(serde_json::from_str(&line).unwrap());
        }
        self.task.await.unwrap().unwrap();
        rest
    }
}

async fn expect(rx: &mut mpsc::UnboundedReceiver<&'static str>, what: &str) {
    let got = tokio::time::timeout(READ_LIMIT, rx.recv()).await;
    assert_eq!(got, Ok(Some(what)));
}

#[tokio::test]
async fn a_legacy_connection_gets_its_subscribed_updates_and_list_changes() {
    for revision in Revision::ALL
        .into_iter()
        .filter(|r| *r != Revision::V2026_07_28)
    {
        let server = server(mpsc::unbounded_channel().0);
        let notifier = server.notifier();
        let mut peer = Peer::start(&server, revision);
        peer.initialize().await;
        let subscribed = peer
            .call(2, "resources/subscribe", json!({"uri": "config://app"}))
            .await;
        assert_eq!(subscribed, json!({}));

        notifier.resource_updated("config://other").await.unwrap();
        notifier.resource_updated("config://app").await.unwrap();
        notifier.tools_changed().await.unwrap();
        let update = peer.read().await;
        check(revision, "ResourceUpdatedNotification", &update);
        assert_eq!(
            update,
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                "params": {"uri": "config://app"}})
        );
        let tools = peer.read().await;
        check(revision, "ToolListChangedNotification", &tools);

        peer.call(3, "resources/unsubscribe", json!({"uri": "config://app"}))
            .await;
        notifier.resource_updated("config://app").await.unwrap();
        server.add_tool(Tool::new("added", hello)).await.unwrap();
        let changed = peer.read().await;
        assert_eq!(
            changed["method"], "notifications/tools/list_changed",
            "{revision}: the unsubscribed update is not delivered"
        );
        let list = peer.call(4, "tools/list", json!({})).await;
        assert!(
            list["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == "added")
        );
        assert!(peer.finish().await.is_empty());
    }
}

#[tokio::test]
async fn listen_over_stdio_acknowledges_tags_cancels_and_closes_at_end_of_input() {
    let revision = Revision::V2026_07_28;
    let server = server(mpsc::unbounded_channel().0);
    let notifier = server.notifier();
    let mut peer = Peer::start(&server, revision);

    // Nothing reaches a 2026-07-28 connection outside a listen stream.
    notifier.tools_changed().await.unwrap();

    peer.send(
        5,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true,
            "resourceSubscriptions": ["config://app"]}}),
    )
    .await;
    let ack = peer.read().await;
    check(revision, "SubscriptionsAcknowledgedNotification", &ack);
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["config://app"]})
    );
    notifier.prompts_changed().await.unwrap();
    notifier.resource_updated("config://app").await.unwrap();
    let update = peer.read().await;
    check(revision, "ResourceUpdatedNotification", &update);
    assert_eq!(
        update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        5
    );

    // The client cancels the listen: no result for it; the next answer is the next request's.
    let cancel = peer.params(json!({"requestId": 5}));
    peer.notify("notifications/cancelled", cancel).await;
    let list = peer.call(6, "tools/list", json!({})).await;
    check(revision, "ListToolsResult", &list);
    notifier.tools_changed().await.unwrap();

    // A new listen; end of input closes it gracefully with its result.
    peer.send(
        7,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    )
    .await;
    let ack = peer.read().await;
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    let rest = peer.finish().await;
    assert_eq!(rest.len(), 1, "{rest:?}");
    check(revision, "JSONRPCMessage", &rest[0]);
    check(revision, "SubscriptionsListenResult", &rest[0]["result"]);
    assert_eq!(rest[0]["id"], 7);
}

#[tokio::test]
async fn progress_logs_and_cancellation_over_stdio() {
    for revision in Revision::ALL {
        let (tx, mut signals) = mpsc::unbounded_channel();
        let server = server(tx);
        let mut peer = Peer::start(&server, revision);
        let mut meta = json!({"progressToken": 42});
        if revision == Revision::V2026_07_28 {
            meta["io.modelcontextprotocol/logLevel"] = json!("error");
        } else {
            peer.initialize().await;
            peer.call(2, "logging/setLevel", json!({"level": "error"}))
                .await;
        }
        peer.send(
            3,
            "tools/call",
            json!({"name": "report", "arguments": {}, "_meta": meta}),
        )
        .await;
        let mut before = Vec::new();
        let response = loop {
            let message = peer.read().await;
            if message.get("id").is_some() {
                break message;
            }
            before.push(message);
        };
        assert_eq!(response["result"]["content"][0]["text"], "reported");
        let methods: Vec<&str> = before
            .iter()
            .map(|m| m["method"].as_str().unwrap())
            .collect();
        assert_eq!(
            methods,
            [
                "notifications/progress",
                "notifications/message",
                "notifications/message",
                "notifications/message",
                "notifications/message",
                "notifications/progress",
            ],
            "{revision}"
        );
        assert_eq!(before[1]["params"]["level"], "error");
        assert_eq!(before[4]["params"]["level"], "emergency");
        assert_eq!(before[0]["params"]["progressToken"], 42);
        assert_eq!(
            before[0]["params"].get("message").is_some(),
            revision != Revision::V2024_11_05
        );

        // Cancellation: the handler observes its signal, and no response is written.
        peer.send(4, "tools/call", json!({"name": "wait", "arguments": {}}))
            .await;
        expect(&mut signals, "started").await;
        let mut cancel = json!({"requestId": 4});
        if revision == Revision::V2026_07_28 {
            cancel = peer.params(cancel);
        }
        peer.notify("notifications/cancelled", cancel).await;
        expect(&mut signals, "handler saw cancellation").await;
        let list = peer.call(5, "tools/list", json!({})).await;
        assert!(
            list["tools"].is_array(),
            "{revision}: no response for the cancelled call"
        );
        assert!(peer.finish().await.is_empty(), "{revision}");
    }
}
