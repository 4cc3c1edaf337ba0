//! The [`Exchange`]: what a handler knows about, and can do within, the call it serves.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use mcp_adapters::{Adapter, ClientContext, Failure, LogLevel, Operation, Revision};
use mcp_hub::{EventLog, Namespace, StateStore};
use mcp_wire::jsonrpc::Id;
use serde_json::{Map, Value, json};

use crate::ask::{Answer, Question};
use crate::error::Interrupt;
use crate::state::random_id;

pub(crate) use crate::sink::{CancelHandle, Sink};

/// How pushed questions travel: out on the call's sink, back through the event log under a
/// topic named for the question's id and its owner.
#[derive(Clone)]
pub(crate) struct Pusher {
    pub(crate) log: Arc<dyn EventLog>,
    pub(crate) namespace: Namespace,
    pub(crate) timeout: Duration,
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<crate::Metrics>,
}

/// Who a connection belongs to, as far as the transport knows: the authenticated principal
/// and the transport's session. Questions pushed on the connection are answered only from a
/// connection with the same owner, and request state is bound to the principal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Owner {
    // Shared text: every call's exchange takes a copy of its connection's owner.
    pub(crate) principal: Option<Arc<str>>,
    pub(crate) session: Option<Arc<str>>,
    /// The verified access token's principal, when a resource server authenticated the
    /// request (`principal` is then its binding).
    pub(crate) auth: Option<AuthPrincipal>,
}

/// A shared [`Principal`](mcp_auth::Principal); owners compare by their `principal` text,
/// so two of these are equal when they are the same allocation.
#[derive(Clone, Debug)]
pub(crate) struct AuthPrincipal(pub(crate) Arc<mcp_auth::Principal>, pub(crate) bool);

impl AuthPrincipal {
    /// Whether `tools/list` shows only the tools the principal may call.
    pub(crate) fn hides_tools(&self) -> bool {
        self.1
    }
}

impl PartialEq for AuthPrincipal {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.binding() == other.0.binding()
    }
}

impl Eq for AuthPrincipal {}

/// The part of a reply topic that names the owner: empty when nothing is known, else a
/// SHA-256 digest of the principal and session (so neither appears in hub keys).
pub(crate) fn owner_tag(owner: &Owner) -> String {
    use sha2::{Digest as _, Sha256};
    if owner.principal.is_none() && owner.session.is_none() {
        return String::new();
    }
    let mut hash = Sha256::new();
    for part in [&owner.principal, &owner.session] {
        match part {
            Some(text) => {
                hash.update([1u8]);
                hash.update(u64::try_from(text.len()).unwrap_or(u64::MAX).to_be_bytes());
                hash.update(text.as_bytes());
            }
            None => hash.update([0u8]),
        }
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut tag = String::with_capacity(32);
    for b in &hash.finalize()[..16] {
        tag.push(char::from(HEX[usize::from(b >> 4)]));
        tag.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    tag
}

/// The topic a reply to the pushed request `id` is published under: namespaced, and named
/// for the owner of the connection that asked, so a reply from another tenant, principal or
/// session reaches nobody.
pub(crate) fn reply_topic(namespace: &Namespace, owner: &str, id: &str) -> mcp_hub::Topic {
    if owner.is_empty() {
        namespace.topic(&format!("ask/{id}"))
    } else {
        namespace.topic(&format!("ask/{owner}/{id}"))
    }
}

/// The prefix of ids the server gives pushed requests.
pub(crate) const PUSH_ID_PREFIX: &str = "mcp-q-";

#[derive(Default)]
pub(crate) struct AskState {
    /// Answers available to this attempt (validated against the questions asked before, or
    /// received on this attempt).
    pub(crate) answers: BTreeMap<String, Answer>,
    /// Every question asked on earlier attempts (key to method), carried into new state.
    pub(crate) asked: BTreeMap<String, String>,
    /// Answers the call carried that no request state binds: read only for questions marked
    /// [`Question::answerable_up_front`].
    pub(crate) offered: Map<String, Value>,
    /// Questions to send back, in the order asked.
    pub(crate) pending: Vec<(String, Question)>,
    /// Why the handler could not go on, if it could not.
    pub(crate) interrupt: Option<Interrupted>,
    /// State the handler wants back on the next attempt.
    pub(crate) saved_state: Option<Value>,
    /// The task this call runs as, once it runs as one: questions become its input requests.
    pub(crate) task: Option<Arc<dyn TaskLink>>,
    /// The call may become a task when the handler calls [`Exchange::start_task`].
    pub(crate) task_offered: bool,
    /// The handler asked for its task; the call answers with it and lets the handler go on.
    pub(crate) promote: Option<tokio::sync::oneshot::Sender<()>>,
}

/// The task a call runs as, as its exchange sees it (the task engine implements it): its
/// questions become the task's input requests.
pub(crate) trait TaskLink: Send + Sync {
    /// The task's id.
    fn id(&self) -> &str;

    /// Puts the question `request` under `key` in the task's `inputRequests` and waits for
    /// its answer (`tasks/update`, from any worker).
    fn ask<'a>(
        &'a self,
        key: &'a str,
        request: Value,
    ) -> futures::future::BoxFuture<'a, Result<Value, TaskAskError>>;
}

/// Why a question could not become an input request.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TaskAskError {
    /// The task was cancelled, or its record is gone.
    #[error("the task was cancelled")]
    Cancelled,
    /// Too many questions pending, or the hub failed.
    #[error("{0}")]
    Failed(String),
}

/// What stopped a handler.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Interrupted {
    NeedsInput,
    /// The question cannot be put (capability not declared, operation or revision cannot
    /// carry it): answer the call with this failure.
    Failed(Failure),
    Cancelled,
}

/// The client context of a call: its own (2026-07-28, or stated on the call), or the one its
/// connection keeps, shared rather than copied.
pub(crate) enum CallClient {
    Own(ClientContext),
    Shared(Arc<ClientContext>),
}

impl std::ops::Deref for CallClient {
    type Target = ClientContext;

    fn deref(&self) -> &ClientContext {
        match self {
            Self::Own(client) => client,
            Self::Shared(client) => client,
        }
    }
}

pub(crate) struct ExchangeInner {
    pub(crate) adapter: Adapter,
    pub(crate) operation: Operation,
    pub(crate) request_id: Option<Id>,
    pub(crate) client: CallClient,
    pub(crate) progress_token: Option<Id>,
    pub(crate) log_level: Option<LogLevel>,
    pub(crate) sink: Sink,
    pub(crate) cancel: CancelHandle,
    pub(crate) ask: Mutex<AskState>,
    pub(crate) previous_state: Option<Value>,
    pub(crate) push: Option<Pusher>,
    pub(crate) store: Arc<dyn StateStore>,
    pub(crate) namespace: Namespace,
    /// The connection's owner: the authenticated principal, when the transport knows one,
    /// and the session (pushed questions are answered under its [`owner_tag`], computed
    /// when one is asked).
    pub(crate) owner: Owner,
    /// What every call of the server shares.
    pub(crate) shared: Arc<Shared>,
    /// The trace context the request carried (`_meta.traceparent`, or its header), if any.
    pub(crate) trace: Option<Box<mcp_wire::trace::TraceContext>>,
}

/// The store key of session `id`'s record in `namespace` (the session store's, read here so
/// this module does not import it).
pub(crate) fn session_key(namespace: &Namespace, id: &str) -> mcp_hub::Key {
    namespace.key(&format!("mcp-session/{id}"))
}

/// A transport session, as [`Exchange::session`] gives it: comparable and hashable (two refs
/// of one session are equal), and able to tell whether the session still exists. Its id is a
/// credential, so it is not shown: `Debug` prints its first 8 characters only.
#[derive(Clone)]
pub struct SessionRef {
    id: Arc<str>,
    key: mcp_hub::Key,
    store: Arc<dyn StateStore>,
}

impl SessionRef {
    /// Whether the session still exists: not ended by its client (an HTTP `DELETE`, a closed
    /// HTTP+SSE stream) and not expired. Read from the state store the sessions live in (the
    /// hub, when the server has one), so any worker sharing it sees the same. A store that
    /// cannot be read counts as live.
    pub async fn is_live(&self) -> bool {
        !matches!(self.store.get(&self.key).await, Ok(None))
    }
}

impl PartialEq for SessionRef {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for SessionRef {}

impl std::hash::Hash for SessionRef {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key.hash(state);
    }
}

impl fmt::Debug for SessionRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Enough to tell sessions apart in a log, as the request spans show them.
        let tag: String = self.id.chars().take(8).collect();
        f.debug_tuple("SessionRef").field(&tag).finish()
    }
}

/// What every call of a server shares (one reference count per call).
pub(crate) struct Shared {
    /// The server's shared state ([`ServerBuilder::with_state`](crate::ServerBuilder::with_state)).
    pub(crate) app_state: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// The event log notifications are published to.
    pub(crate) log: Arc<dyn EventLog>,
}

/// What a handler receives about its call: revision, client, progress, logging, cancellation,
/// asking the user, and the state store.
///
/// Cheap to clone; every clone refers to the same call. A tool, resource or prompt handler
/// gets it by taking it as its last argument:
///
/// ```
/// use mcp_server::{Exchange, LogLevel, Server, Tool};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct CountArgs {
///     /// How many steps.
///     n: u32,
/// }
///
/// async fn count(args: CountArgs, ex: Exchange) -> String {
///     for i in 1..=args.n {
///         if ex.is_cancelled() {
///             return format!("stopped at {i}");
///         }
///         // Sent only when the client asked for progress (a progress token).
///         ex.progress(f64::from(i), Some(f64::from(args.n)), Some("counting"));
///         ex.log(LogLevel::Info, format!("step {i}"));
///     }
///     format!("counted to {}", args.n)
/// }
///
/// let server = Server::builder("demo", "1.0").tool(Tool::new("count", count)).build().unwrap();
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct Exchange {
    pub(crate) inner: Arc<ExchangeInner>,
}

impl fmt::Debug for Exchange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exchange")
            .field("revision", &self.inner.adapter.revision())
            .field("operation", &self.inner.operation)
            .field("request_id", &self.inner.request_id)
            .finish_non_exhaustive()
    }
}

impl Exchange {
    pub(crate) fn new(inner: ExchangeInner) -> Self {
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The server's shared state of type `S` (not the request state of
    /// [`Exchange::state`]), set with
    /// [`ServerBuilder::with_state`](crate::ServerBuilder::with_state) (a clone; `None` when
    /// the server has none of that type). Handlers usually take it as a [`State`](crate::State)
    /// argument instead.
    pub fn app_state<S: Clone + Send + Sync + 'static>(&self) -> Option<S> {
        self.inner
            .shared
            .app_state
            .as_ref()
            .and_then(|s| s.downcast_ref::<S>())
            .cloned()
    }

    /// A [`Notifier`](crate::Notifier) publishing to the server's event log in this call's
    /// namespace (handlers usually take it as an argument instead).
    pub fn notifier(&self) -> crate::Notifier {
        crate::Notifier::new(self.inner.shared.log.clone(), self.inner.namespace.clone())
    }

    /// The protocol revision of this call.
    pub fn revision(&self) -> Revision {
        self.inner.adapter.revision()
    }

    /// The revision's adapter (its flags say what the revision can do).
    pub fn adapter(&self) -> Adapter {
        self.inner.adapter
    }

    /// The request id of this call.
    pub fn request_id(&self) -> Option<&Id> {
        self.inner.request_id.as_ref()
    }

    /// The W3C trace context to send with the requests this handler makes to other services
    /// (an HTTP call's `traceparent` header, an MCP request's `_meta`, with
    /// [`TraceContext::write_meta`](mcp_wire::trace::TraceContext::write_meta)), so they join
    /// the trace this request belongs to.
    ///
    /// With the `otel` feature and a subscriber exporting the spans, it names the current
    /// span (the request's, or one the handler opened inside it); otherwise it is the context
    /// the request carried (its `_meta.traceparent`, or on Streamable HTTP its `traceparent`
    /// header while request spans are recorded). `None` when there is neither.
    ///
    /// ```
    /// use mcp_server::{Exchange, ToolError};
    ///
    /// async fn fetch_report(ex: Exchange) -> Result<String, ToolError> {
    ///     let traceparent = ex.trace_context().map(|c| c.traceparent.to_string());
    ///     // ... send it as the `traceparent` header of the downstream request ...
    ///     Ok(format!("fetched (trace context: {traceparent:?})"))
    /// }
    /// ```
    pub fn trace_context(&self) -> Option<mcp_wire::trace::TraceContext> {
        if let Some(current) = crate::trace_link::current_context() {
            return Some(mcp_wire::trace::TraceContext {
                baggage: self.inner.trace.as_ref().and_then(|t| t.baggage.clone()),
                ..current
            });
        }
        self.inner.trace.as_deref().cloned()
    }

    /// The client's `Implementation` (`{name, version, ...}`), when known. On revisions with a
    /// handshake it is the one given at `initialize`, kept for the connection.
    pub fn client_info(&self) -> Option<&Value> {
        self.inner.client.info.as_ref()
    }

    /// The client's capabilities: declared at `initialize` (kept for the connection), or in
    /// this request's `_meta` on 2026-07-28, where silence means none.
    pub fn client_capabilities(&self) -> Option<&Map<String, Value>> {
        self.inner.client.capabilities.as_ref()
    }

    /// Reports progress, if the client asked for it (sent a progress token); otherwise does
    /// nothing. `message` is dropped on revisions without it (2024-11-05).
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.inner.progress_token else {
            return;
        };
        // Coalesced per token when the client reads slower than the handler reports.
        let _ = self.inner.sink.send_lossy(
            self.inner
                .adapter
                .progress_notification(token, progress, total, message),
            crate::sink::Lossy::Progress(token),
        );
    }

    /// The log level the client asked for, if any: `logging/setLevel` on the connection, or
    /// this request's `_meta` on 2026-07-28.
    pub fn log_level(&self) -> Option<LogLevel> {
        self.inner.log_level
    }

    /// Sends a log message (`notifications/message`) if the client asked for logs at `level`
    /// or below; otherwise does nothing.
    pub fn log(&self, level: LogLevel, data: impl Into<Value>) {
        self.log_to(level, None, data);
    }

    /// Like [`log`](Self::log), naming the logger.
    pub fn log_to(&self, level: LogLevel, logger: Option<&str>, data: impl Into<Value>) {
        let Some(threshold) = self.inner.log_level else {
            return;
        };
        if level < threshold {
            return;
        }
        // Dropped when the call is over (its stream closed) or its queue is full.
        let _ = self.inner.sink.send_lossy(
            self.inner
                .adapter
                .log_notification(level, data.into(), logger),
            crate::sink::Lossy::Log,
        );
    }

    /// The call was cancelled (the client sent `notifications/cancelled`, or closed the
    /// stream).
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Waits until the call is cancelled.
    pub async fn cancelled(&self) {
        self.inner.cancel.cancelled().await;
    }

    /// The handle-based state store (namespaced), for handlers that keep their own state.
    pub fn store(&self) -> &Arc<dyn StateStore> {
        &self.inner.store
    }

    /// The namespace this call's keys and topics live in.
    pub fn namespace(&self) -> &Namespace {
        &self.inner.namespace
    }

    /// The authenticated principal of the call, when the transport set one with
    /// [`Context::with_principal`](crate::Context::with_principal). Request state issued to
    /// one principal is refused to any other.
    pub fn principal(&self) -> Option<&str> {
        self.inner.owner.principal.as_deref()
    }

    /// The verified access token's principal (subject, client id, scopes, claims), when the
    /// endpoint has a [`ResourceServer`](crate::auth::ResourceServer).
    pub fn auth(&self) -> Option<&mcp_auth::Principal> {
        self.inner.owner.auth.as_ref().map(|a| &*a.0)
    }

    /// The state this handler saved with [`save_state`](Self::save_state) on the attempt
    /// before, when the call is a retry after a question.
    pub fn state(&self) -> Option<&Value> {
        self.inner.previous_state.as_ref()
    }

    /// Saves `state` for the next attempt of this call, when a question interrupts this one.
    /// It stays on the server; the client only carries an opaque id.
    pub fn save_state(&self, state: Value) {
        self.lock().saved_state = Some(state);
    }

    /// The key was answered (on an earlier attempt, or earlier in this one).
    pub fn answered(&self, key: &str) -> bool {
        self.lock().answers.contains_key(key)
    }

    /// The transport session this call came in on: a Streamable HTTP session
    /// (`Mcp-Session-Id`, on the revisions that have sessions) or an HTTP+SSE stream. `None`
    /// on stdio and where the revision has no sessions (2026-07-28). A handler that keeps
    /// something per session (a gateway's upstream connection) keys it by this, and asks
    /// [`SessionRef::is_live`] whether the session still exists.
    ///
    /// ```
    /// use mcp_server::{Exchange, ToolError};
    ///
    /// async fn per_session(ex: Exchange) -> Result<String, ToolError> {
    ///     Ok(match ex.session() {
    ///         Some(session) => format!("in session {session:?}"),
    ///         None => "no session".to_owned(),
    ///     })
    /// }
    /// ```
    pub fn session(&self) -> Option<SessionRef> {
        let id = self.inner.owner.session.clone()?;
        Some(SessionRef {
            key: session_key(&self.inner.namespace, &id),
            id,
            store: self.inner.store.clone(),
        })
    }

    /// The answers this call carried that answer no question the server asked on an earlier
    /// attempt (`inputResponses` on 2026-07-28, `mcpAnswers` on 2025-03-26 and 2024-11-05,
    /// sent up front or under keys the server does not know), raw, by key: the ones a
    /// question marked [`answerable_up_front`](Question::answerable_up_front) may still take.
    /// [`ask`](Self::ask) ignores them otherwise. A gateway passes them on to the server it
    /// forwards the call to, which decides for its own questions.
    ///
    /// ```
    /// use mcp_server::{Exchange, ToolError};
    ///
    /// async fn forward(ex: Exchange) -> Result<String, ToolError> {
    ///     let unasked = ex.unasked_answers();
    ///     Ok(format!("{} answers given up front", unasked.len()))
    /// }
    /// ```
    pub fn unasked_answers(&self) -> Map<String, Value> {
        self.lock().offered.clone()
    }

    /// Asks the client (and through it, the user) `question` under `key`, by whatever means
    /// the revision has, and returns the answer.
    ///
    /// `key` names the question within the call: keep it stable across attempts (a literal,
    /// or derived from the arguments), and use a different key for each question. It returns
    /// at once when `key` is already answered. Otherwise:
    ///
    /// - where the question is the result (2026-07-28, MRTR) or rides in the tool call
    ///   (2025-03-26, 2024-11-05: `mcpAnswers`/`mcpState`), it returns
    ///   [`Interrupt::NeedsInput`]: pass it on with `?`. The call is answered with the
    ///   question, and **the handler runs again from the start** when the answers come (each
    ///   attempt may even run on another worker), so everything before the last `ask` may run
    ///   several times. Put irreversible work after the final question, and keep what an
    ///   earlier attempt computed with [`save_state`](Self::save_state) if it is costly;
    /// - where the question is pushed (2025-06-18, 2025-11-25), it sends a server-to-client
    ///   request on the call's stream and waits for the reply, which may reach any worker
    ///   sharing the hub. A JSON-RPC error reply is a refusal ([`AnswerAction::Cancel`](crate::AnswerAction::Cancel)),
    ///   never an acceptance; no reply within the server's
    ///   [`ask_timeout`](crate::ServerBuilder::ask_timeout) (default 120 s) gives
    ///   [`Interrupt::TimedOut`], which the handler may handle or pass on;
    /// - a client that did not declare the capability the question needs (at `initialize`, or
    ///   in this request's `_meta` on 2026-07-28, where silence means no), an operation that
    ///   cannot carry a question on this revision (a prompt or resource on 2025-03-26 and
    ///   2024-11-05, where only tools can ask), or a transport that cannot push (a plain JSON
    ///   response) gives [`Interrupt::CannotAsk`]. The call then fails however the handler
    ///   ends: on 2026-07-28 with -32021 and `requiredCapabilities`, elsewhere with an
    ///   internal error naming the reason.
    ///
    /// Answers are only read for questions the server asked on an earlier attempt of the same
    /// call (the request state lists them): answers the client sends unasked are ignored,
    /// unless the question is [`answerable_up_front`](Question::answerable_up_front).
    ///
    /// ```
    /// use mcp_server::{Exchange, Question, ToolError};
    /// # use schemars::JsonSchema;
    /// # use serde::Deserialize;
    /// # #[derive(Deserialize, JsonSchema)]
    /// # struct Args { service: String }
    /// # fn start_deployment(_: &str) {}
    ///
    /// async fn deploy(args: Args, ex: Exchange) -> Result<String, ToolError> {
    ///     // May run once per attempt: reading and asking only.
    ///     let sure = ex.ask("confirm", Question::elicit(format!("Deploy {}?", args.service))).await?;
    ///     if !sure.accepted() {
    ///         return Ok("nothing deployed".into());
    ///     }
    ///     // After the final question: runs once, on the attempt that has every answer.
    ///     start_deployment(&args.service);
    ///     Ok(format!("deploying {}", args.service))
    /// }
    /// ```
    pub async fn ask(&self, key: &str, question: Question) -> Result<Answer, Interrupt> {
        if self.is_cancelled() {
            return Err(self.stop(Interrupted::Cancelled));
        }
        {
            let mut state = self.lock();
            if let Some(answer) = state.answers.get(key) {
                return Ok(answer.clone());
            }
            if question.up_front
                && let Some(raw) = state.offered.remove(key)
                && crate::ask::well_formed(question.kind(), &raw)
            {
                let answer = Answer::from_reply(question.kind(), &Ok(raw));
                state.answers.insert(key.to_owned(), answer.clone());
                return Ok(answer);
            }
        }
        let adapter = self.inner.adapter;
        if adapter.asks_in_arguments() && self.inner.operation != Operation::CallTool {
            // Only a tool call has arguments to carry the answers back in.
            return Err(self.stop(Interrupted::Failed(Failure::internal(format!(
                "{} cannot ask the user on {}: only tools can ask on this revision, through \
                 their mcpAnswers/mcpState arguments",
                match self.inner.operation {
                    Operation::GetPrompt => "prompts/get".to_owned(),
                    Operation::ReadResource => "resources/read".to_owned(),
                    other => format!("{other:?}"),
                },
                adapter.version()
            )))));
        }
        if let Err(failure) = adapter.check_ask(
            self.inner.operation,
            question.as_request(),
            &self.inner.client,
        ) {
            return Err(self.stop(Interrupted::Failed(failure)));
        }
        let task = self.lock().task.clone();
        if let Some(task) = task {
            return self.ask_in_task(&*task, key, question).await;
        }
        if adapter.can_push_ask() {
            let Some(push) = self.inner.push.clone() else {
                return Err(self.stop(Interrupted::Failed(Failure::internal(
                    "this transport cannot carry a question to the client",
                ))));
            };
            tracing::debug!(key, kind = ?question.kind(), "question pushed to the client");
            #[cfg(feature = "metrics")]
            let _pending = push.metrics.as_ref().map(crate::Metrics::question);
            let span = crate::trace_link::ask_span(question.kind().method());
            let answer = tracing::Instrument::instrument(self.push(&push, &question), span).await?;
            tracing::debug!(key, "question answered");
            self.lock().answers.insert(key.to_owned(), answer.clone());
            return Ok(answer);
        }
        tracing::debug!(key, kind = ?question.kind(), "question returned to the client with the result");
        let mut state = self.lock();
        if !state.pending.iter().any(|(k, _)| k == key) {
            state.pending.push((key.to_owned(), question));
        }
        state.interrupt = Some(Interrupted::NeedsInput);
        Err(Interrupt::NeedsInput)
    }

    async fn push(&self, push: &Pusher, question: &Question) -> Result<Answer, Interrupt> {
        let fail = |what: &str| {
            self.stop(Interrupted::Failed(Failure::internal(format!(
                "the question could not be sent: {what}"
            ))))
        };
        // With the ask span exported, the id also names it: the worker the answer is POSTed
        // to (any worker) makes its span of the answer that span's child. The question's
        // `_meta` carries the same context, so the id tells the client nothing new.
        let asking = crate::trace_link::current_context();
        let id = match (random_id(), &asking) {
            (Ok(id), Some(asking)) => format!("{PUSH_ID_PREFIX}{id}.{}", asking.traceparent),
            (Ok(id), None) => format!("{PUSH_ID_PREFIX}{id}"),
            (Err(err), _) => return Err(fail(&err.to_string())),
        };
        let mut request = match self
            .inner
            .adapter
            .pushed_request(Id::String(id.clone()), question.as_request())
        {
            Ok(request) => request,
            Err(failure) => return Err(self.stop(Interrupted::Failed(failure))),
        };
        tracing::Span::current().record("jsonrpc.request.id", id.as_str());
        // The question carries the ask span's context, so the client's handling of it can
        // join the trace.
        if let Some(asking) = &asking
            && let Some(Value::Object(params)) = request.get_mut("params")
        {
            asking.write_params(params);
        }
        let topic = reply_topic(&push.namespace, &owner_tag(&self.inner.owner), &id);
        // Open the topic with a marker before the question goes out: a reply is published only
        // to a topic that exists (so replies to questions nobody asked cost nothing), and one
        // that comes before the first poll is still read, after the marker.
        let cursor = match push.log.publish(&topic, Bytes::from_static(b"asked")).await {
            Ok(cursor) => cursor,
            Err(err) => return Err(fail(&err.to_string())),
        };
        // Never dropped: waits for room while the client reads slowly.
        if self.inner.sink.send_wait(request).await.is_err() {
            return Err(self.stop(Interrupted::Cancelled));
        }
        let deadline = tokio::time::Instant::now() + push.timeout;
        // A backend outage (Redis or a database restarting) does not end the wait: the poll is
        // tried again, after a pause that doubles up to a second, until the ask's deadline. A
        // topic that came back without its marker (a backend that lost its data) fails the ask.
        let mut pause = Duration::from_millis(25);
        let outcome = loop {
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            if remaining.is_zero() {
                break Err(Interrupt::TimedOut(push.timeout));
            }
            let events = tokio::select! {
                events = push.log.poll(&topic, cursor, remaining) => events,
                () = self.inner.cancel.cancelled() => break Err(self.stop(Interrupted::Cancelled)),
            };
            match events {
                Ok(events) => {
                    if let Some(event) = events.first() {
                        break Ok(Answer::from_reply(
                            question.kind(),
                            &decode_reply(&event.payload),
                        ));
                    }
                }
                Err(mcp_hub::LogError::Backend(err)) => {
                    tracing::debug!(%err, ?pause, "waiting for an answer: the hub is away");
                    let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
                    tokio::select! {
                        () = tokio::time::sleep(pause.min(remaining)) => {}
                        () = self.inner.cancel.cancelled() => break Err(self.stop(Interrupted::Cancelled)),
                    }
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                Err(err) => break Err(fail(&err.to_string())),
            }
        };
        let _ = push.log.delete(&topic).await;
        outcome
    }

    /// A question of a call running as a task: it becomes one of the task's `inputRequests`,
    /// and the answer comes from `tasks/update` (through the hub, from any worker).
    async fn ask_in_task(
        &self,
        task: &dyn TaskLink,
        key: &str,
        question: Question,
    ) -> Result<Answer, Interrupt> {
        let request = match self.inner.adapter.input_request(key, question.as_request()) {
            Ok(request) => request,
            Err(failure) => return Err(self.stop(Interrupted::Failed(failure))),
        };
        tracing::debug!(key, kind = ?question.kind(), task = task.id(), "question put in the task");
        match task.ask(key, request).await {
            Ok(raw) => {
                let answer = Answer::from_reply(question.kind(), &Ok(raw));
                self.lock().answers.insert(key.to_owned(), answer.clone());
                Ok(answer)
            }
            Err(TaskAskError::Cancelled) => Err(self.stop(Interrupted::Cancelled)),
            Err(TaskAskError::Failed(message)) => {
                Err(self.stop(Interrupted::Failed(Failure::internal(message))))
            }
        }
    }

    /// The id of the task this call runs as (the Tasks extension), if it runs as one.
    pub fn task_id(&self) -> Option<String> {
        self.lock().task.as_ref().map(|t| t.id().to_owned())
    }

    /// Starts the task of a tool declared with [`Tool::deferred_task`](crate::Tool::deferred_task):
    /// the call is answered with a `CreateTaskResult` now, and the handler goes on as the task
    /// (its later questions become the task's `inputRequests`). Returns at once, doing
    /// nothing, when the call cannot become a task (the request did not declare the Tasks
    /// extension, the tool does not defer its task) or already is one. Questions asked before
    /// it go back on the call itself, so everything before it may run once per attempt.
    ///
    /// ```
    /// use mcp_server::{Exchange, NoArgs, Question, TaskSupport, Tool, ToolError};
    ///
    /// async fn greet_later(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    ///     let name = ex.ask("user_name", Question::elicit("Your name?")).await?;
    ///     ex.start_task().await?;
    ///     // From here on, the call runs as a task.
    ///     Ok(format!("Hello, {}!", name.get("name").and_then(|v| v.as_str()).unwrap_or("you")))
    /// }
    ///
    /// let tool = Tool::new("greet_later", greet_later)
    ///     .task_support(TaskSupport::Required)
    ///     .deferred_task();
    /// # let _ = tool;
    /// ```
    pub async fn start_task(&self) -> Result<(), Interrupt> {
        let go = {
            let mut state = self.lock();
            if state.task.is_some() || !state.task_offered {
                return Ok(());
            }
            state.task_offered = false;
            let (tx, rx) = tokio::sync::oneshot::channel();
            state.promote = Some(tx);
            rx
        };
        match go.await {
            Ok(()) => Ok(()),
            Err(_) => Err(self.stop(Interrupted::Cancelled)),
        }
    }

    /// Ends the call with a JSON-RPC error instead of a result: `code`, `message` and `data`
    /// as a peer would have sent them, rendered by the revision the call speaks (invalid
    /// params, a missing client capability, a resource not found and a rate limit keep their
    /// meaning and take that revision's code; any other code is an internal error). In a task
    /// the task ends `failed` with this error. Pass the returned [`Interrupt`] on with `?`
    /// (what the handler returns after it is not sent).
    ///
    /// For a handler that passes on another server's protocol error (a gateway); a tool's own
    /// failures are tool errors ([`ToolError`](crate::ToolError), a result with `isError`),
    /// which the model sees.
    ///
    /// ```
    /// use mcp_server::{Exchange, NoArgs, ToolError};
    ///
    /// async fn forward(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    ///     // The other server refused the call with invalid params.
    ///     Err(ex.fail(-32602, "unknown field `x`", None).into())
    /// }
    /// # let _ = forward;
    /// ```
    pub fn fail(&self, code: i64, message: impl Into<String>, data: Option<Value>) -> Interrupt {
        self.stop(Interrupted::Failed(Failure::from_peer(code, message, data)))
    }

    fn stop(&self, why: Interrupted) -> Interrupt {
        let interrupt = match &why {
            Interrupted::NeedsInput => Interrupt::NeedsInput,
            Interrupted::Failed(failure) => Interrupt::CannotAsk(failure.message.clone()),
            Interrupted::Cancelled => Interrupt::Cancelled,
        };
        self.lock().interrupt = Some(why);
        interrupt
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, AskState> {
        // A handler that panicked while holding the lock leaves consistent data behind: every
        // update is a single insert or assignment.
        self.inner
            .ask
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A reply as published to the question's topic: `{"result": ...}` or `{"error": ...}`.
pub(crate) fn encode_reply(outcome: &Result<Value, mcp_wire::jsonrpc::ErrorObject>) -> Bytes {
    let value = match outcome {
        Ok(result) => json!({"result": result}),
        Err(error) => json!({"error": {"code": error.code, "message": error.message}}),
    };
    Bytes::from(value.to_string())
}

fn decode_reply(payload: &[u8]) -> Result<Value, mcp_wire::jsonrpc::ErrorObject> {
    let refused = || {
        Err(mcp_wire::jsonrpc::ErrorObject::internal_error(
            "unreadable reply",
        ))
    };
    match serde_json::from_slice::<Value>(payload) {
        Ok(Value::Object(mut reply)) => match reply.remove("result") {
            Some(result) => Ok(result),
            None => refused(),
        },
        _ => refused(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cancel_reaches_waiters_before_and_after_it() {
        let handle = CancelHandle::new();
        let clone = handle.clone();
        let waiting = tokio::spawn(async move { clone.cancelled().await });
        tokio::task::yield_now().await;
        assert!(!handle.is_cancelled());
        handle.cancel();
        waiting.await.unwrap();
        assert!(handle.is_cancelled());
        // Cancelled already: returns at once, however often it is asked.
        handle.cancelled().await;
        handle.cancel();
        handle.clone().cancelled().await;
        assert!(!CancelHandle::new().is_cancelled());
    }

    #[test]
    fn owner_tags_are_lowercase_hex_digests() {
        assert_eq!(owner_tag(&Owner::default()), "");
        let owner = Owner {
            principal: Some("iss|sub".into()),
            session: None,
            auth: None,
        };
        let tag = owner_tag(&owner);
        use sha2::{Digest as _, Sha256};
        let mut hash = Sha256::new();
        hash.update([1u8]);
        hash.update(7u64.to_be_bytes());
        hash.update(b"iss|sub");
        hash.update([0u8]);
        let expected: String = hash.finalize()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(tag, expected);
        assert_eq!(tag.len(), 32);
        let other = Owner {
            principal: None,
            session: Some("iss|sub".into()),
            auth: None,
        };
        assert_ne!(
            owner_tag(&other),
            tag,
            "principal and session are told apart"
        );
    }
}
