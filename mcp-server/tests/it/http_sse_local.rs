//! HTTP+SSE (2024-11-05) across two workers that share one hub: the worker holding a stream
//! sends the answers to POSTs that land on it straight into the stream, without the event log;
//! POSTs that land on the other worker still reach the stream through the log. Run on an
//! in-memory hub and on the Redis at `MCP_REDIS_URL` (default `redis://127.0.0.1:6379`).
//!
//! With `CI=true` an unreachable Redis fails the Redis test; otherwise it prints a notice and
//! passes.

use crate::raw_http;
use crate::support;

include!("../../src/bin/demo/registry.rs");

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_hub::{
    Cursor, EventLog, HubConfig, MemoryHub, Namespace, RedisConfig, RedisHub, StateStore, Topic,
};
use mcp_server::Revision;
use mcp_server::http::HttpConfig;
use raw_http::{RawRequest, RawStream, Running};
use serde_json::Value;

/// The revisions a session runs on: the transport's own, and the newest (with elicitation).
const REVISIONS: [Revision; 2] = [Revision::V2024_11_05, Revision::V2025_11_25];

/// One HTTP+SSE client: its stream, the POST URI the stream named, and the session id in it.
struct SseClient {
    stream: RawStream,
    endpoint: String,
    session: String,
}

impl SseClient {
    async fn open(addr: SocketAddr) -> Self {
        let mut stream = RawRequest::new("GET", "/sse")
            .header("Accept", "text/event-stream")
            .open(addr)
            .await;
        assert_eq!(stream.status, 200);
        let head = stream.event().await.expect("the endpoint event");
        assert_eq!(head.event.as_deref(), Some("endpoint"));
        let endpoint = head.data;
        let session = endpoint
            .split_once("session_id=")
            .expect("a session id in the endpoint")
            .1
            .to_owned();
        Self {
            stream,
            endpoint,
            session,
        }
    }

    /// POSTs `body` to the worker at `addr`; it is accepted (202, nothing in the body).
    async fn post(&self, addr: SocketAddr, body: &Value) {
        let response = RawRequest::new("POST", &self.endpoint)
            .json(body)
            .send(addr)
            .await;
        assert_eq!(response.status, 202, "{body}");
        assert!(response.body.is_empty());
    }

    /// The messages on the stream up to the response with `id`, which comes last.
    async fn until_response(&mut self, id: i64) -> Vec<Value> {
        let mut messages = Vec::new();
        loop {
            let message = self.stream.message().await.expect("the stream stays open");
            let done = message.get("method").is_none() && message["id"] == id;
            messages.push(message);
            if done {
                return messages;
            }
        }
    }

    /// The stream's topic in the hub, as the endpoint names it (root namespace).
    fn topic(&self) -> Topic {
        Namespace::root().topic(&format!("mcp-sse/{}", self.session))
    }
}

async fn position(log: &dyn EventLog, topic: &Topic) -> Cursor {
    log.position(topic).await.expect("the log answers")
}

fn call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": {"progressToken": id}}})
}

/// `count` to 3 on the worker at `addr`: three progress notifications and three log lines in
/// their order, then the result, all on the stream.
async fn count_on(client: &mut SseClient, revision: Revision, addr: SocketAddr, id: i64) {
    client.post(addr, &call(id, "count", json!({"n": 3}))).await;
    let messages = client.until_response(id).await;
    let progress: Vec<_> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], id);
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(progress, [1.0, 2.0, 3.0], "{messages:?}");
    let logs: Vec<_> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| m["params"]["data"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        logs,
        ["counted 1", "counted 2", "counted 3"],
        "{messages:?}"
    );
    assert_eq!(messages.len(), 7, "{messages:?}");
    let result = messages.last().unwrap();
    support::check(revision, "JSONRPCResponse", result);
    assert_eq!(result["result"]["content"][0]["text"], "counted to 3");
}

/// `add` on the worker at `addr`: its result alone.
async fn add_on(
    client: &mut SseClient,
    revision: Revision,
    addr: SocketAddr,
    id: i64,
    sum: (i64, i64),
) {
    let (a, b) = sum;
    client
        .post(addr, &call(id, "add", json!({"a": a, "b": b})))
        .await;
    let messages = client.until_response(id).await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    support::check(revision, "JSONRPCResponse", &messages[0]);
    // The text block carries the sum on every revision (2024-11-05 has no structured content).
    let text = messages[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    let sum: Value = serde_json::from_str(text).unwrap();
    assert_eq!(sum["sum"], a + b, "{messages:?}");
}

/// A whole HTTP+SSE session with its stream on `holder`: each kind of POST goes once to the
/// holder and once to `other`. Every answer arrives on the stream, in order; the holder's go
/// around the stream's topic in `log`, the other worker's through it.
async fn answers_on_the_stream(
    holder: &Running,
    other: &Running,
    log: &dyn EventLog,
    revision: Revision,
) {
    let mut client = SseClient::open(holder.addr).await;
    let topic = client.topic();
    let quiet = position(log, &topic).await;

    // initialize on the holder: answered on the stream, nothing in the topic.
    client
        .post(
            holder.addr,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": revision.as_str(), "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "local", "version": "1"}}}),
        )
        .await;
    let init = client.until_response(1).await;
    assert_eq!(init.len(), 1, "{init:?}");
    assert_eq!(init[0]["result"]["protocolVersion"], revision.as_str());
    support::check(revision, "InitializeResult", &init[0]["result"]);
    assert_eq!(
        position(log, &topic).await,
        quiet,
        "initialize went to the log"
    );

    // The rest of the handshake on the other worker: it sees the record the holder saved, and
    // its answer travels through the topic.
    client
        .post(
            other.addr,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
    client
        .post(
            other.addr,
            &json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
                "params": {"level": "info"}}),
        )
        .await;
    let set = client.until_response(2).await;
    assert_eq!(set.len(), 1, "{set:?}");
    assert_eq!(set[0]["result"], json!({}));
    let after_other = position(log, &topic).await;
    assert_ne!(
        after_other, quiet,
        "the other worker's answer skipped the log"
    );

    // A call with progress and log lines (the level set on the other worker holds), on each.
    count_on(&mut client, revision, holder.addr, 3).await;
    assert_eq!(
        position(log, &topic).await,
        after_other,
        "count went to the log"
    );
    count_on(&mut client, revision, other.addr, 4).await;
    let after_other = position(log, &topic).await;
    assert_ne!(after_other, quiet);

    add_on(&mut client, revision, holder.addr, 5, (2, 3)).await;
    assert_eq!(
        position(log, &topic).await,
        after_other,
        "add went to the log"
    );
    add_on(&mut client, revision, other.addr, 6, (40, 2)).await;
    let after_other = position(log, &topic).await;
    if revision < Revision::V2025_06_18 {
        return; // no elicitation
    }

    // A question pushed by a call on the holder, answered through the other worker: the
    // question and the result come straight to the stream.
    client
        .post(holder.addr, &call(7, "deploy", json!({"service": "db"})))
        .await;
    let question = client.stream.message().await.unwrap();
    support::check(revision, "JSONRPCRequest", &question);
    assert_eq!(question["method"], "elicitation/create");
    client
        .post(
            other.addr,
            &json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}}),
        )
        .await;
    let done = client.until_response(7).await;
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(
        done[0]["result"]["content"][0]["text"],
        "stopped at decline"
    );
    assert_eq!(
        position(log, &topic).await,
        after_other,
        "deploy went to the log"
    );
}

/// Two workers on one in-memory hub (event log and state store).
async fn memory_pair() -> (Running, Running, Arc<MemoryHub>) {
    let hub = Arc::new(MemoryHub::new(HubConfig::default()));
    let (holder, other) = workers("sse-local", [hub.clone(), hub.clone()]).await;
    (holder, other, hub)
}

/// Two workers, each on its own handle of a shared hub: the stream's holder and the other.
async fn workers<H>(name: &str, hubs: [Arc<H>; 2]) -> (Running, Running)
where
    H: EventLog + StateStore + 'static,
{
    let mut workers = Vec::new();
    for hub in hubs {
        let server = demo_builder(name)
            .state_store(hub.clone())
            .event_log(hub)
            .build()
            .unwrap();
        workers.push(Running::start(server, HttpConfig::new()).await);
    }
    let other = workers.pop().unwrap();
    let holder = workers.pop().unwrap();
    (holder, other)
}

#[tokio::test]
async fn answers_skip_the_log_on_the_worker_holding_the_stream() {
    let (holder, other, hub) = memory_pair().await;
    for revision in REVISIONS {
        answers_on_the_stream(&holder, &other, hub.as_ref(), revision).await;
    }
    holder.stop().await;
    other.stop().await;
}

#[tokio::test]
async fn each_of_two_streams_gets_only_its_own_answers() {
    let (holder, other, _hub) = memory_pair().await;
    let revision = Revision::V2024_11_05;
    let mut first = SseClient::open(holder.addr).await;
    let mut second = SseClient::open(holder.addr).await;
    let init = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": revision.as_str(), "capabilities": {},
            "clientInfo": {"name": "local", "version": "1"}}})
    };
    first.post(holder.addr, &init(1)).await;
    second.post(other.addr, &init(1)).await;
    assert_eq!(first.until_response(1).await.len(), 1);
    assert_eq!(second.until_response(1).await.len(), 1);
    add_on(&mut second, revision, holder.addr, 2, (1, 1)).await;
    add_on(&mut first, revision, holder.addr, 2, (10, 10)).await;
    add_on(&mut second, revision, other.addr, 3, (5, 5)).await;
    holder.stop().await;
    other.stop().await;
}

fn redis_url() -> String {
    std::env::var("MCP_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

#[tokio::test]
async fn answers_skip_the_log_on_the_worker_holding_the_stream_on_redis() {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let prefix = format!("mcp-server-sse-local-test:{}:{nanos}", std::process::id());
    let mut hubs = Vec::new();
    for _ in 0..2 {
        let config = RedisConfig::new().key_prefix(prefix.clone());
        match RedisHub::connect(&redis_url(), config).await {
            Ok(hub) => hubs.push(Arc::new(hub)),
            Err(err) if std::env::var("CI").as_deref() != Ok("true") => {
                eprintln!(
                    "notice: Redis at {} is unreachable ({err}); skipping",
                    redis_url()
                );
                return;
            }
            Err(err) => panic!(
                "Redis at {} is unreachable with CI=true: {err}",
                redis_url()
            ),
        }
    }
    // Each worker has its own connection to the shared Redis, as separate processes would.
    let (holder, other) = workers("sse-local-redis", [hubs[0].clone(), hubs[1].clone()]).await;
    for revision in REVISIONS {
        answers_on_the_stream(&holder, &other, hubs[0].as_ref(), revision).await;
    }
    holder.stop().await;
    other.stop().await;
}
