//! rmcp's Streamable HTTP server with one `add` tool, served by hyper 1 HTTP/1.1 with
//! `TCP_NODELAY` on every accepted connection (without it rmcp's multi-write SSE replies stall
//! on Nagle plus delayed ACK).
//!
//! Usage: `rmcp-peer --port <port> --mode <session|stateless>`.
//! - `session`: rmcp's default, legacy session mode (`Mcp-Session-Id`, SSE replies).
//! - `stateless`: no sessions and JSON replies, rmcp's fastest configuration.
//!
//! 2026-07-28 requests are always served statelessly by rmcp, whatever the mode.

use std::sync::Arc;

use hyper::server::conn::http1;
use hyper_util::{rt::TokioIo, service::TowerToHyperService};
use rmcp::{
    Json, ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig},
    tool, tool_handler, tool_router,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
        session::{local::LocalSessionManager, never::NeverSessionManager},
    },
};
use tokio::net::TcpListener;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct AddResult {
    sum: i64,
}

#[derive(Clone)]
struct Adder {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Adder {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Add two integers")]
    async fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> Json<AddResult> {
        Json(AddResult { sum: a + b })
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Adder {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn usage() -> ! {
    eprintln!("usage: rmcp-peer --port <port> --mode <session|stateless>");
    std::process::exit(2)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut port: Option<u16> = None;
    let mut mode = String::from("session");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = args.next().and_then(|p| p.parse().ok()),
            "--mode" => mode = args.next().unwrap_or_else(|| usage()),
            _ => usage(),
        }
    }
    let Some(port) = port else { usage() };
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    match mode.as_str() {
        "session" => {
            let config = StreamableHttpServerConfig::default().with_sse_keep_alive(None);
            let service = StreamableHttpService::new(
                || Ok(Adder::new()),
                Arc::new(LocalSessionManager::default()),
                config,
            );
            serve(listener, service).await
        }
        "stateless" => {
            let config = StreamableHttpServerConfig::default()
                .with_sse_keep_alive(None)
                .with_legacy_session_mode(false)
                .with_json_response(true);
            let service = StreamableHttpService::new(
                || Ok(Adder::new()),
                Arc::new(NeverSessionManager::default()),
                config,
            );
            serve(listener, service).await
        }
        _ => usage(),
    }
}

async fn serve<S>(listener: TcpListener, service: S) -> std::io::Result<()>
where
    S: tower_service::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = hyper::Response<
                http_body_util::combinators::BoxBody<hyper::body::Bytes, std::convert::Infallible>,
            >,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let service = TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
