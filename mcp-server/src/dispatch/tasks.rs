//! The Tasks extension as a layer around a tool call.
//!
//! The layer is entered after the call's arguments are checked ([`TaskLayer::enter`]: does
//! this call run as a task?), puts the task on the call's exchange when the handler starts
//! ([`TaskLayer::binding`]), and decides where the started handler runs
//! ([`TaskLayer::run`]): here, as any call; in the background as a task created up front,
//! the call answered with its `CreateTaskResult`; or here until the handler starts its task
//! itself ([`Exchange::start_task`], a deferred task). The invoke path does the rest.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;

use futures::future::BoxFuture;
use mcp_adapters::{Adapter, CacheHint, Encoded, Failure, ResultContext, ToolResult};
use mcp_wire::jsonrpc::Id;
use mcp_wire::model::CallToolResult;
use serde_json::{Value, json};

use super::invoke::{Invocation, Ran, TaskBinding};
use super::{Done, as_declared, declared_extension, panicked, with_cancel};
use crate::exchange::{CancelHandle, Exchange, Interrupted};
use crate::server::Served;
use crate::task::{TaskError, TaskRecord, TaskRun};
use crate::tool::{Tool, ToolOutput};

/// A tool's run as the Tasks layer takes it: the handler's future, with its panic caught.
type ToolWork = Ran<ToolOutput>;

/// What a task needs to know of its tool to record how it ended.
pub(super) struct TaskTool<'a> {
    pub(super) adapter: Adapter,
    /// The tool's result may carry `structuredContent` on this revision.
    pub(super) structured: bool,
    pub(super) name: &'a str,
}

impl TaskTool<'_> {
    fn owned(&self) -> Ending {
        Ending {
            adapter: self.adapter,
            structured: self.structured,
            name: self.name.to_owned(),
        }
    }
}

/// [`TaskTool`] for a task that outlives the call.
struct Ending {
    adapter: Adapter,
    structured: bool,
    name: String,
}

/// Where a tool call runs.
pub(super) enum TaskLayer {
    /// Not as a task: here, as any call.
    Off,
    /// As a task created up front: in the background, the call answered with the task.
    Created(Box<(TaskRecord, Arc<TaskRun>)>),
    /// Here, until the handler starts its task itself.
    Deferred,
}

/// Where the handler ran.
pub(super) enum Where {
    /// Here: how it went (`None` when it was cancelled).
    Here(Option<ToolWork>),
    /// As a task (or its task could not be created): what the call answers with.
    Task(Done),
}

/// How the handler of a deferred-task tool went.
enum Deferred {
    /// It ended (or was cancelled) without starting its task.
    Ran(Option<ToolWork>),
    /// It started its task: the `CreateTaskResult`.
    Task(Done),
    /// Its task could not be created.
    Failed(Done),
}

impl TaskLayer {
    /// Whether the call runs as a task: when the server offers tasks, the tool supports them
    /// and the request declared the extension (a `CreateTaskResult` needs the result
    /// envelope's `resultType`). A task created up front is created here. Read before the
    /// exchange takes the call's client context.
    pub(super) async fn enter(
        served: &Served,
        inv: &Invocation<'_>,
        tool: &Tool,
    ) -> Result<Self, Done> {
        let Some(engine) = served.settings().tasks.as_ref() else {
            return Ok(Self::Off);
        };
        let support = tool.task_support;
        if support == crate::TaskSupport::Forbidden {
            return Ok(Self::Off);
        }
        let as_task = inv.adapter.features().result_envelope
            && declared_extension(inv.adapter, inv.call, inv.ctx, crate::TASKS_EXTENSION).is_some();
        if !as_task {
            if support == crate::TaskSupport::Required {
                return Err(Done::failure(Failure::missing_capability(
                    json!({"extensions": {crate::TASKS_EXTENSION: {}}}),
                )));
            }
            return Ok(Self::Off);
        }
        if tool.deferred_task {
            return Ok(Self::Deferred);
        }
        // Boxed: a rare path that would otherwise make every call's future larger.
        match Box::pin(engine.create(
            inv.ctx.namespace(),
            inv.ctx.principal().as_deref(),
            inv.cancel.clone(),
        ))
        .await
        {
            Ok(made) => Ok(Self::Created(Box::new(made))),
            Err(err) => Err(Done::failure(task_failure(&err))),
        }
    }

    /// What the call's exchange gets: the task created up front, or the offer to start one.
    pub(super) fn binding(&self) -> TaskBinding {
        match self {
            Self::Off => TaskBinding::default(),
            Self::Created(created) => TaskBinding {
                run: Some(created.1.clone()),
                offered: false,
            },
            Self::Deferred => TaskBinding {
                run: None,
                offered: true,
            },
        }
    }

    /// Runs the started handler where the layer says.
    pub(super) async fn run(
        self,
        served: &Served,
        inv: &Invocation<'_>,
        tool: TaskTool<'_>,
        work: impl Future<Output = ToolWork> + Send + 'static,
        built: Option<&Exchange>,
    ) -> Where {
        match self {
            Self::Off => Where::Here(with_cancel(inv.cancel, work).await),
            Self::Created(created) => {
                let (record, run) = *created;
                spawn_task(tool.owned(), run, work, built.cloned(), inv.cancel.clone());
                // Answered as the extension's result: not projected as a tool result.
                Where::Task(Done::Extension(record.create_result()))
            }
            Self::Deferred => {
                // Boxed: a rare path that would otherwise make every call's future larger.
                let deferred = Box::pin(run_deferred(
                    served,
                    tool.owned(),
                    Box::pin(work),
                    built.cloned(),
                    inv,
                ));
                match deferred.await {
                    Deferred::Ran(run) => Where::Here(run),
                    Deferred::Task(done) | Deferred::Failed(done) => Where::Task(done),
                }
            }
        }
    }
}

/// Runs the handler of a deferred-task tool until it ends (a synchronous call) or calls
/// [`Exchange::start_task`]: then the task is created, the call answered with it, and the
/// handler goes on in the background.
async fn run_deferred(
    served: &Served,
    tool: Ending,
    mut work: BoxFuture<'static, ToolWork>,
    built: Option<Exchange>,
    inv: &Invocation<'_>,
) -> Deferred {
    let first = with_cancel(
        inv.cancel,
        futures::future::poll_fn(|cx| {
            if let Poll::Ready(run) = work.as_mut().poll(cx) {
                return Poll::Ready(Ok(run));
            }
            match built.as_ref().and_then(|ex| ex.lock().promote.take()) {
                Some(go) => Poll::Ready(Err(go)),
                None => Poll::Pending,
            }
        }),
    )
    .await;
    let go = match first {
        None => return Deferred::Ran(None),
        Some(Ok(run)) => return Deferred::Ran(Some(run)),
        Some(Err(go)) => go,
    };
    let Some(engine) = served.settings().tasks.as_ref() else {
        return Deferred::Failed(Done::failure(Failure::internal("tasks are not offered")));
    };
    let (record, run) = match engine
        .create(
            inv.ctx.namespace(),
            inv.ctx.principal().as_deref(),
            inv.cancel.clone(),
        )
        .await
    {
        Ok(made) => made,
        Err(err) => return Deferred::Failed(Done::failure(task_failure(&err))),
    };
    if let Some(ex) = &built {
        ex.lock().task = Some(run.clone());
    }
    let _ = go.send(());
    spawn_task(tool, run, work, built, inv.cancel.clone());
    // Answered as the extension's result: not projected as a tool result.
    Deferred::Task(Done::Extension(record.create_result()))
}

/// The failure a task that could not be created answers the call with.
fn task_failure(err: &TaskError) -> Failure {
    match err {
        TaskError::Limit(message) => Failure::unavailable(message.clone()),
        other => Failure::internal(other.to_string()),
    }
}

/// Runs a tool's handler as the task `run`, in the background on this worker, and records how
/// it ends.
fn spawn_task(
    tool: Ending,
    run: Arc<TaskRun>,
    work: impl Future<Output = ToolWork> + Send + 'static,
    ex: Option<Exchange>,
    cancel: CancelHandle,
) {
    let ending = async move {
        let out = with_cancel(&cancel, work).await;
        let interrupt = ex.as_ref().and_then(|ex| ex.lock().interrupt.take());
        task_ending(tool.adapter, out, interrupt, tool.structured, &tool.name)
    };
    let span = task_span(&run);
    tokio::spawn(tracing::Instrument::instrument(run.drive(ending), span));
}

/// The span a task's handler runs in, after its call's span has closed: in the call's trace
/// (its parent there, with the `otel` feature), without keeping the call's span open.
fn task_span(run: &TaskRun) -> tracing::Span {
    use crate::exchange::TaskLink as _;
    let span = tracing::debug_span!(
        target: "mcp_server::request",
        parent: None,
        "mcp.task",
        otel.name = "task",
        mcp.task.id = run.id(),
    );
    if !span.is_disabled() {
        #[cfg(feature = "otel")]
        crate::otel::adopt(&span, &tracing::Span::current());
        #[cfg(not(feature = "otel"))]
        span.follows_from(tracing::Span::current());
    }
    span
}

/// How a task's handler ended, as its record keeps it: the tool result the call would have
/// returned (a tool error included) or the JSON-RPC error.
fn task_ending(
    adapter: Adapter,
    out: Option<ToolWork>,
    interrupt: Option<Interrupted>,
    structured: bool,
    name: &str,
) -> crate::task::Ending {
    use crate::task::Ending;
    let failed = |failure: &Failure| {
        let encoded = adapter.encode_failure(None, failure).to_value();
        Ending::Failed(encoded.get("error").cloned().unwrap_or(Value::Null))
    };
    let context = ResultContext {
        server_info: None,
        server_info_projected: true,
        cache: CacheHint::NONE,
    };
    let completed = |encoded: Encoded| {
        let value = encoded.to_value();
        match value.get("result") {
            Some(result) => Ending::Completed(result.clone()),
            None => Ending::Failed(value.get("error").cloned().unwrap_or(Value::Null)),
        }
    };
    let tool_result = |result: ToolResult| {
        completed(adapter.encode_tool_result(
            Id::Number(0),
            as_declared(result, structured),
            &context,
        ))
    };
    match (interrupt, out) {
        (Some(Interrupted::Cancelled), _) | (_, None) => Ending::Cancelled,
        (Some(Interrupted::Failed(failure)), _) => failed(&failure),
        (Some(Interrupted::NeedsInput), _) => failed(&Failure::internal(
            "the handler stopped for input outside of the task",
        )),
        (None, Some(Ran::Done(ToolOutput(result)))) => tool_result(result),
        (None, Some(Ran::BadArguments(message))) => tool_result(crate::content::tool_result(
            CallToolResult::error(format!("invalid arguments:\n{message}")),
        )),
        (None, Some(Ran::Panicked(message))) => {
            failed(&panicked(format_args!("tool {name:?}"), &message))
        }
    }
}
