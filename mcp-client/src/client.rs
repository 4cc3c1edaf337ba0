//! The client: request ids, response routing, timeouts, cancellation, sessions, asking.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue};
use mcp_adapters::{
    Adapter, Answers, ClientContext, LogLevel, Operation, RequestHeaders, RequestMeta,
};
use mcp_schema::HeaderBinding;
use mcp_wire::jsonrpc::{ErrorObject, Id, Message, Notification, Request};
use mcp_wire::names::{error_code, meta, method};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::ask::{OnAsk, Question, declared};
use crate::cache::Cache;
use crate::error::{Error, ErrorKind};
use crate::transport::{
    Delivery, Inbound, MessageStream, Outbound, OutboundKind, Transport, TransportError,
    TransportInfo, refusal,
};

pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// A progress update for one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Progress so far.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// A message, on revisions that carry one.
    pub message: Option<String>,
}

type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;
pub(crate) type NotifyFn = Arc<dyn Fn(&Notification) + Send + Sync>;

/// Per-call options: a timeout, progress, a log level.
#[derive(Clone, Default)]
pub struct CallOptions {
    pub(crate) timeout: Option<Duration>,
    pub(crate) on_progress: Option<ProgressFn>,
    pub(crate) meta: Option<Map<String, Value>>,
    pub(crate) answers_up_front: Option<Map<String, Value>>,
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("on_progress", &self.on_progress.is_some())
            .field("meta", &self.meta)
            .field(
                "answers_up_front",
                &self.answers_up_front.as_ref().map(Map::len),
            )
            .finish()
    }
}

impl CallOptions {
    /// Default options: the client's timeout, no progress.
    pub fn new() -> Self {
        Self::default()
    }

    /// The timeout of this call, in place of the client's. A call that times out is cancelled
    /// the revision's way, and its `notifications/cancelled` (where the revision sends one)
    /// has been sent when the call returns [`ErrorKind::Timeout`] (waited for at most one more
    /// timeout), so the server hears of it before anything the caller sends next.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Receives the call's progress notifications (a progress token is sent with the call).
    pub fn on_progress(mut self, f: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(f));
        self
    }

    /// Extra `_meta` entries sent with the call.
    pub fn meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta
            .get_or_insert_with(Map::new)
            .insert(key.into(), value);
        self
    }

    /// Answers sent with the call's first attempt, before the server asked anything, by key:
    /// `inputResponses` on 2026-07-28 (`tools/call`, `prompts/get`, `resources/read`), the
    /// `mcpAnswers` argument of a tool call on 2025-03-26 and 2024-11-05, each with no request
    /// state. A server uses such an answer only for a question it lets the client answer up
    /// front, and ignores the others (the protocol asks servers to ignore keys they do not
    /// recognise); whatever it still asks goes through `on_ask` as usual. Where the revision
    /// has no way to carry them (questions pushed on 2025-06-18 and 2025-11-25, a method that
    /// cannot ask) they are not sent. Later attempts of the call carry them on with the
    /// answers given since (an answer under the same key replaces one given up front).
    ///
    /// On 2025-03-26 and 2024-11-05 they become arguments of the tool: give them only for a
    /// tool that declares the `mcpAnswers` argument, as a server may refuse arguments its
    /// tool does not declare.
    ///
    /// ```
    /// use mcp_client::CallOptions;
    /// use serde_json::json;
    ///
    /// let answers = json!({"user_name": {"action": "accept", "content": {"name": "Ada"}}});
    /// let options = CallOptions::new().answers_up_front(answers.as_object().cloned().unwrap());
    /// # let _ = options;
    /// ```
    pub fn answers_up_front(mut self, answers: Map<String, Value>) -> Self {
        self.answers_up_front = Some(answers);
        self
    }
}

/// What the server said about itself when the client connected.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerDescription {
    /// The capabilities object.
    pub capabilities: Value,
    /// The server's `Implementation` (`serverInfo`, or `_meta` on 2026-07-28), when sent.
    pub server_info: Option<Value>,
    /// Instructions for the model, when sent.
    pub instructions: Option<String>,
    /// The versions the server lists (2026-07-28 `supportedVersions`); empty after `initialize`.
    pub supported_versions: Vec<String>,
}

/// The most `tasks/cancel` requests of dropped task handles kept for [`Client::close`] to wait
/// for; beyond it the oldest finished ones are forgotten, then new ones are not waited for.
pub(crate) const MAX_PENDING_CANCELS: usize = 64;

pub(crate) struct Config {
    pub(crate) client_info: Value,
    pub(crate) timeout: Duration,
    pub(crate) on_ask: Option<OnAsk>,
    pub(crate) on_notification: Option<NotifyFn>,
    /// The extensions the client declares (`capabilities.extensions`).
    pub(crate) extensions: Map<String, Value>,
    /// How tasks are followed, when the client declares the Tasks extension.
    pub(crate) tasks: Option<crate::polling::TaskPolling>,
    pub(crate) max_rounds: usize,
    pub(crate) log_level: Option<LogLevel>,
    pub(crate) cache_entries: usize,
    pub(crate) probe_timeout: Duration,
    pub(crate) list_limits: ListLimits,
    /// How many notifications wait for each listener, and how many of the server's requests are
    /// answered at once.
    pub(crate) max_queued: usize,
    /// The revisions negotiation chooses among, newest first.
    pub(crate) revisions: Vec<mcp_adapters::Revision>,
    /// How rate-limited requests are retried.
    pub(crate) rate_limit: crate::rate_limit::RateLimitRetry,
    /// The trace context each request carries.
    pub(crate) trace: crate::trace::TracePropagation,
}

pub(crate) struct State {
    pub(crate) adapter: Adapter,
    /// `initialize` completed (so the version header is due on handshake revisions).
    pub(crate) initialized: bool,
    pub(crate) server: Option<ServerDescription>,
}

struct ListenerSlot {
    id: u64,
    subscription: Option<Id>,
    filter: crate::listeners::Filter,
    /// Bounded ([`Config::max_queued`]): a listener that falls behind loses notifications, counted
    /// in `dropped`, rather than the client holding them all.
    tx: mpsc::Sender<Notification>,
    dropped: Arc<std::sync::atomic::AtomicU64>,
    /// Why the listener's stream ended, set before its queue is closed.
    end: Arc<std::sync::OnceLock<crate::listeners::ListenEnd>>,
}

pub(crate) struct Inner {
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) info: TransportInfo,
    pub(crate) config: Config,
    pub(crate) state: RwLock<State>,
    next_id: AtomicI64,
    progress: Mutex<HashMap<Id, ProgressFn>>,
    listeners: Mutex<Vec<ListenerSlot>>,
    next_listener: AtomicI64,
    tools: Mutex<HashMap<String, Arc<[HeaderBinding]>>>,
    /// The tools the last listing annotated `idempotentHint` or `readOnlyHint`: their calls are
    /// retried when rate limited (bounded by the listing limits).
    retry_safe_tools: Mutex<std::collections::HashSet<String>>,
    cache: Mutex<Cache>,
    reinit: tokio::sync::Mutex<u64>,
    /// The number of re-initializations so far (read without the lock, written under it).
    sessions: std::sync::atomic::AtomicU64,
    closed: AtomicBool,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// The cancellations still on their way (`notifications/cancelled` of dropped calls,
    /// `tasks/cancel` of dropped task handles; at most [`MAX_PENDING_CANCELS`]): a call that
    /// times out and [`Client::close`] wait for them.
    pub(crate) cancels: Mutex<Vec<JoinHandle<()>>>,
    /// Permits for answering the server's requests, [`Config::max_queued`] of them.
    answering: Arc<tokio::sync::Semaphore>,
    pub(crate) get_stream: Mutex<Option<JoinHandle<()>>>,
    /// Where the standalone GET stream stands, for [`Client::listen`] to wait until it is open.
    pub(crate) stream_state: tokio::sync::watch::Sender<crate::listeners::StreamState>,
    /// The per-request `_meta` of the last revision used ([`Inner::request_meta`]).
    request_meta: RwLock<Option<(mcp_adapters::Revision, Arc<RequestMeta>)>>,
    /// The last `Mcp-Name` value sent, with its text ([`Inner::name_value`]).
    last_name: Mutex<Option<(Box<str>, HeaderValue)>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for task in self
            .tasks
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            task.abort();
        }
        if let Some(task) = self
            .get_stream
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            task.abort();
        }
    }
}

/// How many times one request's stream is resumed before the client gives up.
const MAX_RESUMES: u32 = 16;
/// The longest `retry:` pause honoured, in milliseconds.
const MAX_RETRY_MS: u64 = 30_000;
/// The pause before resuming again after a failed resume, when the server named no `retry`.
const DEFAULT_RETRY_MS: u64 = 1000;

/// `Mcp-Method: tools/call`, checked once at compile time (`HeaderValue::from_static` outside
/// a constant checks the text on every call).
const TOOLS_CALL_VALUE: HeaderValue = HeaderValue::from_static(method::TOOLS_CALL);

use crate::transport::lock;

/// A connected MCP client.
///
/// Cheap to clone: clones share the connection, the negotiated revision and the session. Every
/// call is bounded by a timeout, and dropping a call's future cancels it on the server
/// (closing its stream on 2026-07-28 over HTTP, `notifications/cancelled` otherwise).
///
/// Call [`Client::close`] to end the session (`DELETE` on Streamable HTTP) or the child process;
/// dropping the last clone only stops the client's background tasks.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("revision", &self.adapter().version())
            .field("transport", &self.inner.transport)
            .finish_non_exhaustive()
    }
}

/// How a request's first attempt ended, before revision-specific interpretation.
pub(crate) enum Outcome {
    Result(Value),
    /// A JSON-RPC error, or an HTTP error status, or both (an error object in an HTTP error body).
    Refused {
        error: Option<ErrorObject>,
        status: Option<u16>,
        /// The start of an HTTP error body ([`crate::transport::excerpt`]), when there was one.
        said: Option<String>,
        /// The HTTP `Retry-After`, when the refusal had one.
        retry_after: Option<Duration>,
    },
}

impl Inner {
    /// Keeps a cancellation on its way for [`flush_cancels`](Self::flush_cancels) (bounded:
    /// finished ones are dropped first, and past [`MAX_PENDING_CANCELS`] a new one is not
    /// waited for).
    pub(crate) fn keep_cancel(&self, sending: JoinHandle<()>) {
        let mut cancels = lock(&self.cancels);
        cancels.retain(|c| !c.is_finished());
        if cancels.len() < MAX_PENDING_CANCELS {
            cancels.push(sending);
        }
    }

    /// Waits, at most `timeout`, for the cancellations on their way to be sent.
    pub(crate) async fn flush_cancels(&self, timeout: Duration) {
        let cancels: Vec<JoinHandle<()>> = std::mem::take(&mut *lock(&self.cancels));
        if !cancels.is_empty() {
            let _ = tokio::time::timeout(timeout, futures::future::join_all(cancels)).await;
        }
    }

    pub(crate) fn new(
        transport: Arc<dyn Transport>,
        config: Config,
        adapter: Adapter,
    ) -> Arc<Self> {
        let info = transport.info();
        let cache = Cache::new(config.cache_entries);
        let answering = Arc::new(tokio::sync::Semaphore::new(config.max_queued.max(1)));
        let inner = Arc::new(Self {
            transport,
            info,
            config,
            state: RwLock::new(State {
                adapter,
                initialized: false,
                server: None,
            }),
            next_id: AtomicI64::new(1),
            progress: Mutex::new(HashMap::new()),
            listeners: Mutex::new(Vec::new()),
            next_listener: AtomicI64::new(1),
            tools: Mutex::new(HashMap::new()),
            retry_safe_tools: Mutex::new(std::collections::HashSet::new()),
            cache: Mutex::new(cache),
            reinit: tokio::sync::Mutex::new(0),
            sessions: std::sync::atomic::AtomicU64::new(0),
            closed: AtomicBool::new(false),
            tasks: Mutex::new(Vec::new()),
            cancels: Mutex::new(Vec::new()),
            answering,
            get_stream: Mutex::new(None),
            stream_state: tokio::sync::watch::Sender::new(
                crate::listeners::StreamState::Connecting,
            ),
            request_meta: RwLock::new(None),
            last_name: Mutex::new(None),
        });
        if let Some(incoming) = inner.transport.incoming() {
            let weak = Arc::downgrade(&inner);
            let task = tokio::spawn(pump_incoming(weak, incoming));
            lock(&inner.tasks).push(task);
        }
        inner
    }

    pub(crate) fn adapter(&self) -> Adapter {
        self.state.read().unwrap_or_else(|e| e.into_inner()).adapter
    }

    pub(crate) fn set_adapter(&self, adapter: Adapter) {
        self.state
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .adapter = adapter;
    }

    pub(crate) fn set_initialized(&self, done: bool) {
        self.state
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .initialized = done;
    }

    pub(crate) fn set_server(&self, server: ServerDescription) {
        self.state.write().unwrap_or_else(|e| e.into_inner()).server = Some(server);
    }

    fn next_id(&self) -> Id {
        Id::Number(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn new_id(&self) -> Id {
        self.next_id()
    }

    /// `params` with the revision's per-request `_meta` merged in (entries already there win).
    pub(crate) fn decorate_public(&self, adapter: Adapter, params: Value) -> Value {
        let Value::Object(mut params) = params else {
            return params;
        };
        self.request_meta(adapter).add_to(&mut params);
        Value::Object(params)
    }

    /// The revision's HTTP headers for a request (`method_name` empty for a GET).
    pub(crate) fn headers_public(
        &self,
        adapter: Adapter,
        method_name: &str,
        params: Option<&Value>,
    ) -> Result<HeaderMap, Error> {
        let name = (!method_name.is_empty()).then_some(method_name);
        self.headers(adapter, name, ParamsRef::Value(params), false)
    }

    /// The client capabilities to declare on `adapter`'s revision.
    pub(crate) fn capabilities(&self, adapter: Adapter) -> Value {
        let mut capabilities = match &self.config.on_ask {
            Some(on_ask) => on_ask.asks.capabilities(adapter),
            None => json!({}),
        };
        if !self.config.extensions.is_empty()
            && adapter.features().has_extensions()
            && let Value::Object(map) = &mut capabilities
        {
            map.insert(
                "extensions".into(),
                Value::Object(self.config.extensions.clone()),
            );
        }
        capabilities
    }

    /// What the adapter needs to know about this client: its identity and the capabilities it
    /// declares on `adapter`'s revision.
    pub(crate) fn context(&self, adapter: Adapter) -> ClientContext {
        let capabilities = match self.capabilities(adapter) {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        ClientContext {
            info: Some(self.config.client_info.clone()),
            capabilities: Some(capabilities),
        }
    }

    /// The revision's HTTP headers for one message (`method_name` `None` for a GET stream or a
    /// response to the server), as the adapter gives them.
    fn headers(
        &self,
        adapter: Adapter,
        method_name: Option<&str>,
        params: ParamsRef<'_>,
        is_notification: bool,
    ) -> Result<HeaderMap, Error> {
        if !self.info.http {
            return Ok(HeaderMap::new());
        }
        let Some(method_name) = method_name else {
            return header_map(adapter.stream_headers(), |name| self.name_value(name));
        };
        // The bindings of the tool called, where arguments are mirrored in headers.
        let bindings = |tool: Option<&str>| {
            let mirrored = adapter.features().mirrors_headers
                && adapter.operation(method_name) == Some(Operation::CallTool);
            tool.filter(|_| mirrored)
                .and_then(|tool| lock(&self.tools).get(tool).cloned())
        };
        let empty = Map::new();
        let request = match params {
            ParamsRef::Value(params) => {
                let map = params.and_then(Value::as_object).unwrap_or(&empty);
                let bindings = bindings(map.get("name").and_then(Value::as_str));
                adapter.request_headers(method_name, map, is_notification, bindings.as_deref())
            }
            ParamsRef::Tool {
                name, arguments, ..
            } => {
                let bindings = bindings(Some(name));
                adapter.tool_call_headers(name, arguments, bindings.as_deref())
            }
        }
        .map_err(|e| Error::new(ErrorKind::InvalidInput, e.to_string()))?;
        header_map(request, |name| self.name_value(name))
    }

    /// The `Mcp-Name` value for `name` (already encoded for a header): the last one built is
    /// kept, so calling one tool over and over clones a shared value instead of copying and
    /// checking the text each time.
    fn name_value(&self, name: &str) -> Result<HeaderValue, Error> {
        let mut last = lock(&self.last_name);
        if let Some((text, value)) = last.as_ref()
            && **text == *name
        {
            return Ok(value.clone());
        }
        let value = HeaderValue::from_str(name)
            .map_err(|e| Error::new(ErrorKind::InvalidInput, e.to_string()))?;
        *last = Some((name.into(), value.clone()));
        Ok(value)
    }

    /// The per-request `_meta` of `adapter`'s revision (empty where there is none), computed and
    /// serialized once per revision.
    fn request_meta(&self, adapter: Adapter) -> Arc<RequestMeta> {
        let cached = self
            .request_meta
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some((revision, meta)) = cached
            && revision == adapter.revision()
        {
            return meta;
        }
        let level = self
            .config
            .log_level
            .filter(|_| adapter.features().per_request_log_level);
        let meta = Arc::new(RequestMeta::new(adapter.request_meta(
            &self.context(adapter),
            level,
            None,
        )));
        *self.request_meta.write().unwrap_or_else(|e| e.into_inner()) =
            Some((adapter.revision(), meta.clone()));
        meta
    }

    /// `params` with the progress token and extra `_meta` (entries already in `params._meta`
    /// win). The revision's own per-request `_meta` is not added here but spliced in when the
    /// request is encoded ([`Inner::attempt`]), from bytes serialized once.
    pub(crate) fn decorate(
        &self,
        params: Option<Value>,
        progress: Option<&Id>,
        extra: Option<&Map<String, Value>>,
    ) -> Option<Value> {
        add_own_meta(params, progress, extra)
    }

    /// Sends a notification.
    pub(crate) async fn notify(
        &self,
        method_name: &str,
        params: Option<Value>,
    ) -> Result<(), Error> {
        let adapter = self.adapter();
        let headers = self.headers(adapter, Some(method_name), ParamsRef::Value(None), true)?;
        let body = mcp_wire::jsonrpc::encode(&Message::Notification(Notification {
            method: mcp_wire::jsonrpc::method_name(method_name),
            params,
        }));
        let outbound = Outbound {
            kind: OutboundKind::Notification,
            body: Bytes::from(body),
            headers,
            raw_answer: false,
        };
        // Bounded like a request: a server that never finishes its `202` must not hang the
        // handshake or a cancellation.
        let timeout = self.config.timeout;
        match tokio::time::timeout(timeout, self.transport.send(outbound)).await {
            Err(_) => Err(Error::timeout(timeout)),
            Ok(delivery) => match delivery? {
                Delivery::Accepted => Ok(()),
                // A notification has no answer; drop whatever stream came back.
                Delivery::Stream(_) | Delivery::Json(_) => Ok(()),
            },
        }
    }

    /// One attempt of one request on `adapter`, with its own id; handles pushed questions and
    /// notifications that arrive on its stream. Dropping the future cancels the request.
    pub(crate) async fn attempt(
        self: &Arc<Self>,
        adapter: Adapter,
        method_name: &str,
        params: Option<&Value>,
    ) -> Result<Outcome, Error> {
        match self
            .attempt_with(adapter, method_name, ParamsRef::Value(params), None)
            .await?
        {
            Attempted::Outcome(outcome) => Ok(outcome),
            Attempted::Read => Err(Error::protocol("a result read by no reader")),
        }
    }

    /// [`Inner::attempt`]; with a `reader`, a single JSON body that is certainly a complete result
    /// ([`Adapter::is_plain_complete_result`]) is handed to it unparsed (the reader is
    /// [`mcp_wire::jsonrpc::read_success_as`]), and [`Attempted::Read`] returned when it took the
    /// body. Whatever it does not take is read as usual.
    async fn attempt_with(
        self: &Arc<Self>,
        adapter: Adapter,
        method_name: &str,
        params: ParamsRef<'_>,
        mut reader: Option<&mut Reader<'_>>,
    ) -> Result<Attempted, Error> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::closed());
        }
        let id = self.next_id();
        let mut headers = self.headers(adapter, Some(method_name), params, false)?;
        let mut meta = self.request_meta(adapter);
        if !self.config.trace.is_off()
            && let Some(context) = self.config.trace.current()
        {
            // This request's own `_meta`: the revision's entries and the context (entries the
            // caller put in `params._meta` still win, a traceparent among them).
            let mut entries = meta.entries().clone();
            context.write_meta(&mut entries);
            meta = Arc::new(RequestMeta::new(entries));
            crate::trace::headers(&context, &mut headers);
        }
        let body = match params {
            ParamsRef::Value(params) => adapter.encode_request(&id, method_name, params, &meta),
            ParamsRef::Tool {
                name,
                arguments,
                meta: None,
                progress: None,
            } => adapter.encode_tool_call(&id, name, arguments, &meta),
            ParamsRef::Tool {
                name,
                arguments,
                meta: extra,
                progress,
            } => {
                // The call's own entries, each key once: the progress token over the caller's.
                let token = progress.map(|t| serde_json::to_value(t).unwrap_or(Value::Null));
                let mut own: Vec<(&str, &Value)> = Vec::new();
                if let Some(token) = &token {
                    own.push((meta::PROGRESS_TOKEN, token));
                }
                for (key, value) in extra.into_iter().flatten() {
                    if token.is_none() || key != meta::PROGRESS_TOKEN {
                        own.push((key, value));
                    }
                }
                adapter.encode_tool_call_with_meta(&id, name, arguments, &meta, &own)
            }
        };
        let mut guard = InFlight {
            inner: self.clone(),
            id: id.clone(),
            adapter,
            done: false,
            cancellable: adapter.operation(method_name) != Some(Operation::Describe),
        };
        let outbound = Outbound {
            kind: OutboundKind::Request(id.clone()),
            body: Bytes::from(body),
            headers,
            raw_answer: reader.is_some(),
        };
        let delivery = self.transport.send(outbound).await;
        let outcome = match delivery {
            // The text is checked as UTF-8 once here, and read as text from then on.
            Ok(Delivery::Json(crate::transport::RawAnswer(body)))
                if std::str::from_utf8(&body).is_ok_and(|text| {
                    adapter.is_plain_complete_result(text)
                        && reader.as_mut().is_some_and(|read| read(&id, text))
                }) =>
            {
                Ok(Attempted::Read)
            }
            // Anything else (an error, questions, another id, a malformed body) is read as the
            // transport would have read it.
            Ok(Delivery::Json(crate::transport::RawAnswer(body))) => {
                let message = crate::transport::parse_message(&body)?;
                let stream = futures::stream::once(async move { Ok(Inbound::new(message)) });
                self.read_response(adapter, &id, Box::pin(stream))
                    .await
                    .map(Attempted::Outcome)
            }
            Ok(Delivery::Stream(stream)) => self
                .read_response(adapter, &id, stream)
                .await
                .map(Attempted::Outcome),
            Ok(Delivery::Accepted) => Err(Error::protocol(
                "the server accepted a request without answering it",
            )),
            Err(TransportError::Status {
                status,
                content_type,
                body,
                retry_after_secs,
                ..
            }) => {
                let error = refusal(content_type.as_deref(), &body);
                let said = error
                    .is_none()
                    .then(|| crate::transport::excerpt(&body))
                    .flatten();
                Ok(Attempted::Outcome(Outcome::Refused {
                    error,
                    status: Some(status),
                    said,
                    retry_after: crate::limited::retry_after_wait(retry_after_secs),
                }))
            }
            Err(e) => Err(e.into()),
        };
        guard.done = true;
        outcome
    }

    async fn read_response(
        self: &Arc<Self>,
        adapter: Adapter,
        id: &Id,
        mut stream: MessageStream,
    ) -> Result<Outcome, Error> {
        let mut resumed = 0u32;
        loop {
            let Some(item) = stream.next().await else {
                break;
            };
            let inbound = match item {
                Ok(inbound) => inbound,
                // SSE polling: the server closed the stream after an event id; the rest of it,
                // the response included, comes on a GET resuming after that id.
                Err(TransportError::Interrupted {
                    last_event_id,
                    retry_ms,
                }) if adapter.features().sse_resumable
                    && self.info.request_streams
                    && resumed < MAX_RESUMES =>
                {
                    // Boxed, as the other rare paths of a call.
                    let resume =
                        Box::pin(self.resume(adapter, last_event_id, retry_ms, &mut resumed));
                    stream = resume.await?;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            match inbound.message {
                Message::Response(r) => {
                    if r.id.is_some() && r.id.as_ref() != Some(id) {
                        tracing::debug!("a response for another request on this stream");
                        continue;
                    }
                    return Ok(match r.outcome {
                        Ok(v) => Outcome::Result(v),
                        Err(e) => Outcome::Refused {
                            error: Some(e),
                            status: None,
                            said: None,
                            retry_after: None,
                        },
                    });
                }
                Message::Request(request) => {
                    // A pushed question: answer it with a POST of its own, then keep reading.
                    let inner = self.clone();
                    // Boxed, as the other rare paths of a call: their futures would otherwise
                    // make every call's future larger, and it is moved and copied per call.
                    Box::pin(inner.answer_request(request)).await;
                }
                Message::Notification(n) => self.dispatch_notification(n),
            }
        }
        Err(Error::from(TransportError::Protocol(
            "the stream ended before the response".into(),
        )))
    }

    /// Opens the `GET` that resumes a request's stream after `last_event_id`, waiting the
    /// server's `retry` first. A resume that fails for a reason that may pass (the connection,
    /// a 5xx from a worker that is shutting down) is tried again after the same pause (one
    /// second when the server named none), each try counting against [`MAX_RESUMES`].
    async fn resume(
        self: &Arc<Self>,
        adapter: Adapter,
        last_event_id: String,
        retry_ms: Option<u64>,
        resumed: &mut u32,
    ) -> Result<MessageStream, Error> {
        let pause = Duration::from_millis(retry_ms.unwrap_or(DEFAULT_RETRY_MS).min(MAX_RETRY_MS));
        loop {
            *resumed += 1;
            if retry_ms.is_some() || *resumed > 1 {
                tokio::time::sleep(pause).await;
            }
            let headers = self.headers(adapter, None, ParamsRef::Value(None), false)?;
            match self
                .transport
                .open_stream(headers, Some(last_event_id.clone()))
                .await
            {
                Ok(stream) => return Ok(stream),
                Err(
                    TransportError::Http(_)
                    | TransportError::Io(_)
                    | TransportError::Status {
                        status: 500..=599, ..
                    },
                ) if *resumed < MAX_RESUMES => {
                    tracing::debug!("resuming a request's stream failed; trying again");
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Answers a request the server pushed (`elicitation/create`, `sampling/createMessage`,
    /// `roots/list`, `ping`).
    pub(crate) async fn answer_request(self: Arc<Self>, request: Request) {
        let outcome = match &*request.method {
            method::PING => Ok(json!({})),
            _ => {
                let question = Question::new(request.method.to_string(), request.params, None);
                match &self.config.on_ask {
                    Some(on_ask) if declared(&on_ask.asks, &question) => {
                        (on_ask.callback)(question).await.into_outcome()
                    }
                    _ => Err(ErrorObject::new(
                        error_code::METHOD_NOT_FOUND,
                        format!("the client does not answer {}", request.method),
                    )),
                }
            }
        };
        let adapter = self.adapter();
        let headers = self
            .headers(adapter, None, ParamsRef::Value(None), false)
            .unwrap_or_default();
        let body = mcp_wire::jsonrpc::encode(&Message::Response(mcp_wire::jsonrpc::Response {
            id: Some(request.id),
            outcome,
        }));
        let outbound = Outbound {
            kind: OutboundKind::Response,
            body: Bytes::from(body),
            headers,
            raw_answer: false,
        };
        if let Err(e) = self.transport.send(outbound).await {
            tracing::warn!(error = %e, "could not deliver an answer to the server");
        }
    }

    pub(crate) fn dispatch_notification(&self, n: Notification) {
        match &*n.method {
            method::NOTIFICATION_PROGRESS => {
                let params = n.params.as_ref();
                let token = params
                    .and_then(|p| p.get("progressToken"))
                    .and_then(|t| serde_json::from_value::<Id>(t.clone()).ok());
                let callback = token.and_then(|t| lock(&self.progress).get(&t).cloned());
                if let (Some(callback), Some(p)) = (callback, params) {
                    callback(Progress {
                        progress: p.get("progress").and_then(Value::as_f64).unwrap_or(0.0),
                        total: p.get("total").and_then(Value::as_f64),
                        message: p.get("message").and_then(Value::as_str).map(str::to_owned),
                    });
                }
            }
            method::NOTIFICATION_TOOLS_LIST_CHANGED => {
                lock(&self.tools).clear();
                lock(&self.cache).invalidate(&n.method, n.params.as_ref());
            }
            _ => lock(&self.cache).invalidate(&n.method, n.params.as_ref()),
        }
        if let Some(f) = &self.config.on_notification {
            f(&n);
        }
        let subscription = n
            .params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(meta::SUBSCRIPTION_ID))
            .and_then(|t| serde_json::from_value::<Id>(t.clone()).ok());
        let mut listeners = lock(&self.listeners);
        listeners.retain(|slot| {
            let wanted = match (&subscription, &slot.subscription) {
                (Some(s), Some(mine)) => s == mine,
                (Some(_), None) => slot.filter.accepts(&n),
                (None, _) => slot.filter.accepts(&n),
            };
            if !wanted {
                return true;
            }
            match slot.tx.try_send(n.clone()) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    slot.dropped.fetch_add(1, Ordering::Relaxed);
                    true
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        });
    }

    /// Registers a listener: its id, the receiving end of its queue (bounded by
    /// [`Config::max_queued`]) and the count of notifications it lost to a full queue.
    pub(crate) fn add_listener(
        &self,
        subscription: Option<Id>,
        filter: crate::listeners::Filter,
    ) -> crate::listeners::Registered {
        let (tx, rx) = mpsc::channel(self.config.max_queued.max(1));
        let dropped = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let end = Arc::new(std::sync::OnceLock::new());
        let id = self.next_listener.fetch_add(1, Ordering::Relaxed) as u64;
        lock(&self.listeners).push(ListenerSlot {
            id,
            subscription,
            filter,
            tx,
            dropped: dropped.clone(),
            end: end.clone(),
        });
        crate::listeners::Registered {
            slot: id,
            rx,
            dropped,
            end,
        }
    }

    /// Ends listener `id`'s stream with `why` (the first reason given is kept).
    pub(crate) fn end_listener(&self, id: u64, why: crate::listeners::ListenEnd) -> bool {
        let mut listeners = lock(&self.listeners);
        listeners.retain(|slot| {
            if slot.id == id {
                let _ = slot.end.set(why.clone());
                false
            } else {
                true
            }
        });
        listeners.is_empty()
    }

    /// Ends the streams of every listener that lives on the connection's shared streams (all
    /// but the 2026-07-28 ones, which have a stream each): the connection is gone for good.
    pub(crate) fn end_shared_listeners(&self, why: &crate::listeners::ListenEnd) {
        lock(&self.listeners).retain(|slot| {
            if slot.subscription.is_some() {
                return true;
            }
            let _ = slot.end.set(why.clone());
            false
        });
    }

    /// Every resource URI a listener of a handshake revision subscribed to, once each.
    pub(crate) fn subscribed_uris(&self) -> Vec<String> {
        let mut uris: Vec<String> = lock(&self.listeners)
            .iter()
            .filter(|slot| slot.subscription.is_none())
            .flat_map(|slot| slot.filter.uris().iter().cloned())
            .collect();
        uris.sort();
        uris.dedup();
        uris
    }

    pub(crate) fn remove_listener(&self, id: u64) -> bool {
        let mut listeners = lock(&self.listeners);
        listeners.retain(|slot| slot.id != id);
        listeners.is_empty()
    }

    pub(crate) fn cache_get(&self, key: &str) -> Option<Value> {
        lock(&self.cache).get(key, Instant::now())
    }

    pub(crate) fn cache_put(&self, key: String, value: &Value) {
        lock(&self.cache).put(key, value, Instant::now());
    }

    pub(crate) fn remember_tools(&self, adapter: Adapter, tools: &[Value]) {
        let mut map = lock(&self.tools);
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            if let Ok(b) = adapter.tool_header_bindings(tool) {
                map.insert(name.to_owned(), b.into());
            }
        }
    }

    /// Keeps which tools of a listing may be retried when rate limited. A first page replaces
    /// what was known; later pages add to it.
    pub(crate) fn remember_retry_safe(&self, tools: &[Value], first_page: bool) {
        let mut safe = lock(&self.retry_safe_tools);
        if first_page {
            safe.clear();
        }
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            if crate::rate_limit::tool_is_retry_safe(tool) {
                safe.insert(name.to_owned());
            } else {
                safe.remove(name);
            }
        }
    }

    /// Whether a rate-limited `method_name` with `params` may be sent again.
    fn retry_safe(&self, adapter: Adapter, method_name: &str, params: &Params<'_>) -> bool {
        if adapter.operation(method_name) != Some(Operation::CallTool)
            || self.config.rate_limit.retry_tool_calls
        {
            return true;
        }
        let name = match params {
            Params::Tool { name, .. } => Some(*name),
            Params::Value(value) => value
                .as_ref()
                .and_then(|v| v.get("name"))
                .and_then(Value::as_str),
        };
        name.is_some_and(|name| lock(&self.retry_safe_tools).contains(name))
    }

    pub(crate) fn forget_tools(&self) {
        lock(&self.tools).clear();
        lock(&self.cache).clear();
    }

    pub(crate) fn close_flag(&self) -> bool {
        self.closed.swap(true, Ordering::AcqRel)
    }

    pub(crate) fn generation(&self) -> &tokio::sync::Mutex<u64> {
        &self.reinit
    }

    /// How many times the session was started again; a call remembers it to tell whether its
    /// 404 was already dealt with by another call.
    pub(crate) fn session_generation(&self) -> u64 {
        self.sessions.load(Ordering::Acquire)
    }

    pub(crate) fn set_session_generation(&self, generation: u64) {
        self.sessions.store(generation, Ordering::Release);
    }

    pub(crate) fn track(&self, task: JoinHandle<()>) {
        let mut tasks = lock(&self.tasks);
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
    }
}

/// Reads the single JSON body of a response to the request with the given id into the caller's
/// type; `false` when it cannot (the body is then read as usual).
pub(crate) type Reader<'a> = dyn FnMut(&Id, &str) -> bool + Send + 'a;

/// What [`Inner::attempt_with`] got: an outcome, or a body its reader took.
enum Attempted {
    Outcome(Outcome),
    Read,
}

/// How a call ended: its result, or a result its reader took.
enum Answer {
    Value(Value),
    Read,
}

/// The params of one request as it is sent: a JSON value, or a tool call's name and
/// arguments, encoded straight from them ([`Adapter::encode_tool_call`]) without building the
/// `{name, arguments}` map.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ParamsRef<'a> {
    Value(Option<&'a Value>),
    Tool {
        name: &'a str,
        arguments: &'a Value,
        /// The call's own `_meta` entries (see [`Params::Tool`]).
        meta: Option<&'a Map<String, Value>>,
        progress: Option<&'a Id>,
    },
}

/// The params of one call, owned: a tool call stays name and arguments until a path needs the
/// map (progress token or extra `_meta`, a question round), see [`Params::value_mut`].
#[derive(Debug)]
pub(crate) enum Params<'a> {
    Value(Option<Value>),
    /// The arguments as the caller gave them: borrowed, they are cloned only on the paths that
    /// build the map.
    Tool {
        name: &'a str,
        arguments: &'a Value,
        /// The caller's extra `_meta` entries ([`CallOptions::meta`]), written into the
        /// request's `_meta` without building the params map.
        meta: Option<&'a Map<String, Value>>,
        /// The progress token, written as `_meta.progressToken` (over `meta`'s).
        progress: Option<Id>,
    },
}

impl<'a> Params<'a> {
    /// A tool call's params, nothing added to them yet.
    pub(crate) fn tool(name: &'a str, arguments: &'a Value) -> Self {
        Params::Tool {
            name,
            arguments,
            meta: None,
            progress: None,
        }
    }

    fn as_ref(&self) -> ParamsRef<'_> {
        match self {
            Params::Value(value) => ParamsRef::Value(value.as_ref()),
            Params::Tool {
                name,
                arguments,
                meta,
                progress,
            } => ParamsRef::Tool {
                name,
                arguments,
                meta: *meta,
                progress: progress.as_ref(),
            },
        }
    }

    fn into_value(self) -> Option<Value> {
        match self {
            Params::Value(value) => value,
            Params::Tool {
                name,
                arguments,
                meta,
                progress,
            } => add_own_meta(
                Some(tool_params(name, arguments.clone())),
                progress.as_ref(),
                meta,
            ),
        }
    }

    /// The params as a JSON value, the tool call's map built first if it was not yet.
    fn value_mut(&mut self) -> &mut Option<Value> {
        if let Params::Tool { .. } = self {
            let params = std::mem::replace(self, Params::Value(None)).into_value();
            *self = Params::Value(params);
        }
        match self {
            Params::Value(value) => value,
            Params::Tool { .. } => unreachable!("converted above"),
        }
    }
}

/// `{"name": name, "arguments": arguments}`, without `arguments` when it is `null`.
fn tool_params(name: &str, arguments: Value) -> Value {
    let mut params = Map::new();
    params.insert("name".into(), Value::String(name.to_owned()));
    if !arguments.is_null() {
        params.insert("arguments".into(), arguments);
    }
    Value::Object(params)
}

/// `params` with the call's own `_meta` entries: `extra` where `params._meta` has none of
/// the name, then the progress token (over both). Params that are not an object stay as they
/// are.
fn add_own_meta(
    params: Option<Value>,
    progress: Option<&Id>,
    extra: Option<&Map<String, Value>>,
) -> Option<Value> {
    if progress.is_none() && extra.is_none() {
        return params;
    }
    let mut params = match params {
        Some(Value::Object(map)) => map,
        None => Map::new(),
        Some(other) => return Some(other),
    };
    let entry = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = entry {
        for (k, v) in extra.into_iter().flatten() {
            m.entry(k.clone()).or_insert_with(|| v.clone());
        }
        if let Some(token) = progress {
            m.insert(
                meta::PROGRESS_TOKEN.into(),
                serde_json::to_value(token).unwrap_or(Value::Null),
            );
        }
    }
    Some(Value::Object(params))
}

/// The adapter's headers as a [`HeaderMap`]: the version and the revision's method names
/// point at their static texts, `Mcp-Name` goes through `name_value`.
fn header_map(
    request: RequestHeaders<'_>,
    name_value: impl FnOnce(&str) -> Result<HeaderValue, Error>,
) -> Result<HeaderMap, Error> {
    let invalid = |e: &dyn fmt::Display| Error::new(ErrorKind::InvalidInput, e.to_string());
    let Some(version) = request.protocol_version else {
        return Ok(HeaderMap::new());
    };
    // Room for the mirrored headers and the transport's (session, content type, accept, host)
    // from the start: the map's default first allocation holds six, and growing it rehashes.
    // The default map (8 slots for 6 headers) would be cheaper to allocate, but hyper's
    // lookups of headers a request does not have probe longer in it: measured, the two
    // cancel out. Allocated on the first insert.
    let mut headers = if request.method.is_some() {
        HeaderMap::with_capacity(8)
    } else {
        HeaderMap::new()
    };
    // A revision's version string is visible ASCII, checked when the revision was made.
    headers.insert(PROTOCOL_VERSION, HeaderValue::from_static(version));
    if let Some(method_name) = request.method {
        let value = match method_name {
            Cow::Borrowed(method::TOOLS_CALL) => TOOLS_CALL_VALUE,
            // One of the revision's method names: visible ASCII.
            Cow::Borrowed(known) => HeaderValue::from_static(known),
            Cow::Owned(other) => HeaderValue::try_from(other).map_err(|e| invalid(&e))?,
        };
        headers.insert(MCP_METHOD, value);
    }
    if let Some(name) = request.name {
        headers.insert(MCP_NAME, name_value(&name)?);
    }
    headers.reserve(request.params.len());
    for (name, value) in request.params {
        let name = HeaderName::try_from(name).map_err(|e| invalid(&e))?;
        let value = HeaderValue::try_from(value).map_err(|e| invalid(&e))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

/// Unregisters a call's progress callback when the call ends, however it ends.
struct ProgressGuard<'a> {
    inner: &'a Inner,
    token: Option<Id>,
}

impl Drop for ProgressGuard<'_> {
    fn drop(&mut self) {
        if let Some(token) = &self.token {
            lock(&self.inner.progress).remove(token);
        }
    }
}

/// Sends the cancellation the revision needs when a request's future is dropped unfinished.
struct InFlight {
    inner: Arc<Inner>,
    id: Id,
    adapter: Adapter,
    done: bool,
    cancellable: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.done || !self.cancellable {
            return;
        }
        let stream_close_cancels =
            self.inner.info.request_streams && self.adapter.features().stream_close_cancels;
        if stream_close_cancels {
            // Dropping the response stream closed it: that is the cancellation.
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let inner = self.inner.clone();
        let id = self.id.clone();
        let sending = handle.spawn(async move {
            let params = json!({"requestId": id, "reason": "cancelled by the client"});
            if let Err(e) = inner
                .notify(method::NOTIFICATION_CANCELLED, Some(params))
                .await
            {
                tracing::debug!(error = %e, "could not send notifications/cancelled");
            }
        });
        self.inner.keep_cancel(sending);
    }
}

/// Handles what comes on the transport's incoming stream, in order: notifications at once, the
/// server's requests on tasks of their own, at most [`Config::max_queued`] at a time (past that
/// the pump waits for one to finish, and what arrives meanwhile waits in the transport's
/// bounded queue).
async fn pump_incoming(weak: std::sync::Weak<Inner>, mut incoming: MessageStream) {
    let why = pump(&weak, &mut incoming).await;
    // The connection's one stream ended (a stdio child exited, an HTTP+SSE stream closed):
    // nothing more can arrive, so the listeners' streams end too, saying why.
    if let Some(inner) = weak.upgrade() {
        let why = if inner.closed.load(Ordering::Acquire) {
            crate::listeners::ListenEnd::Closed
        } else {
            crate::listeners::ListenEnd::Lost(why)
        };
        inner.end_shared_listeners(&why);
    }
}

/// Reads the connection's stream until it ends; says how it ended.
async fn pump(weak: &std::sync::Weak<Inner>, incoming: &mut MessageStream) -> String {
    while let Some(item) = incoming.next().await {
        let Some(inner) = weak.upgrade() else {
            return "the client is gone".into();
        };
        match item {
            Ok(inbound) => match inbound.message {
                Message::Request(request) => {
                    let answering = inner.answering.clone();
                    // Not kept alive by the wait.
                    drop(inner);
                    let Ok(permit) = answering.acquire_owned().await else {
                        return "the client is gone".into();
                    };
                    let Some(inner) = weak.upgrade() else {
                        return "the client is gone".into();
                    };
                    // Answer on a task of its own: the user may take a while.
                    let answer = inner.clone().answer_request(request);
                    let handle = tokio::spawn(async move {
                        answer.await;
                        drop(permit);
                    });
                    inner.track(handle);
                }
                Message::Notification(n) => inner.dispatch_notification(n),
                Message::Response(_) => {}
            },
            Err(e) => {
                tracing::debug!(error = %e, "incoming stream failed");
                return e.to_string();
            }
        }
    }
    "the server closed the connection".into()
}

impl Client {
    pub(crate) fn adapter(&self) -> Adapter {
        self.inner.adapter()
    }

    /// The revision in use.
    pub fn revision(&self) -> mcp_adapters::Revision {
        self.adapter().revision()
    }

    /// What the server said about itself when the client connected.
    pub fn server(&self) -> Option<ServerDescription> {
        self.inner
            .state
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .server
            .clone()
    }

    /// How many notifications and requests from the server were dropped because they arrived
    /// faster than the client handled them (see [`crate::ClientBuilder::max_queued`]).
    pub fn dropped_messages(&self) -> u64 {
        self.inner.transport.dropped()
    }

    /// The session id the server issued, on transports that have sessions.
    pub fn session_id(&self) -> Option<String> {
        self.inner.transport.session_id()
    }

    /// Sends any request and returns its result, with the client's timeout. The revision's
    /// `_meta`, headers, session handling and asking all apply.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # // A server to talk to: one tool, one resource, one prompt, on 127.0.0.1.
    /// # use mcp_server::{Prompt, Resource, ResourceRequest, Server, Tool};
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct AddArgs { a: i64, b: i64 }
    /// # async fn add(x: AddArgs) -> String { (x.a + x.b).to_string() }
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct GreetArgs { name: String }
    /// # async fn greet(x: GreetArgs) -> String { format!("Please greet {}.", x.name) }
    /// # async fn config(_: ResourceRequest) -> String { "mode = production".into() }
    /// # let server = Server::builder("calc", "1.0").tool(Tool::new("add", add))
    /// #     .resource(Resource::new("config://app", "config", config)).prompt(Prompt::new("greet", greet)).build()?;
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// # let url = format!("http://{}/mcp", listener.local_addr()?);
    /// # let endpoint = mcp_server::http::HttpEndpoint::new(server, mcp_server::http::HttpConfig::new());
    /// # tokio::spawn(mcp_server::http::serve_with_shutdown(listener, endpoint, std::future::pending::<()>()));
    /// let client = mcp_client::Client::builder().connect_http(&url).await?;
    /// // Any method by name; the revision's adapter adds its `_meta`, headers and session.
    /// let listed = client.request("tools/list", None).await?;
    /// assert_eq!(listed["tools"][0]["name"], "add");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn request(&self, method_name: &str, params: Option<Value>) -> Result<Value, Error> {
        self.request_with(method_name, params, CallOptions::default())
            .await
    }

    /// [`Client::request`] with per-call options.
    pub async fn request_with(
        &self,
        method_name: &str,
        params: Option<Value>,
        options: CallOptions,
    ) -> Result<Value, Error> {
        self.request_params_with(method_name, Params::Value(params), options)
            .await
    }

    /// [`Client::request_with`] with params that may still be a tool call's name and arguments.
    pub(crate) async fn request_params_with(
        &self,
        method_name: &str,
        params: Params<'_>,
        options: CallOptions,
    ) -> Result<Value, Error> {
        match self
            .answer_with(method_name, params, &options, None)
            .await?
        {
            Answer::Value(value) => Ok(value),
            Answer::Read => Err(Error::protocol("a result read by no reader")),
        }
    }

    /// [`Client::request_with`] whose result is read straight into `T`, without a [`Value`] in
    /// between when the answer is a single JSON body (Streamable HTTP) and the result complete.
    pub async fn request_as<T: serde::de::DeserializeOwned + Send>(
        &self,
        method_name: &str,
        params: Option<Value>,
        options: CallOptions,
    ) -> Result<T, Error> {
        self.request_params_as(method_name, Params::Value(params), options)
            .await
    }

    /// [`Client::request_as`] with params that may still be a tool call's name and arguments.
    pub(crate) async fn request_params_as<T: serde::de::DeserializeOwned + Send>(
        &self,
        method_name: &str,
        params: Params<'_>,
        options: CallOptions,
    ) -> Result<T, Error> {
        match self
            .request_params_read(method_name, params, options)
            .await?
        {
            Ok(result) => Ok(result),
            Err(value) => serde_json::from_value(value)
                .map_err(|e| Error::protocol(format!("{method_name} result: {e}"))),
        }
    }

    /// The result read straight into `T` when it is a complete result in a single JSON body,
    /// else the result as a [`Value`] (questions answered on the way), for the caller to read.
    pub(crate) async fn request_params_read<T: serde::de::DeserializeOwned + Send>(
        &self,
        method_name: &str,
        params: Params<'_>,
        options: CallOptions,
    ) -> Result<Result<T, Value>, Error> {
        let mut read = None;
        let mut reader = |id: &Id, body: &str| {
            read = mcp_wire::jsonrpc::read_success_as::<T>(id, body);
            read.is_some()
        };
        let answer = self
            .answer_with(method_name, params, &options, Some(&mut reader))
            .await?;
        match (answer, read) {
            (Answer::Read, Some(result)) => Ok(Ok(result)),
            (Answer::Read, None) => Err(Error::protocol("a result read by no reader")),
            (Answer::Value(value), _) => Ok(Err(value)),
        }
    }

    /// The result of one call within its timeout; a complete result in a single JSON body may be
    /// taken by `reader` instead.
    async fn answer_with(
        &self,
        method_name: &str,
        params: Params<'_>,
        options: &CallOptions,
        reader: Option<&mut Reader<'_>>,
    ) -> Result<Answer, Error> {
        let timeout = options.timeout.unwrap_or(self.inner.config.timeout);
        match tokio::time::timeout(timeout, self.run(method_name, params, options, reader)).await {
            Ok(result) => result,
            Err(_) => {
                // The call was dropped: its `notifications/cancelled` is on its way. It goes out
                // before the caller hears of the timeout (within one more timeout), so whatever
                // the caller sends next follows it.
                self.inner.flush_cancels(timeout).await;
                Err(Error::timeout(timeout))
            }
        }
    }

    /// Sends a notification.
    pub async fn notify(&self, method_name: &str, params: Option<Value>) -> Result<(), Error> {
        self.inner.notify(method_name, params).await
    }

    /// The whole life of one call: session recovery, header-mismatch retry, questions.
    async fn run(
        &self,
        method_name: &str,
        params: Params<'_>,
        options: &CallOptions,
        reader: Option<&mut Reader<'_>>,
    ) -> Result<Answer, Error> {
        let adapter = self.adapter();
        let cache_key = if adapter.features().cache_hints {
            // A tool call's params hold neither `uri` nor `cursor`: the key reads nothing there.
            let value = match &params {
                Params::Value(value) => value.as_ref(),
                Params::Tool { .. } => None,
            };
            Cache::key(method_name, value)
        } else {
            None
        };
        if let Some(key) = &cache_key
            && let Some(hit) = self.inner.cache_get(key)
        {
            return Ok(Answer::Value(hit));
        }
        // A result that may be cached is read in full.
        let mut reader = reader.filter(|_| cache_key.is_none());
        let token = options.on_progress.as_ref().map(|f| {
            let token = self.inner.new_id();
            lock(&self.inner.progress).insert(token.clone(), f.clone());
            token
        });
        let _progress = ProgressGuard {
            inner: &self.inner,
            token: token.clone(),
        };
        // The `{name, arguments}` map of a tool call is built only on a path that needs it (a
        // question round); a progress token and extra `_meta` are written without it.
        let mut params = match params {
            Params::Tool {
                name, arguments, ..
            } => Params::Tool {
                name,
                arguments,
                meta: options.meta.as_ref(),
                progress: token.clone(),
            },
            Params::Value(value) if token.is_some() || options.meta.is_some() => Params::Value(
                self.inner
                    .decorate(value, token.as_ref(), options.meta.as_ref()),
            ),
            params => params,
        };
        let mut rounds = 0usize;
        let mut answers = options
            .answers_up_front
            .clone()
            .map(Answers::from_map)
            .unwrap_or_default();
        let mut state: Option<String> = None;
        let mut recovered = false;
        let mut refetched = false;
        // Rate-limit retries: the attempts sent, the time waited, and the call's deadline.
        let started = tokio::time::Instant::now();
        let deadline = started + options.timeout.unwrap_or(self.inner.config.timeout);
        let mut attempts = 0u32;
        let mut waited = Duration::ZERO;
        loop {
            let adapter = self.adapter();
            let session = self.inner.session_generation();
            if rounds > 0 {
                crate::asking::attach(
                    adapter,
                    method_name,
                    params.value_mut(),
                    &answers,
                    state.as_deref(),
                )?;
            } else if !answers.is_empty() && crate::asking::carries_answers(adapter, method_name) {
                // Answers given up front, on a first attempt (no state).
                crate::asking::attach(adapter, method_name, params.value_mut(), &answers, None)?;
            }
            let attempted = self
                .inner
                .attempt_with(adapter, method_name, params.as_ref(), reader.as_deref_mut())
                .await?;
            let outcome = match attempted {
                Attempted::Read => return Ok(Answer::Read),
                Attempted::Outcome(outcome) => outcome,
            };
            let result = match outcome {
                Outcome::Result(v) => v,
                Outcome::Refused {
                    error,
                    status,
                    said,
                    retry_after,
                } => {
                    let code = error.as_ref().map(|e| e.code);
                    // A legacy session the server forgot: initialize again and retry once.
                    if status == Some(404)
                        && !recovered
                        && adapter.has_sessions()
                        && self.inner.info.http
                        && !self.inner.info.legacy_sse
                        && code != Some(error_code::METHOD_NOT_FOUND)
                    {
                        recovered = true;
                        Box::pin(self.reinitialize(session)).await?;
                        continue;
                    }
                    // A header the server reads differently: re-fetch the tool list and retry once.
                    if code == Some(error_code::HEADER_MISMATCH)
                        && !refetched
                        && adapter.features().mirrors_headers
                        && adapter.operation(method_name) == Some(Operation::CallTool)
                    {
                        refetched = true;
                        self.inner.forget_tools();
                        let _ = Box::pin(self.list_tools()).await;
                        continue;
                    }
                    let error = Error::refused(error, status, said.as_deref(), retry_after);
                    attempts += 1;
                    if error.is_rate_limited()
                        && self.inner.retry_safe(adapter, method_name, &params)
                        && let Some(wait) = self.inner.config.rate_limit.next_wait(
                            error.retry_after(),
                            attempts,
                            waited,
                            deadline.saturating_duration_since(tokio::time::Instant::now()),
                        )
                    {
                        tracing::debug!(
                            method = method_name,
                            limit = error.rate_limit(),
                            ?wait,
                            "rate limited; retrying"
                        );
                        if let Some(on_retry) = &self.inner.config.rate_limit.on_retry {
                            on_retry(&error, wait);
                        }
                        tokio::time::sleep(wait).await;
                        waited += wait;
                        continue;
                    }
                    return Err(error);
                }
            };
            // A task for a tool call (the Tasks extension, declared by this client): the caller
            // follows it.
            if self.inner.config.tasks.is_some()
                && adapter.operation(method_name) == Some(Operation::CallTool)
                && result.get("resultType").and_then(Value::as_str) == Some("task")
            {
                return Ok(Answer::Value(result));
            }
            match crate::asking::questions(adapter, method_name, &result)? {
                None => {
                    if rounds == 0
                        && let Some(key) = cache_key
                    {
                        self.inner.cache_put(key, &result);
                    }
                    return Ok(Answer::Value(result));
                }
                Some(asked) => {
                    rounds += 1;
                    if rounds > self.inner.config.max_rounds {
                        return Err(Error::new(
                            ErrorKind::TooManyRounds,
                            format!("still asking after {} rounds", self.inner.config.max_rounds),
                        ));
                    }
                    for (key, question) in asked.questions {
                        let answer = Box::pin(self.answer(question)).await?;
                        answers.insert(key, Ok(answer));
                    }
                    state = asked.state;
                }
            }
        }
    }

    /// How the client follows tasks, when it declares the Tasks extension
    /// ([`ClientBuilder::tasks`](crate::ClientBuilder::tasks)); `None` when it does not.
    pub fn task_polling(&self) -> Option<crate::polling::TaskPolling> {
        self.inner.config.tasks
    }

    /// Answers a question of the server through the `on_ask` callback.
    pub(crate) async fn answer_question(&self, question: Question) -> Result<Value, Error> {
        self.answer(question).await
    }

    async fn answer(&self, question: Question) -> Result<Value, Error> {
        let Some(on_ask) = &self.inner.config.on_ask else {
            return Err(Error::new(
                ErrorKind::InputRequired,
                format!(
                    "the server asks {} and no on_ask callback is set",
                    question.method()
                ),
            ));
        };
        let outcome = (on_ask.callback)(question).await.into_outcome();
        outcome.map_err(|e| {
            Error::new(
                ErrorKind::InputRequired,
                format!("the answer was refused: {e}"),
            )
        })
    }

    /// Ends the session (HTTP `DELETE`) or the connection, and stops background tasks. Calls
    /// made after this fail with [`ErrorKind::Closed`]. Bounded by the client's timeout
    /// ([`crate::ClientBuilder::timeout`]): a server that never answers the `DELETE` gets
    /// [`ErrorKind::Timeout`], and the client is closed all the same.
    pub async fn close(&self) -> Result<(), Error> {
        let timeout = self.inner.config.timeout;
        // The cancels of dropped tasks go out before the client closes (within the timeout).
        self.inner.flush_cancels(timeout).await;
        if self.inner.close_flag() {
            return Ok(());
        }
        if let Some(task) = lock(&self.inner.get_stream).take() {
            task.abort();
        }
        match tokio::time::timeout(timeout, self.inner.transport.close()).await {
            Ok(closed) => closed.map_err(Error::from),
            Err(_) => Err(Error::timeout(timeout)),
        }
    }
}

/// What one listing may cost before it stops with [`ErrorKind::LimitExceeded`](crate::ErrorKind::LimitExceeded): see
/// [`crate::ClientBuilder::max_list_pages`], [`crate::ClientBuilder::max_list_items`] and
/// [`crate::ClientBuilder::max_list_bytes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ListLimits {
    pub(crate) pages: usize,
    pub(crate) items: usize,
    pub(crate) bytes: usize,
}

impl Default for ListLimits {
    fn default() -> Self {
        Self {
            pages: 1_000,
            items: 100_000,
            bytes: 64 << 20,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// The map the adapter's `(name, value)` pairs make, parsed one by one: the reference.
    fn pairs_map(pairs: Vec<(String, String)>) -> HeaderMap {
        pairs
            .into_iter()
            .map(|(name, value)| {
                (
                    HeaderName::try_from(name).unwrap(),
                    HeaderValue::try_from(value).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn the_header_map_holds_what_client_headers_returns() {
        assert_eq!(TOOLS_CALL_VALUE.as_bytes(), method::TOOLS_CALL.as_bytes());
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}
        }});
        let bindings = mcp_schema::extract_headers(&schema).unwrap();
        let cases = [
            (method::INITIALIZE, json!({})),
            (method::TOOLS_LIST, json!({})),
            (
                method::TOOLS_CALL,
                json!({"name": "add", "arguments": {"region": "eu"}}),
            ),
            (
                method::TOOLS_CALL,
                json!({"name": "ü t\n", "arguments": {"region": "ü"}}),
            ),
            (method::PROMPTS_GET, json!({"name": "p"})),
            (method::RESOURCES_READ, json!({"uri": "file:///a b"})),
            ("custom/method", json!({"name": "x"})),
        ];
        let name_value = |name: &str| {
            HeaderValue::from_str(name)
                .map_err(|e| Error::new(ErrorKind::InvalidInput, e.to_string()))
        };
        for revision in mcp_adapters::Revision::ALL {
            let adapter = Adapter::new(revision);
            for (method_name, params) in &cases {
                let params = params.as_object().unwrap();
                for is_notification in [false, true] {
                    for bindings in [None, Some(bindings.as_slice())] {
                        let request = adapter
                            .request_headers(method_name, params, is_notification, bindings)
                            .unwrap();
                        let pairs = adapter
                            .client_headers(method_name, params, is_notification, bindings)
                            .unwrap();
                        assert_eq!(
                            header_map(request, name_value).unwrap(),
                            pairs_map(pairs),
                            "{revision:?} {method_name} {params:?}"
                        );
                    }
                }
            }
            let stream: Vec<_> = adapter
                .stream_headers()
                .iter()
                .map(|(n, v)| (n.to_owned(), v.to_owned()))
                .collect();
            assert_eq!(
                header_map(adapter.stream_headers(), name_value).unwrap(),
                pairs_map(stream)
            );
        }
    }

    #[test]
    fn refusal_reads_json_and_sse_bodies() {
        let body = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"no","data":{"supported":["1999-01-01"]}}}"#;
        let error = refusal(Some("application/json"), body).unwrap();
        assert_eq!(error.code, -32022);
        assert_eq!(error.data, Some(json!({"supported": ["1999-01-01"]})));
        let sse = [b"data: ".as_slice(), body.as_slice(), b"\n\n".as_slice()].concat();
        assert_eq!(
            refusal(Some("text/event-stream"), &sse).unwrap().code,
            -32022
        );
        assert_eq!(refusal(Some("text/html"), body), None);
        assert_eq!(refusal(None, b""), None);
        assert_eq!(
            refusal(None, br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            None
        );
    }

    #[test]
    fn a_tool_call_becomes_its_map_when_a_path_adds_to_it() {
        let names = ["echo", "a \"quoted\" tool", "ünï"];
        let arguments = [Value::Null, json!({}), json!({"text": "x\ny"})];
        for name in names {
            for arguments in &arguments {
                let mut owned = Params::tool(name, arguments);
                let mut want = json!({"name": name});
                if !arguments.is_null() {
                    want["arguments"] = arguments.clone();
                }
                assert_eq!(owned.value_mut(), &Some(want.clone()));
                assert!(matches!(owned, Params::Value(Some(_))));
                // With the call's own `_meta`: the caller's entries, the token over them.
                let mut extra = Map::new();
                extra.insert("progressToken".into(), json!("theirs"));
                extra.insert("app/x".into(), json!(1));
                let mut owned = Params::Tool {
                    name,
                    arguments,
                    meta: Some(&extra),
                    progress: Some(Id::Number(9)),
                };
                want["_meta"] = json!({"progressToken": 9, "app/x": 1});
                assert_eq!(owned.value_mut(), &Some(want));
            }
        }
    }

    proptest! {
        #[test]
        fn refusal_never_panics(body in proptest::collection::vec(any::<u8>(), 0..200), sse in any::<bool>()) {
            let content_type = if sse { "text/event-stream" } else { "application/json" };
            let _ = refusal(Some(content_type), &body);
        }
    }
}
