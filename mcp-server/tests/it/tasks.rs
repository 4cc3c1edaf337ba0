//! The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on one server over real
//! HTTP (2026-07-28, in-memory hub): a task is created before its `CreateTaskResult`, read
//! with `tasks/get`, answered with `tasks/update` (a handler's `ex.ask` becomes
//! `inputRequests`), cancelled with `tasks/cancel`; tool errors complete, protocol errors fail;
//! tasks expire after `ttlMs`; limits, ownership and the extension's error codes hold.
//!
//! Across workers, once per shared backend (Redis, PostgreSQL, SQLite; see
//! `support/backends.rs`): two servers sharing nothing but the hub; a task created through
//! worker A is read (at once), answered and cancelled through worker B, and a task whose worker
//! dies reads as `failed` once its lease runs out; `notifications/tasks` published on A reach a
//! `subscriptions/listen` stream on B.
//!
//! Every message is validated against the 2026-07-28 schema, and every task message (the
//! `CreateTaskResult`, the results of `tasks/get`, `tasks/update` and `tasks/cancel`,
//! `notifications/tasks`) against the extension's schema too:
//! `schemas/tasks-extension-2026-07-28.json`, written here from SEP-2663 (the spec's schema
//! defines none of them) and merged into the official one, so that what a task inlines
//! (`CallToolResult`, `Error`, `InputRequests`) is the spec's own type. A test checks that this
//! schema refuses what the SEP forbids.

use crate::backends;
use crate::raw_http;
use crate::support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use mcp_hub::Hub;
use mcp_server::http::HttpConfig;
use mcp_server::{
    Context, Exchange, Interrupt, NoArgs, Question, Revision, Server, TaskSupport, Tasks, Tool,
    ToolError,
};
use raw_http::{RawRequest, Running, WAIT};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

const TASKS: &str = "io.modelcontextprotocol/tasks";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// What the test and the gated tool signal each other.
struct Gates {
    /// A permit per handler start.
    started: Semaphore,
    /// A permit lets one handler finish.
    release: Semaphore,
    /// A permit per handler that saw its cancellation.
    cancelled: Semaphore,
}

impl Default for Gates {
    fn default() -> Self {
        Self {
            started: Semaphore::new(0),
            release: Semaphore::new(0),
            cancelled: Semaphore::new(0),
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct Label {
    /// Echoed in the result.
    label: String,
}

fn server_with(tasks: Tasks, gates: &Arc<Gates>) -> Server {
    server_on(None, tasks, gates)
}

/// The server, on `hub` when given (a worker sharing it), else on its own memory hub.
fn server_on(hub: Option<Arc<dyn Hub>>, tasks: Tasks, gates: &Arc<Gates>) -> Server {
    let gated = {
        let gates = gates.clone();
        move |args: Label, ex: Exchange| {
            let gates = gates.clone();
            async move {
                gates.started.add_permits(1);
                tokio::select! {
                    permit = gates.release.acquire() => {
                        permit.expect("open").forget();
                        Ok(format!("released {}", args.label))
                    }
                    () = ex.cancelled() => {
                        gates.cancelled.add_permits(1);
                        Err(ToolError::from(Interrupt::Cancelled))
                    }
                }
            }
        }
    };
    let mut builder = Server::builder("tasks", "1.0");
    if let Some(hub) = hub {
        builder = builder.state_store(hub.clone()).event_log(hub);
    }
    builder
        .tasks(tasks)
        .tool(Tool::new("gated", gated).task_support(TaskSupport::Optional))
        .tool(Tool::new("confirm", confirm).task_support(TaskSupport::Optional))
        .tool(Tool::new("two_questions", two_questions).task_support(TaskSupport::Optional))
        .tool(Tool::new("boom", boom).task_support(TaskSupport::Optional))
        .tool(Tool::new("refused", refused).task_support(TaskSupport::Optional))
        .tool(Tool::new("tool_error", tool_error).task_support(TaskSupport::Required))
        .tool(Tool::new("sync_only", sync_only))
        .tool(
            Tool::new("later", later)
                .task_support(TaskSupport::Required)
                .deferred_task(),
        )
        .build()
        .unwrap()
}

fn confirm_question(message: &str) -> Question {
    Question::elicit_with(
        message,
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
    )
}

async fn confirm(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex.ask("sure", confirm_question("Sure?")).await?;
    Ok(format!(
        "confirmed: {}",
        answer.accepted() && answer.get("ok") == Some(&json!(true))
    ))
}

async fn two_questions(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let (a, b) = tokio::join!(
        ex.ask("first", confirm_question("First?")),
        ex.ask("second", confirm_question("Second?"))
    );
    Ok(format!("{} {}", a?.accepted(), b?.accepted()))
}

async fn boom(_: NoArgs) -> String {
    panic!("boom by design")
}

/// Passes on a protocol error as a gateway would (`Exchange::fail`).
async fn refused(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    Err(ex
        .fail(
            -32602,
            "the upstream refused the arguments",
            Some(json!({"field": "x"})),
        )
        .into())
}

async fn tool_error(_: NoArgs) -> Result<String, ToolError> {
    Err(ToolError::Failed("the tool failed".into()))
}

async fn sync_only(_: NoArgs) -> &'static str {
    "plain"
}

async fn later(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let name = ex
        .ask(
            "name",
            Question::elicit_with(
                "Name?",
                json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            ),
        )
        .await?;
    ex.start_task().await?;
    assert!(ex.task_id().is_some(), "the handler now runs as a task");
    Ok(format!(
        "Hello, {}",
        name.get("name").and_then(Value::as_str).unwrap_or("?")
    ))
}

/// A 2026-07-28 client over raw HTTP.
struct Peer {
    addr: SocketAddr,
    /// Declares the Tasks extension (and elicitation).
    tasks: bool,
}

static NEXT_ID: AtomicI64 = AtomicI64::new(1);

impl Peer {
    fn new(running: &Running, tasks: bool) -> Self {
        Self {
            addr: running.addr,
            tasks,
        }
    }

    /// The response to `method` (validated as a 2026-07-28 message).
    async fn rpc(&self, method: &str, mut params: Value) -> Value {
        let mut capabilities = json!({"elicitation": {}});
        if self.tasks {
            capabilities["extensions"] = json!({TASKS: {}});
        }
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        });
        let mut request = RawRequest::new("POST", "/mcp")
            .header("Accept", ACCEPT_BOTH)
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", method);
        if let Some(name) = params
            .get("name")
            .or_else(|| params.get("taskId"))
            .and_then(Value::as_str)
        {
            request = request.header("Mcp-Name", name);
        }
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let response = request
            .json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .send(self.addr)
            .await;
        let message = response
            .messages()
            .pop()
            .unwrap_or_else(|| panic!("{method}: no message ({})", response.status));
        support::check_task_reply(method, &message);
        assert_eq!(message["id"], json!(id));
        message
    }

    async fn ok(&self, method: &str, params: Value) -> Value {
        let message = self.rpc(method, params).await;
        let result = message
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {message}"));
        support::check(Revision::V2026_07_28, "Result", &result);
        result
    }

    async fn err(&self, method: &str, params: Value) -> Value {
        let message = self.rpc(method, params).await;
        message
            .get("error")
            .cloned()
            .unwrap_or_else(|| panic!("{method} should fail: {message}"))
    }

    async fn call(&self, tool: &str, arguments: Value) -> Value {
        self.ok("tools/call", json!({"name": tool, "arguments": arguments}))
            .await
    }

    /// Calls `tool` and returns the new task's id (the `CreateTaskResult` checked).
    async fn start(&self, tool: &str, arguments: Value) -> String {
        let created = self.call(tool, arguments).await;
        check_task(&created, "task");
        for absent in ["result", "error", "inputRequests", "requestState", "task"] {
            assert!(created.get(absent).is_none(), "{absent} in {created}");
        }
        created["taskId"].as_str().unwrap().to_owned()
    }

    /// Calls `gated` with `label` until the server accepts it (a limit is full until a place
    /// is given back); the new task's id.
    async fn start_once_accepted(&self, label: &str) -> String {
        tokio::time::timeout(WAIT, async {
            loop {
                let message = self
                    .rpc(
                        "tools/call",
                        json!({"name": "gated", "arguments": {"label": label}}),
                    )
                    .await;
                if let Some(result) = message.get("result") {
                    return result["taskId"].as_str().unwrap().to_owned();
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap()
    }

    async fn get(&self, id: &str) -> Value {
        let task = self.ok("tasks/get", json!({"taskId": id})).await;
        check_task(&task, "complete");
        assert_eq!(task["taskId"], id);
        task
    }

    /// Polls `tasks/get` (as a client would, at a short interval) until `done` holds.
    async fn until(&self, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        tokio::time::timeout(WAIT, async {
            loop {
                let task = self.get(id).await;
                if done(&task) {
                    return task;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the task reached the state in time")
    }

    async fn until_status(&self, id: &str, status: &str) -> Value {
        self.until(id, |t| t["status"] == status).await
    }
}

/// A task as the extension's schema has it: a `CreateTaskResult` (`resultType: "task"`) or a
/// `tasks/get` result (`resultType: "complete"`, a `DetailedTask`).
fn check_task(task: &Value, result_type: &str) {
    assert_eq!(task["resultType"], result_type, "{task}");
    let type_name = if result_type == "task" {
        "CreateTaskResult"
    } else {
        "GetTaskResult"
    };
    support::check_tasks(type_name, task);
}

/// `{resultType: "complete"}` and the server info, nothing of a task.
fn assert_empty_ack(ack: &Value) {
    let mut rest = ack.as_object().unwrap().clone();
    rest.remove("_meta");
    assert_eq!(Value::Object(rest), json!({"resultType": "complete"}));
}

async fn start(tasks: Tasks) -> (Running, Arc<Gates>) {
    let gates = Arc::new(Gates::default());
    let running = Running::start(server_with(tasks, &gates), HttpConfig::new()).await;
    (running, gates)
}

#[tokio::test]
async fn a_task_is_created_read_and_completed() {
    let (running, gates) = start(Tasks::new()).await;
    let peer = Peer::new(&running, true);
    // The extension is advertised.
    let discovered = peer.ok("server/discover", json!({})).await;
    assert_eq!(discovered["capabilities"]["extensions"][TASKS], json!({}));

    let id = peer.start("gated", json!({"label": "one"})).await;
    assert!(id.len() >= 32, "unguessable: {id}");
    // Readable at once (created before the reply), working until released.
    let working = peer.get(&id).await;
    assert_eq!(working["status"], "working");
    assert_eq!(working["ttlMs"], json!(Tasks::DEFAULT_TTL.as_millis()));
    gates.started.acquire().await.unwrap().forget();
    gates.release.add_permits(1);
    let done = peer.until_status(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "released one");
    assert_eq!(done["result"].get("isError"), None);
    // A terminal task stays readable.
    assert_eq!(peer.get(&id).await["status"], "completed");
}

#[tokio::test]
async fn a_question_becomes_an_input_request_answered_by_tasks_update() {
    let (running, _gates) = start(Tasks::new()).await;
    let peer = Peer::new(&running, true);
    let id = peer.start("confirm", json!({})).await;
    let waiting = peer.until_status(&id, "input_required").await;
    let requests = waiting["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests["sure"]["method"], "elicitation/create");
    // Unknown keys are ignored; the ack is empty either way.
    let ack = peer
        .ok(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"nobody-asked": {"action": "accept"}}}),
        )
        .await;
    assert_empty_ack(&ack);
    assert_eq!(peer.get(&id).await["status"], "input_required");
    let ack = peer
        .ok(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"sure": {"action": "accept", "content": {"ok": true}}}}),
        )
        .await;
    assert_empty_ack(&ack);
    let done = peer.until_status(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "confirmed: true");
}

#[tokio::test]
async fn a_partial_update_leaves_only_the_unanswered_question() {
    let (running, _gates) = start(Tasks::new()).await;
    let peer = Peer::new(&running, true);
    let id = peer.start("two_questions", json!({})).await;
    let both = peer
        .until(&id, |t| {
            t["inputRequests"].as_object().is_some_and(|r| r.len() == 2)
        })
        .await;
    assert_eq!(both["status"], "input_required");
    let accept = json!({"action": "accept", "content": {"ok": true}});
    peer.ok(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"first": accept}}),
    )
    .await;
    // Consistent at once: the record changed before the ack.
    let one = peer.get(&id).await;
    assert_eq!(one["status"], "input_required");
    let keys: Vec<&String> = one["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["second"]);
    peer.ok(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"second": {"action": "decline"}}}),
    )
    .await;
    let done = peer.until_status(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "true false");
}

#[tokio::test]
async fn a_cancel_stops_the_handler_and_is_idempotent() {
    let (running, gates) = start(Tasks::new()).await;
    let peer = Peer::new(&running, true);
    let id = peer.start("gated", json!({"label": "never"})).await;
    gates.started.acquire().await.unwrap().forget();
    let ack = peer.ok("tasks/cancel", json!({"taskId": id})).await;
    assert_empty_ack(&ack);
    assert_eq!(peer.get(&id).await["status"], "cancelled");
    // The handler saw the cancellation (through the hub topic of the task).
    tokio::time::timeout(WAIT, gates.cancelled.acquire())
        .await
        .expect("the handler was cancelled")
        .unwrap()
        .forget();
    // Again, on a terminal task: the same ack, and the status stays.
    let again = peer.ok("tasks/cancel", json!({"taskId": id})).await;
    assert_empty_ack(&again);
    let update = peer
        .ok(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"x": {}}}),
        )
        .await;
    assert_empty_ack(&update);
    assert_eq!(peer.get(&id).await["status"], "cancelled");
}

#[tokio::test]
async fn tool_errors_complete_and_protocol_errors_fail() {
    let (running, _gates) = start(Tasks::new()).await;
    let peer = Peer::new(&running, true);
    let id = peer.start("tool_error", json!({})).await;
    let done = peer.until_status(&id, "completed").await;
    assert_eq!(done["result"]["isError"], true);
    assert_eq!(done["result"]["content"][0]["text"], "the tool failed");

    let id = peer.start("boom", json!({})).await;
    let failed = peer.until_status(&id, "failed").await;
    assert_eq!(failed["error"]["code"], -32603);
    // The task's error names the tool, not the panic's message (it goes to the log).
    assert_eq!(
        failed["error"]["message"],
        "tool \"boom\" failed unexpectedly"
    );
    assert!(!failed.to_string().contains("boom by design"), "{failed}");

    // A protocol error the handler passes on (`Exchange::fail`): the task fails with it, and
    // a call without a task is answered with it, both in the revision's words.
    let id = peer.start("refused", json!({})).await;
    let failed = peer.until_status(&id, "failed").await;
    assert_eq!(failed["error"]["code"], -32602);
    assert_eq!(
        failed["error"]["message"],
        "the upstream refused the arguments"
    );
    assert_eq!(failed["error"]["data"], json!({"field": "x"}));
    assert!(failed.get("result").is_none(), "{failed}");
    let without_tasks = Peer::new(&running, false);
    let error = without_tasks
        .err("tools/call", json!({"name": "refused", "arguments": {}}))
        .await;
    assert_eq!(error["code"], -32602);
    assert_eq!(error["data"], json!({"field": "x"}));
}

#[tokio::test]
async fn tasks_expire_after_their_ttl() {
    let (running, _gates) = start(Tasks::new().ttl(Duration::from_secs(1))).await;
    let peer = Peer::new(&running, true);
    let id = peer.start("tool_error", json!({})).await;
    assert_eq!(peer.get(&id).await["ttlMs"], 1000);
    peer.until_status(&id, "completed").await;
    // Gone after its time to live: an unknown task.
    let gone = tokio::time::timeout(WAIT, async {
        loop {
            let message = peer.rpc("tasks/get", json!({"taskId": id})).await;
            if let Some(error) = message.get("error") {
                return error.clone();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the task expired in time");
    assert_eq!(gone["code"], -32602);
}

#[tokio::test]
async fn negotiation_and_error_codes() {
    let (running, _gates) = start(Tasks::new()).await;
    let plain = Peer::new(&running, false);
    let peer = Peer::new(&running, true);
    // Without the extension: optional tools run synchronously, required ones are refused,
    // and the task methods are refused with -32021.
    let sync = plain.call("confirm", json!({})).await;
    assert_eq!(sync["resultType"], "input_required", "MRTR, not a task");
    let refused = plain
        .err("tools/call", json!({"name": "tool_error", "arguments": {}}))
        .await;
    assert_eq!(refused["code"], -32021);
    assert_eq!(
        refused["data"]["requiredCapabilities"]["extensions"][TASKS],
        json!({})
    );
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let error = plain
            .err(method, json!({"taskId": "x", "inputResponses": {}}))
            .await;
        assert_eq!(error["code"], -32021, "{method}");
    }
    // A sync-only tool never becomes a task, whatever the client sends.
    let plain_result = peer
        .ok(
            "tools/call",
            json!({"name": "sync_only", "arguments": {}, "task": {"ttl": 1000}}),
        )
        .await;
    assert_eq!(plain_result["resultType"], "complete");
    assert_eq!(plain_result["content"][0]["text"], "plain");
    // Removed and unknown.
    for method in ["tasks/result", "tasks/list"] {
        assert_eq!(
            peer.err(method, json!({"taskId": "x"})).await["code"],
            -32601
        );
    }
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let error = peer
            .err(
                method,
                json!({"taskId": "no-such-task", "inputResponses": {}}),
            )
            .await;
        assert_eq!(error["code"], -32602, "{method}");
    }
    // Malformed params.
    assert_eq!(peer.err("tasks/get", json!({})).await["code"], -32602);
    assert_eq!(
        peer.err("tasks/get", json!({"taskId": 7})).await["code"],
        -32602
    );
    let id = peer.start("confirm", json!({})).await;
    let error = peer
        .err("tasks/update", json!({"taskId": id, "inputResponses": [1]}))
        .await;
    assert_eq!(error["code"], -32602);
    peer.ok("tasks/cancel", json!({"taskId": id})).await;
}

#[tokio::test]
async fn questions_before_a_deferred_task_go_back_on_the_call() {
    let (running, _gates) = start(Tasks::new()).await;
    let peer = Peer::new(&running, true);
    let first = peer.call("later", json!({})).await;
    assert_eq!(first["resultType"], "input_required");
    assert!(first.get("taskId").is_none());
    let state = first["requestState"].clone();
    let second = peer
        .call_with(
            "later",
            json!({"inputResponses": {"name": {"action": "accept", "content": {"name": "Alice"}}}, "requestState": state}),
        )
        .await;
    check_task(&second, "task");
    let id = second["taskId"].as_str().unwrap();
    let done = peer.until_status(id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Alice");
}

impl Peer {
    /// Opens `subscriptions/listen` for `task_ids`; returns the stream after its
    /// acknowledgement, and the acknowledged ids.
    async fn listen(&self, task_ids: &[&str]) -> (raw_http::RawStream, Value) {
        let mut capabilities = json!({});
        if self.tasks {
            capabilities["extensions"] = json!({TASKS: {}});
        }
        let body = json!({"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen", "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": capabilities,
            },
            "notifications": {"taskIds": task_ids},
        }});
        let mut stream = RawRequest::new("POST", "/mcp")
            .header("Accept", ACCEPT_BOTH)
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "subscriptions/listen")
            .json(&body)
            .open(self.addr)
            .await;
        assert_eq!(stream.status, 200);
        let ack = stream.message().await.expect("the acknowledgement");
        support::check(
            Revision::V2026_07_28,
            "SubscriptionsAcknowledgedNotification",
            &ack,
        );
        let acknowledged = ack["params"]["notifications"]["taskIds"].clone();
        (stream, acknowledged)
    }

    async fn call_with(&self, tool: &str, extra: Value) -> Value {
        let mut params = json!({"name": tool, "arguments": {}});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        self.ok("tools/call", params).await
    }
}

#[tokio::test]
async fn live_tasks_are_bounded() {
    let (running, gates) = start(Tasks::new().max_live(1)).await;
    let peer = Peer::new(&running, true);
    let id = peer.start("gated", json!({"label": "a"})).await;
    let refused = peer
        .err(
            "tools/call",
            json!({"name": "gated", "arguments": {"label": "b"}}),
        )
        .await;
    assert!(
        refused["message"].as_str().unwrap().contains("at most 1"),
        "{refused}"
    );
    gates.release.add_permits(1);
    peer.until_status(&id, "completed").await;
    // The place is given back when the task ends.
    let again = peer.start_once_accepted("c").await;
    gates.release.add_permits(1);
    peer.until_status(&again, "completed").await;
}

/// Starts and finishes one `gated` task per label; their ids.
async fn finished_tasks(peer: &Peer, gates: &Gates, labels: &[&str]) -> Vec<String> {
    let mut ids = Vec::new();
    for label in labels {
        let id = peer.start("gated", json!({"label": label})).await;
        gates.release.add_permits(1);
        peer.until_status(&id, "completed").await;
        ids.push(id);
    }
    ids
}

#[tokio::test]
async fn kept_tasks_are_bounded() {
    let (running, gates) = start(Tasks::new().max_retained(2)).await;
    let peer = Peer::new(&running, true);
    // Two tasks run and finish: their places among the live tasks are given back, but their
    // records are kept (readable) for their time to live, an hour.
    let kept = finished_tasks(&peer, &gates, &["a", "b"]).await;
    let refused = peer
        .err(
            "tools/call",
            json!({"name": "gated", "arguments": {"label": "c"}}),
        )
        .await;
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("keeps at most 2 tasks"),
        "{refused}"
    );
    // The refusal takes nothing away: the two kept tasks are still there.
    for id in &kept {
        assert_eq!(peer.get(id).await["status"], "completed");
    }
}

#[tokio::test]
async fn a_kept_task_frees_its_place_when_its_time_to_live_ends() {
    let (running, gates) = start(Tasks::new().max_retained(2).ttl(Duration::from_secs(1))).await;
    let peer = Peer::new(&running, true);
    finished_tasks(&peer, &gates, &["a", "b"]).await;
    // With two kept, a third is accepted only once the oldest record's second has passed.
    let again = peer.start_once_accepted("c").await;
    gates.release.add_permits(1);
    peer.until_status(&again, "completed").await;
}

/// Socket-free: a task is visible only to the principal that created it.
#[tokio::test]
async fn a_task_belongs_to_its_principal() {
    let gates = Arc::new(Gates::default());
    let server = server_with(Tasks::new(), &gates);
    let send = |ctx: Context, method: &'static str, params: Value| {
        let server = server.clone();
        async move {
            let mut params = params;
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
            });
            let out = server
                .handle_all(
                    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
                    &ctx,
                )
                .await;
            let message = out.last().unwrap().to_value();
            support::check_task_reply(method, &message);
            message
        }
    };
    let alice = Context::connection().with_principal("alice");
    let bob = Context::connection().with_principal("bob");
    let created = send(
        alice.clone(),
        "tools/call",
        json!({"name": "gated", "arguments": {"label": "mine"}}),
    )
    .await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let mine = send(alice.clone(), "tasks/get", json!({"taskId": id})).await;
    assert_eq!(mine["result"]["status"], "working");
    for method in ["tasks/get", "tasks/cancel"] {
        let theirs = send(bob.clone(), method, json!({"taskId": id})).await;
        assert_eq!(theirs["error"]["code"], -32602, "{method}: {theirs}");
    }
    assert_eq!(
        send(alice.clone(), "tasks/get", json!({"taskId": id})).await["result"]["status"],
        "working",
        "bob's cancel did nothing"
    );
    send(alice, "tasks/cancel", json!({"taskId": id})).await;
}

/// Runs `body` once per shared backend that answers (see `support/backends.rs`).
macro_rules! per_backend {
    ($body:ident) => {
        for backend in backends::Backend::all() {
            let Some(place) = backend.place().await else {
                continue;
            };
            eprintln!("row: {backend:?}");
            $body(Arc::new(place)).await;
        }
    };
}

async fn a_task_on_a_is_served_by_b(place: Arc<backends::Place>) {
    let gates = Arc::new(Gates::default());
    let a = Running::start(
        server_on(Some(place.hub().await), Tasks::new(), &gates),
        HttpConfig::new(),
    )
    .await;
    let b = Running::start(
        server_on(Some(place.hub().await), Tasks::new(), &gates),
        HttpConfig::new(),
    )
    .await;
    let (on_a, on_b) = (Peer::new(&a, true), Peer::new(&b, true));

    // Created on A, read on B right after A's reply: durable before the reply.
    let id = on_a.start("confirm", json!({})).await;
    let first = on_b.get(&id).await;
    assert!(
        ["working", "input_required"].contains(&first["status"].as_str().unwrap()),
        "{first}"
    );
    // A's handler asks; B sees the question and answers it; A's handler finishes, and a
    // listener on B is told.
    let waiting = on_b.until_status(&id, "input_required").await;
    let (mut stream, acknowledged) = on_b.listen(&[&id]).await;
    assert_eq!(acknowledged, json!([id]));
    assert_eq!(
        waiting["inputRequests"]["sure"]["method"],
        "elicitation/create"
    );
    let ack = on_b
        .ok(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"sure": {"action": "accept", "content": {"ok": true}}}}),
        )
        .await;
    assert_empty_ack(&ack);
    let done = on_b.until_status(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "confirmed: true");
    assert_eq!(on_a.get(&id).await["status"], "completed");
    notified_until(&mut stream, &id, "completed").await;

    // Cancelled through B: A's handler is stopped.
    let id = on_a.start("gated", json!({"label": "across"})).await;
    gates.started.acquire().await.unwrap().forget();
    assert_empty_ack(&on_b.ok("tasks/cancel", json!({"taskId": id})).await);
    tokio::time::timeout(WAIT, gates.cancelled.acquire())
        .await
        .expect("A's handler saw the cancel from B")
        .unwrap()
        .forget();
    assert_eq!(on_a.get(&id).await["status"], "cancelled");
    assert_eq!(on_b.get(&id).await["status"], "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_created_on_one_worker_is_read_answered_and_cancelled_on_another() {
    per_backend!(a_task_on_a_is_served_by_b);
}

async fn a_dead_worker_fails_its_task(place: Arc<backends::Place>) {
    let tasks = Tasks::new().lease(Duration::from_millis(600));
    let gates = Arc::new(Gates::default());
    // Worker A in a runtime of its own, so the test can kill everything it runs.
    let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
    let (kill_tx, kill_rx) = std::sync::mpsc::channel::<()>();
    let worker = {
        let (place, tasks, gates) = (place.clone(), tasks.clone(), gates.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            let running = runtime.block_on(async {
                let hub = place.hub().await;
                Running::start(server_on(Some(hub), tasks, &gates), HttpConfig::new()).await
            });
            addr_tx.send(running.addr).unwrap();
            let _ = kill_rx.recv();
            // Everything A runs stops here, its task's lease renewals too.
            std::mem::forget(running);
            runtime.shutdown_background();
        })
    };
    let a_addr = addr_rx.await.unwrap();
    let b = Running::start(
        server_on(Some(place.hub().await), tasks, &gates),
        HttpConfig::new(),
    )
    .await;
    let on_a = Peer {
        addr: a_addr,
        tasks: true,
    };
    let on_b = Peer::new(&b, true);
    let id = on_a.start("gated", json!({"label": "orphan"})).await;
    gates.started.acquire().await.unwrap().forget();
    assert_eq!(on_b.get(&id).await["status"], "working");
    kill_tx.send(()).unwrap();
    worker.join().unwrap();
    let failed = on_b.until_status(&id, "failed").await;
    assert_eq!(failed["error"]["code"], -32603);
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("worker"),
        "{failed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_worker_dies_fails_once_its_lease_runs_out() {
    per_backend!(a_dead_worker_fails_its_task);
}

/// Reads `notifications/tasks` from a listen stream until the task is `status`; returns the
/// statuses seen. Each is checked: the stream's subscription id, a `DetailedTask`.
async fn notified_until(stream: &mut raw_http::RawStream, id: &str, status: &str) -> Vec<String> {
    let mut seen = Vec::new();
    tokio::time::timeout(WAIT, async {
        loop {
            let message = stream.message().await.expect("a notification");
            support::check(Revision::V2026_07_28, "JSONRPCNotification", &message);
            support::check_tasks("TaskStatusNotification", &message);
            assert_eq!(message["method"], "notifications/tasks");
            let params = &message["params"];
            assert_eq!(
                params["_meta"]["io.modelcontextprotocol/subscriptionId"],
                "listen"
            );
            assert_eq!(params["taskId"], id, "only the listed task");
            let mut task = params.as_object().unwrap().clone();
            task.remove("_meta");
            task.insert("resultType".into(), json!("complete"));
            check_task(&Value::Object(task), "complete");
            seen.push(params["status"].as_str().unwrap().to_owned());
            if params["status"] == status {
                return;
            }
        }
    })
    .await
    .expect("the notifications came in time");
    seen
}

#[tokio::test]
async fn task_status_notifications_reach_listeners_of_the_task() {
    let (running, _gates) = start(Tasks::new()).await;
    let peer = Peer::new(&running, true);
    let id = peer.start("confirm", json!({})).await;
    peer.until_status(&id, "input_required").await;
    // Another task's changes are not delivered to this listener.
    let other = peer.start("tool_error", json!({})).await;
    // Unknown ids are not acknowledged; a client without the extension gets none.
    let (_, none) = Peer::new(&running, false).listen(&[&id]).await;
    assert_eq!(none, Value::Null);
    let (mut stream, acknowledged) = peer.listen(&[&id, "no-such-task"]).await;
    assert_eq!(acknowledged, json!([id]));
    peer.until_status(&other, "completed").await;
    peer.ok(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"sure": {"action": "accept", "content": {"ok": true}}}}),
    )
    .await;
    let seen = notified_until(&mut stream, &id, "completed").await;
    assert_eq!(
        seen.first().map(String::as_str),
        Some("working"),
        "{seen:?}"
    );
}

#[tokio::test]
async fn hostile_task_requests_get_the_exact_errors() {
    let (running, _gates) = start(Tasks::new().max_update_bytes(2048)).await;
    let peer = Peer::new(&running, true);
    let long = "x".repeat(10_000);
    let error = peer.err("tasks/get", json!({"taskId": long})).await;
    assert_eq!(error["code"], -32602);
    let id = peer.start("confirm", json!({})).await;
    peer.until_status(&id, "input_required").await;
    // Too large: refused, and the task still waits.
    let big = json!({"taskId": id, "inputResponses": {"sure": {"action": "accept", "content": {"pad": "y".repeat(4096)}}}});
    assert_eq!(peer.err("tasks/update", big).await["code"], -32602);
    assert_eq!(peer.get(&id).await["status"], "input_required");
    // A malformed answer is read defensively: not an acceptance.
    let ack = peer
        .ok(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"sure": 12345}}),
        )
        .await;
    assert_empty_ack(&ack);
    let done = peer.until_status(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "confirmed: false");
}

/// The extension's schema is not vacuous: it refuses what SEP-2663 forbids.
#[test]
fn the_tasks_schema_refuses_what_the_sep_forbids() {
    let Some(schema) = support::tasks_schema() else {
        return;
    };
    let task = json!({
        "resultType": "task", "taskId": "t1", "status": "working",
        "createdAt": "2026-07-28T10:00:00Z", "lastUpdatedAt": "2026-07-28T10:00:00.5Z",
        "ttlMs": 60000, "pollIntervalMs": 500
    });
    assert_eq!(
        schema.errors("CreateTaskResult", &task),
        Vec::<String>::new()
    );
    let with = |key: &str, value: Value| {
        let mut v = task.clone();
        v[key] = value;
        v
    };
    let without = |key: &str| {
        let mut v = task.clone();
        v.as_object_mut().unwrap().remove(key);
        v
    };
    let null_ttl = with("ttlMs", Value::Null);
    assert!(schema.errors("CreateTaskResult", &null_ttl).is_empty());
    for (why, bad) in [
        ("the v1 ttl", with("ttl", json!(1000))),
        ("the v1 pollInterval", with("pollInterval", json!(500))),
        ("requestState", with("requestState", json!("s"))),
        ("a nested task", with("task", json!({}))),
        ("an outcome", with("result", json!({"content": []}))),
        ("inputRequests", with("inputRequests", json!({}))),
        ("another resultType", with("resultType", json!("complete"))),
        ("an unknown status", with("status", json!("running"))),
        ("a local time", with("createdAt", json!("2026-07-28 10:00"))),
        ("a fractional ttlMs", with("ttlMs", json!(1.5))),
        ("no taskId", without("taskId")),
        ("no ttlMs", without("ttlMs")),
    ] {
        assert!(
            !schema.errors("CreateTaskResult", &bad).is_empty(),
            "accepted {why}: {bad}"
        );
    }
    let detailed = |status: &str, extra: Value| {
        let mut v = task.clone();
        v["resultType"] = json!("complete");
        v["status"] = json!(status);
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    let result = json!({"resultType": "complete", "content": [{"type": "text", "text": "ok"}]});
    let error = json!({"code": -32603, "message": "gone"});
    let asks = json!({"a": {"method": "elicitation/create", "params": {"message": "Sure?", "requestedSchema": {"type": "object", "properties": {}}}}});
    for good in [
        detailed("working", json!({})),
        detailed("cancelled", json!({})),
        detailed("completed", json!({"result": result})),
        detailed("failed", json!({"error": error})),
        detailed("input_required", json!({"inputRequests": asks})),
    ] {
        assert_eq!(schema.errors("GetTaskResult", &good), Vec::<String>::new());
    }
    for (why, bad) in [
        ("completed without result", detailed("completed", json!({}))),
        (
            "completed with an error",
            detailed("completed", json!({"result": result, "error": error})),
        ),
        (
            "a result that is no CallToolResult",
            detailed("completed", json!({"result": {"content": 1}})),
        ),
        ("failed without error", detailed("failed", json!({}))),
        (
            "failed with a result",
            detailed("failed", json!({"error": error, "result": result})),
        ),
        (
            "an error without a code",
            detailed("failed", json!({"error": {"message": "x"}})),
        ),
        (
            "input_required without requests",
            detailed("input_required", json!({})),
        ),
        (
            "input_required with none",
            detailed("input_required", json!({"inputRequests": {}})),
        ),
        (
            "working with an outcome",
            detailed("working", json!({"result": result})),
        ),
        (
            "cancelled with an error",
            detailed("cancelled", json!({"error": error})),
        ),
        (
            "resultType task",
            detailed("working", json!({"resultType": "task"})),
        ),
    ] {
        assert!(
            !schema.errors("GetTaskResult", &bad).is_empty(),
            "accepted {why}: {bad}"
        );
    }
    let ack = json!({"resultType": "complete", "_meta": {}});
    for type_name in ["UpdateTaskResult", "CancelTaskResult"] {
        assert_eq!(schema.errors(type_name, &ack), Vec::<String>::new());
        assert!(
            !schema
                .errors(type_name, &with("resultType", json!("complete")))
                .is_empty()
        );
        assert!(
            !schema
                .errors(type_name, &json!({"resultType": "task"}))
                .is_empty()
        );
        assert!(!schema.errors(type_name, &json!({})).is_empty());
    }
    let mut params = detailed(
        "working",
        json!({"_meta": {"io.modelcontextprotocol/subscriptionId": "listen"}}),
    );
    params.as_object_mut().unwrap().remove("resultType");
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": params});
    assert_eq!(
        schema.errors("TaskStatusNotification", &notification),
        Vec::<String>::new()
    );
    let mut wrong = notification.clone();
    wrong["method"] = json!("notifications/progress");
    assert!(!schema.errors("TaskStatusNotification", &wrong).is_empty());
    let mut wrong = notification;
    wrong["params"]["status"] = json!("done");
    assert!(!schema.errors("TaskStatusNotification", &wrong).is_empty());
    let response = json!({"jsonrpc": "2.0", "id": 1, "result": task});
    assert_eq!(
        schema.errors("CreateTaskResultResponse", &response),
        Vec::<String>::new()
    );
    assert!(!schema.errors("GetTaskResultResponse", &response).is_empty());
}
