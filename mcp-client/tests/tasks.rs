//! The client side of the Tasks extension against our own server over Streamable HTTP on
//! 127.0.0.1 (2026-07-28, memory hub): `call_tool` follows a task to its result; a question
//! inside the task goes to `on_ask` and back with `tasks/update`; a failed task and a tool
//! error; a tool that only runs as a task; the task handle's `get`, `cancel`, `wait`; and a
//! dropped call cancels its task on the server.

use std::sync::Arc;
use std::time::Duration;

use mcp_client::{
    Answer, Asks, Client, ErrorKind, QuestionKind, Revision, TaskPolling, TaskStatus, ToolCall,
};
use mcp_server::http::{HttpConfig, HttpEndpoint};
use mcp_server::{
    Exchange, Interrupt, NoArgs, Question, Server, TaskSupport, Tasks, Tool, ToolError,
};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// What the test and the gated tool signal each other.
struct Gates {
    started: Semaphore,
    release: Semaphore,
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

async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("timed out")
}

async fn confirm(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex
        .ask(
            "sure",
            Question::elicit_with(
                "Sure?",
                json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
            ),
        )
        .await?;
    Ok(format!(
        "confirmed: {}",
        answer.accepted() && answer.get("ok") == Some(&json!(true))
    ))
}

async fn boom(_: NoArgs) -> String {
    panic!("boom by design")
}

async fn tool_error(_: NoArgs) -> Result<String, ToolError> {
    Err(ToolError::Failed("the tool failed".into()))
}

async fn quick(_: NoArgs) -> &'static str {
    "quick"
}

/// Our server with task-capable tools on 127.0.0.1; returns its URL and the gates.
async fn start() -> (String, Arc<Gates>) {
    let gates = Arc::new(Gates::default());
    let gated = {
        let gates = gates.clone();
        move |_: NoArgs, ex: Exchange| {
            let gates = gates.clone();
            async move {
                gates.started.add_permits(1);
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
    let server = Server::builder("tasks", "1.0")
        .tasks(Tasks::new().poll_interval(Duration::from_millis(20)))
        .tool(Tool::new("gated", gated).task_support(TaskSupport::Optional))
        .tool(Tool::new("confirm", confirm).task_support(TaskSupport::Optional))
        .tool(Tool::new("boom", boom).task_support(TaskSupport::Optional))
        .tool(Tool::new("tool_error", tool_error).task_support(TaskSupport::Required))
        .tool(Tool::new("quick", quick).task_support(TaskSupport::Optional))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let endpoint = HttpEndpoint::new(server, HttpConfig::new());
    tokio::spawn(mcp_server::http::serve_with_shutdown(
        listener,
        endpoint,
        std::future::pending::<()>(),
    ));
    (url, gates)
}

async fn client(url: &str) -> Client {
    Client::builder()
        .revision(Revision::V2026_07_28)
        .tasks(TaskPolling::new())
        .on_ask(Asks::all(), |q| async move {
            match q.kind() {
                QuestionKind::Elicitation => Answer::accept(json!({"ok": true})),
                _ => Answer::decline(),
            }
        })
        .connect_http(url)
        .await
        .unwrap()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn call_tool_follows_a_task_to_its_result() {
    let (url, gates) = start().await;
    let client = client(&url).await;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("gated", json!({})).await }
    });
    within(gates.started.acquire()).await.unwrap().forget();
    gates.release.add_permits(1);
    let result = within(call).await.unwrap().unwrap();
    assert_eq!(text(&result), "released", "{result}");
}

#[tokio::test]
async fn a_question_inside_a_task_goes_to_on_ask() {
    let (url, _gates) = start().await;
    let client = client(&url).await;
    let result = within(client.call_tool("confirm", json!({})))
        .await
        .unwrap();
    assert_eq!(text(&result), "confirmed: true", "{result}");
}

#[tokio::test]
async fn a_failed_task_is_a_task_error_and_a_tool_error_a_result() {
    let (url, _gates) = start().await;
    let client = client(&url).await;
    let error = within(client.call_tool("boom", json!({})))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Task, "{error}");
    assert!(error.rpc().is_some(), "the task's error: {error}");
    // A tool that only runs as a task, ending in a tool error: a result with isError.
    let result = within(client.call_tool("tool_error", json!({})))
        .await
        .unwrap();
    assert_eq!(result["isError"], true, "{result}");
}

#[tokio::test]
async fn without_the_extension_no_task_is_made() {
    let (url, _gates) = start().await;
    let client = Client::builder()
        .revision(Revision::V2026_07_28)
        .connect_http(&url)
        .await
        .unwrap();
    let result = within(client.call_tool("quick", json!({}))).await.unwrap();
    assert_eq!(text(&result), "quick", "{result}");
    assert!(result.get("taskId").is_none(), "{result}");
    // A tool that needs a task refuses this client (-32021, the missing capability).
    let error = within(client.call_tool("tool_error", json!({})))
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(-32021), "{error}");
}

#[tokio::test]
async fn the_handle_reads_cancels_and_waits() {
    let (url, gates) = start().await;
    let client = client(&url).await;
    let ToolCall::Task(mut handle) = within(client.call_tool_as_task("gated", json!({})))
        .await
        .unwrap()
    else {
        panic!("gated runs as a task for a client that declares the extension");
    };
    within(gates.started.acquire()).await.unwrap().forget();
    let seen = within(handle.get()).await.unwrap();
    assert_eq!(seen.status(), TaskStatus::Working);
    let id = handle.id().to_owned();
    // The same task through the client, by id.
    assert_eq!(within(client.get_task(&id)).await.unwrap().id(), id);
    within(handle.cancel()).await.unwrap();
    within(gates.cancelled.acquire()).await.unwrap().forget();
    let error = within(handle.wait()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Task, "{error}");
    assert_eq!(
        within(client.get_task(&id)).await.unwrap().status(),
        TaskStatus::Cancelled
    );
}

#[tokio::test]
async fn dropping_the_call_cancels_its_task() {
    let (url, gates) = start().await;
    // A permit per `tasks/get` the client sends: the call follows its task from then on.
    let polled = Arc::new(Semaphore::new(0));
    let client = Client::builder()
        .revision(Revision::V2026_07_28)
        .tasks(TaskPolling::new())
        .on_message({
            let polled = polled.clone();
            move |seen| {
                if seen.direction() == mcp_client::transport::Direction::Sent
                    && seen.message()["method"] == "tasks/get"
                {
                    polled.add_permits(1);
                }
            }
        })
        .connect_http(&url)
        .await
        .unwrap();
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("gated", json!({})).await }
    });
    within(gates.started.acquire()).await.unwrap().forget();
    within(polled.acquire()).await.unwrap().forget();
    call.abort();
    // The handler sees the cancellation the dropped call sent.
    within(gates.cancelled.acquire()).await.unwrap().forget();
}

/// The 2025 revisions have no result envelope for a task: a client that declares the extension
/// at `initialize` gets a plain result from a tool where tasks are optional, and a tool that
/// needs a task refuses it with the revision's missing-capability error.
#[tokio::test]
async fn no_task_is_made_on_the_2025_revisions() {
    let (url, _gates) = start().await;
    for revision in [
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
    ] {
        let client = Client::builder()
            .revision(revision)
            .tasks(TaskPolling::new())
            .connect_http(&url)
            .await
            .unwrap();
        let result = within(client.call_tool("quick", json!({}))).await.unwrap();
        assert_eq!(text(&result), "quick", "{revision}: {result}");
        assert!(result.get("taskId").is_none(), "{revision}: {result}");
        let error = within(client.call_tool("tool_error", json!({})))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Rpc, "{revision}: {error}");
        assert!(
            error.to_string().contains("io.modelcontextprotocol/tasks")
                || error
                    .rpc()
                    .and_then(|e| e.data.as_ref())
                    .is_some_and(|d| d.to_string().contains("io.modelcontextprotocol/tasks")),
            "{revision}: {error}"
        );
        client.close().await.unwrap();
    }
}
