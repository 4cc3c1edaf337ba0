//! The socket-free entry point: one incoming message in, the messages to send out.
//!
//! Every transport uses [`Server::handle`]. It decodes once, picks the revision's adapter
//! (by the adapters' selection rules, or the connection's `initialize`), lets the adapter
//! decode the message into a normalized call, runs it against the registry, and encodes the
//! outcome the revision's way. What a handler sends before its final response (progress, log
//! messages, pushed questions) comes out first, on the same stream.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context as TaskContext, Poll};

use futures::FutureExt as _;
use futures::future::BoxFuture;
use futures::stream::{FusedStream, Stream};
use mcp_adapters::{
    Adapter, Call, ClientContext, Failure, Incoming, LogLevel, Operation, Revision, SelectionInput,
};
use mcp_hub::Namespace;
use mcp_wire::jsonrpc::{self, Decoded, ErrorObject, Id, Message, Notification, Response};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::ask::{Answer, Question, argument_instructions};
use crate::completion::{Completion, CompletionRequest};
use crate::content::CallToolResult;
use crate::error::{PromptError, ResourceError};
use crate::exchange::{
    AskState, CancelHandle, Exchange, ExchangeInner, Interrupted, PUSH_ID_PREFIX, Pusher, encode_reply,
    reply_topic,
};
use crate::page::{ListKind, page};
use crate::project::{self, RevisionView};
use crate::resource::ResourceRequest;
use crate::server::{Registry, Server};
use crate::state::{Redeemed, StateError, binding};
use crate::tool::{ToolRun, panic_message, run_tool};

/// One message for [`Server::handle`]: raw bytes (one JSON-RPC message or batch) or a parsed
/// JSON value.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Input {
    /// The message as received.
    Bytes(Vec<u8>),
    /// The message as JSON.
    Value(Value),
}

impl From<&[u8]> for Input {
    fn from(bytes: &[u8]) -> Self {
        Self::Bytes(bytes.to_vec())
    }
}

impl From<Vec<u8>> for Input {
    fn from(bytes: Vec<u8>) -> Self {
        Self::Bytes(bytes)
    }
}

impl From<&str> for Input {
    fn from(text: &str) -> Self {
        Self::Bytes(text.as_bytes().to_vec())
    }
}

impl From<Value> for Input {
    fn from(value: Value) -> Self {
        Self::Value(value)
    }
}

/// One message to send to the client.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Outgoing {
    /// A response, a notification, or a server-to-client request.
    Message(Message),
    /// The responses to a JSON-RPC batch, in item order (one JSON array).
    Batch(Vec<Message>),
}

impl Outgoing {
    /// The serialized message (compact JSON, no newline).
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Self::Message(message) => jsonrpc::encode(message),
            Self::Batch(messages) => jsonrpc::encode_batch(messages),
        }
    }

    /// The message as JSON.
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(&self.to_bytes()).unwrap_or(Value::Null)
    }

    /// The message, if it is a single one.
    pub fn as_message(&self) -> Option<&Message> {
        match self {
            Self::Message(message) => Some(message),
            Self::Batch(_) => None,
        }
    }

    /// It is a response (the last thing a call sends).
    pub fn is_response(&self) -> bool {
        matches!(self, Self::Batch(_) | Self::Message(Message::Response(_)))
    }
}

/// What a transport knows about the connection a message came on.
///
/// A stdio connection keeps legacy state for its whole life: the revision an `initialize`
/// selected, the client's identity and capabilities, and the log level. Cheap to clone; clones
/// share that state.
#[derive(Clone)]
pub struct Context {
    inner: Arc<ContextInner>,
}

struct ContextInner {
    namespace: Namespace,
    can_push: bool,
    connection: Mutex<Connection>,
    in_flight: Mutex<HashMap<Id, CancelHandle>>,
}

#[derive(Default)]
struct Connection {
    adapter: Option<Adapter>,
    client: ClientContext,
    log_level: Option<LogLevel>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("namespace", &self.inner.namespace)
            .field("revision", &self.revision())
            .finish_non_exhaustive()
    }
}

impl Default for Context {
    fn default() -> Self {
        Self::connection()
    }
}

impl Context {
    /// A dual-era connection (stdio): a first `server/discover` or any request with a
    /// `_meta` protocol version is served statelessly; an `initialize` selects its revision
    /// for the rest of the connection. Questions can be pushed (the transport carries
    /// server-to-client requests).
    pub fn connection() -> Self {
        Self::build(true)
    }

    /// A context whose transport cannot carry server-to-client requests (say, an HTTP
    /// response with a plain JSON body): pushed questions are refused.
    pub fn without_push() -> Self {
        Self::build(false)
    }

    fn build(can_push: bool) -> Self {
        Self {
            inner: Arc::new(ContextInner {
                namespace: Namespace::root(),
                can_push,
                connection: Mutex::new(Connection::default()),
                in_flight: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Sets the namespace (tenant) of request state and question topics. Default is the root
    /// namespace.
    #[must_use]
    pub fn with_namespace(self, namespace: Namespace) -> Self {
        let inner = ContextInner {
            namespace,
            can_push: self.inner.can_push,
            connection: Mutex::new(Connection::default()),
            in_flight: Mutex::new(HashMap::new()),
        };
        Self { inner: Arc::new(inner) }
    }

    /// The revision an `initialize` selected on this connection, if any.
    pub fn revision(&self) -> Option<Revision> {
        self.conn().adapter.map(|a| a.revision())
    }

    /// Cancels the in-flight request `id` (as `notifications/cancelled` does). Returns whether
    /// one was running.
    pub fn cancel(&self, id: &Id) -> bool {
        let handle = self.in_flight().get(id).cloned();
        handle.map(|h| h.cancel()).is_some()
    }

    /// Cancels every in-flight request (a transport shutting down).
    pub fn cancel_all(&self) {
        for handle in self.in_flight().values() {
            handle.cancel();
        }
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.inner.connection.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn in_flight(&self) -> MutexGuard<'_, HashMap<Id, CancelHandle>> {
        self.inner.in_flight.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The messages one input produces, in order: whatever the handler sends first, then the
/// response (if the message gets one). Dropping it cancels the call.
pub struct Reply {
    driver: Option<BoxFuture<'static, Option<Outgoing>>>,
    final_message: Option<Outgoing>,
    rx: mpsc::UnboundedReceiver<Message>,
    done: bool,
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply").field("done", &self.done).finish_non_exhaustive()
    }
}

impl Stream for Reply {
    type Item = Outgoing;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Outgoing>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if let Poll::Ready(Some(message)) = this.rx.poll_recv(cx) {
            return Poll::Ready(Some(Outgoing::Message(message)));
        }
        if let Some(driver) = this.driver.as_mut() {
            match driver.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(final_message) => {
                    this.driver = None;
                    this.final_message = final_message;
                }
            }
        }
        // The call is over: hand out what it sent before its response, then the response.
        if let Ok(message) = this.rx.try_recv() {
            return Poll::Ready(Some(Outgoing::Message(message)));
        }
        this.done = true;
        Poll::Ready(this.final_message.take())
    }
}

impl FusedStream for Reply {
    fn is_terminated(&self) -> bool {
        self.done
    }
}

impl Server {
    /// Handles one incoming message (or batch) on the connection `ctx`, and returns the
    /// messages to send back as a stream: notifications and server-to-client requests the
    /// handler sends, then the response. Notifications and replies give an empty stream.
    pub fn handle(&self, input: impl Into<Input>, ctx: &Context) -> Reply {
        let (tx, rx) = mpsc::unbounded_channel();
        let server = self.clone();
        let ctx = ctx.clone();
        let input = input.into();
        let driver = async move { server.run(input, ctx, tx).await }.boxed();
        Reply { driver: Some(driver), final_message: None, rx, done: false }
    }

    /// [`handle`](Self::handle), collected: every message the input produces, in order.
    pub async fn handle_all(&self, input: impl Into<Input>, ctx: &Context) -> Vec<Outgoing> {
        use futures::StreamExt as _;
        self.handle(input, ctx).collect().await
    }

    async fn run(&self, input: Input, ctx: Context, sink: mpsc::UnboundedSender<Message>) -> Option<Outgoing> {
        let registry = &self.registry;
        let bytes = match input {
            Input::Bytes(bytes) => bytes,
            Input::Value(value) => serde_json::to_vec(&value).unwrap_or_default(),
        };
        let decoded = jsonrpc::decode(&bytes);
        let sticky = ctx.conn().adapter;
        let adapter = match sticky {
            Some(adapter) => adapter,
            None => {
                if let Decoded::Single(Err(jsonrpc::DecodeError::Parse { detail })) = &decoded {
                    let adapter = registry.adapters.newest();
                    return Some(error_message(adapter, None, &Failure::parse(detail)));
                }
                let input = SelectionInput::from_body(&decoded);
                match registry.adapters.select(&input) {
                    Ok(selected) => selected.adapter,
                    Err(rejected) => {
                        return Some(error_message(rejected.adapter, first_id(&decoded), &rejected.failure));
                    }
                }
            }
        };
        let body = adapter.decode(decoded);
        let mut responses = Vec::new();
        for item in body.items {
            if let Some(response) = self.item(adapter, item, &ctx, &sink).await {
                responses.push(response);
            }
        }
        if body.batch {
            (!responses.is_empty()).then_some(Outgoing::Batch(responses))
        } else {
            responses.pop().map(Outgoing::Message)
        }
    }

    async fn item(
        &self,
        adapter: Adapter,
        item: Incoming,
        ctx: &Context,
        sink: &mpsc::UnboundedSender<Message>,
    ) -> Option<Message> {
        match item {
            Incoming::Reply(reply) => {
                self.route_reply(&reply, ctx).await;
                None
            }
            Incoming::Invalid(invalid) => {
                invalid.respond.then(|| error_response(adapter, invalid.id, &invalid.failure))
            }
            Incoming::Call(call) => {
                let call = *call;
                let id = call.id.clone();
                let operation = call.operation;
                let retry = call.is_retry();
                let cancel = CancelHandle::new();
                if let Some(id) = &id {
                    ctx.in_flight().insert(id.clone(), cancel.clone());
                }
                let outcome = self.call(adapter, call, ctx, sink, &cancel).await;
                if let Some(id) = &id {
                    ctx.in_flight().remove(id);
                }
                let id = id?;
                if *cancel.watcher().borrow() {
                    // A cancelled request gets no response.
                    return None;
                }
                Some(match outcome {
                    Outcome::Value(result) => {
                        Response::success(id, envelope(self, adapter, operation, result, None)).into()
                    }
                    Outcome::Cacheable(result, hint) => {
                        // A retry's result must not be cached: it is fresh for no time at all.
                        let hint = if retry { crate::resource::CacheHint::default() } else { hint };
                        Response::success(id, envelope(self, adapter, operation, result, Some(hint))).into()
                    }
                    Outcome::InputRequired(result) => {
                        Response::success(id, envelope(self, adapter, Operation::Notification, result, None)).into()
                    }
                    Outcome::Failure(failure) => error_response(adapter, Some(id), &failure),
                    Outcome::Silent => return None,
                })
            }
        }
    }

    /// Publishes a reply to a pushed question where the waiting call reads it.
    async fn route_reply(&self, reply: &mcp_adapters::Reply, ctx: &Context) {
        let Some(id) = reply.id.as_str().filter(|id| id.starts_with(PUSH_ID_PREFIX)) else {
            tracing::debug!(id = %reply.id, "reply to a request this server did not push; ignored");
            return;
        };
        let topic = reply_topic(&ctx.inner.namespace, id);
        if let Err(err) = self.registry.log.publish(&topic, encode_reply(&reply.outcome)).await {
            tracing::warn!(%err, "could not publish a reply to a pushed question");
        }
    }

    async fn call(
        &self,
        adapter: Adapter,
        mut call: Call,
        ctx: &Context,
        sink: &mpsc::UnboundedSender<Message>,
        cancel: &CancelHandle,
    ) -> Outcome {
        let registry = &*self.registry;
        let features = adapter.features();
        if !features.per_request_meta {
            let connection = ctx.conn();
            call.client.fill_from(&connection.client);
            if call.operation != Operation::SetLogLevel {
                call.log_level = connection.log_level;
            }
        }
        let view = registry.view(adapter);
        match call.operation {
            Operation::Describe => self.describe(adapter, &call, ctx),
            Operation::HandshakeComplete
            | Operation::Progress
            | Operation::RootsListChanged
            | Operation::Notification => Outcome::Silent,
            Operation::Cancelled => {
                if let Some(id) = call.cancelled_request() {
                    ctx.cancel(&id);
                }
                Outcome::Silent
            }
            Operation::Ping => Outcome::Value(json!({})),
            Operation::SetLogLevel => match call.log_level {
                Some(level) => {
                    ctx.conn().log_level = Some(level);
                    Outcome::Value(json!({}))
                }
                None => Outcome::Failure(Failure::invalid_params("logging/setLevel needs a valid level")),
            },
            Operation::ListTools => list(registry, ListKind::Tools, "tools", &view.tools, &call),
            Operation::ListResources => list(registry, ListKind::Resources, "resources", &view.resources, &call),
            Operation::ListResourceTemplates => {
                list(registry, ListKind::Templates, "resourceTemplates", &view.templates, &call)
            }
            Operation::ListPrompts => list(registry, ListKind::Prompts, "prompts", &view.prompts, &call),
            Operation::CallTool => self.call_tool(adapter, view, call, ctx, sink, cancel).await,
            Operation::ReadResource => self.read_resource(adapter, call, ctx, sink, cancel).await,
            Operation::GetPrompt => self.get_prompt(adapter, call, ctx, sink, cancel).await,
            Operation::Complete => self.complete(&call).await,
            Operation::Listen => self.listen(&call, sink),
            Operation::Subscribe | Operation::Unsubscribe => Outcome::Failure(Failure::unknown_method(&call.method)),
            _ => Outcome::Failure(Failure::unknown_method(&call.method)),
        }
    }

    fn describe(&self, adapter: Adapter, call: &Call, ctx: &Context) -> Outcome {
        let registry = &*self.registry;
        let view = registry.view(adapter);
        let mut result = Map::new();
        if adapter.has_handshake() {
            {
                let mut connection = ctx.conn();
                if ctx.inner.can_push || connection.adapter.is_none() {
                    connection.adapter = Some(adapter);
                }
                connection.client = call.client.clone();
            }
            result.insert("protocolVersion".into(), Value::String(adapter.version().to_owned()));
            result.insert("capabilities".into(), view.capabilities.clone());
            result.insert("serverInfo".into(), view.server_info.clone());
        } else {
            result.insert("supportedVersions".into(), json!(registry.adapters.versions()));
            result.insert("capabilities".into(), view.capabilities.clone());
        }
        if let Some(instructions) = &registry.instructions {
            result.insert("instructions".into(), Value::String(instructions.clone()));
        }
        Outcome::Cacheable(Value::Object(result), registry.list_cache)
    }

    async fn call_tool(
        &self,
        adapter: Adapter,
        view: &RevisionView,
        call: Call,
        ctx: &Context,
        sink: &mpsc::UnboundedSender<Message>,
        cancel: &CancelHandle,
    ) -> Outcome {
        let name = call.target.clone().unwrap_or_default();
        let (Some(entry), Some(shape)) = (self.registry.tool(&name), view.tool_shapes.get(&name)) else {
            return Outcome::Failure(Failure::unknown_tool(&name));
        };
        let resumed = match self.resume(ctx, &call, &name).await {
            Ok(resumed) => resumed,
            Err(outcome) => return outcome,
        };
        let arguments = Value::Object(call.arguments.clone());
        if let Err(issues) = entry.validator.validate(&arguments) {
            let text: Vec<String> = issues.iter().map(ToString::to_string).collect();
            let result = CallToolResult::error(format!("invalid arguments:\n{}", text.join("\n")));
            return Outcome::Value(project::tool_result(adapter, Some(shape), result.to_value()));
        }
        let ex = self.exchange(adapter, &call, ctx, sink, cancel, resumed);
        let run = with_cancel(cancel, run_tool(&entry.tool.call, arguments, ex.clone())).await;
        if let Some(outcome) = self.interrupted(adapter, &call, &name, &ex).await {
            return outcome;
        }
        match run {
            None => Outcome::Silent,
            Some(ToolRun::Done(result)) => Outcome::Value(project::tool_result(adapter, Some(shape), result.to_value())),
            Some(ToolRun::BadArguments(message)) => {
                let result = CallToolResult::error(format!("invalid arguments:\n{message}"));
                Outcome::Value(project::tool_result(adapter, Some(shape), result.to_value()))
            }
            Some(ToolRun::Panicked(message)) => {
                tracing::error!(tool = %name, %message, "tool handler panicked");
                Outcome::Failure(Failure::internal(format!("tool {name:?} failed unexpectedly: {message}")))
            }
        }
    }

    async fn read_resource(
        &self,
        adapter: Adapter,
        call: Call,
        ctx: &Context,
        sink: &mpsc::UnboundedSender<Message>,
        cancel: &CancelHandle,
    ) -> Outcome {
        let registry = &*self.registry;
        let uri = call.target.clone().unwrap_or_default();
        let found = registry
            .resource_index
            .get(&uri)
            .map(|&i| {
                let r = &registry.resources[i];
                (r.read.clone(), &r.meta, BTreeMap::new())
            })
            .or_else(|| {
                registry.template_order.iter().find_map(|&i| {
                    let t = &registry.templates[i];
                    t.parsed.matches(&uri).map(|vars| (t.template.read.clone(), &t.template.meta, vars))
                })
            });
        let Some((read, meta, vars)) = found else {
            return Outcome::Failure(Failure::resource_not_found(&uri));
        };
        let resumed = match self.resume(ctx, &call, &uri).await {
            Ok(resumed) => resumed,
            Err(outcome) => return outcome,
        };
        let ex = self.exchange(adapter, &call, ctx, sink, cancel, resumed);
        let request = ResourceRequest { uri: uri.clone(), vars };
        let fut = std::panic::AssertUnwindSafe(read(request, ex.clone())).catch_unwind();
        let run = with_cancel(cancel, fut).await;
        if let Some(outcome) = self.interrupted(adapter, &call, &uri, &ex).await {
            return outcome;
        }
        match run {
            None => Outcome::Silent,
            Some(Err(panic)) => Outcome::Failure(Failure::internal(format!(
                "reading {uri} failed unexpectedly: {}",
                panic_message(&*panic)
            ))),
            Some(Ok(Err(ResourceError::NotFound(_)))) => Outcome::Failure(Failure::resource_not_found(&uri)),
            Some(Ok(Err(err))) => Outcome::Failure(Failure::internal(err.to_string())),
            Some(Ok(Ok(contents))) => {
                let contents: Vec<Value> = contents
                    .into_iter()
                    .map(|mut c| {
                        c.fill_mime_type(meta.mime_type.as_deref());
                        c.into_value()
                    })
                    .collect();
                Outcome::Cacheable(json!({"contents": contents}), meta.cache)
            }
        }
    }

    async fn get_prompt(
        &self,
        adapter: Adapter,
        call: Call,
        ctx: &Context,
        sink: &mpsc::UnboundedSender<Message>,
        cancel: &CancelHandle,
    ) -> Outcome {
        let name = call.target.clone().unwrap_or_default();
        let Some(entry) = self.registry.prompt(&name) else {
            return Outcome::Failure(Failure::unknown_prompt(&name));
        };
        let arguments = Value::Object(call.arguments.clone());
        if let Err(issues) = entry.validator.validate(&arguments) {
            let text: Vec<String> = issues.iter().map(ToString::to_string).collect();
            return Outcome::Failure(Failure::invalid_params(format!("invalid prompt arguments: {}", text.join("; "))));
        }
        let resumed = match self.resume(ctx, &call, &name).await {
            Ok(resumed) => resumed,
            Err(outcome) => return outcome,
        };
        let ex = self.exchange(adapter, &call, ctx, sink, cancel, resumed);
        let fut = match (entry.prompt.render)(arguments, ex.clone()) {
            Ok(fut) => fut,
            Err(message) => {
                return Outcome::Failure(Failure::invalid_params(format!("invalid prompt arguments: {message}")));
            }
        };
        let run = with_cancel(cancel, std::panic::AssertUnwindSafe(fut).catch_unwind()).await;
        if let Some(outcome) = self.interrupted(adapter, &call, &name, &ex).await {
            return outcome;
        }
        match run {
            None => Outcome::Silent,
            Some(Err(panic)) => Outcome::Failure(Failure::internal(format!(
                "prompt {name:?} failed unexpectedly: {}",
                panic_message(&*panic)
            ))),
            Some(Ok(Err(PromptError::InvalidArguments(message)))) => {
                Outcome::Failure(Failure::invalid_params(format!("invalid prompt arguments: {message}")))
            }
            Some(Ok(Err(err))) => Outcome::Failure(Failure::internal(err.to_string())),
            Some(Ok(Ok(result))) => {
                let mut value = result.to_value();
                if !adapter.features().has_resource_link || !adapter.features().has_audio {
                    strip_prompt_content(adapter, &mut value);
                }
                Outcome::Value(value)
            }
        }
    }

    async fn complete(&self, call: &Call) -> Outcome {
        let Some(completer) = &self.registry.completer else {
            return Outcome::Value(Completion::default().to_value());
        };
        let Some(request) = CompletionRequest::from_params(&Value::Object(call.params.clone())) else {
            return Outcome::Failure(Failure::invalid_params("completion/complete needs `ref` and `argument`"));
        };
        match std::panic::AssertUnwindSafe((completer.0)(request)).catch_unwind().await {
            Ok(completion) => Outcome::Value(completion.to_value()),
            Err(panic) => Outcome::Failure(Failure::internal(format!(
                "completion failed unexpectedly: {}",
                panic_message(&*panic)
            ))),
        }
    }

    /// `subscriptions/listen`: nothing is offered (no list changes, no subscriptions), so the
    /// acknowledgement names an empty subset and the stream ends at once.
    fn listen(&self, call: &Call, sink: &mpsc::UnboundedSender<Message>) -> Outcome {
        let id = call.id.clone().map_or(Value::Null, |id| json!(id));
        let _ = sink.send(Message::Notification(Notification {
            method: "notifications/subscriptions/acknowledged".into(),
            params: Some(json!({"notifications": {}, "_meta": {"io.modelcontextprotocol/subscriptionId": id}})),
        }));
        Outcome::Value(json!({"_meta": {"io.modelcontextprotocol/subscriptionId": id}}))
    }

    /// Redeems the request state of a retry; answers count only for questions the state
    /// lists. Answers without state are ignored: nothing was asked.
    async fn resume(&self, ctx: &Context, call: &Call, target: &str) -> Result<Resumed, Outcome> {
        let Some(state_id) = &call.request_state else {
            return Ok(Resumed::default());
        };
        let bound = binding(&call.method, target, &call.arguments);
        let redeemed: Redeemed = match self.registry.states.redeem(&ctx.inner.namespace, state_id, &bound).await {
            Ok(redeemed) => redeemed,
            Err(StateError::Invalid(why)) => {
                return Err(Outcome::Failure(Failure::invalid_params(format!("invalid requestState: {why}"))));
            }
            Err(err) => return Err(Outcome::Failure(Failure::internal(err.to_string()))),
        };
        let mut answers = BTreeMap::new();
        if let Some(given) = &call.answers {
            for (key, method) in &redeemed.asked {
                let (Some(raw), Some(kind)) = (given.get(key), mcp_adapters::ClientRequestKind::from_method(method))
                else {
                    continue;
                };
                answers.insert(key.clone(), Answer::from_reply(kind, &Ok(raw.clone())));
            }
        }
        Ok(Resumed { asked: redeemed.asked, answers, state: redeemed.payload })
    }

    fn exchange(
        &self,
        adapter: Adapter,
        call: &Call,
        ctx: &Context,
        sink: &mpsc::UnboundedSender<Message>,
        cancel: &CancelHandle,
        resumed: Resumed,
    ) -> Exchange {
        let registry = &*self.registry;
        let push = (ctx.inner.can_push && adapter.can_push_ask()).then(|| Pusher {
            log: registry.log.clone(),
            namespace: ctx.inner.namespace.clone(),
            timeout: registry.ask_timeout,
        });
        Exchange::new(ExchangeInner {
            adapter,
            operation: call.operation,
            request_id: call.id.clone(),
            client: call.client.clone(),
            progress_token: call.progress_token.clone(),
            log_level: call.log_level,
            sink: sink.clone(),
            cancel: cancel.watcher(),
            ask: Mutex::new(AskState {
                answers: resumed.answers,
                asked: resumed.asked,
                ..AskState::default()
            }),
            previous_state: resumed.state,
            push,
            store: registry.states.store().clone(),
            namespace: ctx.inner.namespace.clone(),
        })
    }

    /// The outcome a handler's interruption calls for, if it was interrupted.
    async fn interrupted(&self, adapter: Adapter, call: &Call, target: &str, ex: &Exchange) -> Option<Outcome> {
        let (interrupt, pending, mut asked, saved) = {
            let mut state = ex.lock();
            let interrupt = state.interrupt.take()?;
            (interrupt, std::mem::take(&mut state.pending), std::mem::take(&mut state.asked), state.saved_state.take())
        };
        match interrupt {
            Interrupted::Cancelled => Some(Outcome::Silent),
            Interrupted::Failed(failure) => Some(Outcome::Failure(failure)),
            Interrupted::NeedsInput if pending.is_empty() => {
                Some(Outcome::Failure(Failure::internal("the handler stopped for input but asked nothing")))
            }
            Interrupted::NeedsInput => {
                for (key, question) in &pending {
                    asked.insert(key.clone(), question.kind().method().to_owned());
                }
                let payload = saved.or_else(|| ex.state().cloned());
                let bound = binding(&call.method, target, &call.arguments);
                let state_id = match self.registry.states.issue(&ex.inner.namespace, bound, asked, payload).await {
                    Ok(id) => id,
                    Err(err) => return Some(Outcome::Failure(Failure::internal(err.to_string()))),
                };
                Some(self.ask_outcome(adapter, call, &pending, &state_id))
            }
        }
    }

    fn ask_outcome(&self, adapter: Adapter, call: &Call, pending: &[(String, Question)], state_id: &str) -> Outcome {
        let mut requests = Map::new();
        for (key, question) in pending {
            let request = if adapter.asks_in_arguments() {
                // The revision has no such request; the convention repeats it as it was asked.
                Ok(json!({"method": question.kind().method(), "params": question.as_request().params()}))
            } else {
                adapter.input_request(key, question.as_request())
            };
            match request {
                Ok(request) => {
                    requests.insert(key.clone(), request);
                }
                Err(failure) => return Outcome::Failure(failure),
            }
        }
        if adapter.can_ask() {
            let mut result = Map::new();
            result.insert("resultType".into(), json!("input_required"));
            result.insert("inputRequests".into(), Value::Object(requests));
            result.insert("requestState".into(), json!(state_id));
            return Outcome::InputRequired(Value::Object(result));
        }
        if call.operation != Operation::CallTool {
            return Outcome::Failure(Failure::internal("this revision can only ask during tools/call"));
        }
        let mut result = CallToolResult::success(vec![argument_instructions(pending, state_id).into()]);
        let mut meta = Map::new();
        meta.insert(
            mcp_adapters::INPUT_REQUIRED_META.into(),
            json!({"inputRequests": requests, "requestState": state_id}),
        );
        result.meta = Some(meta);
        Outcome::Value(result.to_value())
    }
}

/// What a retry brings back.
#[derive(Default)]
struct Resumed {
    asked: BTreeMap<String, String>,
    answers: BTreeMap<String, Answer>,
    state: Option<Value>,
}

/// A call's outcome before the adapter's envelope.
enum Outcome {
    /// A result.
    Value(Value),
    /// A result that carries cache hints where the revision has them.
    Cacheable(Value, crate::resource::CacheHint),
    /// An interim `input_required` result (never cacheable).
    InputRequired(Value),
    /// A failure.
    Failure(Failure),
    /// Nothing is sent (a notification, a cancelled call).
    Silent,
}

/// Runs `fut` unless the call is cancelled first (then the future is dropped).
async fn with_cancel<F: Future>(cancel: &CancelHandle, fut: F) -> Option<F::Output> {
    let mut watcher = cancel.watcher();
    tokio::select! {
        output = fut => Some(output),
        _ = watcher.wait_for(|c| *c) => None,
    }
}

fn list(registry: &Registry, kind: ListKind, field: &str, entries: &[(String, Value)], call: &Call) -> Outcome {
    let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
    let Ok((range, next)) = page(kind, &keys, call.cursor.as_deref(), registry.page_size) else {
        return Outcome::Failure(Failure::invalid_params("unknown cursor"));
    };
    let mut result = Map::new();
    result.insert(field.into(), Value::Array(entries[range].iter().map(|(_, v)| v.clone()).collect()));
    if let Some(next) = next {
        result.insert("nextCursor".into(), Value::String(next));
    }
    Outcome::Cacheable(Value::Object(result), registry.list_cache)
}

/// Adds what every result carries on the revision: `resultType`, the server's identity in
/// `_meta`, and cache hints on complete results of the cacheable operations (never on a
/// retry).
fn envelope(server: &Server, adapter: Adapter, operation: Operation, result: Value, hint: Option<crate::resource::CacheHint>) -> Value {
    let features = adapter.features();
    if !features.result_envelope {
        return result;
    }
    let Value::Object(mut object) = result else { return result };
    object.entry("resultType").or_insert_with(|| json!("complete"));
    let meta = object.entry("_meta").or_insert_with(|| json!({}));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(
            "io.modelcontextprotocol/serverInfo".into(),
            server.registry.view(adapter).server_info.clone(),
        );
    }
    if features.cache_hints && operation.is_cacheable() {
        let hint = hint.unwrap_or_default();
        object.insert("ttlMs".into(), json!(hint.ttl_ms));
        object.insert("cacheScope".into(), json!(hint.scope.as_str()));
    }
    Value::Object(object)
}

fn error_response(adapter: Adapter, id: Option<Id>, failure: &Failure) -> Message {
    let mapping = adapter.failure_mapping(failure.kind);
    let mut error = ErrorObject::new(mapping.code, failure.message.clone());
    if let Some(data) = &failure.data {
        error = error.with_data(data.clone());
    }
    Response::error(id, error).into()
}

fn error_message(adapter: Adapter, id: Option<Id>, failure: &Failure) -> Outgoing {
    Outgoing::Message(error_response(adapter, id, failure))
}

/// The id of the first request in a body, so a refusal before decoding can still name it.
fn first_id(decoded: &Decoded) -> Option<Id> {
    match decoded {
        Decoded::Single(Ok(Message::Request(request))) => Some(request.id.clone()),
        _ => None,
    }
}

fn strip_prompt_content(adapter: Adapter, value: &mut Value) {
    let Some(messages) = value.get_mut("messages").and_then(Value::as_array_mut) else { return };
    for message in messages {
        if let Some(content) = message.get_mut("content") {
            let wrapped = json!({"content": [content.clone()]});
            let projected = project::tool_result(adapter, None, wrapped);
            if let Some(block) = projected.pointer("/content/0") {
                *content = block.clone();
            }
        }
    }
}
