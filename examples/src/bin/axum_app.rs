//! Mounting the MCP endpoint in an axum application, beside the application's own routes, with
//! state shared between both.
//!
//! ```sh
//! cargo run -p mcp-examples --bin axum_app              # http://127.0.0.1:3000
//! cargo run -p mcp-examples --bin axum_app 127.0.0.1:0  # any free port
//! mcp call http://127.0.0.1:3000/mcp like item=rust
//! curl http://127.0.0.1:3000/likes
//! ```
//!
//! [`HttpEndpoint`] is a `tower_service::Service`, so axum's `route_service` takes it as it
//! is: mount it at the Streamable HTTP path and at the two HTTP+SSE paths. Mounted like this
//! it does not know the address it listens on, so the configuration states what
//! `mcp_server::http::serve` infers for a loopback address: only localhost `Host` names, and
//! localhost origins trusted. (The repository's `mcp-server/examples/axum.rs` is a shorter
//! version of the same.)

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::State as AxumState;
use axum::routing::get;
use mcp_server::http::{HttpConfig, HttpEndpoint, shutdown_signal};
use mcp_server::{Server, State, Tool};
use schemars::JsonSchema;
use serde::Deserialize;

/// Likes per item: written by the MCP tool, read by the plain HTTP route.
#[derive(Clone, Default)]
struct Likes(Arc<Mutex<BTreeMap<String, u64>>>);

/// The arguments of `like`.
#[derive(Deserialize, JsonSchema)]
struct LikeArgs {
    /// What to like.
    item: String,
}

/// The MCP side: a tool that changes the application's state.
async fn like(State(likes): State<Likes>, args: LikeArgs) -> String {
    let mut likes = likes.0.lock().unwrap_or_else(PoisonError::into_inner);
    let count = likes.entry(args.item.clone()).or_default();
    *count += 1;
    format!("{} has {count} like(s)", args.item)
}

/// The application side: an ordinary axum handler reading the same state.
async fn list_likes(AxumState(likes): AxumState<Likes>) -> String {
    let likes = likes.0.lock().unwrap_or_else(PoisonError::into_inner);
    likes
        .iter()
        .map(|(item, count)| format!("{item}: {count}\n"))
        .collect()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let likes = Likes::default();
    let server = Server::builder("axum-example", "1.0")
        .with_state(likes.clone())
        .tool(Tool::new("like", like).description("Likes an item."))
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
            get(|| async { "an axum app; MCP at /mcp, likes at /likes\n" }),
        )
        .route("/likes", get(list_likes))
        .with_state(likes)
        // The MCP endpoint: Streamable HTTP, and HTTP+SSE's stream and message paths.
        .route_service("/mcp", endpoint.clone())
        .route_service("/sse", endpoint.clone())
        .route_service("/messages", endpoint);

    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3000".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    // `shutdown_on` ends the endpoint's SSE streams when the signal comes, so axum's graceful
    // shutdown does not wait for the clients that hold them.
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.shutdown_on(shutdown_signal()))
        .await?;
    Ok(())
}
