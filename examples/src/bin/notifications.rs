//! Notifications: progress and log messages during a call, resource updates and list changes
//! at any time.
//!
//! ```sh
//! cargo run -p mcp-examples --bin notifications              # http://127.0.0.1:8080/mcp
//! cargo run -p mcp-examples --bin notifications 127.0.0.1:0  # any free port
//! mcp listen http://127.0.0.1:8080/mcp --resource status://current   # in one terminal
//! mcp call http://127.0.0.1:8080/mcp set_status text=busy             # in another
//! ```
//!
//! Two kinds:
//!
//! - **About one call**: [`Exchange::progress`] (sent when the client asked for progress, with
//!   a progress token) and [`Exchange::log`] (sent when the client asked for log messages at
//!   that level or more). They travel on the call's own stream, before its result.
//! - **About the server**: a [`Notifier`] (a handler argument, or [`Server::notifier`]) announces that a
//!   resource changed (`notifications/resources/updated`, to the clients subscribed to its
//!   URI) or that a list changed (`notifications/{tools,prompts,resources}/list_changed`).
//!   [`Server::add_tool`] and its siblings change the registry at run time and announce the
//!   change themselves. Clients receive these on `subscriptions/listen` (2026-07-28), or after
//!   `resources/subscribe` on the session's stream (earlier revisions); `mcp_client`'s
//!   `Client::listen` does whichever the revision has.
//!
//! Announcements go through the server's event log, so with a shared hub every worker's
//! clients hear them (see `redis_workers.rs`).

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown, shutdown_signal};
use mcp_server::{
    Exchange, LogLevel, NoArgs, Notifier, Resource, ResourceRequest, Server, State, Tool, ToolError,
};
use schemars::JsonSchema;
use serde::Deserialize;

/// The resource whose updates clients can subscribe to.
const STATUS_URI: &str = "status://current";

/// The application's state, shared by every handler.
#[derive(Clone, Default)]
struct App {
    /// The text behind `status://current`.
    status: Arc<Mutex<String>>,
    /// The server itself, for the handler that changes the registry (`add_tool`). Handlers
    /// are declared before the server exists, so `main` fills this in right after `build()`.
    /// (Announcing a change needs no such thing: a handler takes the `Notifier` as an
    /// argument.) (The server and its state then refer to each other and live as long as the
    /// process, which a server does anyway.)
    server: Arc<OnceLock<Server>>,
}

impl App {
    fn server(&self) -> Result<&Server, ToolError> {
        self.server
            .get()
            .ok_or_else(|| ToolError::new("the server is still starting"))
    }
}

/// The arguments of `report`.
#[derive(Deserialize, JsonSchema)]
struct ReportArgs {
    /// How many steps to report (at most 100).
    steps: u32,
}

/// Progress and log messages, about this call.
async fn report(args: ReportArgs, ex: Exchange) -> String {
    let steps = args.steps.min(100);
    for step in 1..=steps {
        // Both do nothing unless the client asked for them.
        ex.progress(
            f64::from(step),
            Some(f64::from(steps)),
            Some(&format!("step {step} of {steps}")),
        );
        ex.log(LogLevel::Info, format!("finished step {step}"));
    }
    ex.log(
        LogLevel::Debug,
        "only sent to clients that asked for debug messages",
    );
    format!("reported {steps} steps")
}

/// The arguments of `set_status`.
#[derive(Deserialize, JsonSchema)]
struct SetStatusArgs {
    /// The new status text.
    text: String,
}

/// Changes a resource, then announces it: subscribers get `notifications/resources/updated`
/// and read it again.
async fn set_status(
    State(app): State<App>,
    notifier: Notifier,
    args: SetStatusArgs,
) -> Result<String, ToolError> {
    *app.status.lock().unwrap_or_else(PoisonError::into_inner) = args.text.clone();
    notifier
        .resource_updated(STATUS_URI)
        .await
        .map_err(|err| ToolError::new(format!("status changed, but not announced: {err}")))?;
    Ok(format!("status is now {:?}", args.text))
}

/// A tool that only exists after `unlock`.
async fn secret(_: NoArgs) -> String {
    "the secret is 42".to_owned()
}

/// Changes the registry at run time: `add_tool` announces `notifications/tools/list_changed`,
/// and the next `tools/list` shows the new tool.
async fn unlock(State(app): State<App>, _: NoArgs) -> Result<String, ToolError> {
    app.server()?
        .add_tool(
            Tool::new("secret", secret)
                .description("Tells the secret.")
                .read_only(),
        )
        .await
        .map_err(|err| ToolError::new(format!("not unlocked: {err}")))?;
    Ok("unlocked the tool `secret`".to_owned())
}

/// The status resource reads the shared state (resource readers take `State` as tools do).
async fn status(State(app): State<App>, _: ResourceRequest) -> String {
    app.status
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let app = App {
        status: Arc::new(Mutex::new("idle".to_owned())),
        server: Arc::default(),
    };
    let server = Server::builder("notifications-example", "1.0")
        .with_state(app.clone())
        .tool(Tool::new("report", report).description("Reports progress and log messages."))
        .tool(Tool::new("set_status", set_status).description("Changes status://current."))
        .tool(Tool::new("unlock", unlock).description("Adds the tool `secret`."))
        .resource(Resource::new(STATUS_URI, "status", status).mime_type("text/plain"))
        .build()?;
    // Now that the server exists, the handlers can reach it.
    let _ = app.server.set(server.clone());

    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    let endpoint = HttpEndpoint::new(server, HttpConfig::new());
    serve_with_shutdown(listener, endpoint, shutdown_signal()).await?;
    Ok(())
}
