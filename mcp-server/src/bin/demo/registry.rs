// The demo registry, shared by `mcp-demo` (HTTP) and `mcp-stdio-demo`: every feature a user
// wants to try, under the names the README and other MCP clients use.
//
// tools: add, echo, deploy, rename, count, routed, touch, boom, slow (a task on 2026-07-28)
// resources: config://app, res://public (cache hints), res://items/{id}
// prompt: greet (with completion of its argument)

use mcp_server::{
    AnswerAction, CacheScope, Completer, CompletionRequest, Exchange, Interrupt, Json, LogLevel,
    NoArgs, Prompt, Question, Resource, ResourceError, ResourceRequest, ResourceTemplate, Server,
    ServerBuilder, TaskSupport, Tool, ToolError,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    /// `a + b`.
    sum: i64,
}

async fn add(args: AddArgs) -> Json<Sum> {
    Json(Sum {
        sum: args.a.saturating_add(args.b),
    })
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// What to say back.
    text: String,
}

async fn echo(args: EchoArgs) -> String {
    args.text
}

fn action_name(action: AnswerAction) -> &'static str {
    match action {
        AnswerAction::Accept => "accept",
        AnswerAction::Decline => "decline",
        AnswerAction::Cancel => "cancel",
    }
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
        format!("stopped at {}", action_name(answer.action()))
    })
}

#[derive(Deserialize, JsonSchema)]
struct RenameArgs {
    /// The file to rename.
    path: String,
}

async fn rename(args: RenameArgs, ex: Exchange) -> Result<String, ToolError> {
    let sure = ex
        .ask(
            "confirm",
            Question::elicit(format!("Rename {}?", args.path)),
        )
        .await?;
    if !sure.accepted() {
        return Ok(format!("stopped at {}", action_name(sure.action())));
    }
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string", "title": "New name", "description": "The new file name"}},
        "required": ["name"]
    });
    let named = ex
        .ask(
            "name",
            Question::elicit_with(format!("New name for {}?", args.path), schema),
        )
        .await?;
    match named.get("name").and_then(|n| n.as_str()) {
        Some(name) if named.accepted() => Ok(format!("renamed {} to {name}", args.path)),
        _ => Ok(format!("stopped at {}", action_name(named.action()))),
    }
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// How many steps: one progress notification and one log line each.
    n: u32,
    /// Milliseconds to wait after each step (at most 1000), so a progress bar can be watched.
    #[serde(default)]
    step_ms: u32,
}

// Included by tests that import `Duration` and by binaries that do not: the full path is kept.
#[allow(unused_qualifications)]
async fn count(args: CountArgs, ex: Exchange) -> String {
    let n = args.n.min(10_000);
    let delay = std::time::Duration::from_millis(u64::from(args.step_ms.min(1000)));
    for i in 1..=n {
        ex.progress(f64::from(i), Some(f64::from(n)), Some(&format!("step {i}")));
        ex.log(LogLevel::Info, format!("counted {i}"));
        // A long loop hands its worker back between steps, so other clients' requests run
        // in between and many counts in parallel share the workers fairly.
        if delay.is_zero() {
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(delay).await;
        }
    }
    format!("counted to {n}")
}

#[derive(Deserialize, JsonSchema)]
struct RoutedArgs {
    /// The region; mirrored in the `Mcp-Param-Region` header on 2026-07-28.
    region: String,
}

async fn routed(args: RoutedArgs) -> String {
    format!("routed to {}", args.region)
}

/// Announces that `config://app` changed, through the server's notifier (taken as an
/// argument): every worker sharing the event log tells its subscribers.
async fn touch(notifier: mcp_server::Notifier) -> String {
    match notifier.resource_updated("config://app").await {
        Ok(_) => "touched config://app".to_owned(),
        Err(err) => format!("touched config://app, but the update was not announced: {err}"),
    }
}

async fn boom(_: NoArgs) -> Result<String, ToolError> {
    Err(ToolError::new("boom: this tool always fails"))
}

#[derive(Deserialize, JsonSchema)]
struct SlowArgs {
    /// How long to work, in seconds (at most 600).
    seconds: f64,
}

/// Works for `seconds`, then answers; a task for the clients that ask for one (2026-07-28
/// with the Tasks extension), so `mcp call` shows its status and Ctrl-C cancels it. Ends early
/// when cancelled.
// Included by tests that import `Duration` and by binaries that do not: the full path is kept.
#[allow(unused_qualifications)]
async fn slow(args: SlowArgs, ex: Exchange) -> Result<String, ToolError> {
    let seconds = if args.seconds.is_finite() {
        args.seconds.clamp(0.0, 600.0)
    } else {
        0.0
    };
    tokio::select! {
        () = tokio::time::sleep(std::time::Duration::from_secs_f64(seconds)) => {}
        () = ex.cancelled() => return Err(Interrupt::Cancelled.into()),
    }
    Ok(format!("worked {seconds}s"))
}

async fn config(_: ResourceRequest) -> String {
    r#"{"mode":"demo","features":["tools","resources","prompts"]}"#.to_owned()
}

async fn public(_: ResourceRequest) -> String {
    "Public text, cacheable by anyone for a minute.".to_owned()
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
    format!("Please greet {} warmly.", args.name)
}

async fn complete(request: CompletionRequest) -> Vec<String> {
    ["Alice", "Albert", "Bob"]
        .iter()
        .filter(|n| n.starts_with(&request.value))
        .map(|n| (*n).to_owned())
        .collect()
}

/// The demo server: its declarations, changed by `configure` (a hub, say), built.
#[allow(dead_code)]
fn build_demo(
    name: &str,
    configure: impl FnOnce(ServerBuilder) -> ServerBuilder,
) -> Result<Server, mcp_server::RegistrationError> {
    configure(demo_builder(name)).build()
}

/// The demo's declarations, under the server name `name`.
#[allow(dead_code)]
fn demo_builder(name: &str) -> ServerBuilder {
    Server::builder(name, env!("CARGO_PKG_VERSION"))
        .title("Demo server")
        .instructions("A demo: add numbers, echo text, deploy or rename (they ask first), count with progress, read config://app.")
        .tool(Tool::new("add", add).title("Add").description("Adds two integers.").read_only())
        .tool(Tool::new("echo", echo).description("Echoes its text.").read_only())
        .tool(Tool::new("deploy", deploy).description("Deploys a service after asking.").destructive().scopes(["mcp:deploy"]))
        .tool(Tool::new("rename", rename).description("Renames a file; asks twice, once with a form."))
        .tool(Tool::new("count", count).description("Counts to n, with progress and log lines; step_ms paces each step.").read_only())
        .tool(Tool::new("routed", routed).description("Routed by region (header Mcp-Param-Region).").header("region", "Region").read_only())
        .tool(Tool::new("touch", touch).description("Marks config://app as updated: subscribers get notifications/resources/updated."))
        .tool(Tool::new("boom", boom).description("Always fails."))
        .tool(Tool::new("slow", slow).description("Works for `seconds` (at most 600); a task when the client asks for one (2026-07-28), cancellable.").read_only().task_support(TaskSupport::Optional))
        .resource(Resource::new("config://app", "config", config).mime_type("application/json"))
        .resource(Resource::new("res://public", "public", public).mime_type("text/plain").cache(60_000, CacheScope::Public))
        .resource_template(ResourceTemplate::new("res://items/{id}", "item", item).mime_type("text/plain"))
        .prompt(Prompt::new("greet", greet).title("Greeting").description("Greets someone."))
        .completion(Completer::new(complete))
}
