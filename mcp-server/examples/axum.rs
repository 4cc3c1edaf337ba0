//! Mounting the MCP endpoint in an axum application, next to the application's own routes.
//!
//! Run it with `cargo run -p everymcp-server --example axum` (`-- --addr HOST:PORT` to listen
//! elsewhere), then point an MCP client at
//! `http://127.0.0.1:3000/mcp` (Streamable HTTP) or `http://127.0.0.1:3000/sse` (HTTP+SSE).
//!
//! The endpoint is a `tower_service::Service`, so axum's `route_service` takes it as it is.
//! Mounted like this it does not know the address it listens on, so the example states what
//! `mcp_server::http::serve` would infer for a loopback address: only localhost `Host` names,
//! and localhost origins trusted.

use mcp_server::http::{HttpConfig, HttpEndpoint};
use mcp_server::{Json, Server, Tool};
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

async fn add(args: AddArgs) -> Json<Sum> {
    Json(Sum {
        sum: args.a.saturating_add(args.b),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("axum-demo", "1.0")
        .tool(Tool::new("add", add).title("Add").read_only())
        .build()?;
    let config = HttpConfig::new()
        .allowed_host("localhost")
        .allowed_host("127.0.0.1")
        .allow_localhost(true);
    let endpoint = HttpEndpoint::new(server, config);
    let shutdown = endpoint.clone();
    let app = axum::Router::new()
        .route(
            "/",
            axum::routing::get(|| async { "an axum app with MCP at /mcp" }),
        )
        .route_service("/mcp", endpoint.clone())
        .route_service("/sse", endpoint.clone())
        .route_service("/messages", endpoint);
    // `--addr HOST:PORT` (or `MCP_AXUM_ADDR`); `127.0.0.1:0` picks a free port.
    let addr = std::env::args()
        .skip_while(|arg| arg != "--addr")
        .nth(1)
        .or_else(|| std::env::var("MCP_AXUM_ADDR").ok())
        .unwrap_or_else(|| "127.0.0.1:3000".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}", listener.local_addr()?);
    // The endpoint ends its SSE streams when the signal comes, so axum's graceful shutdown
    // does not wait for the clients that hold them.
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.shutdown_on(mcp_server::http::shutdown_signal()))
        .await?;
    Ok(())
}
