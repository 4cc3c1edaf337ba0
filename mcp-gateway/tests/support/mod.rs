//! What the gateway's test binaries share: serving an endpoint on 127.0.0.1.
//!
//! Each binary includes this module and uses what it needs of it.
#![allow(dead_code)]

use mcp_server::Server;
use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown};
use tokio::net::TcpListener;

/// Serves `endpoint` on a free port of 127.0.0.1 until the test's runtime ends; its base URL
/// (`http://ADDR`).
pub(crate) async fn serve(endpoint: HttpEndpoint) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(serve_with_shutdown(
        listener,
        endpoint,
        std::future::pending::<()>(),
    ));
    base
}

/// Serves `server` with the default [`HttpConfig`]; its `/mcp` URL.
pub(crate) async fn serve_mcp(server: Server) -> String {
    let base = serve(HttpEndpoint::new(server, HttpConfig::new())).await;
    format!("{base}/mcp")
}
