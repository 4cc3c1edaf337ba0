//! Asking and resuming across workers, once per backend (Redis, PostgreSQL, SQLite; see
//! `support/backends.rs` for where each is and when a row is skipped): two `mcp-demo`
//! PROCESSES that share nothing but the hub, session store and event log. On SQLite the two
//! processes open one file.
//!
//! - 2025-11-25: the call goes to worker A, which pushes `elicitation/create` on the call's
//!   stream; the answer is POSTed to worker B; the handler on A completes.
//! - the same with the answer published before A's first poll (made certain in-process, two
//!   hubs on one place: A's event log holds its first poll until B has published the answer);
//! - 2026-07-28 (MRTR) and 2025-03-26 (`mcpState`): the retry lands on the other worker, and
//!   the state is single use across workers;
//! - a GET stream on A gets the updates published on A and on B, and resumed on B with
//!   `Last-Event-ID` it replays exactly the ones after that id.
//!
//! Every message the workers send is validated against the revision's official schema.
//!
//! The demo processes need every hub backend: the test is built with the `redis`, `postgres`
//! and `sqlite` features (as `cargo xtask ci` builds with all of them).

#![cfg(all(feature = "redis", feature = "postgres", feature = "sqlite"))]

use crate::backends;
use crate::demo_process::DemoProcess;
use crate::raw_http;
use crate::support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use backends::{Backend, Place};
use futures::StreamExt as _;
use futures::future::BoxFuture;
use mcp_hub::{Cursor, Event, EventLog, Hub, LogError, Topic};
use mcp_server::{Context, Exchange, Question, Revision, Server, Tool, ToolError};
use raw_http::{RawRequest, RawResponse, WAIT};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Notify;

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

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

/// One `mcp-demo` process on 127.0.0.1:0 with `--hub` on a place; killed when dropped.
async fn worker(place: &Place) -> DemoProcess {
    DemoProcess::start(&["--addr", "127.0.0.1:0", "--hub", &place.demo_hub()], &[]).await
}

fn post(revision: Revision, session: Option<&str>, body: &Value) -> RawRequest<'static> {
    let mut request = RawRequest::new("POST", "/mcp").header("Accept", ACCEPT_BOTH);
    // `initialize` names its revision in the body.
    if revision >= Revision::V2025_06_18 && body["method"] != "initialize" {
        request = request.header("MCP-Protocol-Version", revision.as_str());
    }
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    if revision == Revision::V2026_07_28 {
        let method = body["method"].as_str().unwrap();
        request = request.header("Mcp-Method", method);
        if let Some(name) = body["params"]["name"].as_str() {
            request = request.header("Mcp-Name", name);
        }
    }
    request.json(body)
}

fn validated(revision: Revision, response: &RawResponse) -> Vec<Value> {
    let messages = response.messages();
    for message in &messages {
        support::check(revision, "JSONRPCMessage", message);
    }
    messages
}

/// `initialize` + `notifications/initialized` on `worker`; the session id.
async fn open_session(worker: SocketAddr, revision: Revision) -> String {
    let init = post(
        revision,
        None,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": revision.as_str(), "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .send(worker)
    .await;
    assert_eq!(init.status, 200);
    validated(revision, &init);
    let session = init.header("mcp-session-id").unwrap().to_owned();
    let done = post(
        revision,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .send(worker)
    .await;
    assert_eq!(done.status, 202);
    session
}

#[tokio::test]
async fn a_pushed_question_is_answered_through_the_other_process() {
    per_backend!(pushed_question_row);
}

async fn pushed_question_row(place: &Place) {
    let (a, b) = (worker(place).await, worker(place).await);
    let revision = Revision::V2025_11_25;
    // The session is made on B and used on A: it lives in the shared hub only.
    let session = open_session(b.addr, revision).await;
    // One question (deploy), then two in one call (rename): every answer goes to the worker
    // that did not ask.
    for (tool, answers) in [
        ("deploy", vec![json!({"action": "accept", "content": {}})]),
        (
            "rename",
            vec![
                json!({"action": "accept", "content": {}}),
                json!({"action": "accept", "content": {"name": "b.txt"}}),
            ],
        ),
    ] {
        let arguments = if tool == "deploy" {
            json!({"service": "web"})
        } else {
            json!({"path": "a.txt"})
        };
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        let mut stream = post(revision, Some(&session), &call).open(a.addr).await;
        assert_eq!(stream.header("content-type"), Some("text/event-stream"));
        let mut answered_at = None;
        for answer in answers {
            let question = stream.message().await.expect("a question");
            support::check(revision, "JSONRPCMessage", &question);
            support::check(revision, "ElicitRequest", &question);
            assert_eq!(question["method"], "elicitation/create");
            let reply = json!({"jsonrpc": "2.0", "id": question["id"], "result": answer});
            answered_at = Some(std::time::Instant::now());
            let accepted = post(revision, Some(&session), &reply).send(b.addr).await;
            assert_eq!(accepted.status, 202);
        }
        let done = stream.message().await.expect("the result");
        // A figure, not an assertion: from the last answer POSTed to B to the result on A.
        eprintln!(
            "{:?} {tool}: result {:?} after the last answer",
            place.backend,
            answered_at.map(|at| at.elapsed())
        );
        support::check(revision, "JSONRPCMessage", &done);
        support::check(revision, "CallToolResult", &done["result"]);
        assert_eq!(done["id"], 7);
        let expected = if tool == "deploy" {
            "deployed web"
        } else {
            "renamed a.txt to b.txt"
        };
        assert_eq!(done["result"]["content"][0]["text"], expected);
    }
}

#[tokio::test]
async fn an_mrtr_retry_lands_on_the_other_process_and_its_state_is_single_use() {
    per_backend!(mrtr_row);
}

async fn mrtr_row(place: &Place) {
    let (a, b) = (worker(place).await, worker(place).await);
    let revision = Revision::V2026_07_28;
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    let call = |id: i64, extra: Value| {
        let mut params = json!({"_meta": meta, "name": "rename", "arguments": {"path": "a.txt"}});
        params
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    };
    let round = |response: &RawResponse| {
        let message = validated(revision, response).pop().unwrap();
        support::check(revision, "JSONRPCMessage", &message);
        message
    };
    // Round 1 on A, round 2 on B, round 3 on A.
    let first = round(&post(revision, None, &call(1, json!({}))).send(a.addr).await);
    let result = &first["result"];
    support::check(revision, "InputRequiredResult", result);
    assert!(result["inputRequests"].get("confirm").is_some());
    let mut answers = json!({"confirm": {"action": "accept", "content": {}}});
    let retry = call(
        2,
        json!({"inputResponses": answers, "requestState": result["requestState"]}),
    );
    let second = round(&post(revision, None, &retry).send(b.addr).await);
    let result = second["result"].clone();
    support::check(revision, "InputRequiredResult", &result);
    assert!(result["inputRequests"].get("name").is_some(), "{second}");
    answers["name"] = json!({"action": "accept", "content": {"name": "b.txt"}});
    let retry = call(
        3,
        json!({"inputResponses": answers, "requestState": result["requestState"]}),
    );
    let third = round(&post(revision, None, &retry).send(a.addr).await);
    support::check(revision, "CallToolResult", &third["result"]);
    assert_eq!(
        third["result"]["content"][0]["text"],
        "renamed a.txt to b.txt"
    );
    // The state redeemed on A cannot be replayed on B (nor on A).
    for worker in [b.addr, a.addr] {
        let replay = call(
            4,
            json!({"inputResponses": answers, "requestState": result["requestState"]}),
        );
        let refused = round(&post(revision, None, &replay).send(worker).await);
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
    }

    // 2025-03-26: the mcpState argument crosses workers the same way.
    let revision = Revision::V2025_03_26;
    let session = open_session(a.addr, revision).await;
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "deploy", "arguments": {"service": "web"}}});
    let first = validated(
        revision,
        &post(revision, Some(&session), &call).send(a.addr).await,
    )
    .pop()
    .unwrap();
    support::check(revision, "CallToolResult", &first["result"]);
    let asked = &first["result"]["_meta"]["rs.mcp-adapters/inputRequired"];
    let mut retry = call.clone();
    retry["params"]["arguments"]["mcpAnswers"] =
        json!({"confirm": {"action": "accept", "content": {}}});
    retry["params"]["arguments"]["mcpState"] = asked["requestState"].clone();
    let done = validated(
        revision,
        &post(revision, Some(&session), &retry).send(b.addr).await,
    )
    .pop()
    .unwrap();
    support::check(revision, "CallToolResult", &done["result"]);
    assert_eq!(done["result"]["content"][0]["text"], "deployed web");
    let replayed = validated(
        revision,
        &post(revision, Some(&session), &retry).send(a.addr).await,
    )
    .pop()
    .unwrap();
    assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
}

#[tokio::test]
async fn a_get_stream_resumes_on_the_other_process_with_last_event_id() {
    per_backend!(resume_row);
}

/// Opens the GET stream of `session` on `worker`, after `last_event_id` when given.
async fn get_stream(
    worker: SocketAddr,
    revision: Revision,
    session: &str,
    last_event_id: Option<&str>,
) -> raw_http::RawStream {
    let mut request = RawRequest::new("GET", "/mcp")
        .header("Accept", "text/event-stream")
        .header("MCP-Protocol-Version", revision.as_str())
        .header("Mcp-Session-Id", session);
    if let Some(id) = last_event_id {
        request = request.header("Last-Event-ID", id);
    }
    let stream = request.open(worker).await;
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    stream
}

/// The id of the next update on `stream` (events without a message skipped), checked
/// against the schema.
async fn next_update_id(stream: &mut raw_http::RawStream, revision: Revision) -> String {
    loop {
        let event = stream.event().await.expect("the stream goes on");
        if event.data.is_empty() {
            continue;
        }
        let message: Value = serde_json::from_str(&event.data).unwrap();
        support::check(revision, "JSONRPCMessage", &message);
        support::check(revision, "ResourceUpdatedNotification", &message);
        return event.id.expect("an update carries its event id");
    }
}

/// `touch` on `worker` (publishes an update of config://app); checks it was acknowledged.
async fn touch(worker: SocketAddr, revision: Revision, session: &str) {
    let call = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "touch", "arguments": {}}});
    let done = post(revision, Some(session), &call).send(worker).await;
    assert_eq!(done.status, 200);
    let result = validated(revision, &done).pop().unwrap();
    assert_eq!(
        result["result"]["content"][0]["text"],
        "touched config://app"
    );
}

async fn resume_row(place: &Place) {
    let (a, b) = (worker(place).await, worker(place).await);
    let revision = Revision::V2025_11_25;
    let session = open_session(a.addr, revision).await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
        "params": {"uri": "config://app"}});
    // Subscribed on A, where the stream is read: a demo process trusts its copy of a
    // session record for a while (the session cache), so a subscription made on B would
    // reach A's copy only when the change notice does.
    assert_eq!(
        post(revision, Some(&session), &subscribe)
            .send(a.addr)
            .await
            .status,
        200
    );
    // The stream on A gets what A and then B publish.
    let mut stream = get_stream(a.addr, revision, &session, None).await;
    touch(a.addr, revision, &session).await;
    let first = next_update_id(&mut stream, revision).await;
    let mut later = Vec::new();
    for _ in 0..2 {
        touch(b.addr, revision, &session).await;
        later.push(next_update_id(&mut stream, revision).await);
    }
    drop(stream);
    // Resumed on B after the first: the two later updates, in order, under the same ids,
    // and never the first. On Redis and PostgreSQL the demo processes use the default
    // prefix, which other runs may share: their updates may come in between, not ours twice.
    let mut resumed = get_stream(b.addr, revision, &session, Some(&first)).await;
    let mut got = Vec::new();
    while got.len() < later.len() {
        let id = next_update_id(&mut resumed, revision).await;
        assert_ne!(id, first, "the update read before came again");
        if later.contains(&id) {
            assert!(!got.contains(&id), "update {id} came twice");
            got.push(id);
        }
    }
    assert_eq!(got, later);
}

/// An event log that holds its first `poll` until released: the answer is certain to be
/// published before the asking worker first looks for it.
struct HeldFirstPoll {
    inner: Arc<dyn Hub>,
    polled: Notify,
    release: Notify,
    held: std::sync::atomic::AtomicBool,
}

impl EventLog for HeldFirstPoll {
    fn publish<'a>(
        &'a self,
        topic: &'a Topic,
        message: bytes::Bytes,
    ) -> BoxFuture<'a, Result<Cursor, LogError>> {
        self.inner.publish(topic, message)
    }

    fn publish_existing<'a>(
        &'a self,
        topic: &'a Topic,
        message: bytes::Bytes,
    ) -> BoxFuture<'a, Result<Option<Cursor>, LogError>> {
        self.inner.publish_existing(topic, message)
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
        Box::pin(async move {
            if !self.held.swap(true, std::sync::atomic::Ordering::SeqCst) {
                self.polled.notify_one();
                self.release.notified().await;
            }
            self.inner.poll(topic, after, timeout).await
        })
    }

    fn delete<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<(), LogError>> {
        EventLog::delete(&*self.inner, topic)
    }
}

#[derive(Deserialize, JsonSchema)]
struct DeployArgs {
    service: String,
}

async fn deploy(args: DeployArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex
        .ask(
            "confirm",
            Question::elicit(format!("Deploy {}?", args.service)),
        )
        .await?;
    Ok(format!("{} {}", args.service, answer.accepted()))
}

#[tokio::test]
async fn an_answer_published_before_the_first_poll_is_still_delivered() {
    per_backend!(held_first_poll_row);
}

async fn held_first_poll_row(place: &Place) {
    let (hub_a, hub_b) = (place.hub().await, place.hub().await);
    let held = Arc::new(HeldFirstPoll {
        inner: hub_a.clone(),
        polled: Notify::new(),
        release: Notify::new(),
        held: std::sync::atomic::AtomicBool::new(false),
    });
    let build = |store: Arc<dyn Hub>, log: Arc<dyn EventLog>| {
        Server::builder("held", "1")
            .tool(Tool::new("deploy", deploy))
            .state_store(store)
            .event_log(log)
            .build()
            .unwrap()
    };
    let worker_a = build(hub_a, held.clone());
    let worker_b = build(hub_b.clone(), hub_b);
    let revision = Revision::V2025_11_25;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let (ctx_a, ctx_b) = (Context::connection(), Context::connection());
    worker_a.handle_all(init.clone(), &ctx_a).await;
    worker_b.handle_all(init, &ctx_b).await;
    let mut reply = worker_a.handle(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "deploy", "arguments": {"service": "web"}}}),
        &ctx_a,
    );
    let question = reply.next().await.unwrap().to_value();
    support::check(revision, "JSONRPCMessage", &question);
    support::check(revision, "ElicitRequest", &question);
    let waiting = tokio::spawn(async move { reply.next().await.map(|o| o.to_value()) });
    // A is at its first poll, held there; B publishes the answer meanwhile.
    tokio::time::timeout(WAIT, held.polled.notified())
        .await
        .unwrap();
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {}}});
    assert!(worker_b.handle_all(answer, &ctx_b).await.is_empty());
    held.release.notify_one();
    let done = tokio::time::timeout(WAIT, waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    support::check(revision, "JSONRPCMessage", &done);
    assert_eq!(done["result"]["content"][0]["text"], "web true");
}
