//! A scripted MCP server on 127.0.0.1:0 for the client's tests: canned per-revision behaviour
//! (modern-only, legacy-only, HTTP+SSE-only or all of them), misbehaviour on request, and a record
//! of every message the client sent, to validate against the official schemas.

#![allow(dead_code, unreachable_pub)] // Shared by several test files; each uses a part.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{Notify, mpsc, oneshot};

pub mod schema;

pub const MODERN: &str = "2026-07-28";
pub const ALL: [&str; 5] = [
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];
pub const INPUT_REQUIRED_META: &str = mcp_client::INPUT_REQUIRED_META;

/// Every test future is bounded: a hang is a failure, not a stuck CI job.
pub async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("test step timed out")
}

/// What the scripted server speaks.
#[derive(Debug, Clone)]
pub struct Config {
    /// Versions served on Streamable HTTP at `/mcp` (empty: no Streamable HTTP; POST gets 405).
    pub streamable: Vec<&'static str>,
    /// Serve HTTP+SSE at `/sse` and `/messages` (handshake revisions only).
    pub sse: bool,
    /// Answer a modern request with `-32022` naming the (legacy) versions served, as a server
    /// that knows the modern era but does not speak it would.
    pub refuse_modern: bool,
}

impl Config {
    pub fn all() -> Self {
        Self {
            streamable: ALL.to_vec(),
            sse: true,
            refuse_modern: false,
        }
    }
    pub fn modern_only() -> Self {
        Self {
            streamable: vec![MODERN],
            sse: false,
            refuse_modern: false,
        }
    }
    pub fn legacy_only() -> Self {
        Self {
            streamable: ALL[1..].to_vec(),
            sse: false,
            refuse_modern: false,
        }
    }
    pub fn sse_only() -> Self {
        Self {
            streamable: Vec::new(),
            sse: true,
            refuse_modern: false,
        }
    }
}

/// One message the client sent, with the revision it was sent under.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub revision: String,
    pub headers: HeaderMap,
    pub body: Value,
}

/// How the server misbehaves on `tools/call` of the tool named `bad`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misbehaviour {
    WrongContentType,
    TruncatedSse,
    GarbageJson,
    GarbageSseData,
    Silent,
    Http500,
    UnknownResultType,
    /// A JSON-RPC result that is not a `CallToolResult` (`content` is not a list).
    WrongShape,
}

#[derive(Default)]
struct State {
    sessions: HashMap<String, String>,
    next_session: usize,
    pending: HashMap<String, oneshot::Sender<Value>>,
    sse_streams: HashMap<String, mpsc::UnboundedSender<Bytes>>,
    get_streams: Vec<mpsc::UnboundedSender<Bytes>>,
    listen_streams: Vec<(Value, mpsc::UnboundedSender<Bytes>)>,
    event_id: usize,
    last_event_ids: Vec<Option<String>>,
    recorded: Vec<Recorded>,
    cancelled: Vec<Value>,
    deleted: Vec<String>,
    region_header: String,
    misbehaviour: Option<Misbehaviour>,
    replay: HashMap<String, Value>,
    replayed: Vec<String>,
    /// `ttlMs` of `tools/list` pages (modern), 0 by default.
    list_ttl: u64,
    /// Every request after `initialize` gets 404, as from a server that loses every session.
    forget_always: bool,
    /// The `region` tool rejects every call with -32020, whatever the headers.
    always_mismatch: bool,
    /// How many of the next requests get -32022 naming every version served (the requested one
    /// included), as the official `request-metadata` scenario does with the first request.
    refuse_versions: usize,
    /// `resources/subscribe` publishes `notifications/resources/updated` for its URI just before
    /// it answers, as a resource that changes at once would.
    update_on_subscribe: bool,
    /// Every GET on `/mcp` is answered with this status instead of a stream.
    refuse_get: Option<StatusCode>,
}

pub struct Mock {
    pub base: String,
    config: Config,
    state: Mutex<State>,
    pub reads: AtomicUsize,
    pub discovers: AtomicUsize,
    pub closed_streams: AtomicUsize,
    pub closed: Notify,
    pub cancel_seen: Notify,
    pub changed: Notify,
}

type Body = BoxBody<Bytes, Infallible>;

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(full(serde_json::to_vec(value).unwrap()))
        .unwrap()
}

fn empty(status: StatusCode) -> Response<Body> {
    Response::builder()
        .status(status)
        .body(full(Bytes::new()))
        .unwrap()
}

fn sse_body(rx: mpsc::UnboundedReceiver<Bytes>) -> Body {
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    BodyExt::boxed(StreamBody::new(stream))
}

fn sse_response(rx: mpsc::UnboundedReceiver<Bytes>) -> Response<Body> {
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .body(sse_body(rx))
        .unwrap()
}

pub fn event(value: &Value) -> Bytes {
    Bytes::from(format!("data: {}\n\n", value))
}

fn error(id: Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut e = json!({"code": code, "message": message});
    if let Some(d) = data {
        e["data"] = d;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": e})
}

fn ok(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// Where a reply goes: an HTTP response, or the HTTP+SSE stream of a session.
enum Reply {
    Json(StatusCode, Value),
    WithSession(Value, String),
    Raw(Response<Body>),
    Accepted,
    Stream(mpsc::UnboundedReceiver<Bytes>),
    Status(StatusCode, Value),
}

impl Mock {
    pub async fn start(config: Config) -> Arc<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mock = Arc::new(Self {
            base: format!("http://{addr}"),
            config,
            state: Mutex::new(State {
                region_header: "Region".into(),
                ..State::default()
            }),
            reads: AtomicUsize::new(0),
            discovers: AtomicUsize::new(0),
            closed_streams: AtomicUsize::new(0),
            closed: Notify::new(),
            cancel_seen: Notify::new(),
            changed: Notify::new(),
        });
        let server = mock.clone();
        tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let server = server.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| {
                        let server = server.clone();
                        async move { Ok::<_, Infallible>(server.route(req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(socket), service)
                        .await;
                });
            }
        });
        mock
    }

    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    pub fn sse_url(&self) -> String {
        format!("{}/sse", self.base)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    pub fn recorded(&self) -> Vec<Recorded> {
        self.lock().recorded.clone()
    }

    pub fn methods(&self) -> Vec<String> {
        self.recorded()
            .iter()
            .map(|r| {
                r.body
                    .get("method")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| "(response)".into())
            })
            .collect()
    }

    pub fn cancelled(&self) -> Vec<Value> {
        self.lock().cancelled.clone()
    }

    pub fn deleted(&self) -> Vec<String> {
        self.lock().deleted.clone()
    }

    pub fn replayed(&self) -> Vec<String> {
        self.lock().replayed.clone()
    }

    pub fn last_event_ids(&self) -> Vec<Option<String>> {
        self.lock().last_event_ids.clone()
    }

    pub fn expire_sessions(&self) {
        self.lock().sessions.clear();
    }

    pub fn set_list_ttl(&self, ms: u64) {
        self.lock().list_ttl = ms;
    }

    pub fn forget_sessions_always(&self) {
        self.lock().forget_always = true;
    }

    pub fn reject_region_always(&self) {
        self.lock().always_mismatch = true;
    }

    /// The next `n` requests are refused with -32022, whose list names the requested version.
    pub fn refuse_versions(&self, n: usize) {
        self.lock().refuse_versions = n;
    }

    pub fn refuse_get(&self, status: StatusCode) {
        self.lock().refuse_get = Some(status);
    }

    pub fn update_on_subscribe(&self) {
        self.lock().update_on_subscribe = true;
    }

    pub fn set_region_header(&self, name: &str) {
        self.lock().region_header = name.into();
    }

    pub fn misbehave(&self, how: Misbehaviour) {
        self.lock().misbehaviour = Some(how);
    }

    /// Publishes a notification to every open notification stream (listen, GET, HTTP+SSE).
    pub fn publish(&self, method: &str, params: Value) {
        let mut state = self.lock();
        for (id, tx) in &state.listen_streams {
            let mut p = params.clone();
            p["_meta"] = json!({"io.modelcontextprotocol/subscriptionId": id});
            let _ = tx.send(event(
                &json!({"jsonrpc": "2.0", "method": method, "params": p}),
            ));
        }
        state.event_id += 1;
        let n = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let framed = Bytes::from(format!("id: {}\ndata: {}\n\n", state.event_id, n));
        state
            .get_streams
            .retain(|tx| tx.send(framed.clone()).is_ok());
        for tx in state.sse_streams.values() {
            let _ = tx.send(Bytes::from(format!("event: message\ndata: {n}\n\n")));
        }
    }

    /// Closes every legacy GET stream (the client should resume with Last-Event-ID).
    pub fn drop_get_streams(&self) {
        self.lock().get_streams.clear();
    }

    pub fn open_streams(&self) -> (usize, usize) {
        let s = self.lock();
        (
            s.get_streams.iter().filter(|t| !t.is_closed()).count(),
            s.listen_streams.len(),
        )
    }

    async fn route(self: Arc<Self>, req: Request<Incoming>) -> Response<Body> {
        let (parts, body) = req.into_parts();
        let bytes = body
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let path = parts.uri.path().to_owned();
        match (parts.method.clone(), path.as_str()) {
            (Method::POST, "/mcp") if !self.config.streamable.is_empty() => {
                let session = parts
                    .headers
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                self.post(&parts.headers, &bytes, session, None).await
            }
            (Method::GET, "/mcp") if !self.config.streamable.is_empty() => {
                self.get_stream(&parts.headers)
            }
            (Method::DELETE, "/mcp") if !self.config.streamable.is_empty() => {
                if let Some(s) = parts
                    .headers
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
                {
                    self.lock().deleted.push(s.to_owned());
                    self.lock().sessions.remove(s);
                }
                empty(StatusCode::OK)
            }
            (Method::GET, "/sse") if self.config.sse => self.open_sse(),
            (Method::POST, "/messages") if self.config.sse => {
                let id = parts
                    .uri
                    .query()
                    .and_then(|q| q.strip_prefix("session_id="))
                    .unwrap_or("")
                    .to_owned();
                let Some(tx) = self.lock().sse_streams.get(&id).cloned() else {
                    return empty(StatusCode::NOT_FOUND);
                };
                let reply = self
                    .clone()
                    .post(&parts.headers, &bytes, Some(id.clone()), Some(tx.clone()))
                    .await;
                let _ = reply;
                empty(StatusCode::ACCEPTED)
            }
            (Method::POST, _) => empty(StatusCode::METHOD_NOT_ALLOWED),
            _ => empty(StatusCode::NOT_FOUND),
        }
    }

    fn open_sse(&self) -> Response<Body> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut state = self.lock();
        state.next_session += 1;
        let id = format!("sse-{}", state.next_session);
        let _ = tx.send(Bytes::from(format!(
            "event: endpoint\ndata: /messages?session_id={id}\n\n"
        )));
        state.sse_streams.insert(id.clone(), tx);
        state.sessions.insert(id, "2024-11-05".into());
        sse_response(rx)
    }

    fn get_stream(&self, headers: &HeaderMap) -> Response<Body> {
        let session = headers.get("mcp-session-id").and_then(|v| v.to_str().ok());
        let mut state = self.lock();
        if let Some(status) = state.refuse_get {
            return empty(status);
        }
        let Some(version) = session.and_then(|s| state.sessions.get(s)).cloned() else {
            // No session: no stream here. A session the server no longer knows: 404.
            let status = if session.is_some() {
                StatusCode::NOT_FOUND
            } else {
                StatusCode::METHOD_NOT_ALLOWED
            };
            return empty(status);
        };
        let _ = version;
        let resume = headers.get("last-event-id").and_then(|v| v.to_str().ok());
        if let Some((event_id, message)) = resume.and_then(|id| state.replay.remove_entry(id)) {
            state.replayed.push(event_id);
            // SSE polling: the rest of a POST stream, after the event id the client names.
            let (tx, rx) = mpsc::unbounded_channel();
            let _ = tx.send(Bytes::from(format!("id: replayed\ndata: {message}\n\n")));
            return sse_response(rx);
        }
        let last = headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        state.last_event_ids.push(last);
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = tx.send(Bytes::from_static(b": open\n\n"));
        state.get_streams.push(tx);
        drop(state);
        self.changed.notify_waiters();
        sse_response(rx)
    }

    fn record(&self, revision: &str, headers: &HeaderMap, body: &Value) {
        self.lock().recorded.push(Recorded {
            revision: revision.into(),
            headers: headers.clone(),
            body: body.clone(),
        });
    }

    /// Handles one POSTed message. With `sse`, the answer goes on that HTTP+SSE stream.
    async fn post(
        self: &Arc<Self>,
        headers: &HeaderMap,
        bytes: &[u8],
        session: Option<String>,
        sse: Option<mpsc::UnboundedSender<Bytes>>,
    ) -> Response<Body> {
        let Ok(body) = serde_json::from_slice::<Value>(bytes) else {
            return json_response(
                StatusCode::BAD_REQUEST,
                &error(Value::Null, -32700, "parse error", None),
            );
        };
        let reply = self.clone().handle(headers, body, session).await;
        match (reply, sse) {
            (Reply::Json(_, v) | Reply::WithSession(v, _), Some(tx)) => {
                let _ = tx.send(Bytes::from(format!("event: message\ndata: {v}\n\n")));
                empty(StatusCode::ACCEPTED)
            }
            (Reply::Stream(mut rx), Some(tx)) => {
                tokio::spawn(async move {
                    while let Some(b) = rx.recv().await {
                        let text =
                            String::from_utf8_lossy(&b).replace("data: ", "event: message\ndata: ");
                        let _ = tx.send(Bytes::from(text));
                    }
                });
                empty(StatusCode::ACCEPTED)
            }
            (Reply::Json(status, v), None) => json_response(status, &v),
            (Reply::WithSession(v, session), None) => {
                let mut response = json_response(StatusCode::OK, &v);
                response
                    .headers_mut()
                    .insert("mcp-session-id", session.parse().unwrap());
                response
            }
            (Reply::Status(status, v), _) => json_response(status, &v),
            (Reply::Accepted, _) => empty(StatusCode::ACCEPTED),
            (Reply::Raw(r), _) => r,
            (Reply::Stream(rx), None) => sse_response(rx),
        }
    }

    fn revision_of(&self, headers: &HeaderMap, body: &Value, session: Option<&str>) -> String {
        let params = body.get("params");
        if let Some(v) = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
            .and_then(Value::as_str)
        {
            return v.into();
        }
        if body.get("method").and_then(Value::as_str) == Some("initialize") {
            return params
                .and_then(|p| p.get("protocolVersion"))
                .and_then(Value::as_str)
                .unwrap_or("?")
                .into();
        }
        if let Some(v) = session.and_then(|s| self.lock().sessions.get(s).cloned()) {
            return v;
        }
        headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("2025-03-26")
            .into()
    }

    async fn handle(
        self: Arc<Self>,
        headers: &HeaderMap,
        body: Value,
        session: Option<String>,
    ) -> Reply {
        let revision = self.revision_of(headers, &body, session.as_deref());
        self.record(&revision, headers, &body);
        let id = body.get("id").cloned();
        let method = body
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let params = body.get("params").cloned().unwrap_or(json!({}));
        let on_sse = session.as_deref().is_some_and(|s| s.starts_with("sse-"));

        // An answer to a pushed question.
        let Some(method) = method else {
            if let Some(key) = id.as_ref().and_then(Value::as_str)
                && let Some(tx) = self.lock().pending.remove(key)
            {
                let _ = tx.send(body.clone());
            }
            return Reply::Accepted;
        };
        let Some(id) = id else {
            if method == "notifications/cancelled" {
                self.lock().cancelled.push(params);
                self.cancel_seen.notify_waiters();
            }
            return Reply::Accepted;
        };
        {
            let mut state = self.lock();
            if state.refuse_versions > 0 {
                state.refuse_versions -= 1;
                let data = json!({"supported": self.config.streamable, "requested": revision});
                return Reply::Status(
                    StatusCode::BAD_REQUEST,
                    error(id, -32022, "unsupported protocol version", Some(data)),
                );
            }
        }

        let modern = revision == MODERN;
        if modern {
            if !self.config.streamable.contains(&MODERN) && self.config.refuse_modern {
                let data = json!({"supported": self.config.streamable, "requested": MODERN});
                return Reply::Status(
                    StatusCode::BAD_REQUEST,
                    error(id, -32022, "unsupported protocol version", Some(data)),
                );
            }
            if !self.config.streamable.contains(&MODERN) {
                // A legacy server knows nothing of _meta: without a session this is a bad request.
                return Reply::Status(
                    StatusCode::BAD_REQUEST,
                    error(
                        Value::Null,
                        -32000,
                        "Bad Request: No valid session ID provided",
                        None,
                    ),
                );
            }
            if headers
                .get("mcp-protocol-version")
                .and_then(|v| v.to_str().ok())
                != Some(MODERN)
                || headers.get("mcp-method").and_then(|v| v.to_str().ok()) != Some(method.as_str())
            {
                return Reply::Status(
                    StatusCode::BAD_REQUEST,
                    error(id, -32020, "header mismatch", None),
                );
            }
        } else if !on_sse {
            if !ALL.contains(&revision.as_str())
                || !self.config.streamable.contains(&revision.as_str())
            {
                if method == "initialize" || revision == "?" {
                    let supported: Vec<&str> = self.config.streamable.clone();
                    return Reply::Status(
                        StatusCode::BAD_REQUEST,
                        error(
                            id,
                            -32022,
                            "unsupported protocol version",
                            Some(json!({"supported": supported, "requested": revision})),
                        ),
                    );
                }
                return Reply::Status(
                    StatusCode::BAD_REQUEST,
                    error(Value::Null, -32000, "Bad Request", None),
                );
            }
            if method != "initialize" {
                match &session {
                    None => {
                        return Reply::Status(
                            StatusCode::BAD_REQUEST,
                            error(
                                Value::Null,
                                -32000,
                                "Bad Request: No valid session ID provided",
                                None,
                            ),
                        );
                    }
                    Some(s)
                        if !self.lock().sessions.contains_key(s) || self.lock().forget_always =>
                    {
                        return Reply::Status(
                            StatusCode::NOT_FOUND,
                            error(Value::Null, -32001, "session not found", None),
                        );
                    }
                    _ => {}
                }
            }
        }
        if on_sse && method == "initialize" {
            // HTTP+SSE: the handshake picks the session's revision.
            let requested = params
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or("");
            let version = if ALL[1..].contains(&requested) {
                requested
            } else {
                "2024-11-05"
            };
            if let Some(s) = &session {
                self.lock().sessions.insert(s.clone(), version.to_owned());
            }
        }
        self.dispatch(&revision, headers, id, &method, params, modern)
            .await
    }

    async fn dispatch(
        self: Arc<Self>,
        revision: &str,
        headers: &HeaderMap,
        id: Value,
        method: &str,
        params: Value,
        modern: bool,
    ) -> Reply {
        let envelope = |mut result: Value, cacheable: bool| {
            if modern {
                // An interim (`input_required`) result keeps its type and gets no cache fields.
                let interim = result.get("resultType").is_some();
                if !interim {
                    result["resultType"] = json!("complete");
                }
                result["_meta"] =
                    json!({"io.modelcontextprotocol/serverInfo": {"name": "mock", "version": "1"}});
                if cacheable && !interim && result.get("ttlMs").is_none() {
                    result["ttlMs"] = json!(0);
                    result["cacheScope"] = json!("private");
                }
            }
            result
        };
        match method {
            "server/discover" => {
                self.discovers.fetch_add(1, Ordering::Relaxed);
                let result = envelope(
                    json!({"supportedVersions": self.config.streamable, "capabilities": {"tools": {"listChanged": true}, "resources": {"subscribe": true, "listChanged": true}, "prompts": {}, "completions": {}}}),
                    true,
                );
                Reply::Json(StatusCode::OK, ok(id, result))
            }
            "initialize" => {
                let requested = params
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let version =
                    if self.config.streamable.contains(&requested) || requested == "2024-11-05" {
                        requested.to_owned()
                    } else {
                        "2025-11-25".to_owned()
                    };
                let mut state = self.lock();
                state.next_session += 1;
                let session = format!("s-{}", state.next_session);
                state.sessions.insert(session.clone(), version.clone());
                drop(state);
                let result = json!({"protocolVersion": version, "capabilities": {"tools": {"listChanged": true}, "resources": {"subscribe": true}, "prompts": {}, "logging": {}}, "serverInfo": {"name": "mock", "version": "1"}});
                Reply::WithSession(ok(id, result), session)
            }
            "resources/subscribe" => {
                if self.lock().update_on_subscribe {
                    let uri = params.get("uri").cloned().unwrap_or(Value::Null);
                    self.publish("notifications/resources/updated", json!({"uri": uri}));
                }
                Reply::Json(StatusCode::OK, ok(id, envelope(json!({}), false)))
            }
            "ping" | "logging/setLevel" => {
                Reply::Json(StatusCode::OK, ok(id, envelope(json!({}), false)))
            }
            "tools/list" => {
                let region = self.lock().region_header.clone();
                let ttl = self.lock().list_ttl;
                let mut tools = vec![
                    json!({"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}),
                    json!({"name": "ask", "inputSchema": {"type": "object"}}),
                ];
                if modern {
                    tools.push(json!({"name": "region", "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": region}}}}));
                    tools.push(json!({"name": "invalid", "inputSchema": {"type": "object", "properties": {"f": {"type": "number", "x-mcp-header": "F"}}}}));
                }
                // Two pages, to exercise pagination.
                let mut result = if params.get("cursor").is_none() {
                    json!({"tools": tools[..1], "nextCursor": "page-2"})
                } else {
                    json!({"tools": tools[1..]})
                };
                if modern && ttl > 0 {
                    result["ttlMs"] = json!(ttl);
                    result["cacheScope"] = json!("private");
                }
                Reply::Json(StatusCode::OK, ok(id, envelope(result, true)))
            }
            "resources/list" => Reply::Json(
                StatusCode::OK,
                ok(
                    id,
                    envelope(
                        json!({"resources": [{"uri": "mem://a", "name": "a"}]}),
                        true,
                    ),
                ),
            ),
            "resources/templates/list" => Reply::Json(
                StatusCode::OK,
                ok(
                    id,
                    envelope(
                        json!({"resourceTemplates": [{"uriTemplate": "mem://{x}", "name": "x"}]}),
                        true,
                    ),
                ),
            ),
            "resources/read" if modern && params["uri"] == "mem://ask" => {
                // MRTR on a cacheable method: the complete result of the retry carries a ttl,
                // and must not be cached all the same.
                self.reads.fetch_add(1, Ordering::Relaxed);
                let result = if params.get("requestState").is_some() {
                    json!({"contents": [{"uri": "mem://ask", "text": "answered"}], "ttlMs": 60_000, "cacheScope": "public"})
                } else {
                    json!({"resultType": "input_required", "requestState": "r-1", "inputRequests": {
                        "r": {"method": "roots/list"}}})
                };
                Reply::Json(StatusCode::OK, ok(id, envelope(result, true)))
            }
            "resources/read" => {
                let n = self.reads.fetch_add(1, Ordering::Relaxed) + 1;
                let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
                let mut result = json!({"contents": [{"uri": uri, "text": format!("read {n}")}]});
                if modern {
                    result["ttlMs"] = json!(60_000);
                    result["cacheScope"] = json!("public");
                }
                Reply::Json(StatusCode::OK, ok(id, envelope(result, true)))
            }
            "prompts/list" => Reply::Json(
                StatusCode::OK,
                ok(
                    id,
                    envelope(
                        json!({"prompts": [{"name": "greet", "arguments": [{"name": "who"}]}]}),
                        true,
                    ),
                ),
            ),
            "prompts/get" => {
                let who = params
                    .get("arguments")
                    .and_then(|a| a.get("who"))
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                Reply::Json(
                    StatusCode::OK,
                    ok(
                        id,
                        envelope(
                            json!({"messages": [{"role": "user", "content": {"type": "text", "text": format!("hello {who}")}}]}),
                            false,
                        ),
                    ),
                )
            }
            "completion/complete" => Reply::Json(
                StatusCode::OK,
                ok(
                    id,
                    envelope(json!({"completion": {"values": ["alpha"]}}), false),
                ),
            ),
            "subscriptions/listen" => {
                let (tx, rx) = mpsc::unbounded_channel();
                let accepted = params.get("notifications").cloned().unwrap_or(json!({}));
                let _ = tx.send(event(&json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {"notifications": accepted, "_meta": {"io.modelcontextprotocol/subscriptionId": id}}})));
                self.lock().listen_streams.push((id, tx));
                self.changed.notify_waiters();
                Reply::Stream(rx)
            }
            "tools/call" => self.call_tool(revision, headers, id, params, modern).await,
            _ => {
                let status = if modern {
                    StatusCode::NOT_FOUND
                } else {
                    StatusCode::OK
                };
                Reply::Json(status, error(id, -32601, "unknown method", None))
            }
        }
    }

    async fn call_tool(
        self: Arc<Self>,
        revision: &str,
        headers: &HeaderMap,
        id: Value,
        params: Value,
        modern: bool,
    ) -> Reply {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let args = params.get("arguments").cloned().unwrap_or(json!({}));
        let text_result = move |text: String| {
            let mut r = json!({"content": [{"type": "text", "text": text}]});
            if modern {
                r["resultType"] = json!("complete");
            }
            r
        };
        let token = params
            .get("_meta")
            .and_then(|m| m.get("progressToken"))
            .cloned();
        match name.as_str() {
            "echo" => Reply::Json(
                StatusCode::OK,
                ok(
                    id,
                    text_result(
                        args.get("text")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .into(),
                    ),
                ),
            ),
            "region" => {
                let header = format!(
                    "mcp-param-{}",
                    self.lock().region_header.to_ascii_lowercase()
                );
                let sent = headers.get(header.as_str()).and_then(|v| v.to_str().ok());
                if sent != args.get("region").and_then(Value::as_str) || self.lock().always_mismatch
                {
                    return Reply::Status(
                        StatusCode::BAD_REQUEST,
                        error(id, -32020, "Mcp-Param header mismatch", None),
                    );
                }
                Reply::Json(
                    StatusCode::OK,
                    ok(id, text_result(format!("region {}", sent.unwrap_or("")))),
                )
            }
            "progress" => {
                let (tx, rx) = mpsc::unbounded_channel();
                if let Some(token) = token {
                    for i in 1..=2 {
                        let _ = tx.send(event(&json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": i, "total": 2}})));
                    }
                }
                let _ = tx.send(event(&ok(id, text_result("done".into()))));
                Reply::Stream(rx)
            }
            "slow" => {
                let (tx, rx) = mpsc::unbounded_channel();
                let _ = tx.send(Bytes::from_static(b": working\n\n"));
                let mock = self.clone();
                tokio::spawn(async move {
                    tx.closed().await;
                    mock.closed_streams.fetch_add(1, Ordering::Relaxed);
                    mock.closed.notify_waiters();
                });
                Reply::Stream(rx)
            }
            "poll" => {
                // SSE polling (2025-11-25): prime the stream with an id, then close it; the
                // response waits for the client's GET with Last-Event-ID.
                let (tx, rx) = mpsc::unbounded_channel();
                let event_id = format!("p-{id}");
                let _ = tx.send(Bytes::from(format!("id: {event_id}\nretry: 5\ndata: \n\n")));
                self.lock()
                    .replay
                    .insert(event_id, ok(id, text_result("polled".into())));
                Reply::Stream(rx)
            }
            "bad" => {
                let how = self
                    .lock()
                    .misbehaviour
                    .unwrap_or(Misbehaviour::GarbageJson);
                let raw = |ct: &str, body: &'static str| {
                    Reply::Raw(
                        Response::builder()
                            .status(200)
                            .header("content-type", ct)
                            .body(full(body))
                            .unwrap(),
                    )
                };
                match how {
                    Misbehaviour::WrongContentType => raw("text/plain", "hello"),
                    Misbehaviour::GarbageJson => raw("application/json", "{not json"),
                    Misbehaviour::TruncatedSse => {
                        raw("text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"id\"")
                    }
                    Misbehaviour::GarbageSseData => raw("text/event-stream", "data: garbage\n\n"),
                    Misbehaviour::Http500 => raw("text/html", "<h1>oops</h1>")
                        .with_status(StatusCode::INTERNAL_SERVER_ERROR),
                    Misbehaviour::WrongShape => {
                        Reply::Json(StatusCode::OK, ok(id, json!({"content": "not a list"})))
                    }
                    Misbehaviour::UnknownResultType => Reply::Json(
                        StatusCode::OK,
                        ok(id, json!({"resultType": "task", "content": []})),
                    ),
                    Misbehaviour::Silent => {
                        let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
                        tokio::spawn(async move { tx.closed().await });
                        Reply::Stream(rx)
                    }
                }
            }
            "ask" => match revision {
                MODERN => self.ask_mrtr(id, &params, text_result),
                "2025-06-18" | "2025-11-25" => self.ask_push(id, text_result),
                _ => self.ask_in_arguments(id, &args, text_result),
            },
            _ => Reply::Json(
                StatusCode::OK,
                ok(
                    id,
                    json!({"content": [{"type": "text", "text": "unknown tool"}], "isError": true}),
                ),
            ),
        }
    }

    /// MRTR: round one asks `a` (form elicitation), round two asks `b` (roots) and requires `a`
    /// again, round three requires both and the latest state.
    fn ask_mrtr(&self, id: Value, params: &Value, done: impl Fn(String) -> Value) -> Reply {
        let responses = params.get("inputResponses").cloned().unwrap_or(json!({}));
        let state = params.get("requestState").and_then(Value::as_str);
        let a = responses.get("a");
        let b = responses.get("b");
        let result = match (a, b, state) {
            (None, _, None) => {
                json!({"resultType": "input_required", "requestState": "st-1", "inputRequests": {
                "a": {"method": "elicitation/create", "params": {"mode": "form", "message": "Go ahead?", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}}})
            }
            (Some(_), None, Some("st-1")) => {
                json!({"resultType": "input_required", "requestState": "st-2", "inputRequests": {
                "b": {"method": "roots/list"}}})
            }
            (Some(a), Some(b), Some("st-2")) => done(format!(
                "a={} b={}",
                a["action"].as_str().unwrap_or("?"),
                b["roots"].as_array().map_or(0, Vec::len)
            )),
            _ => {
                return Reply::Json(
                    StatusCode::OK,
                    error(id, -32602, "bad retry", Some(params.clone())),
                );
            }
        };
        Reply::Json(StatusCode::OK, ok(id, result))
    }

    /// Pushed: an `elicitation/create` request on the call's stream, the answer by its own POST.
    fn ask_push(
        self: Arc<Self>,
        id: Value,
        done: impl Fn(String) -> Value + Send + 'static,
    ) -> Reply {
        let (tx, rx) = mpsc::unbounded_channel();
        let (answer_tx, answer_rx) = oneshot::channel();
        let key = format!("q-{}", id);
        self.lock().pending.insert(key.clone(), answer_tx);
        let _ = tx.send(event(&json!({"jsonrpc": "2.0", "id": key, "method": "elicitation/create", "params": {"message": "Go ahead?", "requestedSchema": {"type": "object", "properties": {}}}})));
        tokio::spawn(async move {
            let text = match tokio::time::timeout(Duration::from_secs(10), answer_rx).await {
                Ok(Ok(answer)) => match answer.get("result") {
                    Some(r) => format!("answer={}", r["action"].as_str().unwrap_or("?")),
                    None => format!("error={}", answer["error"]["code"]),
                },
                _ => "no answer".into(),
            };
            let _ = tx.send(event(&ok(id, done(text))));
        });
        Reply::Stream(rx)
    }

    /// The argument convention: the questions in `_meta`, the answers in `mcpAnswers`/`mcpState`.
    fn ask_in_arguments(&self, id: Value, args: &Value, done: impl Fn(String) -> Value) -> Reply {
        let result = match (
            args.get("mcpAnswers"),
            args.get("mcpState").and_then(Value::as_str),
        ) {
            (Some(answers), Some("st-a")) => done(format!(
                "answer={}",
                answers["go"]["action"].as_str().unwrap_or("?")
            )),
            _ => {
                json!({"content": [{"type": "text", "text": "This tool needs answers: call again with mcpAnswers."}],
                        "_meta": {INPUT_REQUIRED_META: {"inputRequests": {"go": {"method": "elicitation/create", "params": {"message": "Go ahead?", "requestedSchema": {"type": "object", "properties": {}}}}}, "requestState": "st-a"}}})
            }
        };
        Reply::Json(StatusCode::OK, ok(id, result))
    }
}

trait WithStatus {
    fn with_status(self, status: StatusCode) -> Self;
}

impl WithStatus for Reply {
    fn with_status(self, status: StatusCode) -> Self {
        match self {
            Self::Raw(mut r) => {
                *r.status_mut() = status;
                Self::Raw(r)
            }
            other => other,
        }
    }
}
