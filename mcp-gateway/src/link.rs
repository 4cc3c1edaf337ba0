//! The upstream link: our client, bounded, and the forwarding of each downstream request.
//!
//! Every forwarded request waits for one of the link's call permits first
//! ([`GatewayBuilder::max_upstream_calls`](crate::GatewayBuilder::max_upstream_calls)), so
//! downstream clients cannot make the gateway hold more upstream requests than that.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;

use mcp_client::model::ReadResourceResult;
use mcp_client::task::{TASKS_EXTENSION, ToolCall};
use mcp_client::{CallOptions, Client};
use mcp_server::{
    CallToolResult, Completion, CompletionRef, CompletionRequest, Exchange, ExtensionError,
    GetPromptResult, Interrupt, PromptError, Question, ResourceContents, ResourceError, ToolError,
};
use mcp_wire::names::{error_code, meta, method};
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;

use crate::relay::{Call, InFlight, outside_calls};

/// The JSON-RPC code of "resource not found" on 2024-11-05 to 2025-11-25.
const RESOURCE_NOT_FOUND: i64 = -32002;
/// Invalid params (also "resource not found" on 2026-07-28).
const INVALID_PARAMS: i64 = -32602;
/// Internal error.
const INTERNAL_ERROR: i64 = -32603;
/// The `_meta` prefix reserved for the protocol: such keys describe the upstream hop and are
/// not passed on (the downstream server writes its own).
const PROTOCOL_META_PREFIX: &str = "io.modelcontextprotocol/";

/// Keeps a session's link busy (not idle) while a forwarded request uses it.
pub(crate) type Busy = Box<dyn Send>;

/// A session's link and its guard; `None` for a request in no session.
pub(crate) type Routed = Option<(Arc<Link>, Busy)>;

/// The links of the downstream sessions, when each has an upstream connection of its own
/// (the `children` module's pool).
pub(crate) trait SessionLinks: Send + Sync {
    /// The link of `ex`'s session (made at its first request) and a guard keeping it busy;
    /// `None` for a request in no session; the refusal's text when the session has none.
    fn link_for<'a>(&'a self, ex: &'a Exchange) -> BoxFuture<'a, Result<Routed, String>>;
}

/// The upstream client with its bounds. Shared by every declaration of the catalog.
pub(crate) struct Link {
    pub(crate) client: Client,
    /// Shared by every link of a gateway (its clients per session too).
    permits: Arc<Semaphore>,
    call_timeout: Option<Duration>,
    /// The relay's calls in flight, when the upstream's questions are relayed.
    in_flight: Option<Arc<InFlight>>,
    /// With a client per downstream session: the sessions' clients (this one serves the
    /// requests that come in no session).
    pub(crate) sessions: Option<Arc<dyn SessionLinks>>,
    /// A forwarded request found the client closed (a stdio child exited): a session's link
    /// is then replaced at the session's next request.
    closed: AtomicBool,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("client", &self.client)
            .field("available_permits", &self.permits.available_permits())
            .field("call_timeout", &self.call_timeout)
            .finish()
    }
}

impl Link {
    pub(crate) fn new(
        client: Client,
        max_calls: usize,
        call_timeout: Option<Duration>,
        in_flight: Option<Arc<InFlight>>,
    ) -> Self {
        Self::with_permits(
            client,
            Arc::new(Semaphore::new(max_calls)),
            call_timeout,
            in_flight,
        )
    }

    /// A link sharing `permits` with others.
    pub(crate) fn with_permits(
        client: Client,
        permits: Arc<Semaphore>,
        call_timeout: Option<Duration>,
        in_flight: Option<Arc<InFlight>>,
    ) -> Self {
        Self {
            client,
            permits,
            call_timeout,
            in_flight,
            sessions: None,
            closed: AtomicBool::new(false),
        }
    }

    /// The link that serves `ex`: its session's own (made on the session's first request,
    /// and kept busy while the guard lives), or this one.
    async fn route(self: Arc<Self>, ex: &Exchange) -> Result<(Arc<Self>, Option<Busy>), String> {
        let Some(sessions) = &self.sessions else {
            return Ok((self, None));
        };
        match sessions.link_for(ex).await? {
            Some((link, busy)) => Ok((link, Some(busy))),
            None => Ok((self, None)),
        }
    }

    /// Whether a forwarded request found the client closed (its stdio child exited).
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Notes a forwarded request's outcome: a closed client stays closed.
    fn note<T>(&self, outcome: &Result<T, mcp_client::Error>) {
        if let Err(e) = outcome
            && e.is_closed()
        {
            self.closed.store(true, Ordering::Release);
        }
    }

    /// Waits for a call permit. The semaphore is never closed, so this only waits.
    async fn permit(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.permits.acquire().await.ok()
    }

    /// The options of a request forwarded for `ex`: the timeout, and on an upstream revision
    /// with per-request capabilities, when questions are relayed, the downstream client's
    /// ways of answering in place of the upstream client's own (so the upstream asks only
    /// what the downstream client can answer).
    fn options(&self, ex: &Exchange) -> CallOptions {
        let mut options = match self.call_timeout {
            Some(timeout) => CallOptions::new().timeout(timeout),
            None => CallOptions::new(),
        };
        if self.narrows(ex) {
            let tasks = self.client.task_polling().is_some() && takes_tasks(ex);
            options = options.meta(meta::CLIENT_CAPABILITIES, answerable(ex, tasks));
        }
        options
    }

    /// The options of a request forwarded for `ex` with the answers its downstream call
    /// carried that no downstream question asked for (sent up front, or under keys nobody
    /// asked), passed upstream as the upstream revision carries them: the upstream decides
    /// whether its own questions take answers given up front, and ignores the other keys.
    /// `in_arguments` says whether the upstream takes them in a tool's arguments (a tool that
    /// declares `mcpAnswers` on 2025-03-26 and 2024-11-05).
    fn options_with_answers(&self, ex: &Exchange, in_arguments: bool) -> CallOptions {
        let options = self.options(ex);
        let features = self.client.revision().features();
        if !(features.can_ask() || (features.asks_in_arguments() && in_arguments)) {
            return options;
        }
        let unasked = ex.unasked_answers();
        if unasked.is_empty() {
            options
        } else {
            options.answers_up_front(unasked)
        }
    }

    /// Whether requests forwarded for `ex` declare the downstream client's capabilities
    /// upstream: questions are relayed, the upstream revision takes capabilities per request,
    /// and the downstream revision has them (one without elicitation capabilities, where
    /// questions ride in the arguments, answers whatever is asked: nothing to narrow).
    fn narrows(&self, ex: &Exchange) -> bool {
        self.in_flight.is_some()
            && self.client.revision().features().per_request_meta
            && ex.adapter().features().has_elicitation
    }

    /// Runs `fut`, a request forwarded for the downstream request of `ex`, in that request's
    /// scope: a relayed question that interrupts it, or the downstream cancellation, ends it
    /// (dropping `fut` cancels the upstream request).
    async fn forward<T>(
        &self,
        ex: &Exchange,
        fut: impl Future<Output = T>,
    ) -> Result<T, Interrupt> {
        let call = Call::new(ex.clone());
        let _registered = self.in_flight.as_ref().map(|f| f.register(&call));
        let forward = call.scope(async {
            let _permit = self.permit().await;
            fut.await
        });
        let out = tokio::select! {
            biased;
            // A relayed question ended the downstream request (it goes back as the question).
            interrupt = call.interrupted() => return Err(interrupt),
            () = ex.cancelled() => return Err(Interrupt::Cancelled),
            out = forward => out,
        };
        match call.interruption() {
            Some(interrupt) => Err(interrupt),
            None => Ok(out),
        }
    }

    /// `tools/call` upstream: the downstream call's progress follows the upstream's, and a
    /// downstream cancellation drops the upstream call (which cancels it upstream).
    pub(crate) async fn call_tool(
        self: Arc<Self>,
        name: Arc<str>,
        takes_answers: bool,
        arguments: Value,
        ex: Exchange,
    ) -> Result<CallToolResult, ToolError> {
        let (link, _in_use) = self.route(&ex).await.map_err(ToolError::new)?;
        link.call_tool_here(name, takes_answers, arguments, ex)
            .await
    }

    async fn call_tool_here(
        &self,
        name: Arc<str>,
        takes_answers: bool,
        arguments: Value,
        ex: Exchange,
    ) -> Result<CallToolResult, ToolError> {
        let progress = ex.clone();
        let options = self
            .options_with_answers(&ex, takes_answers)
            .on_progress(move |p| {
                progress.progress(p.progress, p.total, p.message.as_deref());
            });
        // Boxed where it is made: the client's future is large (its transport, timeout and
        // retry states), and every level that holds it inline copies it once more per call.
        // A complete result is read straight into a `CallToolResult` (no `Value` in between).
        let (client, task_ex) = (self.client.clone(), ex.clone());
        let called: BoxFuture<'_, Result<Result<CallToolResult, mcp_client::Error>, Interrupt>> =
            Box::pin(async move {
                // An upstream task (only when the client follows tasks) is passed on when the
                // downstream call can become one (it is started here, and the downstream client
                // follows it while the gateway follows the upstream's), else followed here to
                // its result.
                let task = match client
                    .call_tool_as_task_read::<CallToolResult>(&name, arguments, options)
                    .await
                {
                    Ok(ToolCall::Task(task)) => task,
                    Ok(ToolCall::Done(result)) => return Ok(Ok(result)),
                    Ok(other) => {
                        return Err(ex_fail(&task_ex, &format!("upstream: {other:?}")));
                    }
                    Err(e) => return Ok(Err(e)),
                };
                // Not made (the downstream call ended meanwhile): the upstream task is
                // cancelled as the handle drops.
                task_ex.start_task().await?;
                Ok(task.wait_as::<CallToolResult>().await)
            });
        let called = self.forward(&ex, called).await??;
        self.note(&called);
        match called {
            Ok(mut result) => {
                result.result_type = None;
                strip_protocol_meta(&mut result.meta);
                Ok(result)
            }
            Err(e)
                if self.narrows(&ex)
                    && e.code() == Some(error_code::MISSING_REQUIRED_CLIENT_CAPABILITY) =>
            {
                Err(missing_capability(&ex, &e).await.into())
            }
            // The upstream's protocol error (an upstream task that failed included) is
            // the downstream call's, in its revision's words.
            Err(e) if e.rpc().is_some() => Err(pass_on(&ex, &e).into()),
            // The upstream could not be reached or answered nothing usable: the tool could
            // not run.
            Err(e) => Err(ToolError::new(format!("upstream: {e}"))),
        }
    }

    /// `resources/read` upstream.
    pub(crate) async fn read_resource(
        self: Arc<Self>,
        uri: String,
        ex: Exchange,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        let (link, _in_use) = self.route(&ex).await.map_err(ResourceError::Failed)?;
        link.read_resource_here(uri, ex).await
    }

    async fn read_resource_here(
        &self,
        uri: String,
        ex: Exchange,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        let options = self.options_with_answers(&ex, false);
        let read = Box::pin(self.client.request_with(
            method::RESOURCES_READ,
            Some(json!({"uri": uri})),
            options,
        ));
        let read = self.forward(&ex, read).await?;
        self.note(&read);
        let read = match read {
            Ok(read) => serde_json::from_value::<ReadResourceResult>(read).map_err(|e| {
                ResourceError::Failed(format!("the upstream's resources/read result: {e}"))
            }),
            Err(e) if matches!(e.code(), Some(RESOURCE_NOT_FOUND | INVALID_PARAMS)) => {
                Err(ResourceError::NotFound(uri))
            }
            Err(e) => Err(ResourceError::Failed(format!("upstream: {e}"))),
        };
        read.map(|read| read.contents)
    }

    /// `prompts/get` upstream.
    pub(crate) async fn get_prompt(
        self: Arc<Self>,
        name: Arc<str>,
        arguments: Value,
        ex: Exchange,
    ) -> Result<GetPromptResult, PromptError> {
        let (link, _in_use) = self.route(&ex).await.map_err(PromptError::Failed)?;
        link.get_prompt_here(name, arguments, ex).await
    }

    async fn get_prompt_here(
        &self,
        name: Arc<str>,
        arguments: Value,
        ex: Exchange,
    ) -> Result<GetPromptResult, PromptError> {
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.to_string()));
        // An empty argument object is sent as none (as a client that has none would).
        match arguments {
            Value::Object(map) if map.is_empty() => {}
            Value::Null => {}
            other => {
                params.insert("arguments".into(), other);
            }
        }
        let options = self.options_with_answers(&ex, false);
        let got = Box::pin(self.client.request_with(
            method::PROMPTS_GET,
            Some(Value::Object(params)),
            options,
        ));
        let got = self.forward(&ex, got).await?;
        self.note(&got);
        match got {
            Ok(got) => {
                let mut prompt: GetPromptResult = serde_json::from_value(got).map_err(|e| {
                    PromptError::Failed(format!("the upstream's prompts/get result: {e}"))
                })?;
                prompt.result_type = None;
                strip_protocol_meta(&mut prompt.meta);
                Ok(prompt)
            }
            Err(e) if e.code() == Some(INVALID_PARAMS) => Err(PromptError::InvalidArguments(
                e.message().unwrap_or("refused upstream").to_owned(),
            )),
            Err(e) => Err(PromptError::Failed(format!("upstream: {e}"))),
        }
    }

    /// An extension method forwarded upstream as it is (its params and result are the
    /// extension's own JSON), in no downstream call's scope: an upstream `-32602` stays
    /// invalid params, any other failure is an internal error.
    pub(crate) async fn forward_method(
        self: Arc<Self>,
        method: String,
        params: Map<String, Value>,
    ) -> Result<Value, ExtensionError> {
        let options = match self.call_timeout {
            Some(timeout) => CallOptions::new().timeout(timeout),
            None => CallOptions::new(),
        };
        let _permit = self.permit().await;
        let params = (!params.is_empty()).then_some(Value::Object(params));
        let answer = outside_calls(self.client.request_with(&method, params, options)).await;
        self.note(&answer);
        match answer {
            Ok(mut result) => {
                if let Some(result) = result.as_object_mut() {
                    // The upstream hop's envelope; the downstream server writes its own.
                    result.remove("resultType");
                    let mut meta = result.remove("_meta").and_then(|meta| match meta {
                        Value::Object(meta) => Some(meta),
                        _ => None,
                    });
                    strip_protocol_meta(&mut meta);
                    if let Some(meta) = meta.filter(|meta| !meta.is_empty()) {
                        result.insert("_meta".into(), Value::Object(meta));
                    }
                }
                Ok(result)
            }
            Err(e) if e.code() == Some(INVALID_PARAMS) => Err(ExtensionError::InvalidParams(
                e.message().unwrap_or("invalid params").to_owned(),
            )),
            Err(e) => Err(ExtensionError::Internal(format!("upstream: {e}"))),
        }
    }

    /// `completion/complete` upstream; no values when the upstream fails.
    pub(crate) async fn complete(self: Arc<Self>, request: CompletionRequest) -> Completion {
        let reference = match &request.reference {
            CompletionRef::Prompt(name) => json!({"type": "ref/prompt", "name": name}),
            CompletionRef::Resource(uri) => json!({"type": "ref/resource", "uri": uri}),
            _ => return Completion::default(),
        };
        let context = (!request.context.is_empty()).then(|| {
            let arguments: Map<String, Value> = request
                .context
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            json!({"arguments": arguments})
        });
        let _permit = self.permit().await;
        let answer = outside_calls(self.client.complete(
            reference,
            &request.argument,
            &request.value,
            context,
        ))
        .await;
        match answer {
            Ok(result) => completion_of(&result),
            Err(e) => {
                tracing::debug!(error = %e, "upstream completion/complete failed");
                Completion::default()
            }
        }
    }
}

/// Reads an upstream `CompleteResult`.
fn completion_of(result: &Value) -> Completion {
    let completion = &result["completion"];
    let values = completion["values"]
        .as_array()
        .map(|values| {
            values
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Completion {
        values,
        total: completion["total"].as_u64(),
        has_more: completion["hasMore"].as_bool().unwrap_or(false),
    }
}

/// The upstream refused a request because the client did not declare a capability it needs
/// (`-32021`, from the downstream client's capabilities the gateway passed on, so the
/// downstream client lacks it too): the
/// downstream request is refused the same way, by asking the downstream client for what the
/// upstream needs, which the downstream server refuses as its revision does (`-32021` with
/// `requiredCapabilities` on 2026-07-28, an error naming the reason before).
async fn missing_capability(ex: &Exchange, error: &mcp_client::Error) -> Interrupt {
    let required = error
        .data()
        .and_then(|data| data.get("requiredCapabilities"))
        .and_then(Value::as_object);
    let needs = |key: &str| required.is_some_and(|caps| caps.contains_key(key));
    if needs("extensions") {
        // An extension the downstream client did not declare (Tasks): no question stands for
        // it, so the downstream call is refused with the upstream's own error.
        return pass_on(ex, error);
    }
    let question = if needs("sampling") {
        Question::sample("", 1)
    } else if needs("roots") {
        Question::list_roots()
    } else if required
        .and_then(|caps| caps.get("elicitation"))
        .is_some_and(|e| e.get("url").is_some() && e.get("form").is_none())
    {
        Question::elicit_url("", "about:blank")
    } else {
        Question::elicit("")
    };
    match ex.ask("upstream-required-capability", question).await {
        Err(interrupt) => interrupt,
        // The downstream client could answer after all: the upstream still refused.
        Ok(_) => Interrupt::CannotAsk(
            error
                .message()
                .unwrap_or("the upstream needs a client capability")
                .to_owned(),
        ),
    }
}

/// Ends the downstream call of `ex` with an internal error saying `message`.
fn ex_fail(ex: &Exchange, message: &str) -> Interrupt {
    ex.fail(INTERNAL_ERROR, message, None)
}

/// Ends the downstream call of `ex` with the upstream's protocol error `error`.
fn pass_on(ex: &Exchange, error: &mcp_client::Error) -> Interrupt {
    match error.rpc() {
        Some(rpc) => ex.fail(rpc.code, rpc.message.clone(), rpc.data.clone()),
        None => ex.fail(INTERNAL_ERROR, error.to_string(), None),
    }
}

/// The ways the downstream client of `ex` can answer (form and URL elicitation, sampling,
/// roots), as client capabilities: what it declared, nothing else; with `tasks`, the Tasks
/// extension too.
fn answerable(ex: &Exchange, tasks: bool) -> Value {
    let declared = ex.client_capabilities();
    let mut out = Map::new();
    for key in ["elicitation", "sampling", "roots"] {
        if let Some(value) = declared.and_then(|caps| caps.get(key)) {
            out.insert(key.into(), value.clone());
        }
    }
    if tasks {
        out.insert("extensions".into(), json!({ TASKS_EXTENSION: {} }));
    }
    Value::Object(out)
}

/// Whether a call forwarded for `ex` may be answered with a task upstream: when the
/// downstream request declared the Tasks extension (the task is passed on), or when its
/// revision cannot carry a task at all (the gateway follows the task and answers with its
/// result). A 2026-07-28 request that did not declare it is forwarded without it, so an
/// upstream tool that needs a task refuses it as it would refuse the downstream client.
fn takes_tasks(ex: &Exchange) -> bool {
    !ex.adapter().features().result_envelope || declares_tasks(ex)
}

/// Whether the downstream request of `ex` declared the Tasks extension.
fn declares_tasks(ex: &Exchange) -> bool {
    ex.client_capabilities()
        .and_then(|caps| caps.get("extensions"))
        .and_then(|extensions| extensions.get(TASKS_EXTENSION))
        .is_some()
}

/// Drops the protocol's own `_meta` keys of the upstream hop; the rest is the tool's.
fn strip_protocol_meta(meta: &mut Option<Map<String, Value>>) {
    if let Some(map) = meta {
        map.retain(|key, _| !key.starts_with(PROTOCOL_META_PREFIX));
        if map.is_empty() {
            *meta = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_meta_is_not_passed_on() {
        let mut meta = Some(
            json!({"io.modelcontextprotocol/serverInfo": {}, "app/trace": "x"})
                .as_object()
                .cloned()
                .unwrap(),
        );
        strip_protocol_meta(&mut meta);
        assert_eq!(meta.unwrap().keys().collect::<Vec<_>>(), ["app/trace"]);
        let mut only = json!({"io.modelcontextprotocol/x": 1}).as_object().cloned();
        strip_protocol_meta(&mut only);
        assert!(only.is_none());
    }

    #[test]
    fn completions_are_read_leniently() {
        let read = completion_of(
            &json!({"completion": {"values": ["a", 3, "b"], "total": 9, "hasMore": true}}),
        );
        assert_eq!(read.values, ["a", "b"]);
        assert_eq!(read.total, Some(9));
        assert!(read.has_more);
        assert_eq!(completion_of(&json!("garbage")), Completion::default());
    }
}
