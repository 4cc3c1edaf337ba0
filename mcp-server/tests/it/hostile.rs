//! What a hostile or careless client can no longer do (issue 27): flood a call's queue with
//! progress, make the server store replies to questions nobody asked, lose events silently on
//! resume, talk another revision inside a session, get a parse error without its `id: null`,
//! or see a store outage as a 200 without its request id. Real sockets on 127.0.0.1 except
//! where the socket-free entry shows the bound more directly.

use crate::raw_http;
use crate::support;

include!("../../src/bin/demo/registry.rs");

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use mcp_hub::{
    BackendError, Cursor, Event, EventLog, HubConfig, Key, LogError, MemoryHub, Record,
    RetentionConfig, StateStore, StoreError, Topic,
};
use mcp_server::Revision;
use mcp_server::http::HttpConfig;
use raw_http::{RawRequest, Running, WAIT};
use serde_json::Value;

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// The default of `ServerBuilder::max_queued_messages`.
const QUEUE: usize = 64;

fn post(revision: Revision, session: Option<&str>, body: &Value) -> RawRequest<'static> {
    let mut request = RawRequest::new("POST", "/mcp").header("Accept", ACCEPT_BOTH);
    if revision >= Revision::V2025_06_18 {
        request = request.header("MCP-Protocol-Version", revision.as_str());
    }
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    request.json(body)
}

async fn open_session(server: &Running, revision: Revision) -> String {
    let init = RawRequest::new("POST", "/mcp")
        .header("Accept", ACCEPT_BOTH)
        .json(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": revision.as_str(), "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        )
        .send(server.addr)
        .await;
    assert_eq!(init.status, 200, "{revision}: {init:?}");
    let session = init.header("mcp-session-id").expect("a session").to_owned();
    let done = post(
        revision,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .send(server.addr)
    .await;
    assert_eq!(done.status, 202);
    session
}

fn progress_of(messages: &[Value]) -> impl Iterator<Item = &Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
}

/// `count` as a careless handler writes it: every step reports progress and a log line and
/// never awaits, so nothing reads the queue until it returns (the demo's `count` yields
/// between steps and lets its reader keep up).
async fn burst(args: CountArgs, ex: Exchange) -> String {
    let n = args.n.min(10_000);
    for i in 1..=n {
        ex.progress(f64::from(i), Some(f64::from(n)), Some(&format!("step {i}")));
        ex.log(LogLevel::Info, format!("counted {i}"));
    }
    format!("counted to {n}")
}

/// The demo with [`burst`].
fn flood_builder() -> ServerBuilder {
    demo_builder("flood").tool(Tool::new("burst", burst))
}

/// Defect 1, socket-free: a handler that reports 10,000 steps without waiting costs the queue
/// (64 messages), not 10,000, on every revision; the newest progress value still arrives.
#[tokio::test]
async fn a_progress_flood_costs_the_queue_not_what_the_handler_sends() {
    let server = flood_builder().build().unwrap();
    for revision in Revision::ALL {
        let mut client = support::Client::new(&server, revision, json!({})).await;
        if client.legacy() {
            client
                .ok("logging/setLevel", json!({"level": "debug"}))
                .await;
        }
        let mut params =
            json!({"name": "burst", "arguments": {"n": 10_000}, "_meta": {"progressToken": "t"}});
        if !client.legacy() {
            params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
        }
        let (before, response) = client.request("tools/call", params).await;
        assert_eq!(response["result"]["content"][0]["text"], "counted to 10000");
        assert!(before.len() <= QUEUE, "{revision}: {} queued", before.len());
        let last = progress_of(&before).last().expect("some progress");
        assert_eq!(last["params"]["progress"], json!(10_000.0), "{revision}");
        let values: Vec<f64> = progress_of(&before)
            .map(|p| p["params"]["progress"].as_f64().unwrap())
            .collect();
        assert!(values.is_sorted(), "{revision}: progress went backwards");
    }
}

/// Defect 1 over HTTP: the attack, a 2025-03-26 batch of 64 `count` calls of 10,000
/// steps with progress tokens and log lines, read at full speed. Before, every one of the
/// 1,280,000 notifications was buffered; now each call leaves at most the queue's worth.
#[tokio::test]
async fn a_batch_progress_flood_over_http_is_bounded_by_the_queue() {
    let server = Running::start(flood_builder().build().unwrap(), HttpConfig::new()).await;
    let revision = Revision::V2025_03_26;
    let session = open_session(&server, revision).await;
    let level = post(
        revision,
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": "l", "method": "logging/setLevel", "params": {"level": "debug"}}),
    )
    .send(server.addr)
    .await;
    assert_eq!(level.status, 200);
    let calls = 64;
    let batch: Vec<Value> = (0..calls)
        .map(|i| {
            json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                "name": "burst", "arguments": {"n": 10_000}, "_meta": {"progressToken": i}}})
        })
        .collect();
    let response = tokio::time::timeout(
        WAIT,
        post(revision, Some(&session), &Value::Array(batch))
            .header("Accept", "text/event-stream")
            .send(server.addr),
    )
    .await
    .expect("the batch is answered");
    assert_eq!(response.status, 200);
    let messages = response.messages();
    let notifications = messages
        .iter()
        .filter(|m| m.get("method").is_some())
        .count();
    assert!(
        notifications <= calls * QUEUE,
        "{notifications} notifications for {calls} calls"
    );
    let results = messages
        .iter()
        .find(|m| m.is_array())
        .expect("the batch's responses");
    assert_eq!(results.as_array().unwrap().len(), calls);
}

/// Counts what goes to the hub under `ask/` topics.
struct Recording {
    inner: MemoryHub,
    stored: AtomicUsize,
}

impl Recording {
    fn count(&self, topic: &Topic) {
        if topic.as_str().contains("ask/") {
            self.stored.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl EventLog for Recording {
    fn publish<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Cursor, LogError>> {
        self.count(topic);
        self.inner.publish(topic, message)
    }

    fn publish_existing<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Option<Cursor>, LogError>> {
        Box::pin(async move {
            let cursor = self.inner.publish_existing(topic, message).await?;
            if cursor.is_some() {
                self.count(topic);
            }
            Ok(cursor)
        })
    }

    fn position<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<Cursor, LogError>> {
        self.inner.position(topic)
    }

    fn poll<'a>(
        &'a self,
        topic: &'a Topic,
        after: Cursor,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Vec<Event>, LogError>> {
        self.inner.poll(topic, after, timeout)
    }

    fn delete<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<(), LogError>> {
        EventLog::delete(&self.inner, topic)
    }
}

/// Defect 2: replies to questions the server never asked (1 MiB each) are discarded without
/// touching the hub, on every revision that pushes questions.
#[tokio::test]
async fn replies_to_questions_nobody_asked_are_not_stored() {
    let log = Arc::new(Recording {
        inner: MemoryHub::new(HubConfig::new()),
        stored: AtomicUsize::new(0),
    });
    let server = demo_builder("stray")
        .event_log(log.clone())
        .build()
        .unwrap();
    let server = Running::start(server, HttpConfig::new().body_limit(2 << 20)).await;
    let big = "x".repeat(1 << 20);
    for revision in [Revision::V2025_06_18, Revision::V2025_11_25] {
        let session = open_session(&server, revision).await;
        for n in 0..5 {
            let reply = json!({"jsonrpc": "2.0", "id": format!("mcp-q-anything-{n}"),
                "result": {"action": "accept", "content": {"pad": big}}});
            let response = post(revision, Some(&session), &reply)
                .send(server.addr)
                .await;
            assert_eq!(response.status, 202, "{revision}");
        }
    }
    assert_eq!(log.stored.load(Ordering::SeqCst), 0);
}

/// Defect 8: a `Last-Event-ID` whose events fell out of retention is not skipped silently:
/// the resumed stream starts with one notification of each kind the session could have
/// missed (here the resource it subscribed to, and the lists it is told change).
#[tokio::test]
async fn a_resume_past_retention_tells_the_client_to_re_read() {
    let hub = Arc::new(MemoryHub::new(
        HubConfig::new().retention(RetentionConfig::new().max_events(2)),
    ));
    let server = build_demo("resume", |b| {
        b.event_log(hub.clone()).state_store(hub.clone())
    })
    .unwrap();
    let server = Running::start(server, HttpConfig::new()).await;
    let revision = Revision::V2025_11_25;
    let session = open_session(&server, revision).await;
    let call = |id: i64, method: &str, params: Value| {
        post(
            revision,
            Some(&session),
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
    };
    let subscribed = call(1, "resources/subscribe", json!({"uri": "config://app"}))
        .send(server.addr)
        .await;
    assert_eq!(subscribed.status, 200, "{subscribed:?}");
    let get = || {
        RawRequest::new("GET", "/mcp")
            .header("Accept", "text/event-stream")
            .header("MCP-Protocol-Version", revision.as_str())
            .header("Mcp-Session-Id", &session)
    };
    let mut first = get().open(server.addr).await;
    assert_eq!(first.status, 200);
    let priming = first.event().await.expect("the priming event");
    let seen = priming.id.expect("a cursor");
    drop(first);
    // Five changes while the client is away; the log keeps two.
    for id in 10..15 {
        let touched = call(id, "tools/call", json!({"name": "touch", "arguments": {}}))
            .send(server.addr)
            .await;
        assert_eq!(touched.status, 200);
    }
    for stale in [seen.as_str(), "not-a-cursor"] {
        let mut resumed = get().header("Last-Event-ID", stale).open(server.addr).await;
        assert_eq!(resumed.status, 200);
        // The lists it is told change, then the subscribed resource: four at most.
        let mut methods = Vec::new();
        while !methods.contains(&"notifications/resources/updated".to_owned()) {
            assert!(methods.len() < 4, "{methods:?}");
            let message = tokio::time::timeout(WAIT, resumed.message())
                .await
                .expect("the re-read notifications come at once")
                .expect("a message");
            support::check(revision, "JSONRPCNotification", &message);
            methods.push(message["method"].as_str().unwrap().to_owned());
            if message["method"] == "notifications/resources/updated" {
                assert_eq!(message["params"]["uri"], "config://app");
            }
        }
        assert!(
            methods.contains(&"notifications/resources/updated".to_owned()),
            "{methods:?}"
        );
        assert!(
            methods.contains(&"notifications/tools/list_changed".to_owned()),
            "{methods:?}"
        );
    }
}

/// Defect 9: a session speaks the revision it negotiated: a request naming another revision
/// in `MCP-Protocol-Version` is refused with 400, a 2025-03-26 batch on a 2025-11-25 session
/// included.
#[tokio::test]
async fn a_session_is_held_to_its_revision() {
    let server = Running::start(demo_builder("pin").build().unwrap(), HttpConfig::new()).await;
    let session = open_session(&server, Revision::V2025_11_25).await;
    let list = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"});
    let batch = json!([list.clone(), {"jsonrpc": "2.0", "id": 8, "method": "tools/list"}]);
    for (named, body) in [
        (Revision::V2025_03_26, &batch),
        (Revision::V2025_03_26, &list),
        (Revision::V2025_06_18, &list),
    ] {
        let response = RawRequest::new("POST", "/mcp")
            .header("Accept", ACCEPT_BOTH)
            .header("MCP-Protocol-Version", named.as_str())
            .header("Mcp-Session-Id", &session)
            .json(body)
            .send(server.addr)
            .await;
        assert_eq!(response.status, 400, "{named}: {response:?}");
        let error = &response.json();
        support::check(Revision::V2025_11_25, "JSONRPCMessage", error);
        assert_eq!(error["error"]["code"], -32602, "{error}");
        assert_eq!(
            error["error"]["data"]["supported"],
            json!(["2025-11-25"]),
            "{error}"
        );
    }
    let ok = post(Revision::V2025_11_25, Some(&session), &list)
        .send(server.addr)
        .await;
    assert_eq!(ok.status, 200);
}

/// Defect 11: a body that is not JSON gets -32700 in the shape of the revision the request
/// names: `"id": null` where the revision's schema requires an id (up to 2025-06-18), no id
/// where it is optional and cannot be null (2025-11-25 on).
#[tokio::test]
async fn parse_errors_have_their_revisions_shape() {
    let server = Running::start(demo_builder("parse").build().unwrap(), HttpConfig::new()).await;
    // (MCP-Protocol-Version header, id expected as null)
    let table = [
        (None, true),
        (Some("2025-06-18"), true),
        (Some("2025-11-25"), false),
        (Some("2026-07-28"), false),
    ];
    for (header, null_id) in table {
        let mut request = RawRequest::new("POST", "/mcp").header("Accept", ACCEPT_BOTH);
        if let Some(version) = header {
            request = request.header("MCP-Protocol-Version", version);
        }
        let response = request
            .header("Content-Type", "application/json")
            .body(&b"{\"jsonrpc\": \"2.0\", \"id\": 1, "[..])
            .send(server.addr)
            .await;
        assert_eq!(response.status, 400, "{header:?}");
        let error = response.json();
        assert_eq!(error["error"]["code"], -32700, "{header:?}: {error}");
        let object = error.as_object().unwrap();
        if null_id {
            assert_eq!(object.get("id"), Some(&Value::Null), "{header:?}: {error}");
        } else {
            assert_eq!(object.get("id"), None, "{header:?}: {error}");
            let revision = Revision::ALL
                .into_iter()
                .find(|r| Some(r.as_str()) == header)
                .unwrap();
            support::check(revision, "JSONRPCMessage", &error);
        }
    }
}

/// A state store that can be switched off.
struct Flaky {
    inner: MemoryHub,
    down: AtomicBool,
    /// Only saves fail (reads and creates work): a change to a session is not stored.
    saves_down: AtomicBool,
    /// Reads never answer (a store that hangs).
    reads_hang: AtomicBool,
}

impl Flaky {
    fn check(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(BackendError::connection("the test switched the store off").into());
        }
        Ok(())
    }
}

impl StateStore for Flaky {
    fn create<'a>(
        &'a self,
        key: &'a Key,
        value: Bytes,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move {
            self.check()?;
            self.inner.create(key, value, ttl).await
        })
    }

    fn get<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<Option<Record>, StoreError>> {
        Box::pin(async move {
            if self.reads_hang.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            self.check()?;
            self.inner.get(key).await
        })
    }

    fn save<'a>(
        &'a self,
        key: &'a Key,
        value: Bytes,
        expected_version: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move {
            self.check()?;
            if self.saves_down.load(Ordering::SeqCst) {
                return Err(BackendError::connection("the test switched saves off").into());
            }
            self.inner.save(key, value, expected_version, ttl).await
        })
    }

    fn touch<'a>(&'a self, key: &'a Key, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.check()?;
            self.inner.touch(key, ttl).await
        })
    }

    fn delete<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            self.check()?;
            StateStore::delete(&self.inner, key).await
        })
    }
}

/// Defect 12: with the session store down, a request gets 503 and an error that names its
/// id (it used to be 200 without one), and `initialize` the same; the server serves again
/// once the store is back.
#[tokio::test]
async fn a_store_outage_is_a_503_that_names_the_request() {
    let store = Arc::new(Flaky {
        inner: MemoryHub::new(HubConfig::new()),
        down: AtomicBool::new(false),
        saves_down: AtomicBool::new(false),
        reads_hang: AtomicBool::new(false),
    });
    let server = demo_builder("outage")
        .state_store(store.clone())
        .build()
        .unwrap();
    let config = HttpConfig::new().session_cache(Duration::ZERO);
    let server = Running::start(server, config).await;
    for revision in [Revision::V2025_03_26, Revision::V2025_11_25] {
        let session = open_session(&server, revision).await;
        store.down.store(true, Ordering::SeqCst);
        let list = json!({"jsonrpc": "2.0", "id": "list-1", "method": "tools/list"});
        let response = post(revision, Some(&session), &list)
            .send(server.addr)
            .await;
        assert_eq!(response.status, 503, "{revision}: {response:?}");
        let error = response.json();
        support::check(revision, "JSONRPCMessage", &error);
        assert_eq!(
            (&error["id"], &error["error"]["code"]),
            (&json!("list-1"), &json!(-32603))
        );
        let init = RawRequest::new("POST", "/mcp")
            .header("Accept", ACCEPT_BOTH)
            .json(
                &json!({"jsonrpc": "2.0", "id": "init-1", "method": "initialize", "params": {
                "protocolVersion": revision.as_str(), "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}}}),
            )
            .send(server.addr)
            .await;
        assert_eq!(init.status, 503, "{revision}: {init:?}");
        assert_eq!(init.json()["id"], "init-1");
        store.down.store(false, Ordering::SeqCst);
        let response = post(revision, Some(&session), &list)
            .send(server.addr)
            .await;
        assert_eq!(response.status, 200, "{revision}");
    }
}

/// A change to a session that the store did not take is not answered as done: with saves
/// failing, `logging/setLevel` and `resources/subscribe` get 503 and the revision's error with
/// their id (they used to get 200 and an empty result while nothing was stored); once saves
/// work again the same request succeeds.
#[tokio::test]
async fn a_session_change_the_store_refused_is_not_reported_as_done() {
    let store = Arc::new(Flaky {
        inner: MemoryHub::new(HubConfig::new()),
        down: AtomicBool::new(false),
        saves_down: AtomicBool::new(false),
        reads_hang: AtomicBool::new(false),
    });
    let server = demo_builder("save-outage")
        .state_store(store.clone())
        .build()
        .unwrap();
    let server = Running::start(server, HttpConfig::new()).await;
    for revision in [Revision::V2025_03_26, Revision::V2025_11_25] {
        let session = open_session(&server, revision).await;
        store.saves_down.store(true, Ordering::SeqCst);
        for (id, method, params) in [
            ("lvl", "logging/setLevel", json!({"level": "debug"})),
            ("sub", "resources/subscribe", json!({"uri": "config://app"})),
        ] {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            let response = post(revision, Some(&session), &request)
                .header("Accept", "application/json, text/event-stream")
                .send(server.addr)
                .await;
            assert_eq!(response.status, 503, "{revision} {method}: {response:?}");
            let error = response.json();
            support::check(revision, "JSONRPCMessage", &error);
            assert_eq!(
                (&error["id"], &error["error"]["code"]),
                (&json!(id), &json!(-32603)),
                "{revision} {method}"
            );
        }
        store.saves_down.store(false, Ordering::SeqCst);
        let request = json!({"jsonrpc": "2.0", "id": "sub-2", "method": "resources/subscribe",
            "params": {"uri": "config://app"}});
        let response = post(revision, Some(&session), &request)
            .send(server.addr)
            .await;
        assert_eq!(response.status, 200, "{revision}: {response:?}");
    }
}

/// An event log whose polls all fail: a worker's session cache never trusts a record (its
/// invalidation feed never runs), so every request reads the store.
struct FeedDown(MemoryHub);

impl EventLog for FeedDown {
    fn publish<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Cursor, LogError>> {
        self.0.publish(topic, message)
    }

    fn publish_existing<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Option<Cursor>, LogError>> {
        self.0.publish_existing(topic, message)
    }

    fn position<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<Cursor, LogError>> {
        self.0.position(topic)
    }

    fn poll<'a>(
        &'a self,
        _topic: &'a Topic,
        _after: Cursor,
        _timeout: Duration,
    ) -> BoxFuture<'a, Result<Vec<Event>, LogError>> {
        Box::pin(async { Err(BackendError::connection("the test's log is down").into()) })
    }

    fn delete<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<(), LogError>> {
        EventLog::delete(&self.0, topic)
    }
}

/// With the session cache on (the default), a worker rides out a store outage for the
/// sessions it has seen: reads served from its copy when the store fails or hangs, changes
/// refused with 503 (the soak's redis-restart attack: a client's calls kept answering while
/// Redis restarts). The store is read on every request here (the cache's invalidation feed
/// never runs), so each request meets the outage.
#[tokio::test]
async fn a_store_outage_leaves_known_sessions_served_from_the_workers_copy() {
    let store = Arc::new(Flaky {
        inner: MemoryHub::new(HubConfig::new()),
        down: AtomicBool::new(false),
        saves_down: AtomicBool::new(false),
        reads_hang: AtomicBool::new(false),
    });
    let server = demo_builder("stale")
        .state_store(store.clone())
        .event_log(Arc::new(FeedDown(MemoryHub::new(HubConfig::new()))))
        .build()
        .unwrap();
    let server = Running::start(server, HttpConfig::new()).await;
    let revision = Revision::V2025_11_25;
    let session = open_session(&server, revision).await;
    let list = json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"});
    assert_eq!(
        post(revision, Some(&session), &list)
            .send(server.addr)
            .await
            .status,
        200
    );
    for (down, hang) in [(true, false), (false, true)] {
        store.down.store(down, Ordering::SeqCst);
        store.reads_hang.store(hang, Ordering::SeqCst);
        let response = tokio::time::timeout(
            WAIT,
            post(revision, Some(&session), &list).send(server.addr),
        )
        .await
        .expect("answered from the copy, not held by the store");
        assert_eq!(
            response.status, 200,
            "down {down}, hang {hang}: {response:?}"
        );
        assert!(response.json()["result"]["tools"].is_array());
    }
    // A change still needs the store: refused while it is away.
    store.reads_hang.store(false, Ordering::SeqCst);
    store.down.store(true, Ordering::SeqCst);
    let subscribe = json!({"jsonrpc": "2.0", "id": "sub", "method": "resources/subscribe",
        "params": {"uri": "config://app"}});
    let refused = post(revision, Some(&session), &subscribe)
        .send(server.addr)
        .await;
    assert_eq!(refused.status, 503, "{refused:?}");
    // Back: served from the store again.
    store.down.store(false, Ordering::SeqCst);
    assert_eq!(
        post(revision, Some(&session), &subscribe)
            .send(server.addr)
            .await
            .status,
        200
    );
}
