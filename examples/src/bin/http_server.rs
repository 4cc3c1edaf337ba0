//! Serving over HTTP: Streamable HTTP at `/mcp` and the older HTTP+SSE transport at `/sse`,
//! for every protocol revision at once.
//!
//! ```sh
//! cargo run -p mcp-examples --bin http_server              # http://127.0.0.1:8080/mcp
//! cargo run -p mcp-examples --bin http_server 127.0.0.1:0  # any free port
//! mcp call http://127.0.0.1:8080/mcp whoami                 # Streamable HTTP
//! mcp call --transport sse http://127.0.0.1:8080/sse whoami # HTTP+SSE (2024-11-05)
//! ```
//!
//! The shortest way is `mcp_server::http::serve("127.0.0.1:8080", server)`, which binds, uses
//! the default [`HttpConfig`], and stops on Ctrl-C or SIGTERM. This example does the same by
//! hand to show the pieces: binding the listener itself (so it can print the port it got
//! for `127.0.0.1:0`), an [`HttpConfig`] with a few settings, and [`serve_with_shutdown`]
//! with the signal to stop on. On shutdown the endpoint stops accepting, ends its SSE
//! streams, and lets calls in flight finish for a while.
//!
//! Bound to a loopback address, the endpoint accepts only localhost `Host` names and origins
//! (against DNS rebinding). Listening on a wider address, list the names clients use with
//! [`HttpConfig::allowed_host`] (and [`HttpConfig::allowed_origin`] for browsers), and put
//! authorization in front ([`HttpConfig::auth`]).

use std::time::Duration;

use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown, shutdown_signal};
use mcp_server::{Exchange, Json, NoArgs, Server, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The arguments of `add`.
#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

/// `a + b`.
#[derive(Serialize, JsonSchema)]
struct Sum {
    /// The sum.
    sum: i64,
}

async fn add(args: AddArgs) -> Json<Sum> {
    Json(Sum {
        sum: args.a.saturating_add(args.b),
    })
}

/// Which revision this call was made on: the same declarations serve every revision, and
/// the exchange says which one a call uses.
async fn whoami(_: NoArgs, ex: Exchange) -> String {
    let client = ex
        .client_info()
        .and_then(|info| info["name"].as_str())
        .unwrap_or("an unnamed client");
    format!("{client} on revision {}", ex.revision())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("http-example", "1.0")
        .title("HTTP example")
        .tool(
            Tool::new("add", add)
                .description("Adds two integers.")
                .read_only(),
        )
        .tool(Tool::new("whoami", whoami).description("Names the client and the revision."))
        .build()?;

    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let bound = listener.local_addr()?;
    // The first line names the Streamable HTTP endpoint; scripts and tests read it.
    println!("listening on http://{bound}/mcp");
    println!("HTTP+SSE (2024-11-05) on http://{bound}/sse");

    // Every setting has a safe default; these show where they live.
    let config = HttpConfig::new()
        // Streamable HTTP's path (default `/mcp`); HTTP+SSE keeps `/sse` and `/messages`.
        .path("/mcp")
        // Sessions (revisions with a handshake) expire after this long unused.
        .session_ttl(Duration::from_secs(30 * 60))
        // At most this many sessions at once; more `initialize`s get 503.
        .max_sessions(1_000)
        // Largest request body accepted (413 beyond).
        .body_limit(1024 * 1024)
        // How long calls in flight may take to finish once shutdown starts.
        .shutdown_deadline(Duration::from_secs(5));
    let endpoint = HttpEndpoint::new(server, config);
    serve_with_shutdown(listener, endpoint, shutdown_signal()).await?;
    Ok(())
}
