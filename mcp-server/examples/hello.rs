//! The README's library example: one tool, served over HTTP on every revision.
use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown, shutdown_signal};
use mcp_server::{Server, Tool};

/// Adds two numbers.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

async fn add(args: AddArgs) -> String {
    args.a.saturating_add(args.b).to_string()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("hello", "1.0")
        .tool(Tool::new("add", add))
        .build()?;
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let endpoint = HttpEndpoint::new(server, HttpConfig::new());
    Ok(serve_with_shutdown(listener, endpoint, shutdown_signal()).await?)
}
