//! The socket-free entry point: one incoming message in, the messages to send out.
//!
//! Every transport uses [`Server::handle`]. It decodes once, picks the revision's adapter
//! (by the adapters' selection rules, or the connection's `initialize`), lets the adapter
//! decode the message into a normalized call, runs it against the registry, and encodes the
//! outcome the revision's way. What a handler sends before its final response (progress, log
//! messages, pushed questions) comes out first, on the same stream.
//!
//! The rooms, in the order a call walks through them:
//!
//! - this module: the entry ([`Server::handle`]), the items of a body, a call's bookkeeping
//!   (in-flight id, span, metrics) and the encoding of what it ended with ([`Done`]);
//! - [`context`]: the connection a message came on ([`Context`]);
//! - `route`: which operation a call is, and the small ones answered on the spot (lists,
//!   `initialize`, ping, log level, completion, extension methods);
//! - `invoke`: the one path of a handler call (tools, resources, prompts): resume a retry,
//!   build the [`Exchange`](crate::Exchange), run under cancellation, turn an interruption
//!   into its outcome;
//! - `tasks`: the Tasks extension, a layer around a tool call (create the task, answer with
//!   it, run the handler in the background);
//! - [`reply`]: the stream of messages one input produces ([`Reply`]).

use std::fmt;
use std::future::Future;

use futures::FutureExt as _;
use mcp_adapters::{
    Adapter, CacheHint, Call, ClientContext, Encoded, Failure, Incoming, Operation, Outcome,
    ResultContext, SelectionInput, ToolResult,
};
use mcp_wire::jsonrpc::{self, Decoded, Id, Message};
use serde_json::Value;
use tracing::Instrument as _;

use crate::exchange::{CancelHandle, PUSH_ID_PREFIX, encode_reply, owner_tag, reply_topic};
use crate::server::{Served, Server};
use crate::sink::Sink;
use context::InFlight;
use telemetry::RequestSpan;

pub(crate) mod context;
mod invoke;
pub(crate) mod reply;
mod route;
pub(crate) mod session;
mod tasks;
pub(crate) mod telemetry;

pub use context::Context;
pub use reply::Reply;

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
        let (tx, rx) = crate::sink::queue(server.settings().max_queued);
        let ctx = ctx.clone();
        // A decoded body's future is boxed on its own: it is the HTTP path, and the future
        // that also reads bytes is larger (an allocation the allocator serves more slowly).
        let driver = match input {
            Input::Decoded { adapter, body } => {
                async move { server.serve_items(adapter, body, &ctx, &tx).await }.boxed()
            }
            input => async move { server.run(input, ctx, tx).await }.boxed(),
        };
        Reply::new(driver, rx)
    }

    async fn run(&self, input: Input, ctx: Context, sink: Sink) -> Option<Outgoing> {
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
                    let adapter = self.settings().adapters.newest();
                    return Some(Outgoing::Response(
                        adapter.encode_failure(None, &Failure::parse(detail)),
                    ));
                }
                let input = SelectionInput::from_body(&decoded);
                match self.settings().adapters.select(&input) {
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
        if let Some(limiter) = &self.settings().limiter {
            // stdio and the socket-free entry: one budget for the connection's caller (HTTP
            // checks its callers in the session pipeline, before this).
            let key = || crate::limit::CallerKey::Anonymous;
            // A token of this worker's lease admits without building the future of a take.
            if !limiter.admit_leased(&body, key)
                && let Some((id, verdict, method)) = limiter.first_refused(&body, key).await
            {
                let (failure, _) = verdict.refusal(&self.settings().refusals, &method);
                return Some(Outgoing::Response(adapter.encode_failure(id, &failure)));
            }
        }
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
                .item(adapter, item, ctx, sink, Cancel::Queue)
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
            if let Some(response) = self.item(adapter, item, ctx, sink, Cancel::Own).await {
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
        signal: Cancel,
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
                let cancel = match signal {
                    Cancel::Queue => sink.cancel_handle(),
                    Cancel::Own => CancelHandle::new(),
                };
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
                // The tool's place in this request's registry, before the call takes its
                // name: the `tool` label is read from the registry afterwards.
                #[cfg(feature = "metrics")]
                let metered = self.settings().metrics.as_ref().map(|m| {
                    let tool = match (call.operation, call.target.as_deref()) {
                        (Operation::CallTool, Some(name)) => {
                            Some(self.registry.tool_index.get(name).copied())
                        }
                        _ => None,
                    };
                    (m, std::time::Instant::now(), tool)
                });
                let done = self
                    .call(adapter, &mut call, ctx, sink, &cancel)
                    .instrument(traced.span.clone())
                    .await;
                traced.close(adapter, &done, cancel.is_cancelled());
                #[cfg(feature = "metrics")]
                if let Some((metrics, started, tool)) = metered {
                    let (outcome, _) = telemetry::outcome_of(adapter, &done, cancel.is_cancelled());
                    let tool = match tool {
                        None => crate::metrics::ToolLabel::None,
                        Some(index) => index
                            .and_then(|i| self.registry.tools.get(i))
                            .map_or(crate::metrics::ToolLabel::Other, |entry| {
                                crate::metrics::ToolLabel::Registered(&entry.tool.name)
                            }),
                    };
                    metrics.request(
                        adapter.version(),
                        telemetry::method_label(&call.method),
                        outcome,
                        tool,
                        started.elapsed(),
                    );
                }
                on_drop.disarm();
                drop(registered);
                if cancel.is_cancelled() {
                    // A cancelled request gets no response.
                    return None;
                }
                let cache = match &done {
                    Done::Send(_, cache) => *cache,
                    Done::Extension(_) => CacheHint::NONE,
                    Done::Silent => return None,
                };
                let context = ResultContext {
                    // Projected for this revision once, when its view was built.
                    server_info: Some(&self.registry.view(adapter).server_info),
                    server_info_projected: true,
                    cache,
                };
                match done {
                    Done::Send(outcome, _) => adapter.encode(&call, outcome, &context),
                    // Written as an extension method's result, whatever the call's method.
                    Done::Extension(value) => call.id.clone().map(|id| {
                        adapter.encode_result(
                            id,
                            Operation::Extension,
                            call.is_retry(),
                            value,
                            &context,
                        )
                    }),
                    Done::Silent => None,
                }
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
        // The answer's span, the child of the span that asked (its context ends the id when
        // that span was exported), on whichever worker asked.
        let span = crate::trace_link::answer_span(id);
        // Only to a question still waiting (its asker opened the topic): a reply to anything
        // else is discarded without storing it.
        let published = tracing::Instrument::instrument(
            self.settings()
                .log
                .publish_existing(&topic, encode_reply(&reply.outcome)),
            span,
        );
        match published.await {
            Ok(Some(_)) => {}
            Ok(None) => {
                tracing::debug!(%id, "reply to a question nobody is waiting for; discarded");
            }
            Err(err) => tracing::warn!(%err, "could not publish a reply to a pushed question"),
        }
    }
}

/// Where a call's cancellation signal lives: in its queue's allocation when the call has the
/// queue to itself (a single-message body), else its own (each call of a batch).
#[derive(Clone, Copy)]
enum Cancel {
    Queue,
    Own,
}

/// What a call leads to. The encoder reads how to write it from the variant, never from a
/// rewritten call.
pub(crate) enum Done {
    /// Encode this outcome as the result of the call's method (with these cache hints where
    /// the revision has them).
    Send(Outcome, CacheHint),
    /// An extension's result that answers the call in its method's place (the Tasks
    /// extension's `CreateTaskResult` for a `tools/call`): encoded as an extension method's
    /// result, not projected as the method's own.
    Extension(Value),
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

/// The failure a peer gets for a handler that panicked (a tool's, in a task or not, a
/// resource's, a prompt's, the completer's, an extension method's): it names what failed and
/// nothing more. The panic's message may hold internal details (paths, values, secrets): it
/// goes to the server's log at ERROR only.
fn panicked(what: impl fmt::Display, message: &str) -> Failure {
    tracing::error!(handler = %what, panic = %message, "handler panicked");
    Failure::internal(format!("{what} failed unexpectedly"))
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
