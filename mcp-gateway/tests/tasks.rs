//! The Tasks extension through the gateway, on real sockets on 127.0.0.1: an upstream (our
//! server, 2026-07-28) that answers tool calls with tasks, a gateway whose client declares the
//! extension, and downstream clients with and without it.
//!
//! A downstream client that declares the extension gets a task of the gateway's whenever the
//! upstream answers with one: it reads the upstream's result, answers the upstream's questions
//! (two at once, as the upstream asks them), sees the upstream's protocol error as the task's
//! `failed` error, and its `tasks/cancel` cancels the upstream's task. A 2026-07-28 client
//! without it is refused a tool that needs a task with the upstream's `-32021`, and served a
//! tool that may run either way synchronously; a client on a revision without tasks
//! (2025-11-25) gets the result of a task the gateway followed for it.

mod support;

use support::serve_mcp;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_client::task::{TaskStatus, ToolCall};
use mcp_client::{Answer, Asks, Client, ErrorKind, Revision, TaskPolling};
use mcp_gateway::{Gateway, QuestionRelay};
use mcp_server::{Exchange, Interrupt, NoArgs, Question, Server, TaskSupport, Tool, ToolError};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// A bound on each step (not a synchronisation).
const STEP: Duration = Duration::from_secs(20);
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// What the test and the upstream's gated tool signal each other.
struct Gates {
    /// A permit lets one `gated` call finish.
    release: Semaphore,
    /// A permit per `gated` call that saw its cancellation.
    cancelled: Semaphore,
}

impl Default for Gates {
    fn default() -> Self {
        Self {
            release: Semaphore::new(0),
            cancelled: Semaphore::new(0),
        }
    }
}

fn confirm(message: &str) -> Question {
    Question::elicit_with(
        message,
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
    )
}

async fn two_questions(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let (a, b) = tokio::join!(
        ex.ask("first", confirm("First?")),
        ex.ask("second", confirm("Second?"))
    );
    Ok(format!("{} {}", a?.accepted(), b?.accepted()))
}

async fn refused(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    Err(ex
        .fail(-32602, "not these arguments", Some(json!({"field": "x"})))
        .into())
}

async fn needs_task(_: NoArgs) -> &'static str {
    "done as a task"
}

/// The upstream, a gateway in front of it, and the gateway's `/mcp` URL.
async fn gateway(gates: &Arc<Gates>) -> (Gateway, String) {
    let gated = {
        let gates = gates.clone();
        move |_: NoArgs, ex: Exchange| {
            let gates = gates.clone();
            async move {
                tokio::select! {
                    permit = gates.release.acquire() => {
                        permit.expect("open").forget();
                        Ok("released".to_owned())
                    }
                    () = ex.cancelled() => {
                        gates.cancelled.add_permits(1);
                        Err(ToolError::from(Interrupt::Cancelled))
                    }
                }
            }
        }
    };
    let upstream = Server::builder("upstream", "1.0")
        .tool(Tool::new("gated", gated).task_support(TaskSupport::Optional))
        .tool(Tool::new("two_questions", two_questions).task_support(TaskSupport::Optional))
        .tool(Tool::new("refused", refused).task_support(TaskSupport::Optional))
        .tool(Tool::new("needs_task", needs_task).task_support(TaskSupport::Required))
        .build()
        .expect("the upstream builds");
    let upstream = serve_mcp(upstream).await;
    let relay = QuestionRelay::new();
    let polling = TaskPolling::new()
        .interval_bounds(Duration::from_millis(10), Duration::from_millis(50))
        .answer_together(true);
    let client = relay
        .install(
            Client::builder()
                .revision(Revision::V2026_07_28)
                .timeout(STEP)
                .tasks(polling),
        )
        .connect_http(&upstream)
        .await
        .expect("the gateway reaches the upstream");
    let gateway = Gateway::builder()
        .question_relay(relay)
        .start(client)
        .await
        .expect("the gateway starts");
    let url = serve_mcp(gateway.server().clone()).await;
    (gateway, url)
}

/// A downstream client on `revision`, declaring the Tasks extension when `tasks`, that
/// accepts every question (counting them).
async fn downstream(url: &str, revision: Revision, tasks: bool) -> (Client, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let mut builder = Client::builder().revision(revision).timeout(STEP).on_ask(
        Asks::none().elicitation(),
        move |_question| {
            counter.fetch_add(1, Ordering::Relaxed);
            async { Answer::accept(json!({"ok": true})) }
        },
    );
    if tasks {
        builder = builder.tasks(
            TaskPolling::new()
                .interval_bounds(Duration::from_millis(10), Duration::from_millis(50)),
        );
    }
    let client = builder
        .connect_http(url)
        .await
        .expect("the downstream client reaches the gateway");
    (client, asked)
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

async fn task_of(client: &Client, tool: &str) -> mcp_client::TaskHandle {
    match tokio::time::timeout(STEP, client.call_tool_as_task(tool, json!({})))
        .await
        .expect("in time")
        .expect("the call is accepted")
    {
        ToolCall::Task(task) => task,
        other => panic!("{tool}: a task was expected, got {other:?}"),
    }
}

#[tokio::test]
async fn an_upstream_task_is_the_downstream_clients_task() {
    let gates = Arc::new(Gates::default());
    let (_gateway, url) = gateway(&gates).await;
    let (client, asked) = downstream(&url, Revision::V2026_07_28, true).await;

    // The gateway's task, while the upstream's runs; its result is the upstream's.
    let task = task_of(&client, "gated").await;
    assert_eq!(task.last().status(), TaskStatus::Working);
    gates.release.add_permits(1);
    let result = tokio::time::timeout(STEP, task.wait())
        .await
        .expect("in time");
    assert_eq!(text(&result.expect("completed")), "released");

    // Two questions the upstream's task asks at once are the downstream task's two.
    let task = task_of(&client, "two_questions").await;
    let result = tokio::time::timeout(STEP, task.wait())
        .await
        .expect("in time");
    assert_eq!(text(&result.expect("completed")), "true true");
    assert_eq!(asked.load(Ordering::Relaxed), 2);

    // The upstream's protocol error is the downstream task's error.
    let task = task_of(&client, "refused").await;
    let error = tokio::time::timeout(STEP, task.wait())
        .await
        .expect("in time")
        .expect_err("the task failed");
    assert_eq!(error.kind(), ErrorKind::Task);
    let rpc = error.rpc().expect("the task's error");
    assert_eq!(rpc.code, -32602);
    assert_eq!(rpc.message, "not these arguments");
    assert_eq!(rpc.data, Some(json!({"field": "x"})));
}

#[tokio::test]
async fn cancelling_the_downstream_task_cancels_the_upstream_one() {
    let gates = Arc::new(Gates::default());
    let (_gateway, url) = gateway(&gates).await;
    let (client, _) = downstream(&url, Revision::V2026_07_28, true).await;
    let mut task = task_of(&client, "gated").await;
    task.cancel().await.expect("tasks/cancel is acknowledged");
    let permit = tokio::time::timeout(STEP, gates.cancelled.acquire())
        .await
        .expect("the upstream's handler was cancelled in time");
    permit.expect("open").forget();
    let task = task.get().await.expect("tasks/get");
    assert_eq!(task.status(), TaskStatus::Cancelled);
}

#[tokio::test]
async fn a_client_without_tasks_is_refused_or_served_as_the_upstream_would() {
    let gates = Arc::new(Gates::default());
    let (_gateway, url) = gateway(&gates).await;
    let (client, _) = downstream(&url, Revision::V2026_07_28, false).await;
    // A tool that needs a task: refused with the upstream's error and its requirement.
    let error = tokio::time::timeout(STEP, client.call_tool("needs_task", json!({})))
        .await
        .expect("in time")
        .expect_err("refused");
    assert_eq!(error.code(), Some(-32021));
    let required = &error.data().expect("data")["requiredCapabilities"];
    assert!(required["extensions"].get(TASKS).is_some(), "{required}");
    // A tool that may run either way: at once, without a task.
    gates.release.add_permits(1);
    let result = tokio::time::timeout(STEP, client.call_tool("gated", json!({})))
        .await
        .expect("in time")
        .expect("served");
    assert_eq!(text(&result), "released");
    assert!(result.get("taskId").is_none(), "{result}");
}

#[tokio::test]
async fn a_revision_without_tasks_gets_the_result_of_the_task_the_gateway_followed() {
    let gates = Arc::new(Gates::default());
    let (_gateway, url) = gateway(&gates).await;
    let (client, _) = downstream(&url, Revision::V2025_11_25, false).await;
    let result = tokio::time::timeout(STEP, client.call_tool("needs_task", json!({})))
        .await
        .expect("in time")
        .expect("the gateway followed the upstream's task");
    assert_eq!(text(&result), "done as a task");
}
