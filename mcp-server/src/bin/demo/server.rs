use mcp_server::{
    CacheScope, Completer, CompletionRequest, Exchange, Json, LogLevel, NoArgs, Prompt, Question, Resource,
    ResourceError, ResourceRequest, ResourceTemplate, Server, Tool, ToolError, serve_stdio,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    Json(Sum { sum: args.a + args.b })
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// What to say back.
    text: String,
}

async fn echo(args: EchoArgs) -> String {
    args.text
}

#[derive(Deserialize, JsonSchema)]
struct DeployArgs {
    /// The service to deploy.
    service: String,
}

async fn deploy(args: DeployArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex.ask("confirm", Question::elicit(format!("Deploy {}?", args.service))).await?;
    Ok(if answer.accepted() { format!("deployed {}", args.service) } else { format!("did not deploy {}", args.service) })
}

async fn boom(_: NoArgs) -> Result<String, ToolError> {
    Err(ToolError::new("boom: this tool always fails"))
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// How far to count.
    to: u32,
}

async fn count(args: CountArgs, ex: Exchange) -> String {
    for i in 1..=args.to {
        ex.progress(f64::from(i), Some(f64::from(args.to)), Some(&format!("step {i}")));
        ex.log(LogLevel::Info, format!("counted {i}"));
    }
    format!("counted to {}", args.to)
}

async fn config(_: ResourceRequest) -> String {
    r#"{"mode":"demo"}"#.to_owned()
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
    ["Alice", "Albert", "Bob"].iter().filter(|n| n.starts_with(&request.value)).map(|n| (*n).to_owned()).collect()
}

/// The demo server.
fn demo() -> Server {
    Server::builder("mcp-stdio-demo", env!("CARGO_PKG_VERSION"))
        .title("Demo server")
        .instructions("A demo: add numbers, echo text, deploy (asks first), read config://app.")
        .tool(Tool::new("add", add).title("Add").description("Adds two integers.").read_only())
        .tool(Tool::new("echo", echo).description("Echoes its text.").read_only())
        .tool(Tool::new("deploy", deploy).description("Deploys a service after asking.").destructive())
        .tool(Tool::new("boom", boom).description("Always fails."))
        .tool(Tool::new("count", count).description("Counts, reporting progress."))
        .resource(Resource::new("config://app", "config", config).mime_type("application/json").cache(60_000, CacheScope::Public))
        .resource_template(ResourceTemplate::new("res://items/{id}", "item", item).mime_type("text/plain"))
        .prompt(Prompt::new("greet", greet).title("Greeting").description("Greets someone."))
        .completion(Completer::new(complete))
        .build()
        .expect("the demo's declarations are valid")
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(err) = serve_stdio(demo()).await {
        eprintln!("mcp-stdio-demo: {err}");
        std::process::exit(1);
    }
}
