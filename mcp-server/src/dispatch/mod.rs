//! The socket-free entry point: one incoming message in, the messages to send out.
//!
//! Every transport uses [`Server::handle`]. It decodes once, picks the revision's adapter
//! (by the adapters' selection rules, or the connection's `initialize`), lets the adapter
//! decode the message into a normalized call, runs it against the registry, and encodes the
//! outcome the revision's way. What a handler sends before its final response (progress, log
//! messages, pushed questions) comes out first, on the same stream.

use std::collections::BTreeMap;

use crate::FastMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context as TaskContext, Poll};

use futures::FutureExt as _;
use futures::future::BoxFuture;
use futures::stream::{FusedStream, Stream};
use mcp_adapters::{
    Adapter, CacheHint, Call, ClientContext, Encoded, Failure, Incoming, InputRequests, Operation,
    Outcome, ResultContext, Revision, SelectionInput, ToolResult,
};
use mcp_hub::Namespace;
use mcp_wire::jsonrpc::{self, Decoded, Id, Message};
use serde_json::{Value, json};
use tracing::Instrument as _;

use crate::ask::Answer;
use crate::completion::{Completion, CompletionRequest};
use crate::error::{PromptError, ResourceError};
use crate::exchange::{
    AskState, CallClient, CancelHandle, Exchange, ExchangeInner, Interrupted, Owner,
    PUSH_ID_PREFIX, Pusher, encode_reply, owner_tag, reply_topic,
};
use crate::page::{ListKind, page};
use crate::resource::ResourceRequest;
use crate::server::project::RevisionView;
use crate::server::{Registry, Served, Server};
use crate::sink::{Drain, Sink};
use crate::state::{Redeemed, StateError, binding};
use mcp_wire::model::CallToolResult;
use session::{Session, stated_nothing};
pub(crate) mod session;
pub(crate) mod telemetry;
use crate::tool::{ToolOutput, ToolRun, panic_message, run_tool};
use telemetry::RequestSpan;

/// One message for [`Server::handle`], the entry every transport uses: raw bytes (one JSON-RPC
/// message or batch), a parsed JSON value, or a body a transport already decoded with the
/// adapter of the revision it selected.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Input {
    /// The message as received: the server selects the revision (the connection's, once it
    /// has one) and decodes it.
    Bytes(Vec<u8>),
    /// The message as JSON.
    Value(Value),
    /// A body decoded by `adapter` ([`Adapter::decode`](mcp_adapters::Adapter::decode), or
    /// its HTTP form that also reads the request's headers): served on that revision as it
    /// is. The HTTP transports enter this way, having selected the revision from the headers.
    Decoded {
        /// The revision's adapter.
        adapter: Adapter,
        /// The decoded items.
        body: mcp_adapters::DecodedBody,
    },
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
    /// A notification or a server-to-client request, sent before the response.
    Message(Value),
    /// The response, with the HTTP status it goes with.
    Response(Encoded),
    /// The responses to a JSON-RPC batch, in item order (one JSON array, HTTP 200).
    Batch(Vec<Encoded>),
}

impl Outgoing {
    /// The serialized message (compact JSON, no newline).
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Self::Message(message) => serde_json::to_vec(message).unwrap_or_default(),
            Self::Response(encoded) => encoded.to_bytes(),
            Self::Batch(items) => {
                let mut out = Vec::with_capacity(128 * items.len() + 2);
                out.push(b'[');
                for (n, item) in items.iter().enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    item.write_to(&mut out);
                }
                out.push(b']');
                out
            }
        }
    }

    /// [`to_bytes`](Self::to_bytes), consuming the message (a response is not copied).
    pub fn into_bytes(self) -> Vec<u8> {
        match self {
            Self::Response(encoded) => encoded.into_bytes(),
            other => other.to_bytes(),
        }
    }

    /// The message as JSON.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Message(message) => message.clone(),
            Self::Response(encoded) => encoded.to_value(),
            Self::Batch(items) => Value::Array(items.iter().map(Encoded::to_value).collect()),
        }
    }

    /// The HTTP status of a response (200 for a batch); `None` for other messages.
    pub fn status(&self) -> Option<http::StatusCode> {
        match self {
            Self::Message(_) => None,
            Self::Response(encoded) => Some(encoded.status),
            Self::Batch(_) => Some(http::StatusCode::OK),
        }
    }

    /// It is a response (the last thing a call sends).
    pub fn is_response(&self) -> bool {
        !matches!(self, Self::Message(_))
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
    connection: Mutex<Session>,
    in_flight: Mutex<InFlightIds>,
    owner: Mutex<Owner>,
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
                connection: Mutex::new(Session::default()),
                in_flight: Mutex::default(),
                owner: Mutex::default(),
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
            connection: Mutex::new(Session::default()),
            in_flight: Mutex::default(),
            owner: Mutex::new(self.owner()),
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Sets the authenticated principal of the requests on this context (say `"<iss>|<sub>"`
    /// from a verified token), for a transport or middleware that authenticates. Default is
    /// none: nothing is bound to a principal.
    ///
    /// Request state (MRTR `requestState`, the `mcpState` argument) issued on this context
    /// is bound to it and refused (-32602) on a context with another principal or none, and
    /// replies to questions pushed on this context are delivered only from a context with the
    /// same principal. Set it before the context serves its first message; clones share it.
    #[must_use]
    pub fn with_principal(self, principal: impl Into<String>) -> Self {
        self.owner_mut().principal = Some(Arc::from(principal.into()));
        self
    }

    /// Binds the context to a verified access token's principal: its
    /// [`binding`](mcp_auth::Principal::binding) becomes the [`principal`](Self::principal),
    /// and handlers read the whole principal with [`Exchange::auth`](crate::Exchange::auth).
    #[must_use]
    pub fn with_auth(self, principal: Arc<mcp_auth::Principal>) -> Self {
        self.with_auth_listing(principal, false)
    }

    /// [`with_auth`](Self::with_auth); with `hide_tools`, `tools/list` shows only the tools
    /// the principal's scopes allow it to call.
    pub(crate) fn with_auth_listing(
        self,
        principal: Arc<mcp_auth::Principal>,
        hide_tools: bool,
    ) -> Self {
        let binding = Arc::from(principal.binding());
        self.with_auth_binding(principal, binding, hide_tools)
    }

    /// [`with_auth_listing`](Self::with_auth_listing) with the principal's binding already
    /// built (the resource server keeps it with the cached token).
    pub(crate) fn with_auth_binding(
        self,
        principal: Arc<mcp_auth::Principal>,
        binding: Arc<str>,
        hide_tools: bool,
    ) -> Self {
        {
            let mut owner = self.owner_mut();
            owner.principal = Some(binding);
            owner.auth = Some(crate::exchange::AuthPrincipal(principal, hide_tools));
        }
        self
    }

    /// Sets the transport's session id (an HTTP `Mcp-Session-Id`, an HTTP+SSE `sessionId`).
    /// Default is none. Replies to questions pushed on this context are delivered only from a
    /// context with the same session (and principal): a reply POSTed in another session is
    /// accepted by the transport but reaches nobody. Set it before the context serves its
    /// first message; clones share it.
    #[must_use]
    pub fn with_session(self, session: impl Into<String>) -> Self {
        self.owner_mut().session = Some(Arc::from(session.into()));
        self
    }

    /// [`with_session`](Self::with_session) with an id the transport already shares.
    pub(crate) fn with_shared_session(self, session: Arc<str>) -> Self {
        self.owner_mut().session = Some(session);
        self
    }

    /// Records the session id and the token's subject on a request's span.
    pub(crate) fn record_owner(&self, span: &tracing::Span) {
        let owner = self.owner_mut();
        if let Some(session) = &owner.session {
            span.record("session", telemetry::session_tag(session));
        }
        if let Some(auth) = &owner.auth {
            span.record("principal", auth.0.subject.as_str());
        }
    }

    /// The principal set with [`with_principal`](Self::with_principal).
    pub fn principal(&self) -> Option<String> {
        self.owner_mut().principal.as_deref().map(str::to_owned)
    }

    fn owner(&self) -> Owner {
        self.owner_mut().clone()
    }

    fn owner_mut(&self) -> MutexGuard<'_, Owner> {
        self.inner
            .owner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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
        for handle in self.in_flight().handles() {
            handle.cancel();
        }
    }

    fn conn(&self) -> MutexGuard<'_, Session> {
        self.inner
            .connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn in_flight(&self) -> MutexGuard<'_, InFlightIds> {
        self.inner
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Context {
    /// A context for one HTTP request of a stored session (or of no session): the session's
    /// revision, client and log level, as if the connection had lived on. `can_push` says
    /// whether the response can carry server-to-client requests (an SSE stream).
    pub(crate) fn for_session(session: Session, can_push: bool, namespace: Namespace) -> Self {
        Self {
            inner: Arc::new(ContextInner {
                namespace,
                can_push,
                connection: Mutex::new(session),
                in_flight: Mutex::default(),
                owner: Mutex::default(),
            }),
        }
    }

    /// Runs `f` on the session state as it is now, borrowed: comparing it with a stored
    /// record needs no copy.
    pub(crate) fn inspect_session<R>(&self, f: impl FnOnce(&Session) -> R) -> R {
        f(&self.conn())
    }
}

/// The messages one input produces, in order: whatever the handler sends first, then the
/// response (if the message gets one). Dropping it cancels the call.
pub struct Reply {
    driver: Option<BoxFuture<'static, Option<Outgoing>>>,
    final_message: Option<Outgoing>,
    rx: Drain,
    done: bool,
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply")
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl Stream for Reply {
    type Item = Outgoing;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Outgoing>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if let Poll::Ready(message) = this.rx.poll_recv(cx) {
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
        if let Some(message) = this.rx.try_recv() {
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
    ///
    /// The message is served from the registry as it is now (runtime changes swap it).
    pub fn handle(&self, input: impl Into<Input>, ctx: &Context) -> Reply {
        self.served().handle(input.into(), ctx)
    }

    /// [`handle`](Self::handle), collected: every message the input produces, in order.
    pub async fn handle_all(&self, input: impl Into<Input>, ctx: &Context) -> Vec<Outgoing> {
        use futures::StreamExt as _;
        self.handle(input, ctx).collect().await
    }
}

impl Served {
    /// [`Server::handle`] on this registry.
    pub(crate) fn handle(self, input: Input, ctx: &Context) -> Reply {
        let server = self;
        let (tx, rx) = crate::sink::queue(server.registry.max_queued);
        let ctx = ctx.clone();
        // A decoded body's future is boxed on its own: it is the HTTP path, and the future
        // that also reads bytes is larger (an allocation the allocator serves more slowly).
        let driver = match input {
            Input::Decoded { adapter, body } => {
                async move { server.serve_items(adapter, body, &ctx, &tx).await }.boxed()
            }
            input => async move { server.run(input, ctx, tx).await }.boxed(),
        };
        Reply {
            driver: Some(driver),
            final_message: None,
            rx,
            done: false,
        }
    }

    async fn run(&self, input: Input, ctx: Context, sink: Sink) -> Option<Outgoing> {
        let registry = &self.registry;
        let bytes = match input {
            Input::Bytes(bytes) => bytes,
            Input::Value(value) => serde_json::to_vec(&value).unwrap_or_default(),
            // Served by `handle` without this future.
            Input::Decoded { adapter, body } => {
                return self.serve_items(adapter, body, &ctx, &sink).await;
            }
        };
        let decoded = jsonrpc::decode(&bytes);
        let sticky = ctx.conn().adapter;
        let adapter = match sticky {
            Some(adapter) => adapter,
            None => {
                if let Decoded::Single(Err(jsonrpc::DecodeError::Parse { detail })) = &decoded {
                    let adapter = registry.adapters.newest();
                    return Some(Outgoing::Response(
                        adapter.encode_failure(None, &Failure::parse(detail)),
                    ));
                }
                let input = SelectionInput::from_body(&decoded);
                match registry.adapters.select(&input) {
                    Ok(selected) => selected.adapter,
                    Err(rejected) => {
                        let id = first_id(&decoded);
                        return Some(Outgoing::Response(
                            rejected.adapter.encode_failure(id, &rejected.failure),
                        ));
                    }
                }
            }
        };
        let body = adapter.decode(decoded);
        self.serve_items(adapter, body, &ctx, &sink).await
    }

    /// Serves the items of a body in order: a batch answers with the list of its responses
    /// (none when no item needs one), a single message with its response.
    async fn serve_items(
        &self,
        adapter: Adapter,
        body: mcp_adapters::DecodedBody,
        ctx: &Context,
        sink: &Sink,
    ) -> Option<Outgoing> {
        match body {
            // Boxed: a batch is rare, and its loop would make every call's future larger.
            mcp_adapters::DecodedBody::Batch(items) => {
                Box::pin(self.serve_batch(adapter, items, ctx, sink)).await
            }
            // One message: no list of responses to build.
            mcp_adapters::DecodedBody::Single(item) => self
                .item(adapter, item, ctx, sink)
                .await
                .map(Outgoing::Response),
        }
    }

    /// The items of a batch in order, answered with the list of their responses (none when no
    /// item needs one).
    async fn serve_batch(
        &self,
        adapter: Adapter,
        items: Vec<Incoming>,
        ctx: &Context,
        sink: &Sink,
    ) -> Option<Outgoing> {
        let mut responses = Vec::new();
        for item in items {
            if let Some(response) = self.item(adapter, item, ctx, sink).await {
                responses.push(response);
            }
        }
        (!responses.is_empty()).then_some(Outgoing::Batch(responses))
    }

    async fn item(
        &self,
        adapter: Adapter,
        item: Incoming,
        ctx: &Context,
        sink: &Sink,
    ) -> Option<Encoded> {
        match item {
            Incoming::Reply(reply) => {
                self.route_reply(&reply, ctx).await;
                None
            }
            Incoming::Invalid(invalid) => invalid
                .respond
                .then(|| adapter.encode_failure(invalid.id, &invalid.failure)),
            Incoming::Call(mut call) => {
                // Kept boxed: a `Call` inline would make every call's future larger.
                let cancel = CancelHandle::new();
                let mut registered = None;
                if let Some(id) = &call.id {
                    if !ctx.in_flight().insert(id.clone(), cancel.clone()) {
                        let failure = Failure::invalid_request(format!(
                            "request id {id} is already in flight"
                        ));
                        return Some(adapter.encode_failure(Some(id.clone()), &failure));
                    }
                    // Removed when the call ends, or when its reply stream is dropped.
                    registered = Some(InFlight {
                        ctx: ctx.clone(),
                        id: id.clone(),
                    });
                }
                // Dropping the reply stream mid-call cancels it: the handler's signal fires.
                let on_drop = CancelOnDrop(Some(cancel.clone()));
                let traced = RequestSpan::open(adapter, &call, ctx);
                #[cfg(feature = "metrics")]
                let metered = self
                    .registry
                    .metrics
                    .as_ref()
                    .map(|m| (m, std::time::Instant::now()));
                let done = self
                    .call(adapter, &mut call, ctx, sink, &cancel)
                    .instrument(traced.span.clone())
                    .await;
                traced.close(adapter, &done, cancel.is_cancelled());
                #[cfg(feature = "metrics")]
                if let Some((metrics, started)) = metered {
                    let (outcome, _) = telemetry::outcome_of(adapter, &done, cancel.is_cancelled());
                    metrics.request(
                        adapter.version(),
                        telemetry::method_label(&call.method),
                        outcome,
                        started.elapsed(),
                    );
                }
                on_drop.disarm();
                drop(registered);
                if cancel.is_cancelled() {
                    // A cancelled request gets no response.
                    return None;
                }
                let Done::Send(outcome, cache) = done else {
                    return None;
                };
                let context = ResultContext {
                    // Projected for this revision once, when its view was built.
                    server_info: Some(&self.registry.view(adapter).server_info),
                    server_info_projected: true,
                    cache,
                };
                adapter.encode(&call, outcome, &context)
            }
            other => {
                tracing::debug!(
                    ?other,
                    "an incoming item of a kind this server does not handle; ignored"
                );
                None
            }
        }
    }

    /// Publishes a reply to a pushed question where the waiting call reads it.
    async fn route_reply(&self, reply: &mcp_adapters::Reply, ctx: &Context) {
        let Some(id) = reply
            .id
            .as_str()
            .filter(|id| id.starts_with(PUSH_ID_PREFIX))
        else {
            tracing::debug!(id = %reply.id, "reply to a request this server did not push; ignored");
            return;
        };
        let topic = reply_topic(&ctx.inner.namespace, &owner_tag(&ctx.owner()), id);
        // Only to a question still waiting (its asker opened the topic): a reply to anything
        // else is discarded without storing it.
        match self
            .registry
            .log
            .publish_existing(&topic, encode_reply(&reply.outcome))
            .await
        {
            Ok(Some(_)) => {}
            Ok(None) => {
                tracing::debug!(%id, "reply to a question nobody is waiting for; discarded");
            }
            Err(err) => tracing::warn!(%err, "could not publish a reply to a pushed question"),
        }
    }

    async fn call(
        &self,
        adapter: Adapter,
        call: &mut Call,
        ctx: &Context,
        sink: &Sink,
        cancel: &CancelHandle,
    ) -> Done {
        let registry = &*self.registry;
        if !adapter.features().per_request_meta {
            let connection = ctx.conn();
            // Other calls read the connection's client through their exchange, shared.
            if call.operation == Operation::Describe {
                call.client.fill_from(connection.client());
            }
            if call.operation != Operation::SetLogLevel {
                call.log_level = connection.log_level;
            }
        }
        let view = registry.view(adapter);
        match call.operation {
            Operation::Describe => self.describe(adapter, call, ctx),
            Operation::HandshakeComplete
            | Operation::Progress
            | Operation::RootsListChanged
            | Operation::Notification => Done::Silent,
            Operation::Cancelled => {
                if let Some(id) = call.cancelled_request() {
                    ctx.cancel(&id);
                }
                Done::Silent
            }
            Operation::Ping => Done::value(json!({})),
            Operation::SetLogLevel => match call.log_level {
                Some(level) => {
                    ctx.conn().log_level = Some(level);
                    Done::value(json!({}))
                }
                None => Done::failure(Failure::invalid_params(
                    "logging/setLevel needs a valid level",
                )),
            },
            Operation::ListTools => match ctx
                .owner()
                .auth
                .filter(crate::exchange::AuthPrincipal::hides_tools)
            {
                // Only what the token may call (the resource server's option): filtered per
                // request, so paging runs over the principal's own list.
                Some(auth) => {
                    let callable: Vec<(String, Value)> = view
                        .tools
                        .iter()
                        .filter(|(name, _)| {
                            registry
                                .tool(name)
                                .is_none_or(|entry| auth.0.scopes.contains_all(&entry.tool.scopes))
                        })
                        .cloned()
                        .collect();
                    list(registry, ListKind::Tools, "tools", &callable, call)
                }
                None => list(registry, ListKind::Tools, "tools", &view.tools, call),
            },
            Operation::ListResources => list(
                registry,
                ListKind::Resources,
                "resources",
                &view.resources,
                call,
            ),
            Operation::ListResourceTemplates => list(
                registry,
                ListKind::Templates,
                "resourceTemplates",
                &view.templates,
                call,
            ),
            Operation::ListPrompts => {
                list(registry, ListKind::Prompts, "prompts", &view.prompts, call)
            }
            // Boxed like the other handlers: the driver of every call then stays small
            // enough for the allocator's per-thread cache (about 1 KB), where a larger box
            // takes glibc's slow path on every call.
            Operation::CallTool => {
                Box::pin(self.call_tool(adapter, view, call, ctx, sink, cancel)).await
            }
            Operation::ReadResource => {
                Box::pin(self.read_resource(adapter, call, ctx, sink, cancel)).await
            }
            Operation::GetPrompt => {
                Box::pin(self.get_prompt(adapter, call, ctx, sink, cancel)).await
            }
            Operation::Complete => Box::pin(self.complete(call)).await,
            Operation::Listen => Box::pin(self.listen(adapter, call, ctx, sink, cancel)).await,
            Operation::Subscribe => self.subscribe(call, ctx),
            Operation::Unsubscribe => self.unsubscribe(call, ctx),
            Operation::Extension => Box::pin(self.extension(adapter, call, ctx)).await,
            _ => Done::failure(Failure::unknown_method(&call.method)),
        }
    }

    /// A method some extension adds; `-32601` when none does.
    async fn extension(&self, adapter: Adapter, call: &mut Call, ctx: &Context) -> Done {
        let registry = &*self.registry;
        let Some((index, handler)) = registry.extension_methods.get(&*call.method) else {
            return Done::failure(Failure::unknown_method(&call.method));
        };
        let extension = &registry.extensions[*index];
        let client_settings = declared_extension(adapter, call, ctx, &extension.id);
        if extension.required && client_settings.is_none() {
            return Done::failure(Failure::missing_capability(
                json!({"extensions": {extension.id.as_str(): {}}}),
            ));
        }
        let mut params = std::mem::take(&mut call.params);
        // The revision's reserved `_meta` members are the protocol's, not the extension's.
        if let Some(Value::Object(meta)) = params.get_mut("_meta") {
            meta.retain(|key, _| !key.starts_with(mcp_wire::names::meta::PREFIX));
            if meta.is_empty() {
                params.remove("_meta");
            }
        }
        let request = crate::ExtensionRequest {
            method: call.method.to_string(),
            params,
            client_settings,
            principal: ctx.principal(),
            namespace: ctx.inner.namespace.clone(),
        };
        match std::panic::AssertUnwindSafe(handler(request))
            .catch_unwind()
            .await
        {
            Ok(Ok(result)) => Done::value(result),
            Ok(Err(crate::ExtensionError::InvalidParams(message))) => {
                Done::failure(Failure::invalid_params(message))
            }
            Ok(Err(crate::ExtensionError::Internal(message))) => {
                Done::failure(Failure::internal(message))
            }
            Err(panic) => Done::failure(panicked(&call.method, &panic_message(&*panic))),
        }
    }

    fn describe(&self, adapter: Adapter, call: &mut Call, ctx: &Context) -> Done {
        let registry = &*self.registry;
        if adapter.has_handshake() {
            let mut connection = ctx.conn();
            // The handshake's revision holds for the rest of the connection.
            connection.adapter = Some(adapter);
            // Keep the client's identity and capabilities for the life of the connection
            // (nothing reads them from the call after this).
            let client = std::mem::take(&mut call.client);
            connection.client = (!stated_nothing(&client)).then(|| Arc::new(client));
        }
        let view = registry.view(adapter);
        let result = adapter.describe_result(
            &registry.adapters,
            &registry.server_info,
            &view.capabilities,
            registry.instructions.as_deref(),
        );
        Done::Send(Outcome::Value(result), registry.list_cache)
    }

    async fn call_tool(
        &self,
        adapter: Adapter,
        view: &RevisionView,
        call: &mut Call,
        ctx: &Context,
        sink: &Sink,
        cancel: &CancelHandle,
    ) -> Done {
        // Nothing reads the target from the call after this.
        let name = call.target.take().unwrap_or_default();
        let (Some(entry), Some(tool_view)) =
            (self.registry.tool(&name), view.tool_views.get(&name))
        else {
            return Done::failure(Failure::unknown_tool(&name));
        };
        let structured = tool_view.structured_content;
        let finish = |result: ToolResult| {
            Done::Send(
                Outcome::Tool(as_declared(result, structured)),
                CacheHint::NONE,
            )
        };
        // Boxed where they await: rare paths that would otherwise make every call's future
        // larger. A first attempt's state is built with the exchange, if the handler takes one.
        let mut resumed = if call.request_state.is_none() {
            None
        } else {
            match Box::pin(self.resume(ctx, call, &name)).await {
                Ok(resumed) => Some(resumed),
                Err(done) => return done,
            }
        };
        // Only a handler that can ask needs the arguments again (to bind new request state).
        let arguments = Value::Object(if entry.tool.takes_exchange {
            call.arguments.clone()
        } else {
            std::mem::take(&mut call.arguments)
        });
        if let Err(issues) = entry.validator.validate(&arguments) {
            let text: Vec<String> = issues.iter().map(ToString::to_string).collect();
            return finish(crate::content::tool_result(CallToolResult::error(format!(
                "invalid arguments:\n{}",
                text.join("\n")
            ))));
        }
        // A task, when the server offers tasks, the tool supports them and the request
        // declared the extension (a `CreateTaskResult` needs the result envelope's
        // `resultType`). Read before the exchange takes the call's client context.
        let engine = self.registry.tasks.clone();
        let support = match &engine {
            Some(_) => entry.tool.task_support,
            None => crate::TaskSupport::Forbidden,
        };
        let as_task = support != crate::TaskSupport::Forbidden
            && adapter.features().result_envelope
            && declared_extension(adapter, call, ctx, crate::TASKS_EXTENSION).is_some();
        if support == crate::TaskSupport::Required && !as_task {
            return Done::failure(Failure::missing_capability(
                json!({"extensions": {crate::TASKS_EXTENSION: {}}}),
            ));
        }
        let deferred = as_task && entry.tool.deferred_task;
        let mut created = None;
        if let Some(engine) = engine.as_ref().filter(|_| as_task && !deferred) {
            match Box::pin(engine.create(
                &ctx.inner.namespace,
                ctx.principal().as_deref(),
                cancel.clone(),
            ))
            .await
            {
                Ok(made) => created = Some(made),
                Err(err) => return Done::failure(task_failure(&err)),
            }
        }
        let task_run = created.as_ref().map(|(_, run)| run.clone());
        // The exchange is built only for a handler that takes one (the tool function asks for
        // it while it starts the handler).
        let mut built = None;
        let started = (entry.tool.call)(arguments, &mut || {
            let resumed = resumed.take().unwrap_or_else(|| Resumed::fresh(call));
            let ex = self.exchange(adapter, call, ctx, sink, cancel, resumed);
            {
                let mut state = ex.lock();
                state.task = task_run
                    .clone()
                    .map(|run| run as Arc<dyn crate::exchange::TaskLink>);
                state.task_offered = deferred;
            }
            built = Some(ex.clone());
            ex
        });
        if let Some((record, run)) = created {
            let tool = TaskTool {
                adapter,
                structured,
                name,
            };
            spawn_task(tool, run, run_tool(started), built, cancel.clone());
            // Answered as the extension's result: not projected as a tool result.
            call.operation = Operation::Extension;
            return Done::value(record.create_result());
        }
        let run = if deferred {
            // Boxed: a rare path that would otherwise make every call's future larger.
            let tool = TaskTool {
                adapter,
                structured,
                name: name.clone(),
            };
            let deferred = Box::pin(self.run_deferred(
                tool,
                Box::pin(run_tool(started)),
                built.clone(),
                ctx,
                cancel,
            ));
            match deferred.await {
                Deferred::Ran(run) => run,
                Deferred::Task(done) => {
                    // Answered as the extension's result: not projected as a tool result.
                    call.operation = Operation::Extension;
                    return done;
                }
                Deferred::Failed(done) => return done,
            }
        } else {
            with_cancel(cancel, run_tool(started)).await
        };
        if let Some(ex) = &built
            && ex.lock().interrupt.is_some()
            && let Some(done) = Box::pin(self.interrupted(call, &name, ex)).await
        {
            return done;
        }
        match run {
            None => Done::Silent,
            Some(ToolRun::Done(ToolOutput(result))) => finish(result),
            Some(ToolRun::BadArguments(message)) => finish(crate::content::tool_result(
                CallToolResult::error(format!("invalid arguments:\n{message}")),
            )),
            Some(ToolRun::Panicked(message)) => {
                Done::failure(panicked(format_args!("tool {name:?}"), &message))
            }
        }
    }

    /// Runs the handler of a deferred-task tool until it ends (a synchronous call) or calls
    /// [`Exchange::start_task`]: then the task is created, the call answered with it, and the
    /// handler goes on in the background.
    async fn run_deferred(
        &self,
        tool: TaskTool,
        mut work: BoxFuture<'static, ToolRun>,
        built: Option<Exchange>,
        ctx: &Context,
        cancel: &CancelHandle,
    ) -> Deferred {
        let first = with_cancel(
            cancel,
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
        let Some(engine) = self.registry.tasks.as_ref() else {
            return Deferred::Failed(Done::failure(Failure::internal("tasks are not offered")));
        };
        let (record, run) = match engine
            .create(
                &ctx.inner.namespace,
                ctx.principal().as_deref(),
                cancel.clone(),
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
        spawn_task(tool, run, work, built, cancel.clone());
        Deferred::Task(Done::value(record.create_result()))
    }

    async fn read_resource(
        &self,
        adapter: Adapter,
        call: &mut Call,
        ctx: &Context,
        sink: &Sink,
        cancel: &CancelHandle,
    ) -> Done {
        let registry = &*self.registry;
        // Nothing reads the target from the call after this.
        let uri = call.target.take().unwrap_or_default();
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
                    t.parsed
                        .matches(&uri)
                        .map(|vars| (t.template.read.clone(), &t.template.meta, vars))
                })
            });
        let Some((read, meta, vars)) = found else {
            return Done::failure(Failure::resource_not_found(&uri));
        };
        let resumed = match self.resume(ctx, call, &uri).await {
            Ok(resumed) => resumed,
            Err(done) => return done,
        };
        let ex = self.exchange(adapter, call, ctx, sink, cancel, resumed);
        let request = ResourceRequest {
            uri: uri.clone(),
            vars,
        };
        let fut = std::panic::AssertUnwindSafe(read(request, ex.clone())).catch_unwind();
        let run = with_cancel(cancel, fut).await;
        if let Some(done) = self.interrupted(call, &uri, &ex).await {
            return done;
        }
        match run {
            None => Done::Silent,
            Some(Err(panic)) => Done::failure(panicked(
                format_args!("reading {uri}"),
                &panic_message(&*panic),
            )),
            Some(Ok(Err(ResourceError::NotFound(_)))) => {
                Done::failure(Failure::resource_not_found(&uri))
            }
            Some(Ok(Err(err))) => Done::failure(Failure::internal(err.to_string())),
            Some(Ok(Ok(contents))) => {
                let contents: Vec<Value> = contents
                    .into_iter()
                    .map(|mut c| {
                        crate::content::fill_mime_type(&mut c, meta.mime_type.as_deref());
                        serde_json::to_value(c).unwrap_or(Value::Null)
                    })
                    .collect();
                let mut result = serde_json::Map::new();
                result.insert("contents".into(), Value::Array(contents));
                Done::Send(Outcome::Value(Value::Object(result)), meta.cache)
            }
        }
    }

    async fn get_prompt(
        &self,
        adapter: Adapter,
        call: &mut Call,
        ctx: &Context,
        sink: &Sink,
        cancel: &CancelHandle,
    ) -> Done {
        // Nothing reads the target from the call after this.
        let name = call.target.take().unwrap_or_default();
        let Some(entry) = self.registry.prompt(&name) else {
            return Done::failure(Failure::unknown_prompt(&name));
        };
        let arguments = Value::Object(call.arguments.clone());
        if let Err(issues) = entry.validator.validate(&arguments) {
            let text: Vec<String> = issues.iter().map(ToString::to_string).collect();
            return Done::failure(Failure::invalid_params(format!(
                "invalid prompt arguments: {}",
                text.join("; ")
            )));
        }
        let resumed = match self.resume(ctx, call, &name).await {
            Ok(resumed) => resumed,
            Err(done) => return done,
        };
        let ex = self.exchange(adapter, call, ctx, sink, cancel, resumed);
        let fut = match (entry.prompt.render)(arguments, ex.clone()) {
            Ok(fut) => fut,
            Err(message) => {
                return Done::failure(Failure::invalid_params(format!(
                    "invalid prompt arguments: {message}"
                )));
            }
        };
        let run = with_cancel(cancel, std::panic::AssertUnwindSafe(fut).catch_unwind()).await;
        if let Some(done) = self.interrupted(call, &name, &ex).await {
            return done;
        }
        match run {
            None => Done::Silent,
            Some(Err(panic)) => Done::failure(panicked(
                format_args!("prompt {name:?}"),
                &panic_message(&*panic),
            )),
            Some(Ok(Err(PromptError::InvalidArguments(message)))) => Done::failure(
                Failure::invalid_params(format!("invalid prompt arguments: {message}")),
            ),
            Some(Ok(Err(err))) => Done::failure(Failure::internal(err.to_string())),
            Some(Ok(Ok(result))) => {
                Done::value(serde_json::to_value(result).unwrap_or(Value::Null))
            }
        }
    }

    async fn complete(&self, call: &Call) -> Done {
        let Some(completer) = &self.registry.completer else {
            return Done::value(Completion::default().to_value());
        };
        let Some(request) = CompletionRequest::from_params(&Value::Object(call.params.clone()))
        else {
            return Done::failure(Failure::invalid_params(
                "completion/complete needs `ref` and `argument`",
            ));
        };
        match std::panic::AssertUnwindSafe((completer.0)(request))
            .catch_unwind()
            .await
        {
            Ok(completion) => Done::value(completion.to_value()),
            Err(panic) => Done::failure(panicked("completion", &panic_message(&*panic))),
        }
    }

    /// Redeems the request state of a retry; answers count only for questions the state
    /// lists. Other answers (all of them, without state) are only offered to questions
    /// marked [`Question::answerable_up_front`](crate::Question::answerable_up_front).
    async fn resume(&self, ctx: &Context, call: &Call, target: &str) -> Result<Resumed, Done> {
        let Some(state_id) = &call.request_state else {
            return Ok(Resumed::fresh(call));
        };
        let bound = binding(
            &call.method,
            target,
            &call.arguments,
            ctx.principal().as_deref(),
        );
        let redeemed: Redeemed = match self
            .registry
            .states
            .redeem(&ctx.inner.namespace, state_id, &bound)
            .await
        {
            Ok(redeemed) => redeemed,
            Err(StateError::Invalid(why)) => {
                return Err(Done::failure(Failure::invalid_params(format!(
                    "invalid requestState: {why}"
                ))));
            }
            Err(err) => return Err(Done::failure(Failure::internal(err.to_string()))),
        };
        let mut answers = BTreeMap::new();
        let mut offered = serde_json::Map::new();
        if let Some(given) = &call.answers {
            for (key, raw) in given.as_map() {
                match redeemed
                    .asked
                    .get(key)
                    .and_then(|method| mcp_adapters::ClientRequestKind::from_method(method))
                {
                    Some(kind) => {
                        answers.insert(key.clone(), Answer::from_reply(kind, &Ok(raw.clone())));
                    }
                    None => {
                        offered.insert(key.clone(), raw.clone());
                    }
                }
            }
        }
        Ok(Resumed {
            asked: redeemed.asked,
            answers,
            offered,
            state: redeemed.payload,
        })
    }

    /// The exchange of `call`. It takes the call's client context (nothing reads it from the
    /// call afterwards); on revisions with a handshake, a call that states nothing itself
    /// shares the connection's.
    fn exchange(
        &self,
        adapter: Adapter,
        call: &mut Call,
        ctx: &Context,
        sink: &Sink,
        cancel: &CancelHandle,
        resumed: Resumed,
    ) -> Exchange {
        let registry = &*self.registry;
        let stated = std::mem::take(&mut call.client);
        let client = if adapter.features().per_request_meta {
            CallClient::Own(stated)
        } else {
            let connection = ctx.conn();
            match &connection.client {
                Some(shared) if stated_nothing(&stated) => CallClient::Shared(Arc::clone(shared)),
                _ => {
                    let mut filled = stated;
                    filled.fill_from(connection.client());
                    CallClient::Own(filled)
                }
            }
        };
        let owner = ctx.owner();
        let push = (ctx.inner.can_push && adapter.can_push_ask()).then(|| Pusher {
            log: registry.log.clone(),
            namespace: ctx.inner.namespace.clone(),
            timeout: registry.ask_timeout,
            #[cfg(feature = "metrics")]
            metrics: registry.metrics.clone(),
        });
        Exchange::new(ExchangeInner {
            adapter,
            operation: call.operation,
            request_id: call.id.clone(),
            client,
            progress_token: call.progress_token.clone(),
            log_level: call.log_level,
            sink: sink.clone(),
            cancel: cancel.clone(),
            ask: Mutex::new(AskState {
                answers: resumed.answers,
                asked: resumed.asked,
                offered: resumed.offered,
                ..AskState::default()
            }),
            previous_state: resumed.state,
            push,
            store: registry.states.store().clone(),
            namespace: ctx.inner.namespace.clone(),
            owner,
            shared: registry.shared.clone(),
        })
    }

    /// The outcome a handler's interruption calls for, if it was interrupted.
    async fn interrupted(&self, call: &Call, target: &str, ex: &Exchange) -> Option<Done> {
        let (interrupt, pending, mut asked, saved) = {
            let mut state = ex.lock();
            let interrupt = state.interrupt.take()?;
            (
                interrupt,
                std::mem::take(&mut state.pending),
                std::mem::take(&mut state.asked),
                state.saved_state.take(),
            )
        };
        match interrupt {
            Interrupted::Cancelled => Some(Done::Silent),
            Interrupted::Failed(failure) => Some(Done::failure(failure)),
            Interrupted::NeedsInput if pending.is_empty() => Some(Done::failure(
                Failure::internal("the handler stopped for input but asked nothing"),
            )),
            Interrupted::NeedsInput => {
                let mut requests = InputRequests::new();
                for (key, question) in pending {
                    asked.insert(key.clone(), question.kind().method().to_owned());
                    requests.insert(key, question.request);
                }
                let payload = saved.or_else(|| ex.state().cloned());
                let bound = binding(&call.method, target, &call.arguments, ex.principal());
                match self
                    .registry
                    .states
                    .issue(&ex.inner.namespace, bound, asked, payload)
                    .await
                {
                    Ok(state) => Some(Done::Send(
                        Outcome::InputRequired {
                            requests,
                            state: Some(state),
                        },
                        CacheHint::NONE,
                    )),
                    Err(err) => Some(Done::failure(Failure::internal(err.to_string()))),
                }
            }
        }
    }
}

/// What a task needs to know of its tool to record how it ended.
struct TaskTool {
    adapter: Adapter,
    /// The tool's result may carry `structuredContent` on this revision.
    structured: bool,
    name: String,
}

/// How the handler of a deferred-task tool went.
enum Deferred {
    /// It ended (or was cancelled) without starting its task.
    Ran(Option<ToolRun>),
    /// It started its task: the `CreateTaskResult`.
    Task(Done),
    /// Its task could not be created.
    Failed(Done),
}

/// The settings the client declared for the extension `id`: in this request's `_meta` on
/// revisions with per-request capabilities, at `initialize` on the others.
pub(crate) fn declared_extension(
    adapter: Adapter,
    call: &Call,
    ctx: &Context,
    id: &str,
) -> Option<Value> {
    let declared = |client: &ClientContext| {
        client
            .capability("extensions")
            .and_then(|e| e.get(id))
            .cloned()
    };
    if adapter.features().per_request_meta {
        declared(&call.client)
    } else {
        declared(ctx.conn().client())
    }
}

/// The failure a task that could not be created answers the call with.
/// The failure a peer gets for a handler that panicked (a tool's, in a task or not, a
/// resource's, a prompt's, the completer's, an extension method's): it names what failed and
/// nothing more. The panic's message may hold internal details (paths, values, secrets): it
/// goes to the server's log at ERROR only.
fn panicked(what: impl fmt::Display, message: &str) -> Failure {
    tracing::error!(handler = %what, panic = %message, "handler panicked");
    Failure::internal(format!("{what} failed unexpectedly"))
}

fn task_failure(err: &crate::task::TaskError) -> Failure {
    match err {
        crate::task::TaskError::Limit(message) => Failure::unavailable(message.clone()),
        other => Failure::internal(other.to_string()),
    }
}

/// Runs a tool's handler as the task `run`, in the background on this worker, and records how
/// it ends.
fn spawn_task(
    tool: TaskTool,
    run: Arc<crate::task::TaskRun>,
    work: impl Future<Output = ToolRun> + Send + 'static,
    ex: Option<Exchange>,
    cancel: CancelHandle,
) {
    let ending = async move {
        let out = with_cancel(&cancel, work).await;
        let interrupt = ex.as_ref().and_then(|ex| ex.lock().interrupt.take());
        task_ending(tool.adapter, out, interrupt, tool.structured, &tool.name)
    };
    tokio::spawn(run.drive(ending));
}

/// How a task's handler ended, as its record keeps it: the tool result the call would have
/// returned (a tool error included) or the JSON-RPC error.
fn task_ending(
    adapter: Adapter,
    out: Option<ToolRun>,
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
        (None, Some(ToolRun::Done(ToolOutput(result)))) => tool_result(result),
        (None, Some(ToolRun::BadArguments(message))) => tool_result(crate::content::tool_result(
            CallToolResult::error(format!("invalid arguments:\n{message}")),
        )),
        (None, Some(ToolRun::Panicked(message))) => {
            failed(&panicked(format_args!("tool {name:?}"), &message))
        }
    }
}

/// The requests in flight on a connection, by id, with their cancel handles. Most
/// connections (an HTTP request's) have one at a time: it is kept inline, and the hash table
/// is only used (and allocated) for more.
#[derive(Default)]
struct InFlightIds {
    first: Option<(Id, CancelHandle)>,
    more: FastMap<Id, CancelHandle>,
}

impl InFlightIds {
    /// Registers `id`; `false` (and nothing changes) when it is already in flight.
    fn insert(&mut self, id: Id, handle: CancelHandle) -> bool {
        if self.get(&id).is_some() {
            return false;
        }
        if self.first.is_none() {
            self.first = Some((id, handle));
        } else {
            self.more.insert(id, handle);
        }
        true
    }

    fn get(&self, id: &Id) -> Option<&CancelHandle> {
        match &self.first {
            Some((first, handle)) if first == id => Some(handle),
            _ => self.more.get(id),
        }
    }

    fn remove(&mut self, id: &Id) {
        if self.first.as_ref().is_some_and(|(first, _)| first == id) {
            self.first = None;
        } else {
            self.more.remove(id);
        }
    }

    fn handles(&self) -> impl Iterator<Item = &CancelHandle> {
        self.first
            .iter()
            .map(|(_, handle)| handle)
            .chain(self.more.values())
    }
}

/// A request id registered as in flight, until this is dropped.
struct InFlight {
    ctx: Context,
    id: Id,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.ctx.in_flight().remove(&self.id);
    }
}

/// What a retry brings back.
#[derive(Default)]
struct Resumed {
    asked: BTreeMap<String, String>,
    answers: BTreeMap<String, Answer>,
    offered: serde_json::Map<String, Value>,
    state: Option<Value>,
}

impl Resumed {
    /// A first attempt (no request state): the answers it carries are only offered.
    fn fresh(call: &Call) -> Self {
        Self {
            offered: call
                .answers
                .as_ref()
                .map(|given| given.as_map().clone())
                .unwrap_or_default(),
            ..Self::default()
        }
    }
}

/// What a call leads to.
pub(crate) enum Done {
    /// Encode this outcome (with these cache hints where the revision has them).
    Send(Outcome, CacheHint),
    /// Nothing is sent (a notification, a cancelled call).
    Silent,
}

impl Done {
    pub(crate) fn value(value: Value) -> Self {
        Self::Send(Outcome::Value(value), CacheHint::NONE)
    }

    pub(crate) fn failure(failure: Failure) -> Self {
        Self::Send(Outcome::Failure(failure), CacheHint::NONE)
    }
}

/// Runs `fut` unless the call is cancelled first (then the future is dropped).
async fn with_cancel<F: Future>(cancel: &CancelHandle, fut: F) -> Option<F::Output> {
    tokio::select! {
        // The handler first: one that waits for its cancellation signal sees it fire.
        biased;
        output = fut => Some(output),
        () = cancel.cancelled() => None,
    }
}

fn list(
    registry: &Registry,
    kind: ListKind,
    field: &str,
    entries: &[(String, Value)],
    call: &Call,
) -> Done {
    let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
    let Ok((range, next)) = page(kind, &keys, call.cursor.as_deref(), registry.page_size) else {
        return Done::failure(Failure::invalid_params("unknown cursor"));
    };
    let mut result = serde_json::Map::new();
    result.insert(
        field.into(),
        Value::Array(entries[range].iter().map(|(_, v)| v.clone()).collect()),
    );
    if let Some(next) = next {
        result.insert("nextCursor".into(), Value::String(next));
    }
    Done::Send(Outcome::Value(Value::Object(result)), registry.list_cache)
}

/// The id of the first request in a body, so a refusal before decoding can still name it.
fn first_id(decoded: &Decoded) -> Option<Id> {
    match decoded {
        Decoded::Single(Ok(Message::Request(request))) => Some(request.id.clone()),
        _ => None,
    }
}

/// Cancels a call whose future is dropped before it ends (its reply stream was dropped).
struct CancelOnDrop(Option<CancelHandle>);

impl CancelOnDrop {
    /// The call ended: nothing to cancel.
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.take() {
            cancel.cancel();
        }
    }
}

/// Subscriptions and listen streams of a connection.
impl Context {
    /// The namespace (tenant) of this connection: its request state, question topics and
    /// notifications.
    pub fn namespace(&self) -> &Namespace {
        &self.inner.namespace
    }

    /// The URIs this connection subscribed to with `resources/subscribe` (revisions with a
    /// handshake), sorted; an HTTP transport saves them in its session record.
    pub fn subscriptions(&self) -> Vec<String> {
        self.conn().subscriptions.iter().cloned().collect()
    }

    /// Whether this connection subscribed to `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.conn().subscriptions.contains(uri)
    }

    /// Replaces the subscribed URIs (an HTTP transport restoring a session record).
    pub fn set_subscriptions(&self, uris: impl IntoIterator<Item = impl Into<String>>) {
        self.conn().subscriptions = uris.into_iter().map(Into::into).collect();
    }

    /// Ends this connection's open `subscriptions/listen` streams gracefully: each sends its
    /// listen result and ends. For a transport whose peer is leaving (end of stdin). It cannot
    /// be undone: a later listen on this connection is acknowledged and closed at once.
    pub fn close_listeners(&self) {
        self.conn().listeners().close();
    }

    pub(crate) fn add_subscription(&self, uri: String) {
        self.conn().subscriptions.insert(uri);
    }

    pub(crate) fn remove_subscription(&self, uri: &str) {
        self.conn().subscriptions.remove(uri);
    }

    pub(crate) fn listeners_closer(&self) -> crate::notifier::Closer {
        self.conn().listeners().clone()
    }
}

/// A tool result as the tool declares it on the revision: a tool without an output schema
/// there (`structured` false) sends no `structuredContent`. Answered calls and finished tasks
/// both go through here.
fn as_declared(result: ToolResult, structured: bool) -> ToolResult {
    if structured {
        result
    } else {
        result.without_structured_content()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_ids_hold_one_inline_and_more_in_the_table() {
        let mut ids = InFlightIds::default();
        let (a, b, c) = (
            CancelHandle::new(),
            CancelHandle::new(),
            CancelHandle::new(),
        );
        assert!(ids.insert(Id::from(1), a.clone()));
        assert!(
            !ids.insert(Id::from(1), b.clone()),
            "an id is in flight once"
        );
        assert!(ids.insert(Id::from("two"), b.clone()));
        assert!(ids.insert(Id::from(3), c.clone()));
        assert!(!ids.insert(Id::from("two"), c.clone()));
        assert_eq!(ids.handles().count(), 3);
        // The inline one leaves; its id is free again, the others stay.
        ids.remove(&Id::from(1));
        assert!(ids.get(&Id::from(1)).is_none());
        assert!(ids.get(&Id::from("two")).is_some() && ids.get(&Id::from(3)).is_some());
        assert!(ids.insert(Id::from(1), a.clone()));
        ids.remove(&Id::from(3));
        ids.remove(&Id::from("nobody"));
        assert_eq!(ids.handles().count(), 2);
        // The handle found is the one registered under that id.
        ids.get(&Id::from("two")).unwrap().cancel();
        assert!(b.is_cancelled() && !a.is_cancelled());
    }
}
