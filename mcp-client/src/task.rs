//! The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the client side.
//!
//! A client built with [`ClientBuilder::tasks`](crate::ClientBuilder::tasks) declares the
//! extension; a server may then answer a `tools/call` with a task instead of its result.
//! [`Client::call_tool`] follows the task to its end: it polls `tasks/get` at the interval the
//! server suggests (clamped to [`TaskPolling`]'s bounds), answers the task's `inputRequests`
//! through the same [`ClientBuilder::on_ask`](crate::ClientBuilder::on_ask) callback as every
//! other question (with `tasks/update`), and returns the tool's result as a call without a task
//! would. A task that `failed` or was `cancelled` is an [`ErrorKind::Task`] error (with the
//! task's JSON-RPC error in [`Error::rpc`] when it failed). When the caller drops the call's
//! future while it follows the task, the client sends `tasks/cancel` (a call dropped before
//! the server's `CreateTaskResult` arrived knows no task to cancel: the task runs to its end or
//! its ttl).
//!
//! Following a task is bounded: at most [`TaskPolling::max_wait`] of waiting, at most
//! [`TaskPolling::max_questions`] questions answered (a server inventing fresh
//! `inputRequests` keys gets no more answers), and no longer than the task's `ttlMs` (plus
//! [`TaskPolling::TTL_GRACE`]) when the server gave one. Past the question or ttl bound the
//! client stops with an [`ErrorKind::Task`] error naming the bound and sends `tasks/cancel`
//! (unless [`TaskPolling::cancel_on_drop`] is off).
//!
//! [`Client::call_tool_as_task`] gives the task itself: a [`TaskHandle`] to read, answer, wait
//! for or cancel. Every `tasks/*` request carries `Mcp-Name: <taskId>` on 2026-07-28, so a
//! deployment of many instances can route it.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::ask::Question;
use crate::{CallOptions, Client, Error, ErrorKind, ErrorObject};

/// The extension's identifier, as declared in `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

pub use crate::polling::TaskPolling;

/// Where a task is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for answers to its `inputRequests`.
    InputRequired,
    /// Done: the result is there.
    Completed,
    /// Ended with an error (not a tool error: those complete).
    Failed,
    /// Cancelled.
    Cancelled,
    /// A status this client does not know.
    Other(String),
}

impl TaskStatus {
    fn parse(status: &str) -> Self {
        match status {
            "working" => Self::Working,
            "input_required" => Self::InputRequired,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            other => Self::Other(other.to_owned()),
        }
    }

    /// Whether the task ended (completed, failed or cancelled).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// A task as the server last described it (a `CreateTaskResult` or a `tasks/get` result).
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    raw: Value,
}

impl Task {
    fn from_value(raw: Value) -> Result<Self, Error> {
        if raw.get("taskId").and_then(Value::as_str).is_none()
            || raw.get("status").and_then(Value::as_str).is_none()
        {
            return Err(Error::protocol("a task without taskId or status"));
        }
        Ok(Self { raw })
    }

    /// The task's id.
    pub fn id(&self) -> &str {
        self.raw["taskId"].as_str().unwrap_or_default()
    }

    /// Where the task is.
    pub fn status(&self) -> TaskStatus {
        TaskStatus::parse(self.raw["status"].as_str().unwrap_or_default())
    }

    /// The server's words on the status, if any.
    pub fn status_message(&self) -> Option<&str> {
        self.raw.get("statusMessage").and_then(Value::as_str)
    }

    /// The polling interval the server suggests.
    pub fn poll_interval(&self) -> Option<Duration> {
        self.raw
            .get("pollIntervalMs")
            .and_then(Value::as_u64)
            .map(Duration::from_millis)
    }

    /// How long the server keeps the task after it was created.
    pub fn ttl(&self) -> Option<Duration> {
        self.raw
            .get("ttlMs")
            .and_then(Value::as_u64)
            .map(Duration::from_millis)
    }

    /// The tool's result of a completed task.
    pub fn result(&self) -> Option<&Value> {
        self.raw.get("result")
    }

    /// The error of a failed task.
    pub fn error(&self) -> Option<&Value> {
        self.raw.get("error")
    }

    /// The questions of a task waiting for input, by key.
    pub fn input_requests(&self) -> Option<&Map<String, Value>> {
        self.raw.get("inputRequests").and_then(Value::as_object)
    }

    /// The whole object the server sent.
    pub fn raw(&self) -> &Value {
        &self.raw
    }
}

/// What [`Client::call_tool_as_task`] got: the result at once, or a task. The result is a
/// [`Value`], or the type [`Client::call_tool_as_task_read`] reads it into.
#[derive(Debug)]
#[non_exhaustive]
pub enum ToolCall<T = Value> {
    /// The server answered without a task.
    Done(T),
    /// The server runs the call as a task.
    Task(TaskHandle),
}

/// A task the server runs for a call: read it, answer it, wait for it, cancel it. Dropped
/// before the task ended, it sends `tasks/cancel` (unless
/// [`TaskPolling::cancel_on_drop`] is off).
#[derive(Debug)]
pub struct TaskHandle {
    client: Client,
    task: Task,
    polling: TaskPolling,
    /// When the client received the `CreateTaskResult`: the task's ttl counts from here.
    since: tokio::time::Instant,
    /// The task ended or was cancelled through the handle: nothing to do when dropped.
    settled: bool,
}

impl TaskHandle {
    /// The task's id.
    pub fn id(&self) -> &str {
        self.task.id()
    }

    /// The task as last seen (at creation, or by the last [`TaskHandle::get`]).
    pub fn last(&self) -> &Task {
        &self.task
    }

    /// `tasks/get`: where the task is now.
    pub async fn get(&mut self) -> Result<&Task, Error> {
        let task = self.client.get_task(self.task.id()).await?;
        if task.status().is_terminal() {
            self.settled = true;
        }
        self.task = task;
        Ok(&self.task)
    }

    /// `tasks/update`: answers to the task's `inputRequests`, by key.
    pub async fn update(&self, input_responses: Map<String, Value>) -> Result<(), Error> {
        self.client
            .request(
                "tasks/update",
                Some(json!({"taskId": self.task.id(), "inputResponses": input_responses})),
            )
            .await
            .map(|_| ())
    }

    /// `tasks/cancel`: asks the server to stop the task (cooperative: it may still complete).
    pub async fn cancel(&mut self) -> Result<(), Error> {
        self.settled = true;
        self.client.cancel_task(self.task.id()).await
    }

    /// Follows the task to its end (see the [module docs](self)) and returns the tool's result.
    ///
    /// Bounded by [`TaskPolling::max_wait`] ([`ErrorKind::Timeout`]), by
    /// [`TaskPolling::max_questions`] and by the task's `ttlMs` plus
    /// [`TaskPolling::TTL_GRACE`] (both [`ErrorKind::Task`], after `tasks/cancel`).
    pub async fn wait(self) -> Result<Value, Error> {
        self.wait_with(|_| {}).await
    }

    /// [`TaskHandle::wait`], with the tool's result read into `T` (for instance
    /// [`mcp_wire::model::CallToolResult`]); a result that does not fit `T` is an
    /// [`ErrorKind::Protocol`] error.
    pub async fn wait_as<T: serde::de::DeserializeOwned>(self) -> Result<T, Error> {
        let result = self.wait().await?;
        serde_json::from_value(result)
            .map_err(|e| Error::protocol(format!("tools/call result: {e}")))
    }

    /// [`TaskHandle::wait`], showing `seen` the task each time the client reads it (to show
    /// its status and status message while it runs).
    pub async fn wait_with(mut self, mut seen: impl FnMut(&Task) + Send) -> Result<Value, Error> {
        seen(&self.task);
        let deadline = far(tokio::time::Instant::now(), self.polling.max_wait);
        // Questions already answered, by key: a server that lists them again until it has
        // read the update gets no second answer. At most `max_questions` keys.
        let mut answered: HashSet<String> = HashSet::new();
        loop {
            match self.task.status() {
                TaskStatus::Completed => {
                    self.settled = true;
                    return self
                        .task
                        .result()
                        .cloned()
                        .ok_or_else(|| Error::protocol("a completed task without a result"));
                }
                TaskStatus::Failed => {
                    self.settled = true;
                    let error = self
                        .task
                        .error()
                        .cloned()
                        .and_then(|e| serde_json::from_value::<ErrorObject>(e).ok());
                    return Err(Error::task(
                        format!("the task {} failed", self.task.id()),
                        error,
                    ));
                }
                TaskStatus::Cancelled => {
                    self.settled = true;
                    return Err(Error::task(
                        format!("the task {} was cancelled", self.task.id()),
                        None,
                    ));
                }
                TaskStatus::InputRequired => {
                    let fresh = self
                        .task
                        .input_requests()
                        .into_iter()
                        .flatten()
                        .filter(|(key, _)| !answered.contains(*key))
                        .count();
                    if answered.len().saturating_add(fresh) > self.polling.max_questions {
                        let detail = format!(
                            "the task {} asked more than {} questions (TaskPolling::max_questions); \
                             the client stopped following it",
                            self.task.id(),
                            self.polling.max_questions
                        );
                        return Err(self.give_up(detail).await);
                    }
                    let mut questions = Vec::new();
                    for (key, request) in self.task.input_requests().into_iter().flatten() {
                        if answered.contains(key) {
                            continue;
                        }
                        let method = request.get("method").and_then(Value::as_str);
                        let Some(method) = method else {
                            return Err(Error::protocol(format!(
                                "the task's input request {key:?} has no method"
                            )));
                        };
                        let question = Question::new(
                            method.to_owned(),
                            request.get("params").cloned(),
                            Some(key.clone()),
                        );
                        questions.push((key.clone(), question));
                    }
                    let mut responses = Map::new();
                    if self.polling.answer_together {
                        let (keys, questions): (Vec<String>, Vec<Question>) =
                            questions.into_iter().unzip();
                        let client = &self.client;
                        let answers = futures::future::join_all(
                            questions.into_iter().map(|q| client.answer_question(q)),
                        )
                        .await;
                        for (key, answer) in keys.into_iter().zip(answers) {
                            responses.insert(key.clone(), answer?);
                            answered.insert(key);
                        }
                    } else {
                        for (key, question) in questions {
                            let answer = self.client.answer_question(question).await?;
                            responses.insert(key.clone(), answer);
                            answered.insert(key);
                        }
                    }
                    if !responses.is_empty() {
                        self.update(responses).await?;
                    }
                }
                TaskStatus::Working | TaskStatus::Other(_) => {}
            }
            let now = tokio::time::Instant::now();
            // The server keeps a task `ttlMs` after it created it: one still running past that
            // (and the grace) is not one to follow any longer.
            let ttl_end = self
                .task
                .ttl()
                .map(|ttl| far(self.since, ttl.saturating_add(TaskPolling::TTL_GRACE)));
            if let Some(end) = ttl_end
                && now >= end
            {
                let detail = format!(
                    "the task {} is still {} past its ttl of {} ms (and {:?} of grace); \
                     the client stopped following it",
                    self.task.id(),
                    self.task.raw["status"].as_str().unwrap_or_default(),
                    self.task.ttl().unwrap_or_default().as_millis(),
                    TaskPolling::TTL_GRACE
                );
                return Err(self.give_up(detail).await);
            }
            let pause = self
                .polling
                .interval(self.task.raw.get("pollIntervalMs").and_then(Value::as_u64));
            if now + pause > deadline {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "the task {} did not end within {:?} (TaskPolling::max_wait)",
                        self.task.id(),
                        self.polling.max_wait
                    ),
                ));
            }
            // Read the task once more at the end of its ttl rather than a whole pause later.
            let pause = ttl_end.map_or(pause, |end| pause.min(end.saturating_duration_since(now)));
            tokio::time::sleep(pause).await;
            self.get().await?;
            seen(&self.task);
        }
    }

    /// Stops following the task past a bound: cancels it (as a dropped handle would) and
    /// gives the error to return.
    async fn give_up(&mut self, detail: String) -> Error {
        if self.polling.cancel_on_drop {
            self.settled = true;
            // The error says why the client stopped; the server's answer to the cancel
            // changes nothing (a task that ended meanwhile refuses it).
            let _ = self.client.cancel_task(self.task.id()).await;
        }
        Error::task(detail, None)
    }
}

/// `from + after`, or about a century from `from` when that does not fit in an instant.
fn far(from: tokio::time::Instant, after: Duration) -> tokio::time::Instant {
    from.checked_add(after)
        .or_else(|| from.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap_or(from)
}

impl Drop for TaskHandle {
    fn drop(&mut self) {
        if self.settled || !self.polling.cancel_on_drop {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let client = self.client.clone();
        let id = self.task.id().to_owned();
        // Best effort: the server's answer changes nothing here. Closing the client waits for
        // it, so a program that drops the call and closes still cancels the task.
        let cancelling = runtime.spawn({
            let client = client.clone();
            async move {
                let _ = client.cancel_task(&id).await;
            }
        });
        client.inner.keep_cancel(cancelling);
    }
}

impl Client {
    /// Calls a tool and gives the task the server runs for it, without following it (see the
    /// [module docs](crate::task)); a server that answers at once gives [`ToolCall::Done`].
    /// Needs [`ClientBuilder::tasks`](crate::ClientBuilder::tasks).
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: impl Borrow<Value> + Send,
    ) -> Result<ToolCall, Error> {
        self.call_tool_as_task_with(name, arguments, CallOptions::new())
            .await
    }

    /// [`Client::call_tool_as_task`] with per-call options (timeout and progress of the call
    /// that creates the task).
    pub async fn call_tool_as_task_with(
        &self,
        name: &str,
        arguments: impl Borrow<Value> + Send,
        options: CallOptions,
    ) -> Result<ToolCall, Error> {
        let result = self
            .call_tool_raw(name, arguments.borrow(), options)
            .await?;
        self.tool_call(result)
    }

    /// [`Client::call_tool_as_task_with`], with a result the server gives at once read into `T`
    /// (any [`serde::Deserialize`] type: [`mcp_wire::model::CallToolResult`], or a struct of the
    /// fields the caller needs). Over Streamable HTTP a complete result in a JSON body is read
    /// from the bytes without a [`Value`] in between, as [`Client::call_tool_as`] does; a task
    /// is [`ToolCall::Task`], as there. A result that does not fit `T` is an
    /// [`ErrorKind::Protocol`] error. Without [`ClientBuilder::tasks`](crate::ClientBuilder::tasks)
    /// the answer is always [`ToolCall::Done`].
    ///
    /// ```no_run
    /// # async fn run(client: mcp_client::Client) -> Result<(), mcp_client::Error> {
    /// use mcp_client::{CallOptions, ToolCall};
    /// use mcp_wire::model::CallToolResult;
    /// use serde_json::json;
    ///
    /// let args = json!({"a": 2, "b": 3});
    /// match client.call_tool_as_task_read::<CallToolResult>("add", &args, CallOptions::new()).await? {
    ///     ToolCall::Done(result) => println!("{} content blocks", result.content.len()),
    ///     ToolCall::Task(task) => println!("the server runs it as task {}", task.id()),
    ///     _ => {}
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn call_tool_as_task_read<T: serde::de::DeserializeOwned + Send>(
        &self,
        name: &str,
        arguments: impl Borrow<Value> + Send,
        options: CallOptions,
    ) -> Result<ToolCall<T>, Error> {
        let read = |value: Value| {
            serde_json::from_value(value)
                .map_err(|e| Error::protocol(format!("tools/call result: {e}")))
        };
        match self
            .call_tool_read::<T>(name, arguments.borrow(), options)
            .await?
        {
            Ok(result) => Ok(ToolCall::Done(result)),
            Err(value) => match self.tool_call(value)? {
                ToolCall::Done(value) => read(value).map(ToolCall::Done),
                ToolCall::Task(task) => Ok(ToolCall::Task(task)),
            },
        }
    }

    /// `tasks/get` for the task `id`.
    pub async fn get_task(&self, id: &str) -> Result<Task, Error> {
        let got = self
            .request("tasks/get", Some(json!({"taskId": id})))
            .await?;
        Task::from_value(got)
    }

    /// `tasks/cancel` for the task `id`.
    pub async fn cancel_task(&self, id: &str) -> Result<(), Error> {
        self.request("tasks/cancel", Some(json!({"taskId": id})))
            .await
            .map(|_| ())
    }

    /// A tool call's raw result: a task handle when it is a `CreateTaskResult`.
    pub(crate) fn tool_call(&self, result: Value) -> Result<ToolCall, Error> {
        let Some(polling) = self.task_polling() else {
            return Ok(ToolCall::Done(result));
        };
        if result.get("resultType").and_then(Value::as_str) != Some("task") {
            return Ok(ToolCall::Done(result));
        }
        Ok(ToolCall::Task(TaskHandle {
            client: self.clone(),
            task: Task::from_value(result)?,
            polling,
            since: tokio::time::Instant::now(),
            settled: false,
        }))
    }

    /// A tool call's raw result followed to its end when it is a task.
    pub(crate) async fn finish_tool_call(&self, result: Value) -> Result<Value, Error> {
        match self.tool_call(result)? {
            ToolCall::Done(result) => Ok(result),
            ToolCall::Task(handle) => handle.wait().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_the_servers_within_the_bounds() {
        let polling = TaskPolling::new();
        assert_eq!(polling.interval(Some(200)), Duration::from_millis(200));
        assert_eq!(polling.interval(Some(1)), Duration::from_millis(50));
        assert_eq!(polling.interval(Some(u64::MAX)), Duration::from_secs(5));
        assert_eq!(polling.interval(None), Duration::from_secs(1));
        let odd =
            TaskPolling::new().interval_bounds(Duration::from_secs(2), Duration::from_secs(1));
        assert_eq!(odd.interval(Some(10)), Duration::from_secs(2));
    }

    #[test]
    fn a_huge_ttl_or_wait_does_not_overflow_the_clock() {
        let now = tokio::time::Instant::now();
        assert!(far(now, Duration::MAX) > now);
        assert_eq!(
            far(now, Duration::from_secs(1)),
            now + Duration::from_secs(1)
        );
    }

    #[test]
    fn statuses_and_tasks_read_as_sent() {
        for (text, status, terminal) in [
            ("working", TaskStatus::Working, false),
            ("input_required", TaskStatus::InputRequired, false),
            ("completed", TaskStatus::Completed, true),
            ("failed", TaskStatus::Failed, true),
            ("cancelled", TaskStatus::Cancelled, true),
            ("paused", TaskStatus::Other("paused".into()), false),
        ] {
            assert_eq!(TaskStatus::parse(text), status);
            assert_eq!(status.is_terminal(), terminal);
        }
        assert!(Task::from_value(json!({"status": "working"})).is_err());
        assert!(Task::from_value(json!({"taskId": "t"})).is_err());
        let task = Task::from_value(
            json!({"taskId": "t", "status": "working", "pollIntervalMs": 10, "ttlMs": 1000}),
        )
        .unwrap();
        assert_eq!(task.poll_interval(), Some(Duration::from_millis(10)));
        assert_eq!(task.ttl(), Some(Duration::from_secs(1)));
    }
}
