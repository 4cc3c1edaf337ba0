//! rmcp's Streamable HTTP server with the Tasks extension's fixtures (the tools our
//! conformance target serves for the suite's `tasks-*` scenarios), on rmcp's own `TaskManager`:
//! `greet` (never a task), `slow_compute` (a task when the client declares the extension),
//! `failing_job` (only as a task; a tool error), `protocol_error_job` (a task that fails),
//! `confirm_delete` (asks for a confirmation inside the task), `multi_input` (asks two questions
//! at once) and `test_tool_with_task` (asks on the call itself, then runs as a task).
//!
//! Prints `listening on http://127.0.0.1:PORT` once it listens; serves `/mcp` until killed.

use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::{rt::TokioIo, service::TowerToHyperService};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ContentBlock, CreateTaskResult, GetTaskParams, GetTaskResult, InputRequest, InputRequests,
    InputRequiredResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio::net::TcpListener;

#[derive(Clone)]
struct Fixtures {
    tasks: Arc<TaskManager>,
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Tool {
    serde_json::from_value(json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": required},
    }))
    .expect("a well-formed tool")
}

fn elicitation(message: &str, properties: Value, required: &[&str]) -> InputRequest {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": properties, "required": required},
        },
    }))
    .expect("a well-formed elicitation")
}

/// The `content` field of an accepted elicitation answer.
fn field(answer: &Value, name: &str) -> Option<Value> {
    (answer["action"] == "accept").then(|| answer["content"][name].clone())
}

fn argument(request: &CallToolRequestParams, name: &str) -> Option<Value> {
    request.arguments.as_ref().and_then(|a| a.get(name)).cloned()
}

impl Fixtures {
    fn spawn<F>(&self, work: impl FnOnce(TaskContext) -> F) -> CallToolResponse
    where
        F: Future<Output = Result<CallToolResult, TaskExit>> + Send + 'static,
    {
        let options = TaskOptions::new().with_poll_interval_ms(100);
        let task = self.tasks.spawn(options, |ctx| Box::pin(work(ctx)));
        CallToolResponse::Task(CreateTaskResult::new(task))
    }
}

fn missing_tasks() -> McpError {
    McpError::missing_required_client_capability(ClientCapabilities::builder().enable_tasks().build())
}

impl ServerHandler for Fixtures {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let name = json!({"name": {"type": "string"}});
        Ok(ListToolsResult::with_all_items(vec![
            tool("greet", "Greets by name (never a task).", name.clone(), &["name"]),
            tool(
                "slow_compute",
                "Sleeps `seconds`, then reports; a task when it can be.",
                json!({"seconds": {"type": "number"}}),
                &["seconds"],
            ),
            tool("failing_job", "Always ends with a tool error; only as a task.", json!({}), &[]),
            tool("protocol_error_job", "Always fails; a task when it can be.", json!({}), &[]),
            tool(
                "confirm_delete",
                "Asks for confirmation before it pretends to delete a file.",
                json!({"filename": {"type": "string"}}),
                &["filename"],
            ),
            tool("multi_input", "Asks two questions at once.", json!({}), &[]),
            tool(
                "test_tool_with_task",
                "Asks for a name on the call itself, then runs as a task.",
                json!({}),
                &[],
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tasks = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        match request.name.as_ref() {
            "greet" => {
                let name = argument(&request, "name").unwrap_or(json!("world"));
                Ok(CallToolResponse::Complete(text(format!(
                    "Hello, {}!",
                    name.as_str().unwrap_or("world")
                ))))
            }
            "slow_compute" => {
                let seconds = argument(&request, "seconds")
                    .and_then(|s| s.as_f64())
                    .unwrap_or(1.0)
                    .clamp(0.0, 600.0);
                let done = format!("Computed for {seconds} seconds");
                if !tasks {
                    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                    return Ok(CallToolResponse::Complete(text(done)));
                }
                Ok(self.spawn(move |ctx| async move {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs_f64(seconds)) => Ok(text(done)),
                        () = ctx.cancelled() => Err(TaskExit::Cancelled),
                    }
                }))
            }
            "failing_job" => {
                if !tasks {
                    return Err(missing_tasks());
                }
                Ok(self.spawn(|_ctx| async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Ok(CallToolResult::error(vec![ContentBlock::text(
                        "the job failed (by design)",
                    )]))
                }))
            }
            "protocol_error_job" => {
                if !tasks {
                    return Err(McpError::internal_error("the job failed (by design)", None));
                }
                Ok(self.spawn(|_ctx| async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Err(TaskExit::Error(McpError::internal_error(
                        "the job failed (by design)",
                        None,
                    )))
                }))
            }
            "confirm_delete" if tasks => {
                let filename = argument(&request, "filename")
                    .and_then(|f| f.as_str().map(str::to_owned))
                    .unwrap_or_default();
                Ok(self.spawn(move |ctx| async move {
                    let question = elicitation(
                        &format!("Delete {filename}?"),
                        json!({"confirm": {"type": "boolean"}}),
                        &["confirm"],
                    );
                    let answer = ctx.request_input("confirm_delete", question).await?;
                    Ok(text(if field(&answer, "confirm") == Some(json!(true)) {
                        format!("Deleted {filename}")
                    } else {
                        format!("Kept {filename}")
                    }))
                }))
            }
            "multi_input" if tasks => Ok(self.spawn(|ctx| async move {
                let (name, confirm) = tokio::join!(
                    ctx.request_input(
                        "name",
                        elicitation(
                            "What is your name?",
                            json!({"name": {"type": "string"}}),
                            &["name"]
                        ),
                    ),
                    ctx.request_input(
                        "confirm",
                        elicitation(
                            "Proceed?",
                            json!({"confirm": {"type": "boolean"}}),
                            &["confirm"]
                        ),
                    ),
                );
                let (name, confirm) = (name?, confirm?);
                Ok(text(format!(
                    "name: {}, confirmed: {}",
                    field(&name, "name")
                        .and_then(|n| n.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    confirm["action"] == "accept"
                )))
            })),
            "confirm_delete" | "multi_input" => Err(missing_tasks()),
            "test_tool_with_task" => {
                if !tasks {
                    return Err(missing_tasks());
                }
                let answered = request
                    .input_responses
                    .as_ref()
                    .and_then(|r| r.get("user_name"))
                    .cloned();
                let Some(answer) = answered else {
                    let mut asked = InputRequests::new();
                    asked.insert(
                        "user_name".into(),
                        elicitation(
                            "What is your name?",
                            json!({"name": {"type": "string"}}),
                            &["name"],
                        ),
                    );
                    return Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
                        Some(asked),
                        None,
                    )));
                };
                let name = field(&answer, "name")
                    .and_then(|n| n.as_str().map(str::to_owned))
                    .unwrap_or_default();
                Ok(self.spawn(move |_ctx| async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Ok(text(format!("Hello, {name}! (from a task)")))
                }))
            }
            other => Err(McpError::invalid_params(format!("no tool {other:?}"), None)),
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.tasks.get_task(&request.task_id).map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel_task(&request.task_id)
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    println!("listening on http://{}", listener.local_addr()?);
    let tasks = Arc::new(TaskManager::new());
    let config = StreamableHttpServerConfig::default();
    let service = StreamableHttpService::new(
        move || Ok(Fixtures { tasks: tasks.clone() }),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let service = TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
