//! `mcp-bench-server`: our server with an `add` tool, for the harness's own rows.
//!
//! ```text
//! mcp-bench-server --port PORT --store memory|redis [--redis-url URL]
//! mcp-bench-server --port PORT --hub memory|redis://…|postgres://…|sqlite:PATH
//! ```
//!
//! Contract (see the crate docs, "Server contract"): Streamable HTTP at `/mcp` for every
//! revision, HTTP+SSE at `GET /sse` for 2024-11-05, and an `add` tool taking `{a, b}` integers
//! and returning `{"sum": a + b}` as structured content, plus a `confirm` tool that asks the
//! client once (for `mcp-load --ask`). Listens on `127.0.0.1:PORT`; with
//! `--store redis` sessions and the event log live in Redis (default `redis://127.0.0.1:6379`,
//! keys under a prefix unique to the process). `--hub` names the hub as `mcp-demo --hub` does
//! (PostgreSQL tables under the prefix `mcp_bench`; a SQLite file at PATH). Runs on one thread (the harness pins it to one
//! core) until Ctrl-C or SIGTERM.

use std::process::ExitCode;
use std::sync::Arc;

use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown, shutdown_signal};
use mcp_server::{Exchange, Json, Question, Server, Tool, ToolError};
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
    /// `a + b`.
    sum: i64,
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// Asks the client once (pushed on 2025-06-18 and 2025-11-25, so the answer comes back through
/// the hub), then answers `"confirmed"`: `mcp-load --ask` measures answer-to-result latency.
async fn confirm(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex.ask("go", Question::elicit("Go on?")).await?;
    if answer.accepted() {
        Ok("confirmed".to_owned())
    } else {
        Ok("declined".to_owned())
    }
}

async fn add(args: AddArgs) -> Json<Sum> {
    Json(Sum {
        sum: args.a.saturating_add(args.b),
    })
}

struct Options {
    port: u16,
    redis: Option<String>,
    /// `--hub`: PostgreSQL or SQLite (memory and Redis go through the fields above).
    sql: Option<String>,
}

fn options() -> Result<Options, String> {
    let mut port = None;
    let mut store = "memory".to_owned();
    let mut url = "redis://127.0.0.1:6379".to_owned();
    let mut sql = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--port" => {
                port = Some(
                    value("--port")?
                        .parse()
                        .map_err(|e| format!("--port: {e}"))?,
                );
            }
            "--store" => store = value("--store")?,
            "--redis-url" => url = value("--redis-url")?,
            "--hub" => {
                let hub = value("--hub")?;
                if hub == "memory" {
                    store = hub;
                } else if hub.starts_with("redis://") {
                    store = "redis".to_owned();
                    url = hub;
                } else {
                    sql = Some(hub);
                }
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let redis = match store.as_str() {
        "memory" => None,
        "redis" => Some(url),
        other => return Err(format!("--store is memory or redis, not {other:?}")),
    };
    Ok(Options {
        port: port.ok_or("--port is required")?,
        redis,
        sql,
    })
}

async fn run(options: Options) -> Result<(), String> {
    let mut builder = Server::builder("mcp-bench-server", env!("CARGO_PKG_VERSION"))
        .tool(Tool::new("add", add).read_only())
        .tool(Tool::new("confirm", confirm));
    if let Some(url) = &options.redis {
        let config = mcp_hub::RedisConfig::new()
            .key_prefix(format!("mcp-bench-server:{}", std::process::id()));
        let hub = mcp_hub::RedisHub::connect(url, config)
            .await
            .map_err(|e| format!("Redis at {url}: {e}"))?;
        let hub = Arc::new(hub);
        builder = builder.state_store(hub.clone()).event_log(hub);
    }
    if let Some(spec) = &options.sql {
        let hub: Arc<dyn mcp_hub::Hub> = if let Some(path) = spec.strip_prefix("sqlite:") {
            Arc::new(
                mcp_hub::SqliteHub::open(path, mcp_hub::SqliteConfig::new())
                    .await
                    .map_err(|e| format!("SQLite at {path}: {e}"))?,
            )
        } else if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
            let config = mcp_hub::PostgresConfig::new().table_prefix("mcp_bench");
            Arc::new(
                mcp_hub::PostgresHub::connect(spec, config)
                    .await
                    .map_err(|e| format!("PostgreSQL at {spec}: {e}"))?,
            )
        } else {
            return Err(format!(
                "--hub is memory, redis://…, postgres://… or sqlite:PATH, not {spec:?}"
            ));
        };
        builder = builder.state_store(hub.clone()).event_log(hub);
    }
    let server = builder.build().map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", options.port))
        .await
        .map_err(|e| format!("port {}: {e}", options.port))?;
    // The idle-sessions step opens 10,000 sessions (the default limit) on top of the load
    // rounds' own: no limit in the way of what is measured.
    let config = HttpConfig::new().max_sessions(usize::MAX);
    let endpoint = HttpEndpoint::new(server, config);
    serve_with_shutdown(listener, endpoint, shutdown_signal())
        .await
        .map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let result = options().and_then(|options| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?
            .block_on(run(options))
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mcp-bench-server: {err}");
            ExitCode::FAILURE
        }
    }
}
