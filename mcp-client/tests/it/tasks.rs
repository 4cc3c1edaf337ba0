//! The client side of the Tasks extension against our own server over Streamable HTTP on
//! 127.0.0.1 (2026-07-28, memory hub): `call_tool` follows a task to its result; a question
//! inside the task goes to `on_ask` and back with `tasks/update`; a failed task and a tool
//! error; a tool that only runs as a task; the task handle's `get`, `cancel`, `wait`; a
//! dropped call cancels its task on the server; and the bounds on following a task: the
//! questions answered per task ([`TaskPolling::max_questions`]) and the task's `ttlMs`
//! (against a hand-written server that keeps a task working past it).

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// The arguments of `curious`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct CuriousArgs {
    /// How many questions to ask; without it, a fresh one for ever.
    count: Option<u32>,
}

/// A tool asking question after question, each under a fresh key (`q0`, `q1`, ...): `count`
/// of them, or for ever (a hostile server). Signals `cancelled` when its task is cancelled.
fn curious(
    gates: Arc<Gates>,
) -> impl Fn(
    CuriousArgs,
    Exchange,
) -> std::pin::Pin<Box<dyn Future<Output = Result<String, ToolError>> + Send>>
+ Clone
+ Send
+ Sync
+ 'static {
    move |args: CuriousArgs, ex: Exchange| {
        let gates = gates.clone();
        Box::pin(async move {
            let mut asked = 0u32;
            while args.count.is_none_or(|count| asked < count) {
                let question = Question::elicit_with(
                    format!("Question {asked}?"),
                    json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
                );
                let key = format!("q{asked}");
                let answer = tokio::select! {
                    answer = ex.ask(&key, question) => answer,
                    () = ex.cancelled() => Err(Interrupt::Cancelled),
                };
                // The ask may end with the cancellation as well as `cancelled()`.
                if ex.is_cancelled() {
                    gates.cancelled.add_permits(1);
                    return Err(ToolError::from(Interrupt::Cancelled));
                }
                answer?;
                asked += 1;
            }
            Ok(format!("asked {asked}"))
        })
    }
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
        .tool(Tool::new("curious", curious(gates.clone())).task_support(TaskSupport::Required))
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

/// `call_tool_as_task_read` reads a result given at once into the caller's type (here from
/// the body's bytes: our server's 2026-07-28 results carry `_meta`, which no longer sends them
/// through a `Value`), gives a task as a handle whose `wait_as` reads the task's result, and
/// `call_tool_as` reads both the same way.
#[tokio::test]
async fn a_typed_call_reads_a_result_or_gives_its_task() {
    use mcp_wire::model::{CallToolResult, ContentBlock};
    let text_of = |result: &CallToolResult| match result.content.first() {
        Some(ContentBlock::Text(text)) => text.text.clone(),
        other => panic!("not one text block: {other:?}"),
    };
    let (url, gates) = start().await;
    let client = client(&url).await;
    // Without the extension the server answers at once.
    let plain = Client::builder()
        .revision(Revision::V2026_07_28)
        .connect_http(&url)
        .await
        .unwrap();
    let no_args = json!({});
    let ToolCall::Done(quick) = within(plain.call_tool_as_task_read::<CallToolResult>(
        "quick",
        &no_args,
        mcp_client::CallOptions::new(),
    ))
    .await
    .unwrap() else {
        panic!("quick answers at once");
    };
    assert_eq!(text_of(&quick), "quick");
    assert!(
        quick.meta.is_some(),
        "the result's `_meta` is read too: {quick:?}"
    );
    // With it, `quick` runs as a task, which `call_tool_as` follows to the same result.
    let quick_again: CallToolResult = within(client.call_tool_as("quick", &no_args))
        .await
        .unwrap();
    assert_eq!(quick_again.content, quick.content);

    let ToolCall::Task(handle) = within(client.call_tool_as_task_read::<CallToolResult>(
        "gated",
        &no_args,
        mcp_client::CallOptions::new(),
    ))
    .await
    .unwrap() else {
        panic!("gated runs as a task for a client that declares the extension");
    };
    within(gates.started.acquire()).await.unwrap().forget();
    gates.release.add_permits(1);
    let released = within(handle.wait_as::<CallToolResult>()).await.unwrap();
    assert_eq!(text_of(&released), "released");
    // A result that does not fit the type is a protocol error.
    let error = within(plain.call_tool_as_task_read::<Vec<u8>>(
        "quick",
        &no_args,
        mcp_client::CallOptions::new(),
    ))
    .await
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Protocol, "{error}");
    let follow = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .call_tool_as::<CallToolResult>("gated", json!({}))
                .await
        }
    });
    within(gates.started.acquire()).await.unwrap().forget();
    gates.release.add_permits(1);
    assert_eq!(text_of(&within(follow).await.unwrap().unwrap()), "released");
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

/// A client answering every question, counting the questions it was asked.
async fn counting_client(url: &str, polling: TaskPolling) -> (Client, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let client = Client::builder()
        .revision(Revision::V2026_07_28)
        .tasks(polling)
        .on_ask(Asks::all(), {
            let asked = asked.clone();
            move |_| {
                asked.fetch_add(1, Ordering::SeqCst);
                async move { Answer::accept(json!({"ok": true})) }
            }
        })
        .connect_http(url)
        .await
        .unwrap();
    (client, asked)
}

/// A task may ask up to `max_questions` questions; one more and the client stops following it
/// with a task error naming the bound, without asking `on_ask`, and cancels it on the server.
#[tokio::test]
async fn a_task_asking_past_max_questions_is_given_up_and_cancelled() {
    let (url, gates) = start().await;
    let (client, asked) = counting_client(&url, TaskPolling::new().max_questions(3)).await;
    // At the limit: three questions are answered and the task completes.
    let result = within(client.call_tool("curious", json!({"count": 3})))
        .await
        .unwrap();
    assert_eq!(text(&result), "asked 3", "{result}");
    assert_eq!(asked.swap(0, Ordering::SeqCst), 3);
    // Past it: a server inventing a fresh key each time gets three answers, then a cancel.
    let ToolCall::Task(handle) = within(client.call_tool_as_task("curious", json!({})))
        .await
        .unwrap()
    else {
        panic!("curious runs only as a task");
    };
    let id = handle.id().to_owned();
    let error = within(handle.wait()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Task, "{error}");
    let said = error.to_string();
    assert!(
        said.contains("max_questions") && said.contains('3'),
        "{said}"
    );
    assert_eq!(asked.load(Ordering::SeqCst), 3, "no answer past the bound");
    // The cancel was sent before the error was returned; the handler sees it.
    assert_eq!(
        within(client.get_task(&id)).await.unwrap().status(),
        TaskStatus::Cancelled
    );
    within(gates.cancelled.acquire()).await.unwrap().forget();
    // `call_tool` following the same kind of task stops the same way.
    let error = within(client.call_tool("curious", json!({})))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Task, "{error}");
    assert_eq!(asked.load(Ordering::SeqCst), 6);
    within(gates.cancelled.acquire()).await.unwrap().forget();
}

/// What the hand-written server saw.
struct Stubborn {
    polls: AtomicUsize,
    cancels: Semaphore,
}

impl Default for Stubborn {
    fn default() -> Self {
        Self {
            polls: AtomicUsize::new(0),
            cancels: Semaphore::new(0),
        }
    }
}

/// A hand-written 2026-07-28 server on 127.0.0.1 whose every `tools/call` is a task with a
/// 100 ms ttl that stays `working` for ever, however long past its ttl it is polled.
async fn start_stubborn() -> (String, Arc<Stubborn>) {
    use http_body_util::{BodyExt, Full};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(Stubborn::default());
    let serving = seen.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let seen = serving.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request: http::Request<_>| {
                    let seen = seen.clone();
                    async move {
                        let body: hyper::body::Incoming = request.into_body();
                        let body = body
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let task = json!({"taskId": "stubborn", "status": "working", "ttlMs": 100, "pollIntervalMs": 20});
                        let result = match message["method"].as_str() {
                            Some("server/discover") => {
                                json!({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}, "serverInfo": {"name": "stubborn", "version": "1"}})
                            }
                            Some("tools/call") => {
                                let mut task = task;
                                task["resultType"] = json!("task");
                                task
                            }
                            Some("tasks/get") => {
                                seen.polls.fetch_add(1, Ordering::SeqCst);
                                let mut task = task;
                                task["resultType"] = json!("complete");
                                task
                            }
                            Some("tasks/cancel") => {
                                seen.cancels.add_permits(1);
                                json!({"resultType": "complete"})
                            }
                            _ => Value::Null,
                        };
                        let response = if message.get("id").is_none() {
                            http::Response::builder()
                                .status(202)
                                .body(Full::new(bytes::Bytes::new()))
                        } else {
                            let reply =
                                json!({"jsonrpc": "2.0", "id": message["id"], "result": result});
                            http::Response::builder()
                                .header("content-type", "application/json")
                                .body(Full::new(bytes::Bytes::from(reply.to_string())))
                        };
                        Ok::<_, Infallible>(response.unwrap())
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(socket), service)
                    .await;
            });
        }
    });
    (url, seen)
}

/// A task still `working` past its `ttlMs` (plus the grace) is no longer followed: the client
/// stops with a task error naming the ttl, long before `max_wait`, and cancels it.
#[tokio::test]
async fn a_task_outliving_its_ttl_is_given_up_and_cancelled() {
    let (url, seen) = start_stubborn().await;
    let client = Client::builder()
        .revision(Revision::V2026_07_28)
        .tasks(TaskPolling::new().max_wait(Duration::from_secs(3600)))
        .connect_http(&url)
        .await
        .unwrap();
    let error = within(client.call_tool("anything", json!({})))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Task, "{error}");
    let said = error.to_string();
    assert!(said.contains("ttl") && said.contains("100 ms"), "{said}");
    assert!(
        seen.polls.load(Ordering::SeqCst) >= 1,
        "the task was followed"
    );
    // The cancel went out before the error came back.
    assert!(seen.cancels.try_acquire().is_ok(), "tasks/cancel was sent");
}
