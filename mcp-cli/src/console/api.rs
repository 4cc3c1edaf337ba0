//! The JSON API the page calls: each handler takes the request's JSON body and answers JSON.

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, HeaderValue, Uri};
use mcp_client::transport::{Direction, Stdio, StreamableHttp};
use mcp_client::{
    Answer, Asks, CallOptions, Client, LogLevel, Revision, Subscriptions, TaskPolling, ToolCall,
};
use serde_json::{Value, json};

use super::state::{Connection, State};
use crate::args::split_command;

/// Why an API request failed; each maps to an HTTP status and a JSON `error` object.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    /// The request body or one of its fields is wrong.
    #[error("{0}")]
    BadRequest(String),
    /// No such connection or question.
    #[error("{0}")]
    NotFound(String),
    /// A console limit was reached.
    #[error("{0}")]
    Limit(String),
    /// The console does not do this for the page (a command not given with `--stdio`).
    #[error("{0}")]
    Forbidden(String),
    /// The request body is larger than the console reads (`mcp console --max-body`).
    #[error(
        "the request body is larger than the console's limit of {limit} bytes; \
         start it with `mcp console --max-body BYTES` to raise it"
    )]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The MCP client failed (connecting, the request).
    #[error("{what}: {source}")]
    Client {
        /// What was asked.
        what: String,
        /// What the client said.
        #[source]
        source: mcp_client::Error,
    },
}

impl ApiError {
    /// The HTTP status of this error.
    pub(crate) fn status(&self) -> u16 {
        match self {
            Self::BadRequest(_) => 400,
            Self::NotFound(_) => 404,
            Self::Limit(_) => 429,
            Self::Forbidden(_) => 403,
            Self::TooLarge { .. } => 413,
            Self::Client { .. } => 502,
        }
    }

    /// The JSON body of this error.
    pub(crate) fn body(&self) -> Value {
        let mut error = json!({"message": self.to_string()});
        if let Self::Client { source, .. } = self {
            error["kind"] = json!(format!("{:?}", source.kind()));
            if let Some(rpc) = source.rpc() {
                error["rpc"] = json!(rpc);
            }
            if source.is_rate_limited() {
                error["rateLimited"] = json!({
                    "retryAfterMs": source.retry_after().map(|w| u64::try_from(w.as_millis()).unwrap_or(u64::MAX)),
                    "limit": source.rate_limit(),
                });
            }
        }
        json!({"error": error})
    }
}

/// The event of a rate-limited request the client will send again after `wait`.
fn rate_limited_event(conn: u64, error: &mcp_client::Error, wait: Duration) -> Value {
    let ms = |w: Duration| u64::try_from(w.as_millis()).unwrap_or(u64::MAX);
    json!({"type": "rate-limited", "conn": conn, "limit": error.rate_limit(),
        "retryAfterMs": error.retry_after().map(ms), "waitMs": ms(wait),
        "message": crate::connect::retry_note(error, wait)})
}

fn field<'a>(body: &'a Value, name: &str) -> Result<&'a str, ApiError> {
    body.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::BadRequest(format!("the field {name:?} (a string) is missing")))
}

fn conn_id(body: &Value) -> Result<u64, ApiError> {
    body.get("conn")
        .and_then(Value::as_u64)
        .ok_or_else(|| ApiError::BadRequest("the field \"conn\" (a number) is missing".into()))
}

fn connection(state: &State, body: &Value) -> Result<(u64, Connection), ApiError> {
    let id = conn_id(body)?;
    let connection = state
        .connection(id)
        .ok_or_else(|| ApiError::NotFound(format!("no connection {id}")))?;
    Ok((id, connection))
}

/// What to connect to, read from a connect or lens request.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    url: Option<String>,
    stdio: Option<Vec<String>>,
    transport: String,
    log_level: Option<LogLevel>,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl Target {
    fn read(body: &Value) -> Result<Self, ApiError> {
        let url = body
            .get("url")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let stdio = body
            .get("stdio")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let (url, stdio) = match (url, stdio) {
            (Some(url), None) => {
                if !url.starts_with("http://") && !url.starts_with("https://") {
                    return Err(ApiError::BadRequest(format!(
                        "{url:?} is not an http:// or https:// URL"
                    )));
                }
                (Some(url.to_owned()), None)
            }
            (None, Some(command)) => {
                let words =
                    split_command(command).map_err(|e| ApiError::BadRequest(e.to_string()))?;
                (None, Some(words))
            }
            _ => {
                return Err(ApiError::BadRequest(
                    "give exactly one of \"url\" and \"stdio\"".into(),
                ));
            }
        };
        let transport = body
            .get("transport")
            .and_then(Value::as_str)
            .unwrap_or("auto")
            .to_owned();
        if !["auto", "streamable", "sse"].contains(&transport.as_str()) {
            return Err(ApiError::BadRequest(format!(
                "unknown transport {transport:?} (auto, streamable or sse)"
            )));
        }
        let log_level = match body.get("logLevel").and_then(Value::as_str) {
            None | Some("") => None,
            Some(level) => Some(
                level
                    .parse()
                    .map_err(|_| ApiError::BadRequest(format!("unknown log level {level:?}")))?,
            ),
        };
        let mut headers = Vec::new();
        if let Some(list) = body.get("headers").and_then(Value::as_object) {
            for (name, value) in list {
                let value = value.as_str().unwrap_or_default();
                let name = HeaderName::try_from(name.as_str())
                    .map_err(|e| ApiError::BadRequest(format!("header {name:?}: {e}")))?;
                let value = HeaderValue::try_from(value)
                    .map_err(|e| ApiError::BadRequest(format!("header {name}: {e}")))?;
                headers.push((name, value));
            }
        }
        Ok(Self {
            url,
            stdio,
            transport,
            log_level,
            headers,
        })
    }

    fn name(&self) -> String {
        match (&self.url, &self.stdio) {
            (Some(url), _) => url.clone(),
            (_, Some(words)) => words.join(" "),
            _ => String::new(),
        }
    }
}

fn read_revision(body: &Value) -> Result<Option<Revision>, ApiError> {
    match body.get("revision").and_then(Value::as_str) {
        None | Some("" | "auto") => Ok(None),
        Some(text) => Revision::parse(text)
            .map(Some)
            .ok_or_else(|| ApiError::BadRequest(format!("unknown revision {text:?}"))),
    }
}

/// Refuses a `stdio` target whose command was not given with `mcp console --stdio CMD`
/// (unless `--allow-any-stdio`): whoever holds the token must not run commands at will.
fn allowed(state: &State, target: &Target) -> Result<(), ApiError> {
    match &target.stdio {
        Some(words) if !state.stdio.allows(words) => Err(ApiError::Forbidden(format!(
            "the console runs only the commands given on its command line (mcp console \
             --stdio CMD), not {:?}; restart it with --stdio {:?} to offer this one",
            words.join(" "),
            words.join(" ")
        ))),
        _ => Ok(()),
    }
}

/// Connects one client to `target` (pinned to `revision` when given) with its events, asks and
/// protocol messages going to `state`, and stores it.
async fn connect_one(
    state: &Arc<State>,
    target: &Target,
    revision: Option<Revision>,
    lens: bool,
) -> Result<Value, ApiError> {
    allowed(state, target)?;
    let slot = state.reserve().ok_or_else(|| {
        ApiError::Limit(format!(
            "{} connections are open (the console's limit, --max-connections); disconnect one",
            state.limits.max_connections
        ))
    })?;
    let id = slot.id;
    let (s1, s2, s3, s4, s5) = (
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
    );
    let mut builder = Client::builder()
        .client_info("mcp-console", env!("CARGO_PKG_VERSION"))
        .timeout(state.limits.timeout)
        .remember_era(false)
        .on_message(move |seen| {
            let dir = if seen.direction() == Direction::Sent {
                "sent"
            } else {
                "received"
            };
            let mut event = json!({"type": "message", "conn": id, "dir": dir,
                "message": seen.message()});
            // The trace a request belongs to: the page shows it, and its response's.
            if let Some(trace) = seen
                .message()
                .get("params")
                .and_then(Value::as_object)
                .and_then(mcp_client::trace::TraceContext::from_params)
            {
                event["traceId"] = json!(trace.traceparent.trace_id_hex());
            }
            if let Some(headers) = seen.headers().filter(|h| !h.is_empty()) {
                let headers: serde_json::Map<String, Value> = headers
                    .iter()
                    .map(|(name, value)| {
                        (
                            name.to_string(),
                            json!(value.to_str().unwrap_or("(not text)")),
                        )
                    })
                    .collect();
                event["headers"] = Value::Object(headers);
            }
            if let Some(status) = seen.http_status() {
                event["httpStatus"] = json!(status);
            }
            s1.push(event);
        })
        // The head of every HTTP response, as a row of the protocol view beside the messages.
        .on_http_response(move |response| {
            let headers: serde_json::Map<String, Value> = response
                .headers()
                .iter()
                .map(|(name, value)| {
                    (
                        name.to_string(),
                        json!(value.to_str().unwrap_or("(not text)")),
                    )
                })
                .collect();
            s4.push(json!({"type": "message", "conn": id, "dir": "received",
                "message": {"http": format!("{} {}", response.method(), response.url()),
                    "status": response.status()},
                "headers": headers}));
        })
        .on_notification(move |n| {
            s2.push(
                json!({"type": "notification", "conn": id, "method": n.method,
                "params": n.params}),
            );
        })
        .on_ask(Asks::all(), move |question| s3.clone().ask(id, question))
        // Each request starts a trace of its own, which the protocol view shows: a server
        // that exports spans puts its span for the request in that trace.
        .trace_context(mcp_client::TracePropagation::with(
            crate::connect::new_trace,
        ))
        // Tools the server runs as tasks are followed (status events, cancel from the page).
        .tasks(TaskPolling::new())
        // A rate-limited request is retried as the client's defaults say; each wait is shown.
        .rate_limit_retry(
            mcp_client::RateLimitRetry::new().on_retry(move |error, wait| {
                s5.push(rate_limited_event(id, error, wait));
            }),
        );
    if let Some(revision) = revision {
        builder = builder.revision(revision);
    }
    if let Some(level) = target.log_level {
        builder = builder.log_level(level);
    }
    for (name, value) in &target.headers {
        builder = builder.header(name.clone(), value.clone());
    }
    state.push(
        json!({"type": "connecting", "conn": id, "target": target.name(),
        "revision": revision.map(|r| r.as_str())}),
    );
    let connected = match (&target.stdio, target.url.as_deref()) {
        (Some(words), _) => {
            let Some((program, args)) = words.split_first() else {
                return Err(ApiError::BadRequest("the command is empty".into()));
            };
            builder
                .connect_stdio(Stdio::builder(program).args(args))
                .await
        }
        // Target::read always gives one of the two; an empty URL fails as an invalid one.
        (None, url) => {
            let url = url.unwrap_or_default();
            // A hand-written Authorization header replaces OAuth, as on the command line.
            let by_hand = target
                .headers
                .iter()
                .any(|(name, _)| *name == http::header::AUTHORIZATION);
            let net = state.net.get();
            let oauth = net.map(|n| &n.oauth).filter(|_| !by_hand);
            let https = net.and_then(|n| n.https.as_ref());
            if let Some(oauth) = oauth {
                builder = builder.oauth(oauth.clone());
            }
            if let Some(https) = https {
                builder = builder.https(https.clone());
            }
            match target.transport.as_str() {
                "sse" => builder.connect_sse(url).await,
                "streamable" => {
                    let uri: Uri = url
                        .parse()
                        .map_err(|e| ApiError::BadRequest(format!("invalid URL {url:?}: {e}")))?;
                    let mut transport = StreamableHttp::builder(uri);
                    for (name, value) in &target.headers {
                        transport = transport.header(name.clone(), value.clone());
                    }
                    if let Some(https) = https {
                        transport = transport.https(https.clone());
                    }
                    match oauth {
                        Some(oauth) => {
                            let oauth = mcp_client::oauth::OAuth::new(oauth.clone(), url)
                                .map_err(|e| ApiError::BadRequest(format!("{url:?}: {e}")))?;
                            builder
                                .connect(mcp_client::oauth::OAuthTransport::new(
                                    Arc::new(transport.build()),
                                    oauth,
                                ))
                                .await
                        }
                        None => builder.connect(transport.build()).await,
                    }
                }
                _ => builder.connect_http(url).await,
            }
        }
    };
    let client = match connected {
        Ok(client) => client,
        Err(source) => {
            state.push(json!({"type": "connect-failed", "conn": id, "error": source.to_string()}));
            return Err(ApiError::Client {
                what: format!("cannot connect to {}", target.name()),
                source,
            });
        }
    };
    let server = client.server();
    let summary = json!({
        "conn": id,
        "target": target.name(),
        "transport": if target.stdio.is_some() { "stdio" } else { target.transport.as_str() },
        "asked": revision.map(|r| r.as_str()),
        "revision": client.revision().as_str(),
        "sessionId": client.session_id(),
        "lens": lens,
        "server": server.as_ref().map(|s| json!({
            "capabilities": s.capabilities,
            "serverInfo": s.server_info,
            "instructions": s.instructions,
            "supportedVersions": s.supported_versions,
        })),
    });
    slot.fill(Connection {
        client,
        summary: summary.clone(),
    });
    state.push(json!({"type": "connected", "conn": id, "summary": summary}));
    Ok(summary)
}

/// `POST /api/connect`: `{url | stdio, revision?, transport?, logLevel?, headers?}`.
pub(crate) async fn connect(state: Arc<State>, body: Value) -> Result<Value, ApiError> {
    let target = Target::read(&body)?;
    let revision = read_revision(&body)?;
    connect_one(&state, &target, revision, false).await
}

/// `POST /api/disconnect`: `{conn}`.
pub(crate) async fn disconnect(state: Arc<State>, body: Value) -> Result<Value, ApiError> {
    let id = conn_id(&body)?;
    let connection = state
        .remove(id)
        .ok_or_else(|| ApiError::NotFound(format!("no connection {id}")))?;
    state.remove_listeners_of(id);
    let closed = connection.client.close().await;
    state.push(json!({"type": "disconnected", "conn": id}));
    Ok(json!({"closed": closed.is_ok()}))
}

/// `GET /api/connections`.
pub(crate) fn connections(state: &State) -> Value {
    let choices: Vec<String> = state.stdio.allowed.iter().map(|w| w.join(" ")).collect();
    json!({"connections": state.summaries(), "initial": state.initial,
        "stdio": {"choices": choices, "any": state.stdio.any}, "limits": {
        "maxConnections": state.limits.max_connections,
        "maxEvents": state.limits.max_events,
        "maxAsks": state.limits.max_asks,
        "waitingAsks": state.waiting_asks(),
    }})
}

/// Lists one kind; `Ok(None)` when the server does not offer it (no capability).
async fn list(client: &Client, kind: &str) -> Result<Vec<Value>, mcp_client::Error> {
    match kind {
        "tools" => client.list_tools().await,
        "resources" => client.list_resources().await,
        "templates" => client.list_resource_templates().await,
        _ => client.list_prompts().await,
    }
}

/// The capability a kind of list needs.
fn capability(kind: &str) -> &'static str {
    match kind {
        "tools" => "tools",
        "resources" | "templates" => "resources",
        _ => "prompts",
    }
}

/// `POST /api/list`: `{conn, kind: tools | resources | templates | prompts}`.
pub(crate) async fn list_kind(state: Arc<State>, body: Value) -> Result<Value, ApiError> {
    let (_, connection) = connection(&state, &body)?;
    let kind = field(&body, "kind")?;
    if !["tools", "resources", "templates", "prompts"].contains(&kind) {
        return Err(ApiError::BadRequest(format!("unknown kind {kind:?}")));
    }
    let offered = connection
        .summary
        .pointer(&format!("/server/capabilities/{}", capability(kind)))
        .is_some();
    if !offered {
        return Ok(json!({"items": [], "offered": false}));
    }
    let items = list(&connection.client, kind)
        .await
        .map_err(|source| ApiError::Client {
            what: format!("listing {kind}"),
            source,
        })?;
    Ok(json!({"items": items, "offered": true}))
}

/// `POST /api/call`: `{conn, name, arguments, call?}`; progress goes to the events, tagged
/// with `call`.
pub(crate) async fn call(state: Arc<State>, body: Value) -> Result<Value, ApiError> {
    let (id, connection) = connection(&state, &body)?;
    let name = field(&body, "name")?.to_owned();
    let arguments = body.get("arguments").cloned().unwrap_or_else(|| json!({}));
    if !arguments.is_object() {
        return Err(ApiError::BadRequest(
            "\"arguments\" must be an object".into(),
        ));
    }
    let call = body.get("call").cloned().unwrap_or(Value::Null);
    let progress_state = state.clone();
    let progress_call = call.clone();
    let options = CallOptions::new().on_progress(move |p| {
        progress_state.push(
            json!({"type": "progress", "conn": id, "call": progress_call,
            "progress": p.progress, "total": p.total, "message": p.message}),
        );
    });
    let failed = |source| ApiError::Client {
        what: format!("tools/call {name:?}"),
        source,
    };
    match connection
        .client
        .call_tool_as_task_with(&name, arguments, options)
        .await
        .map_err(failed)?
    {
        ToolCall::Task(handle) => {
            // A task: its status goes to the events (the page shows it with a cancel button);
            // its questions come as every other question does.
            let mut last = Value::Null;
            handle
                .wait_with(|task| {
                    let seen = json!({"type": "task", "conn": id, "call": call,
                        "taskId": task.id(), "status": task.raw()["status"],
                        "message": task.status_message()});
                    if seen != last {
                        state.push(seen.clone());
                        last = seen;
                    }
                })
                .await
                .map_err(failed)
        }
        ToolCall::Done(result) => Ok(result),
        _ => Err(ApiError::BadRequest("an unknown kind of tool call".into())),
    }
}

/// `POST /api/cancel-task`: `{conn, taskId}`: `tasks/cancel` (the call following the task
/// then ends with the task `cancelled`).
pub(crate) async fn cancel_task(state: Arc<State>, body: Value) -> Result<Value, ApiError> {
    let (_, connection) = connection(&state, &body)?;
    let task = field(&body, "taskId")?;
    connection
        .client
        .cancel_task(task)
        .await
        .map_err(|source| ApiError::Client {
            what: format!("tasks/cancel {task:?}"),
            source,
        })?;
    Ok(json!({}))
}

/// `POST /api/read`: `{conn, uri}`.
pub(crate) async fn read(state: Arc<State>, body: Value) -> Result<Value, ApiError> {
    let (_, connection) = connection(&state, &body)?;
    let uri = field(&body, "uri")?;
    connection
        .client
        .read_resource(uri)
        .await
        .map_err(|source| ApiError::Client {
            what: format!("resources/read {uri:?}"),
            source,
        })
}

/// `POST /api/prompt`: `{conn, name, arguments}` (string values).
pub(crate) async fn prompt(state: Arc<State>, body: Value) -> Result<Value, ApiError> {
    let (_, connection) = connection(&state, &body)?;
    let name = field(&body, "name")?;
    let arguments = body.get("arguments").cloned().unwrap_or_else(|| json!({}));
    connection
        .client
        .get_prompt(name, arguments)
        .await
        .map_err(|source| ApiError::Client {
            what: format!("prompts/get {name:?}"),
            source,
        })
}

/// `POST /api/complete`: `{conn, ref, argument: {name, value}}`.
pub(crate) async fn complete(state: Arc<State>, body: Value) -> Result<Value, ApiError> {
    let (_, connection) = connection(&state, &body)?;
    let reference = match body.get("ref") {
        Some(Value::Object(reference)) => Value::Object(reference.clone()),
        _ => {
            return Err(ApiError::BadRequest(
                "the field \"ref\" (an object: ref/prompt or ref/resource) is missing".into(),
            ));
        }
    };
    let argument = body.get("argument").cloned().unwrap_or(Value::Null);
    let name = argument
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ApiError::BadRequest("the field \"argument\" needs a \"name\" (a string)".into())
        })?;
    let value = argument.get("value").and_then(Value::as_str).unwrap_or("");
    let context = body.get("context").filter(|c| c.is_object()).cloned();
    let mut result = connection
        .client
        .complete(reference, name, value, context)
        .await
        .map_err(|source| ApiError::Client {
            what: "completion/complete".into(),
            source,
        })?;
    crate::output::bound_completion(&mut result);
    Ok(result)
}

/// `POST /api/log-level`: `{conn, level}`.
pub(crate) async fn log_level(state: Arc<State>, body: Value) -> Result<Value, ApiError> {
    let (_, connection) = connection(&state, &body)?;
    let level = field(&body, "level")?;
    level
        .parse::<LogLevel>()
        .map_err(|_| ApiError::BadRequest(format!("unknown log level {level:?}")))?;
    connection
        .client
        .set_log_level(level)
        .await
        .map_err(|source| ApiError::Client {
            what: "logging/setLevel".into(),
            source,
        })?;
    Ok(json!({}))
}

/// `POST /api/answer`: `{ask, action: accept | decline | cancel, content?}` or `{ask, result}`
/// (sampling, roots) or `{ask, error: {code, message}}`.
pub(crate) async fn answer(state: Arc<State>, body: Value) -> Result<Value, ApiError> {
    let ask = body
        .get("ask")
        .and_then(Value::as_u64)
        .ok_or_else(|| ApiError::BadRequest("the field \"ask\" (a number) is missing".into()))?;
    let answer = if let Some(result) = body.get("result") {
        Answer::result(result.clone())
    } else if let Some(error) = body.get("error") {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603);
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("refused");
        Answer::error(mcp_client::ErrorObject::new(code, message))
    } else {
        match field(&body, "action")? {
            "accept" => match body.get("content") {
                Some(content) => Answer::accept(content.clone()),
                None => Answer::accept_url(),
            },
            "decline" => Answer::decline(),
            "cancel" => Answer::cancel(),
            other => {
                return Err(ApiError::BadRequest(format!(
                    "unknown action {other:?} (accept, decline or cancel)"
                )));
            }
        }
    };
    if !state.answer(ask, answer) {
        return Err(ApiError::NotFound(format!(
            "no question {ask} is waiting (answered, or its call ended)"
        )));
    }
    Ok(json!({}))
}

/// `POST /api/listen`: `{conn, tools?, prompts?, resources?, uris?: [...]}`: list changes and
/// resource updates, as the revision carries them (`subscriptions/listen`, `resources/subscribe`
/// and the standalone stream); they come as `listened` events.
pub(crate) async fn listen(state: Arc<State>, body: Value) -> Result<Value, ApiError> {
    let (id, connection) = connection(&state, &body)?;
    let flag = |name: &str| body.get(name).and_then(Value::as_bool) == Some(true);
    let mut subscriptions = Subscriptions::new();
    if flag("tools") {
        subscriptions = subscriptions.tools_changed();
    }
    if flag("prompts") {
        subscriptions = subscriptions.prompts_changed();
    }
    if flag("resources") {
        subscriptions = subscriptions.resources_changed();
    }
    for uri in body
        .get("uris")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let uri = uri
            .as_str()
            .ok_or_else(|| ApiError::BadRequest("\"uris\" must be strings".into()))?;
        subscriptions = subscriptions.resource(uri);
    }
    if subscriptions == Subscriptions::new() {
        return Err(ApiError::BadRequest("listen to nothing?".into()));
    }
    let listener = connection
        .client
        .listen(subscriptions)
        .await
        .map_err(|source| ApiError::Client {
            what: "listening".into(),
            source,
        })?;
    let accepted = listener.accepted().cloned();
    let listener = state.add_listener(id, listener).ok_or_else(|| {
        ApiError::Limit(format!(
            "{} listeners are open (--max-listeners); stop one",
            state.limits.max_listeners
        ))
    })?;
    Ok(json!({"listener": listener, "accepted": accepted}))
}

/// `POST /api/unlisten`: `{listener}`.
pub(crate) async fn unlisten(state: Arc<State>, body: Value) -> Result<Value, ApiError> {
    let id = body
        .get("listener")
        .and_then(Value::as_u64)
        .ok_or_else(|| {
            ApiError::BadRequest("the field \"listener\" (a number) is missing".into())
        })?;
    if !state.remove_listener(id) {
        return Err(ApiError::NotFound(format!("no listener {id}")));
    }
    Ok(json!({}))
}

/// `POST /api/lens`: `{url | stdio, transport?, revisions?}`: one connection per revision
/// (every revision by default), each listing its tools, resources, templates and prompts.
pub(crate) async fn lens(state: Arc<State>, body: Value) -> Result<Value, ApiError> {
    let target = Target::read(&body)?;
    allowed(&state, &target)?;
    let revisions: Vec<Revision> = match body.get("revisions").and_then(Value::as_array) {
        Some(list) => list
            .iter()
            .map(|r| {
                r.as_str()
                    .and_then(Revision::parse)
                    .ok_or_else(|| ApiError::BadRequest(format!("unknown revision {r}")))
            })
            .collect::<Result<_, _>>()?,
        None => Revision::ALL.to_vec(),
    };
    let columns = revisions.iter().map(|&revision| {
        let state = state.clone();
        let target = target.clone();
        async move {
            let summary = match connect_one(&state, &target, Some(revision), true).await {
                Ok(summary) => summary,
                Err(e) => {
                    return json!({"revision": revision.as_str(), "error": e.body()["error"]});
                }
            };
            let mut column = json!({"revision": revision.as_str(), "summary": summary});
            let conn = summary["conn"].as_u64().unwrap_or_default();
            for kind in ["tools", "resources", "templates", "prompts"] {
                let listed = list_kind(state.clone(), json!({"conn": conn, "kind": kind})).await;
                column[kind] = match listed {
                    Ok(value) => value,
                    Err(e) => e.body(),
                };
            }
            column
        }
    });
    let columns = futures::future::join_all(columns).await;
    Ok(json!({"columns": columns}))
}

/// `POST /api/login-address`: `{login, address}`: the address the browser was sent to after
/// a login (`--no-browser`: nothing listens on the redirect URI, the user pastes it).
pub(crate) async fn login_address(state: Arc<State>, body: Value) -> Result<Value, ApiError> {
    let login = body
        .get("login")
        .and_then(Value::as_u64)
        .ok_or_else(|| ApiError::BadRequest("the field \"login\" (a number) is missing".into()))?;
    let address = field(&body, "address")?.trim().to_owned();
    if !state.give_login_address(login, address) {
        return Err(ApiError::NotFound(format!("no login {login} is waiting")));
    }
    Ok(json!({}))
}

/// An action of the API (`POST /api/NAME`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Action {
    Connect,
    Disconnect,
    List,
    Call,
    CancelTask,
    Read,
    Prompt,
    Complete,
    LogLevel,
    Answer,
    Listen,
    Unlisten,
    Lens,
    LoginAddress,
}

impl Action {
    /// The action of the route `path`.
    pub(crate) fn of(path: &str) -> Option<Self> {
        Some(match path {
            "/api/connect" => Self::Connect,
            "/api/disconnect" => Self::Disconnect,
            "/api/list" => Self::List,
            "/api/call" => Self::Call,
            "/api/cancel-task" => Self::CancelTask,
            "/api/read" => Self::Read,
            "/api/prompt" => Self::Prompt,
            "/api/complete" => Self::Complete,
            "/api/log-level" => Self::LogLevel,
            "/api/answer" => Self::Answer,
            "/api/listen" => Self::Listen,
            "/api/unlisten" => Self::Unlisten,
            "/api/lens" => Self::Lens,
            "/api/login-address" => Self::LoginAddress,
            _ => return None,
        })
    }

    /// Runs the action and answers its JSON.
    pub(crate) async fn run(self, state: Arc<State>, body: Value) -> Result<Value, ApiError> {
        match self {
            Self::Connect => connect(state, body).await,
            Self::Disconnect => disconnect(state, body).await,
            Self::List => list_kind(state, body).await,
            Self::Call => call(state, body).await,
            Self::CancelTask => cancel_task(state, body).await,
            Self::Read => read(state, body).await,
            Self::Prompt => prompt(state, body).await,
            Self::Complete => complete(state, body).await,
            Self::LogLevel => log_level(state, body).await,
            Self::Answer => answer(state, body).await,
            Self::Listen => listen(state, body).await,
            Self::Unlisten => unlisten(state, body).await,
            Self::Lens => lens(state, body).await,
            Self::LoginAddress => login_address(state, body).await,
        }
    }
}

/// Starts `action` as a job and answers its id at once; its result (`{"job", "status",
/// "body"}`) comes as a `result` event and from `GET /api/result?job=ID`. At
/// [`super::Limits::max_actions`] running jobs it is refused (429).
pub(crate) fn start_job(state: Arc<State>, action: Action, body: Value) -> Result<u64, ApiError> {
    let slot = state.begin_job().ok_or_else(|| {
        ApiError::Limit(format!(
            "{} actions of the page are running (the console's limit, --max-actions); wait \
             for one to end",
            state.limits.max_actions
        ))
    })?;
    let id = slot.id;
    tokio::spawn(async move {
        let result = match action.run(state, body).await {
            Ok(value) => json!({"job": slot.id, "status": 200, "body": value}),
            Err(e) => json!({"job": slot.id, "status": e.status(), "body": e.body()}),
        };
        slot.finish(result);
    });
    Ok(id)
}

/// How long `GET /api/events` waits for an event before answering with none.
pub(crate) const EVENTS_WAIT: Duration = Duration::from_secs(20);
