//! The pairing fixture: one server declaring every feature the suite exercises.
//!
//! | name | kind | what it does |
//! | --- | --- | --- |
//! | `echo` | tool | returns its `text` |
//! | `add` | tool | structured output `{"sum": a + b}` |
//! | `deploy` | tool | asks a form elicitation, answers `deployed X` or `kept X` |
//! | `summarize` | tool | asks `sampling/createMessage`, returns the sampled text |
//! | `list_roots` | tool | asks `roots/list`, returns the first root's URI |
//! | `count` | tool | three progress updates and three log messages |
//! | `wait` | tool | waits until it is cancelled |
//! | `cancelled` | tool | waits (at most 10 s) until a `wait` call was cancelled |
//! | `boom` | tool | always fails (`isError: true`) |
//! | `touch` | tool | publishes an update of `config://app` through the server's `Notifier` |
//! | `grow` | tool | adds a tool `grown_N` at run time (`add_tool`: `tools/list_changed`) |
//! | `filler_00` .. `filler_06` | tools | make `tools/list` span several pages |
//! | `config://app` | resource | `{"mode":"pairing"}` |
//! | `res://items/{id}` | template | `item {id}`; `missing` is not found |
//! | `greet` | prompt | `Please greet {name}.` |
//! | completion | | names starting with the typed prefix |

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_adapters::{AdapterSet, InputRequest};
use mcp_hub::{EventLog, StateStore};
use mcp_server::{
    CacheScope, Completer, CompletionRequest, Exchange, Json, LogLevel, NoArgs, Prompt, Question,
    Resource, ResourceError, ResourceRequest, ResourceTemplate, Server, Tool, ToolError,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

/// The fixture server's name, as `serverInfo.name` reports it.
pub const SERVER_NAME: &str = "pairing-server";

/// One page of every list holds this many entries, so the 18 tools span several pages.
pub const PAGE_SIZE: usize = 4;

/// Every tool the fixture declares, in `tools/list` order (before `grow` adds any).
pub const TOOLS: [&str; 18] = [
    "add",
    "boom",
    "cancelled",
    "count",
    "deploy",
    "echo",
    "filler_00",
    "filler_01",
    "filler_02",
    "filler_03",
    "filler_04",
    "filler_05",
    "filler_06",
    "grow",
    "list_roots",
    "summarize",
    "touch",
    "wait",
];

/// The resource `touch` announces an update of.
pub const TOUCHED: &str = "config://app";

/// The names the completion handler offers.
pub const NAMES: [&str; 3] = ["Albert", "Alice", "Bob"];

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// What to say back.
    text: String,
}

async fn echo(args: EchoArgs) -> String {
    args.text
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: i64,
}

async fn add(args: AddArgs) -> Json<Sum> {
    Json(Sum {
        sum: args.a + args.b,
    })
}

#[derive(Deserialize, JsonSchema)]
struct DeployArgs {
    /// The service to deploy.
    service: String,
}

async fn deploy(args: DeployArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex
        .ask(
            "confirm",
            Question::elicit(format!("Deploy {}?", args.service)),
        )
        .await?;
    Ok(if answer.accepted() {
        format!("deployed {}", args.service)
    } else {
        format!("kept {}", args.service)
    })
}

async fn summarize(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let mut params = Map::new();
    params.insert(
        "messages".into(),
        json!([{"role": "user", "content": {"type": "text", "text": "Summarize the pairing suite."}}]),
    );
    params.insert("maxTokens".into(), json!(50));
    let answer = ex
        .ask(
            "summary",
            Question::request(InputRequest::create_message(params)),
        )
        .await?;
    let text = answer
        .content()
        .pointer("/content/text")
        .and_then(Value::as_str)
        .unwrap_or("no summary");
    Ok(format!("sampled: {text}"))
}

async fn list_roots(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex
        .ask("roots", Question::request(InputRequest::list_roots()))
        .await?;
    let uri = answer
        .content()
        .pointer("/roots/0/uri")
        .and_then(Value::as_str)
        .unwrap_or("no roots");
    Ok(format!("root: {uri}"))
}

async fn count(_: NoArgs, ex: Exchange) -> String {
    for i in 1..=3 {
        ex.progress(f64::from(i), Some(3.0), Some(&format!("step {i}")));
        ex.log(LogLevel::Info, format!("counted {i}"));
    }
    "counted to 3".into()
}

/// Counts the `wait` calls of one server instance that ended without finishing (their future
/// was dropped), and wakes whoever waits for one.
#[derive(Default)]
struct CancelWatch {
    count: AtomicUsize,
    signal: Notify,
}

/// Marks a `wait` call cancelled when its future is dropped before it finished.
struct OnDrop(Arc<CancelWatch>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.count.fetch_add(1, Ordering::SeqCst);
        self.0.signal.notify_waiters();
    }
}

async fn wait(watch: Arc<CancelWatch>, ex: Exchange) -> String {
    let _guard = OnDrop(watch);
    ex.cancelled().await;
    "cancelled".into()
}

async fn cancelled(watch: Arc<CancelWatch>) -> Result<String, ToolError> {
    let observed = async {
        loop {
            let signal = watch.signal.notified();
            tokio::pin!(signal);
            signal.as_mut().enable();
            if watch.count.load(Ordering::SeqCst) > 0 {
                return;
            }
            signal.await;
        }
    };
    match tokio::time::timeout(Duration::from_secs(10), observed).await {
        Ok(()) => Ok(format!(
            "cancelled {} call(s)",
            watch.count.load(Ordering::SeqCst)
        )),
        Err(_) => Err(ToolError::new("no wait call was cancelled within 10 s")),
    }
}

async fn boom(_: NoArgs) -> Result<String, ToolError> {
    Err(ToolError::new("boom: this tool always fails"))
}

/// The server a tool runs in, set once it is built: `touch` and `grow` change it.
type Myself = Arc<std::sync::OnceLock<Server>>;

async fn touch(myself: Myself) -> Result<String, ToolError> {
    let server = myself
        .get()
        .ok_or_else(|| ToolError::new("not built yet"))?;
    let cursor = server
        .notifier()
        .resource_updated(TOUCHED)
        .await
        .map_err(|e| ToolError::new(format!("publish: {e}")))?;
    Ok(format!("touched {TOUCHED} at {cursor}"))
}

async fn grow(myself: Myself) -> Result<String, ToolError> {
    static GROWN: AtomicUsize = AtomicUsize::new(0);
    let server = myself
        .get()
        .ok_or_else(|| ToolError::new("not built yet"))?;
    let name = format!("grown_{}", GROWN.fetch_add(1, Ordering::Relaxed));
    server
        .add_tool(Tool::new(name.clone(), filler).description("Added at run time."))
        .await
        .map_err(|e| ToolError::new(format!("add_tool: {e}")))?;
    Ok(format!("added {name}"))
}

async fn filler(_: NoArgs) -> String {
    "filler".into()
}

async fn config(_: ResourceRequest) -> String {
    r#"{"mode":"pairing"}"#.to_owned()
}

async fn item(request: ResourceRequest) -> Result<String, ResourceError> {
    let id = request.var("id").unwrap_or_default();
    if id == "missing" {
        return Err(ResourceError::NotFound(request.uri.clone()));
    }
    Ok(format!("item {id}"))
}

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Whom to greet.
    name: String,
}

async fn greet(args: GreetArgs) -> String {
    format!("Please greet {}.", args.name)
}

async fn complete(request: CompletionRequest) -> Vec<String> {
    NAMES
        .iter()
        .filter(|n| n.starts_with(&request.value))
        .map(|n| (*n).to_owned())
        .collect()
}

/// Where the fixture keeps request state and routes answers to pushed questions.
#[derive(Clone, Default)]
pub struct Backing {
    /// The state store; `None` is the server's own memory store.
    pub store: Option<Arc<dyn StateStore>>,
    /// The event log; `None` is the server's own memory log.
    pub log: Option<Arc<dyn EventLog>>,
}

impl std::fmt::Debug for Backing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backing")
            .field("store", &self.store.is_some())
            .field("log", &self.log.is_some())
            .finish()
    }
}

/// The fixture server on `backing`, serving every revision.
pub fn server(backing: Backing) -> Server {
    server_with(backing, AdapterSet::all())
}

/// The fixture server on `backing`, serving only `revisions`.
pub fn server_with(backing: Backing, revisions: AdapterSet) -> Server {
    let watch = Arc::new(CancelWatch::default());
    let on_wait = watch.clone();
    // The server refers to itself through this (a cycle that lives as long as the process).
    let myself = Myself::default();
    let (on_touch, on_grow) = (myself.clone(), myself.clone());
    let mut builder = Server::builder(SERVER_NAME, env!("CARGO_PKG_VERSION"))
        .title("Pairing fixture")
        .instructions("The workspace's pairing fixture: every feature, small pages.")
        .page_size(PAGE_SIZE)
        .tool(
            Tool::new("echo", echo)
                .description("Echoes its text.")
                .read_only(),
        )
        .tool(
            Tool::new("add", add)
                .description("Adds two integers.")
                .read_only(),
        )
        .tool(Tool::new("deploy", deploy).description("Deploys after asking."))
        .tool(Tool::new("summarize", summarize).description("Asks the client to sample."))
        .tool(Tool::new("list_roots", list_roots).description("Asks the client for its roots."))
        .tool(Tool::new("count", count).description("Counts to 3 with progress and logs."))
        .tool(
            Tool::new("wait", move |_: NoArgs, ex: Exchange| {
                wait(on_wait.clone(), ex)
            })
            .description("Waits until cancelled."),
        )
        .tool(
            Tool::new("cancelled", move |_: NoArgs| cancelled(watch.clone()))
                .description("Waits until a wait call was cancelled."),
        )
        .tool(Tool::new("boom", boom).description("Always fails."))
        .tool(
            Tool::new("touch", move |_: NoArgs| touch(on_touch.clone()))
                .description("Publishes an update of config://app."),
        )
        .tool(
            Tool::new("grow", move |_: NoArgs| grow(on_grow.clone()))
                .description("Adds a tool at run time."),
        )
        .resource(
            Resource::new("config://app", "config", config)
                .mime_type("application/json")
                .cache(60_000, CacheScope::Public),
        )
        .resource_template(
            ResourceTemplate::new("res://items/{id}", "item", item).mime_type("text/plain"),
        )
        .prompt(Prompt::new("greet", greet).description("Greets someone."))
        .completion(Completer::new(complete));
    for i in 0..7 {
        builder =
            builder.tool(Tool::new(format!("filler_{i:02}"), filler).description("Fills a page."));
    }
    if let Some(store) = backing.store {
        builder = builder.state_store(store);
    }
    if let Some(log) = backing.log {
        builder = builder.event_log(log);
    }
    let server = builder
        .revisions(revisions)
        .build()
        .expect("the fixture's declarations are valid");
    let _ = myself.set(server.clone());
    server
}
