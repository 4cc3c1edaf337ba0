//! The cross-pairing suite: our client against our server, per transport, hub backend,
//! revision and feature.
//!
//! Every check is written once, as a function of a [`Case`]; `tests/it/pairing.rs` instantiates it
//! for every axis with a macro, so a new revision or backend adds a whole row. Every message on
//! the wire, both ways, is validated against the negotiated revision's official `schema.json`.
//! Known gaps live in `tests/known-gaps.toml` (see [`crate::gaps`]).

use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt as _;
use mcp_adapters::{Adapter, Revision, StructuredOutput, VersionHeader};
use mcp_client::transport::{HttpSse, Stderr, Stdio, StreamableHttp};
use mcp_client::{
    Answer, Asks, CallOptions, Client, ClientBuilder, ErrorKind, ListKind, LogLevel, Notification,
    QuestionKind, Subscriptions,
};
use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown};
use serde_json::{Value, json};

use crate::fixture;
use crate::recording::{Log, Recording};
use crate::schema::{Schemas, in_ci};
use mcp_hub::Hub;

/// How the client reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportKind {
    /// A spawned `pairing-server` child, NDJSON on its stdin and stdout.
    Stdio,
    /// Streamable HTTP on 127.0.0.1.
    StreamableHttp,
    /// The 2024-11-05 HTTP+SSE transport on 127.0.0.1.
    HttpSse,
}

impl TransportKind {
    /// Every transport.
    pub const ALL: [Self; 3] = [Self::Stdio, Self::StreamableHttp, Self::HttpSse];

    /// The name used in the gaps file and in test names.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::StreamableHttp => "streamable-http",
            Self::HttpSse => "http-sse",
        }
    }

    /// The transport named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

/// Which hub backend the server keeps request state and question replies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Store {
    /// `MemoryHub`.
    Memory,
    /// `RedisHub` on `MCP_REDIS_URL` (default `redis://127.0.0.1:6379`).
    Redis,
    /// `PostgresHub` on `MCP_POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/test`),
    /// under tables of the case's own, dropped after it.
    Postgres,
    /// `SqliteHub` on a temporary file of the case's own, removed after it; the other worker
    /// opens the file again (over stdio, from another process).
    Sqlite,
}

impl Store {
    /// Every backend.
    pub const ALL: [Self; 4] = [Self::Memory, Self::Redis, Self::Postgres, Self::Sqlite];

    /// The name used on the command line, in the gaps file and in test names.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Redis => "redis",
            Self::Postgres => "postgres",
            Self::Sqlite => "sqlite",
        }
    }

    /// The backend named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

macro_rules! features {
    ($($variant:ident => $name:literal: $doc:literal,)*) => {
        /// One feature the suite checks on every pairing.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Feature {
            $(#[doc = $doc] $variant,)*
        }

        impl Feature {
            /// Every feature.
            pub const ALL: &'static [Self] = &[$(Self::$variant,)*];

            /// The name used in the gaps file and in test names.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }
        }
    };
}

features! {
    Discover => "discover": "Connecting: `server/discover` or `initialize`, the server's description.",
    Tools => "tools": "`tools/list` and `tools/call` with text content.",
    StructuredOutput => "structured_output": "`outputSchema` and `structuredContent` where the revision has them, text only where it does not.",
    Resources => "resources": "`resources/list`, `resources/read`, templates and reading through one.",
    Prompts => "prompts": "`prompts/list` and `prompts/get`.",
    Completion => "completion": "`completion/complete` on a prompt argument.",
    Pagination => "pagination": "Lists span several pages; cursors; an unknown cursor is refused.",
    AskElicitation => "ask_elicitation": "A tool asks a form elicitation; accepted and declined answers reach it.",
    AskSampling => "ask_sampling": "A tool asks `sampling/createMessage`; the answer reaches it.",
    AskRoots => "ask_roots": "A tool asks `roots/list`; the answer reaches it.",
    Progress => "progress": "Progress notifications reach the call's callback, in order.",
    Logging => "logging": "With a log level set, the tool's log messages reach the client; without, none do.",
    Cancellation => "cancellation": "A call whose future is dropped is cancelled on the server.",
    Subscriptions => "subscriptions": "Listening for list changes and resource updates, and resuming.",
    Errors => "errors": "Unknown tool, method and resource; a failing tool; invalid arguments.",
}

impl Feature {
    /// The feature named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|f| f.as_str() == name)
    }
}

/// One pairing: a transport, a backend, a revision and a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    /// How the client reaches the server.
    pub transport: TransportKind,
    /// Where the server keeps its state.
    pub store: Store,
    /// The revision the client pins.
    pub revision: Revision,
    /// What is checked.
    pub feature: Feature,
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} / {} / {} / {}",
            self.transport.as_str(),
            self.store.as_str(),
            self.revision,
            self.feature.as_str()
        )
    }
}

/// The Redis the suite uses: `MCP_REDIS_URL`, default `redis://127.0.0.1:6379`.
pub fn redis_url() -> String {
    std::env::var("MCP_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// The PostgreSQL the suite uses: `MCP_POSTGRES_URL`, default
/// `postgres://postgres@127.0.0.1:5432/test`.
pub fn postgres_url() -> String {
    std::env::var("MCP_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// Where a case keeps its SQL hub: a table prefix (PostgreSQL) or file stem (SQLite) of its own
/// in this run.
pub(crate) fn place(case: &Case) -> String {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    case.to_string().hash(&mut hasher);
    format!("pairing_{}_{:x}", std::process::id(), hasher.finish())
}

fn sqlite_path(place: &str) -> PathBuf {
    std::env::temp_dir().join(format!("{place}.sqlite"))
}

/// A hub on `store` for the case at `place` (Redis keys under the prefix `place`, PostgreSQL
/// tables under it, a SQLite file of its own), opened by URL through `mcp_hub::ConnectOptions`
/// as every binary opens its hub; `None` for the memory store (the server's own hub).
pub async fn hub(store: Store, place: &str) -> Result<Option<Arc<dyn Hub>>, String> {
    let url = match store {
        Store::Memory => return Ok(None),
        Store::Redis => redis_url(),
        Store::Postgres => postgres_url(),
        Store::Sqlite => format!("sqlite:{}", sqlite_path(place).display()),
    };
    mcp_hub::ConnectOptions::new()
        .prefix(place)
        .connect(&url)
        .await
        .map(Some)
        .map_err(|e| e.to_string())
}

/// A hub on `store` at `place` (the name the `place` helper gives), as one more worker:
/// PostgreSQL and SQLite only; `None` for the others.
pub async fn sql_hub(store: Store, place: &str) -> Result<Option<Arc<dyn Hub>>, String> {
    match store {
        Store::Postgres | Store::Sqlite => hub(store, place).await,
        Store::Memory | Store::Redis => Ok(None),
    }
}

fn backing_of(hub: Arc<dyn Hub>) -> fixture::Backing {
    fixture::Backing {
        store: Some(hub.clone()),
        log: Some(hub),
    }
}

/// Drops what [`sql_hub`] created at `place`.
pub(crate) async fn clean_up(store: Store, place: &str) {
    match store {
        Store::Postgres => {
            let Ok((client, connection)) =
                tokio_postgres::connect(&postgres_url(), tokio_postgres::NoTls).await
            else {
                return;
            };
            let driver = tokio::spawn(connection);
            let _ = client
                .batch_execute(&format!(
                    "DROP TABLE IF EXISTS {place}_topics, {place}_events, {place}_records"
                ))
                .await;
            drop(client);
            let _ = driver.await;
        }
        Store::Sqlite => {
            for suffix in ["", "-wal", "-shm"] {
                let mut file = sqlite_path(place).into_os_string();
                file.push(suffix);
                let _ = std::fs::remove_file(file);
            }
        }
        _ => {}
    }
}

/// Whether PostgreSQL answers. Outside CI an unreachable database is `false` (after a notice);
/// with `CI=true` it is a panic, never a silent skip.
pub async fn postgres_available() -> bool {
    let connected = tokio::time::timeout(
        Duration::from_secs(10),
        tokio_postgres::connect(&postgres_url(), tokio_postgres::NoTls),
    )
    .await;
    let why = match connected {
        Ok(Ok(_)) => return true,
        Ok(Err(e)) => e.to_string(),
        Err(_) => "no answer within 10 s".to_owned(),
    };
    assert!(
        !in_ci(),
        "PostgreSQL at {} is unreachable with CI=true: {why}",
        postgres_url()
    );
    eprintln!(
        "notice: PostgreSQL at {} is unreachable ({why}); skipped",
        postgres_url()
    );
    false
}

/// A key prefix no other test or run uses.
pub fn unique_prefix() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "mcp-pairing:{}:{nanos}:{}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether Redis answers. Outside CI an unreachable Redis is `false` (after a notice); with
/// `CI=true` it is a panic, never a silent skip.
pub async fn redis_available() -> bool {
    match tokio::time::timeout(Duration::from_secs(10), hub(Store::Redis, &unique_prefix())).await {
        Ok(Ok(_)) => true,
        outcome => {
            let why = match outcome {
                Ok(Err(e)) => e,
                _ => "no answer within 10 s".to_owned(),
            };
            assert!(
                !in_ci(),
                "Redis at {} is unreachable with CI=true: {why}",
                redis_url()
            );
            eprintln!(
                "notice: Redis at {} is unreachable ({why}); skipped",
                redis_url()
            );
            false
        }
    }
}

/// Bounds every step: a hang is a failure with a name, not a stuck run.
async fn step<F: Future>(what: &str, f: F) -> Result<F::Output, String> {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .map_err(|_| format!("{what}: no answer within 20 s"))
}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// What a case needs from outside the library: where the binaries are.
#[derive(Debug, Clone)]
pub struct Binaries {
    /// The `pairing-server` binary (`env!("CARGO_BIN_EXE_pairing-server")` in a test).
    pub pairing_server: PathBuf,
}

/// The hub behind a server on `store`: the server's own memory hub, a Redis hub under a
/// fresh key prefix, or a PostgreSQL or SQLite hub at a fresh place (left behind: cases clean up
/// their own place, see [`sql_hub`]).
pub async fn backing(store: Store) -> Result<fixture::Backing, String> {
    match store {
        Store::Postgres | Store::Sqlite => {
            static COUNT: AtomicU64 = AtomicU64::new(0);
            let place = format!(
                "pairing_{}_n{}",
                std::process::id(),
                COUNT.fetch_add(1, Ordering::Relaxed)
            );
            match sql_hub(store, &place).await? {
                Some(hub) => Ok(backing_of(hub)),
                None => Err(format!("no hub for {}", store.as_str())),
            }
        }
        Store::Memory => Ok(fixture::Backing::default()),
        Store::Redis => match hub(store, &unique_prefix()).await? {
            Some(hub) => Ok(backing_of(hub)),
            None => Err("no hub for redis".to_owned()),
        },
    }
}

/// The fixture served over HTTP on 127.0.0.1 (Streamable HTTP at `/mcp`, HTTP+SSE at `/sse`),
/// in this process. Stops when dropped.
#[derive(Debug)]
pub struct HttpServer {
    addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl HttpServer {
    /// Binds 127.0.0.1:0 and serves the fixture on `store`.
    pub async fn start(store: Store) -> Result<Self, String> {
        Self::serve(fixture::server(backing(store).await?)).await
    }

    /// Binds 127.0.0.1:0 and serves `server` with the default [`HttpConfig`].
    pub async fn serve(server: mcp_server::Server) -> Result<Self, String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("bind: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let endpoint = HttpEndpoint::new(server, HttpConfig::default());
        tokio::spawn(async move {
            let signal = async {
                let _ = stopped.await;
            };
            if let Err(e) = serve_with_shutdown(listener, endpoint, signal).await {
                eprintln!("pairing HTTP server: {e}");
            }
        });
        Ok(Self {
            addr,
            stop: Some(stop),
        })
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> Result<http::Uri, String> {
        format!("http://{}{path}", self.addr)
            .parse()
            .map_err(|e| format!("{e}"))
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A connected client, with what it saw.
struct Session {
    client: Client,
    log: Log,
    /// The in-process HTTP server, stopped when the session is dropped.
    _http: Option<HttpServer>,
    notes: Arc<Mutex<Vec<Notification>>>,
    arrived: Arc<tokio::sync::Notify>,
    asked: Arc<Mutex<Vec<QuestionKind>>>,
    adapter: Adapter,
    /// On Redis: a second instance of the fixture sharing the serving one's hub, as another
    /// worker would.
    peer: Option<mcp_server::Server>,
    /// The in-process server (HTTP transports).
    served: Option<mcp_server::Server>,
}

impl Session {
    fn notes(&self, method: &str) -> Vec<Notification> {
        self.notes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|n| n.method == method)
            .cloned()
            .collect()
    }

    /// Waits (at most 10 s) until `count` notifications of `method` have arrived: notifications
    /// sent before a response may be delivered to the callback after the call returned.
    async fn await_notes(&self, method: &str, count: usize) -> Vec<Notification> {
        let wait = async {
            loop {
                let signal = self.arrived.notified();
                tokio::pin!(signal);
                signal.as_mut().enable();
                if self.notes(method).len() >= count {
                    return;
                }
                signal.await;
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(10), wait).await;
        self.notes(method)
    }

    fn asked(&self) -> Vec<QuestionKind> {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// What the client's callbacks saw.
#[derive(Default)]
struct Seen {
    notes: Arc<Mutex<Vec<Notification>>>,
    arrived: Arc<tokio::sync::Notify>,
    asked: Arc<Mutex<Vec<QuestionKind>>>,
}

fn builder(revision: Revision, log_level: Option<LogLevel>) -> (ClientBuilder, Seen) {
    let seen_by = Seen::default();
    let signal = seen_by.arrived.clone();
    let sink = seen_by.notes.clone();
    let seen = seen_by.asked.clone();
    let mut builder = Client::builder()
        .client_info("mcp-tests", env!("CARGO_PKG_VERSION"))
        .revision(revision)
        .remember_era(false)
        .timeout(Duration::from_secs(15))
        .on_notification(move |n| {
            sink.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(n.clone());
            signal.notify_waiters();
        })
        .on_ask(Asks::all(), move |q| {
            seen.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(q.kind());
            let answer = match q.kind() {
                QuestionKind::Elicitation | QuestionKind::UrlElicitation => {
                    if q.message().unwrap_or_default().contains("prod") {
                        Answer::decline()
                    } else {
                        Answer::accept(json!({}))
                    }
                }
                QuestionKind::Sampling => Answer::result(json!({
                    "role": "assistant",
                    "content": {"type": "text", "text": "a short summary"},
                    "model": "pairing-model",
                    "stopReason": "endTurn"
                })),
                QuestionKind::Roots => Answer::result(json!({
                    "roots": [{"uri": "file:///pairing/project", "name": "project"}]
                })),
                _ => Answer::cancel(),
            };
            async move { answer }
        });
    if let Some(level) = log_level {
        builder = builder.log_level(level);
    }
    (builder, seen_by)
}

async fn connect(
    case: &Case,
    bins: &Binaries,
    log_level: Option<LogLevel>,
) -> Result<Session, String> {
    let (builder, seen) = builder(case.revision, log_level);
    let mut http_server = None;
    let mut peer = None;
    let mut served = None;
    let (client, log) = match case.transport {
        TransportKind::Stdio => {
            let mut command = Stdio::builder(&bins.pairing_server)
                .arg("--store")
                .arg(case.store.as_str())
                .stderr(Stderr::Inherit);
            if let Some(hub) = sql_hub(case.store, &place(case)).await? {
                peer = Some(fixture::server(backing_of(hub)));
                command = command.arg("--place").arg(place(case));
            }
            if case.store == Store::Redis {
                let prefix = unique_prefix();
                let config = mcp_hub::RedisConfig::new().key_prefix(prefix.clone());
                let hub = mcp_hub::RedisHub::connect(&redis_url(), config)
                    .await
                    .map_err(|e| format!("Redis at {}: {e}", redis_url()))?;
                let hub = Arc::new(hub);
                peer = Some(fixture::server(fixture::Backing {
                    store: Some(hub.clone()),
                    log: Some(hub),
                }));
                command = command
                    .arg("--redis-url")
                    .arg(redis_url())
                    .arg("--redis-prefix")
                    .arg(prefix);
            }
            let transport = command
                .spawn()
                .map_err(|e| format!("spawning {}: {e}", bins.pairing_server.display()))?;
            let (transport, log) = Recording::new(transport);
            let client = step("connect", builder.connect(transport))
                .await?
                .map_err(|e| format!("connect: {e}"))?;
            (client, log)
        }
        TransportKind::StreamableHttp | TransportKind::HttpSse => {
            let backing = match sql_hub(case.store, &place(case)).await? {
                Some(hub) => {
                    // Another worker: a hub of its own on the same tables or file.
                    let other = sql_hub(case.store, &place(case)).await?;
                    peer = other.map(|hub| fixture::server(backing_of(hub)));
                    backing_of(hub)
                }
                None => backing(case.store).await?,
            };
            if case.store == Store::Redis {
                peer = Some(fixture::server(backing.clone()));
            }
            let server = fixture::server(backing);
            served = Some(server.clone());
            let running = HttpServer::serve(server).await?;
            let (client, log) = match case.transport {
                TransportKind::StreamableHttp => {
                    let uri = running.url("/mcp")?;
                    let (transport, log) = Recording::new(StreamableHttp::builder(uri).build());
                    let client = step("connect", builder.connect(transport))
                        .await?
                        .map_err(|e| format!("connect: {e}"))?;
                    (client, log)
                }
                _ => {
                    let uri = running.url("/sse")?;
                    let transport = step("GET /sse", HttpSse::builder(uri).connect())
                        .await?
                        .map_err(|e| format!("GET /sse: {e}"))?;
                    let (transport, log) = Recording::new(transport);
                    let client = step("connect", builder.connect(transport))
                        .await?
                        .map_err(|e| format!("connect: {e}"))?;
                    (client, log)
                }
            };
            http_server = Some(running);
            (client, log)
        }
    };
    ensure!(
        client.revision() == case.revision,
        "pinned {} but speaks {}",
        case.revision,
        client.revision()
    );
    Ok(Session {
        adapter: Adapter::new(case.revision),
        client,
        log,
        _http: http_server,
        notes: seen.notes,
        arrived: seen.arrived,
        asked: seen.asked,
        peer,
        served,
    })
}

/// Closes the session and validates everything it recorded.
async fn finish(session: Session, schemas: Option<&Schemas>) -> Result<(), String> {
    step("close", session.client.close())
        .await?
        .map_err(|e| format!("close: {e}"))?;
    let Some(schemas) = schemas else {
        return Ok(());
    };
    let problems = session
        .log
        .violations(schemas, session.adapter.revision(), &[UNKNOWN_METHOD])
        .map_err(|e| e.to_string())?;
    ensure!(
        problems.is_empty(),
        "{} message(s) violate the official schema:\n{}",
        problems.len(),
        problems.join("\n")
    );
    ensure!(
        !session.log.messages().is_empty(),
        "nothing was recorded on the wire"
    );
    Ok(())
}

/// The method the errors check sends on purpose; it is in no schema.
const UNKNOWN_METHOD: &str = "no/such/method";

fn text(result: &Value) -> &str {
    result
        .pointer("/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn names(items: &[Value], key: &str) -> Vec<String> {
    items
        .iter()
        .filter_map(|i| i.get(key)?.as_str().map(str::to_owned))
        .collect()
}

/// Runs one case: `Ok` when the behaviour is right and every message is schema-valid.
pub async fn run(case: Case, bins: &Binaries) -> Result<(), String> {
    let schemas = Schemas::shared();
    let log_level = (case.feature == Feature::Logging).then_some(LogLevel::Info);
    let session = connect(&case, bins, log_level).await?;
    let outcome = exercise(&case, &session).await;
    let finished = finish(session, schemas).await;
    outcome.and(finished)
}

async fn exercise(case: &Case, s: &Session) -> Result<(), String> {
    let c = &s.client;
    let features = s.adapter.features();
    match case.feature {
        Feature::Discover => {
            let server = c.server().ok_or("no server description")?;
            let name = server
                .server_info
                .as_ref()
                .and_then(|i| i.get("name"))
                .and_then(Value::as_str);
            ensure!(name == Some(fixture::SERVER_NAME), "server name {name:?}");
            for capability in ["tools", "resources", "prompts"] {
                ensure!(
                    server.capabilities.get(capability).is_some(),
                    "capability {capability} missing: {}",
                    server.capabilities
                );
            }
            ensure!(server.instructions.is_some(), "instructions missing");
            let first = s.log.methods(true).into_iter().next();
            let expected = if features.has_handshake {
                "initialize"
            } else {
                "server/discover"
            };
            ensure!(
                first.as_deref() == Some(expected),
                "first message {first:?}, expected {expected}"
            );
            if !features.has_handshake {
                ensure!(
                    server
                        .supported_versions
                        .iter()
                        .any(|v| v == case.revision.as_str()),
                    "supportedVersions {:?}",
                    server.supported_versions
                );
            }
        }
        Feature::Tools => {
            let tools = step("tools/list", c.list_tools())
                .await?
                .map_err(|e| e.to_string())?;
            let listed = names(&tools, "name");
            ensure!(listed == fixture::TOOLS, "tools/list gave {listed:?}");
            let result = step(
                "tools/call",
                c.call_tool("echo", json!({"text": "hi there"})),
            )
            .await?
            .map_err(|e| e.to_string())?;
            ensure!(text(&result) == "hi there", "echo gave {result}");
            ensure!(
                result.get("isError") != Some(&json!(true)),
                "echo failed: {result}"
            );
        }
        Feature::StructuredOutput => {
            let tools = step("tools/list", c.list_tools())
                .await?
                .map_err(|e| e.to_string())?;
            let add = tools
                .iter()
                .find(|t| t["name"] == "add")
                .ok_or("no add tool")?;
            let result = step("tools/call", c.call_tool("add", json!({"a": 2, "b": 3})))
                .await?
                .map_err(|e| e.to_string())?;
            let text_value: Option<Value> = serde_json::from_str(text(&result)).ok();
            ensure!(
                text_value == Some(json!({"sum": 5})),
                "the text content does not carry the value: {result}"
            );
            match features.structured_output {
                StructuredOutput::TextOnly => {
                    ensure!(
                        add.get("outputSchema").is_none(),
                        "outputSchema on {}",
                        case.revision
                    );
                    ensure!(
                        result.get("structuredContent").is_none(),
                        "structuredContent on {}: {result}",
                        case.revision
                    );
                }
                _ => {
                    ensure!(add.get("outputSchema").is_some(), "no outputSchema: {add}");
                    ensure!(
                        result.get("structuredContent") == Some(&json!({"sum": 5})),
                        "structuredContent: {result}"
                    );
                }
            }
        }
        Feature::Resources => {
            let resources = step("resources/list", c.list_resources())
                .await?
                .map_err(|e| e.to_string())?;
            ensure!(
                names(&resources, "uri") == ["config://app"],
                "resources {resources:?}"
            );
            let read = step("resources/read", c.read_resource("config://app"))
                .await?
                .map_err(|e| e.to_string())?;
            ensure!(
                read.pointer("/contents/0/text") == Some(&json!(r#"{"mode":"pairing"}"#)),
                "read gave {read}"
            );
            ensure!(
                read.pointer("/contents/0/mimeType") == Some(&json!("application/json")),
                "mimeType: {read}"
            );
            let templates = step("resources/templates/list", c.list_resource_templates())
                .await?
                .map_err(|e| e.to_string())?;
            ensure!(
                names(&templates, "uriTemplate") == ["res://items/{id}"],
                "templates {templates:?}"
            );
            let item = step("resources/read", c.read_resource("res://items/7"))
                .await?
                .map_err(|e| e.to_string())?;
            ensure!(
                item.pointer("/contents/0/text") == Some(&json!("item 7")),
                "template read gave {item}"
            );
        }
        Feature::Prompts => {
            let prompts = step("prompts/list", c.list_prompts())
                .await?
                .map_err(|e| e.to_string())?;
            ensure!(names(&prompts, "name") == ["greet"], "prompts {prompts:?}");
            let args = prompts[0].get("arguments").cloned().unwrap_or_default();
            ensure!(
                args.pointer("/0/name") == Some(&json!("name")),
                "prompt arguments {args}"
            );
            let got = step("prompts/get", c.get_prompt("greet", json!({"name": "Ann"})))
                .await?
                .map_err(|e| e.to_string())?;
            let said = got
                .pointer("/messages/0/content/text")
                .and_then(Value::as_str)
                .unwrap_or_default();
            ensure!(said == "Please greet Ann.", "prompt gave {got}");
        }
        Feature::Completion => {
            let done = step(
                "completion/complete",
                c.complete(
                    json!({"type": "ref/prompt", "name": "greet"}),
                    "name",
                    "Al",
                    None,
                ),
            )
            .await?
            .map_err(|e| e.to_string())?;
            ensure!(
                done.pointer("/completion/values") == Some(&json!(["Albert", "Alice"])),
                "completion gave {done}"
            );
        }
        Feature::Pagination => {
            let first = step("tools/list", c.list_page(ListKind::Tools, None))
                .await?
                .map_err(|e| e.to_string())?;
            ensure!(
                first.items.len() == fixture::PAGE_SIZE,
                "first page has {} tools",
                first.items.len()
            );
            let cursor = first.next_cursor.clone().ok_or("no nextCursor on page 1")?;
            let second = step("tools/list", c.list_page(ListKind::Tools, Some(&cursor)))
                .await?
                .map_err(|e| e.to_string())?;
            ensure!(
                names(&second.items, "name")
                    == fixture::TOOLS[fixture::PAGE_SIZE..2 * fixture::PAGE_SIZE],
                "second page {:?}",
                names(&second.items, "name")
            );
            let all = step("tools/list", c.list_tools())
                .await?
                .map_err(|e| e.to_string())?;
            ensure!(
                names(&all, "name") == fixture::TOOLS,
                "all pages {:?}",
                names(&all, "name")
            );
            let bad = step(
                "tools/list",
                c.list_page(ListKind::Tools, Some("not-a-cursor")),
            )
            .await?;
            let error = bad.err().ok_or("an unknown cursor was accepted")?;
            ensure!(error.code() == Some(-32602), "unknown cursor gave {error}");
        }
        Feature::AskElicitation => {
            let yes = step(
                "tools/call",
                c.call_tool("deploy", json!({"service": "web"})),
            )
            .await?
            .map_err(|e| e.to_string())?;
            ensure!(text(&yes) == "deployed web", "accepted ask gave {yes}");
            let no = step(
                "tools/call",
                c.call_tool("deploy", json!({"service": "prod"})),
            )
            .await?
            .map_err(|e| e.to_string())?;
            ensure!(text(&no) == "kept prod", "declined ask gave {no}");
            ensure!(
                s.asked() == [QuestionKind::Elicitation, QuestionKind::Elicitation],
                "questions seen: {:?}",
                s.asked()
            );
        }
        Feature::AskSampling => {
            let result = step("tools/call", c.call_tool("summarize", json!({})))
                .await?
                .map_err(|e| e.to_string())?;
            ensure!(
                text(&result) == "sampled: a short summary",
                "sampling gave {result}"
            );
            ensure!(
                s.asked() == [QuestionKind::Sampling],
                "questions seen: {:?}",
                s.asked()
            );
        }
        Feature::AskRoots => {
            let result = step("tools/call", c.call_tool("list_roots", json!({})))
                .await?
                .map_err(|e| e.to_string())?;
            ensure!(
                text(&result) == "root: file:///pairing/project",
                "roots gave {result}"
            );
            ensure!(
                s.asked() == [QuestionKind::Roots],
                "questions seen: {:?}",
                s.asked()
            );
        }
        Feature::Progress => {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let sink = seen.clone();
            let options = CallOptions::new().on_progress(move |p| {
                sink.lock().unwrap_or_else(|e| e.into_inner()).push(p);
            });
            let result = step("tools/call", c.call_tool_with("count", json!({}), options))
                .await?
                .map_err(|e| e.to_string())?;
            ensure!(text(&result) == "counted to 3", "count gave {result}");
            let notes = s.await_notes("notifications/progress", 3).await;
            let token = s
                .log
                .messages()
                .iter()
                .find(|w| w.from_client && w.message["method"] == "tools/call")
                .and_then(|w| w.message.pointer("/params/_meta/progressToken").cloned())
                .ok_or("the call carried no progress token")?;
            let progress: Vec<(Value, Value, Value)> = notes
                .iter()
                .filter_map(|n| n.params.as_ref())
                .map(|p| {
                    (
                        p["progressToken"].clone(),
                        p["progress"].clone(),
                        p["total"].clone(),
                    )
                })
                .collect();
            ensure!(
                progress
                    == [1, 2, 3]
                        .map(|i| (token.clone(), json!(i), json!(3)))
                        .to_vec()
                    || progress
                        == [1.0, 2.0, 3.0]
                            .map(|i| (token.clone(), json!(i), json!(3.0)))
                            .to_vec(),
                "progress notifications {progress:?}"
            );
            if features.progress_message {
                ensure!(
                    notes.iter().all(|n| n
                        .params
                        .as_ref()
                        .is_some_and(|p| p.get("message").is_some())),
                    "progress messages missing: {notes:?}"
                );
            }
            // The call's own callback: every notification sent before the response was
            // dispatched before the call returned, in order.
            let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let values: Vec<f64> = seen.iter().map(|p| p.progress).collect();
            ensure!(
                values == [1.0, 2.0, 3.0],
                "progress callback saw {values:?}"
            );
            let logs = s.notes("notifications/message");
            ensure!(
                logs.is_empty(),
                "log messages without a log level: {logs:?}"
            );
        }
        Feature::Logging => {
            let result = step("tools/call", c.call_tool("count", json!({})))
                .await?
                .map_err(|e| e.to_string())?;
            ensure!(text(&result) == "counted to 3", "count gave {result}");
            let logs = s.await_notes("notifications/message", 3).await;
            let data: Vec<Value> = logs
                .iter()
                .filter_map(|n| n.params.as_ref()?.get("data").cloned())
                .collect();
            ensure!(
                data == [json!("counted 1"), json!("counted 2"), json!("counted 3")],
                "log messages {logs:?}"
            );
        }
        Feature::Cancellation => {
            let options = CallOptions::new().timeout(Duration::from_millis(300));
            let error = step("tools/call", c.call_tool_with("wait", json!({}), options))
                .await?
                .err()
                .ok_or("wait finished without being cancelled")?;
            ensure!(error.kind() == ErrorKind::Timeout, "wait gave {error}");
            let result = step("tools/call", c.call_tool("cancelled", json!({})))
                .await?
                .map_err(|e| e.to_string())?;
            ensure!(
                text(&result).starts_with("cancelled"),
                "the server did not see the cancellation: {result}"
            );
            if !features.stream_close_cancels || case.transport != TransportKind::StreamableHttp {
                let sent = s.log.methods(true);
                ensure!(
                    sent.iter().any(|m| m == "notifications/cancelled"),
                    "no notifications/cancelled sent: {sent:?}"
                );
            }
        }
        Feature::Subscriptions => {
            let capabilities = c.server().map(|d| d.capabilities).unwrap_or_default();
            ensure!(
                capabilities.pointer("/tools/listChanged") == Some(&json!(true)),
                "the server offers no tools.listChanged: {capabilities}"
            );
            ensure!(
                capabilities.pointer("/resources/subscribe") == Some(&json!(true)),
                "the server offers no resources.subscribe: {capabilities}"
            );
            let listener = step(
                "listen",
                c.listen(
                    Subscriptions::new()
                        .tools_changed()
                        .resource("config://app"),
                ),
            )
            .await?
            .map_err(|e| format!("listen: {e}"))?;
            if features.has_listen {
                let accepted = listener.accepted().cloned().unwrap_or_default();
                ensure!(
                    accepted.get("toolsListChanged") == Some(&json!(true)),
                    "the acknowledgement honours {accepted}"
                );
            }
            subscriptions(case, s, listener).await?;
        }
        Feature::Errors => {
            let unknown = step("tools/call", c.call_tool("no_such_tool", json!({}))).await?;
            match unknown {
                Err(e) => ensure!(e.code() == Some(-32602), "unknown tool gave {e}"),
                Ok(result) => ensure!(
                    result.get("isError") == Some(&json!(true)),
                    "unknown tool gave {result}"
                ),
            }
            let failed = step("tools/call", c.call_tool("boom", json!({})))
                .await?
                .map_err(|e| e.to_string())?;
            ensure!(
                failed.get("isError") == Some(&json!(true)),
                "boom gave {failed}"
            );
            let invalid = step("tools/call", c.call_tool("add", json!({"a": "two"})))
                .await?
                .map_err(|e| e.to_string())?;
            ensure!(
                invalid.get("isError") == Some(&json!(true)),
                "invalid arguments gave {invalid}"
            );
            let method = step("request", c.request(UNKNOWN_METHOD, Some(json!({})))).await?;
            let error = method.err().ok_or("an unknown method succeeded")?;
            ensure!(error.code() == Some(-32601), "unknown method gave {error}");
            let missing = step("resources/read", c.read_resource("res://items/missing")).await?;
            let error = missing.err().ok_or("a missing resource was read")?;
            let expected = if features.result_envelope {
                -32602
            } else {
                -32002
            };
            ensure!(
                error.code() == Some(expected),
                "missing resource gave {error}"
            );
        }
    }
    Ok(())
}

/// The next notification of `listener`, within 20 s.
async fn next_note(
    listener: &mut mcp_client::Listener,
    what: &str,
) -> Result<Notification, String> {
    step(what, listener.next())
        .await?
        .ok_or_else(|| format!("{what}: the listener ended"))
}

/// The rest of the subscriptions check, once listening: a subscribed update (published by the
/// fixture's `touch` tool, or on Redis by a second server instance sharing the hub), then a
/// list change (a tool added at run time), each received once and in order; then, over
/// Streamable HTTP on revisions with a GET stream, the resume check.
async fn subscriptions(
    case: &Case,
    s: &Session,
    mut listener: mcp_client::Listener,
) -> Result<(), String> {
    let c = &s.client;
    match &s.peer {
        Some(peer) => {
            step(
                "publish on the second instance",
                peer.notifier().resource_updated(fixture::TOUCHED),
            )
            .await?
            .map_err(|e| format!("publish: {e}"))?;
        }
        None => {
            let touched = step("tools/call touch", c.call_tool("touch", json!({})))
                .await?
                .map_err(|e| e.to_string())?;
            ensure!(
                text(&touched).starts_with("touched"),
                "touch gave {touched}"
            );
        }
    }
    let update = next_note(&mut listener, "resources/updated").await?;
    ensure!(
        update.method == "notifications/resources/updated"
            && update.params.as_ref().and_then(|p| p.get("uri")) == Some(&json!(fixture::TOUCHED)),
        "expected the update of {}, got {update:?}",
        fixture::TOUCHED
    );
    let grown = step("tools/call grow", c.call_tool("grow", json!({})))
        .await?
        .map_err(|e| e.to_string())?;
    let added = text(&grown)
        .strip_prefix("added ")
        .ok_or_else(|| format!("grow gave {grown}"))?
        .to_owned();
    let change = next_note(&mut listener, "tools/list_changed").await?;
    ensure!(
        change.method == "notifications/tools/list_changed",
        "expected tools/list_changed (once, after the update), got {change:?}"
    );
    let tools = step("tools/list", c.list_tools())
        .await?
        .map_err(|e| e.to_string())?;
    ensure!(
        names(&tools, "name").contains(&added),
        "{added} is not listed after the change"
    );
    if s.adapter.features().has_listen {
        for note in [&update, &change] {
            ensure!(
                note.params
                    .as_ref()
                    .and_then(|p| p.pointer("/_meta/io.modelcontextprotocol~1subscriptionId"))
                    .is_some(),
                "untagged listen notification {note:?}"
            );
        }
    }
    drop(listener);
    if case.transport == TransportKind::StreamableHttp
        && s.adapter.features().has_get_stream
        && s.adapter.features().sse_resumable
    {
        resume(s).await?;
    }
    Ok(())
}

/// A GET stream dropped and resumed with `Last-Event-ID` yields every event exactly once, raw
/// HTTP on a session of its own.
async fn resume(s: &Session) -> Result<(), String> {
    use crate::conformance::http::send;
    use ::http::Method;

    let server = s.served.as_ref().ok_or("no in-process server")?;
    // On Redis, published by the second instance: the resumed stream reads the shared log.
    let publisher = s.peer.as_ref().unwrap_or(server).notifier();
    let http = s._http.as_ref().ok_or("no HTTP server")?;
    let url = http.url("/mcp")?;
    let revision = s.adapter.revision();
    let version = revision.as_str();
    let accept = ("accept", "application/json, text/event-stream");
    let json_type = ("content-type", "application/json");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "mcp-tests-resume", "version": "1"}
    }});
    let response = send(
        Method::POST,
        &url,
        &[accept, json_type],
        Some(initialize.to_string().into_bytes()),
    )
    .await
    .map_err(|e| format!("initialize: {e}"))?;
    let session = response
        .header("mcp-session-id")
        .ok_or("initialize gave no Mcp-Session-Id")?;
    let _ = response.bytes().await;
    let mut headers = vec![accept, json_type, ("mcp-session-id", session.as_str())];
    if s.adapter.features().version_header != VersionHeader::Undefined {
        headers.push(("mcp-protocol-version", version));
    }
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = send(
        Method::POST,
        &url,
        &headers,
        Some(initialized.to_string().into_bytes()),
    )
    .await
    .map_err(|e| format!("notifications/initialized: {e}"))?;
    ensure!(
        response.status.is_success(),
        "notifications/initialized gave {}",
        response.status
    );
    let mut get_headers = vec![
        ("accept", "text/event-stream"),
        ("mcp-session-id", session.as_str()),
    ];
    if s.adapter.features().version_header != VersionHeader::Undefined {
        get_headers.push(("mcp-protocol-version", version));
    }
    async fn open(
        url: &::http::Uri,
        headers: &[(&str, &str)],
        last: Option<&str>,
    ) -> Result<crate::conformance::http::Events, String> {
        let mut headers = headers.to_vec();
        if let Some(last) = last {
            headers.push(("last-event-id", last));
        }
        let response = send(::http::Method::GET, url, &headers, None)
            .await
            .map_err(|e| format!("GET: {e}"))?;
        ensure!(
            response.status == ::http::StatusCode::OK
                && response.content_type().as_deref() == Some("text/event-stream"),
            "GET gave {} {:?}",
            response.status,
            response.content_type()
        );
        Ok(response.events())
    }
    // The next event with data, as (id, message); priming events carry none.
    async fn next_event(
        events: &mut crate::conformance::http::Events,
    ) -> Result<(String, Value), String> {
        loop {
            let event = events
                .next(Duration::from_secs(20))
                .await
                .map_err(|e| format!("GET stream: {e}"))?
                .ok_or("the GET stream ended")?;
            if event.data().trim().is_empty() {
                continue;
            }
            let id = event.id().ok_or("an event without an id")?.to_owned();
            let message: Value = serde_json::from_str(event.data())
                .map_err(|e| format!("event data is not JSON: {e}"))?;
            return Ok((id, message));
        }
    }
    let mut published = Vec::new();
    let mut received: Vec<(String, Value)> = Vec::new();
    let mut first = open(&url, &get_headers, None).await?;
    for _ in 0..3 {
        let cursor = publisher.tools_changed().await.map_err(|e| e.to_string())?;
        published.push(cursor.to_string());
    }
    for _ in 0..2 {
        received.push(next_event(&mut first).await?);
    }
    drop(first);
    for _ in 0..2 {
        let cursor = publisher.tools_changed().await.map_err(|e| e.to_string())?;
        published.push(cursor.to_string());
    }
    let last = received.last().map(|(id, _)| id.clone());
    let mut resumed = open(&url, &get_headers, last.as_deref()).await?;
    for _ in 0..3 {
        received.push(next_event(&mut resumed).await?);
    }
    // Nothing else is pending: the next event is one published after the resume.
    let sentinel = publisher.tools_changed().await.map_err(|e| e.to_string())?;
    let (after, _) = next_event(&mut resumed).await?;
    ensure!(
        after == sentinel.to_string(),
        "after the resumed events came {after}, not the newest event {sentinel}"
    );
    let ids: Vec<&String> = received.iter().map(|(id, _)| id).collect();
    ensure!(
        ids == published.iter().collect::<Vec<_>>(),
        "event ids {ids:?}, published cursors {published:?}"
    );
    for (_, message) in &received {
        ensure!(
            message["method"] == "notifications/tools/list_changed",
            "GET stream event {message}"
        );
        if let Some(schemas) = Schemas::shared() {
            let problems = schemas
                .check_message(revision, message, false, None)
                .map_err(|e| e.to_string())?;
            ensure!(problems.is_empty(), "{message}: {problems:?}");
        }
    }
    let _ = send(Method::DELETE, &url, &get_headers, None).await;
    Ok(())
}

/// The `pairing-server` binary next to the running test binary's target folder, for callers
/// that cannot use `env!("CARGO_BIN_EXE_pairing-server")`.
pub fn binaries(pairing_server: &Path) -> Binaries {
    Binaries {
        pairing_server: pairing_server.to_owned(),
    }
}
