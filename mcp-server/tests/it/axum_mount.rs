//! The endpoint mounted in axum (issue 33, the newcomer's axum traps): with
//! `HttpEndpoint::shutdown_on` as its graceful-shutdown signal, axum's shutdown ends while a
//! client still holds an SSE stream; a request to a path the endpoint does not serve gets a
//! 404 that names the paths it does.

use crate::raw_http;

use std::time::Duration;

use mcp_server::Server;
use mcp_server::http::{HttpConfig, HttpEndpoint};
use raw_http::RawRequest;

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn axum_shuts_down_while_a_client_holds_a_stream() {
    let server = Server::builder("axum-test", "1").build().unwrap();
    let endpoint = HttpEndpoint::new(server, HttpConfig::new());
    let app = axum::Router::new()
        .route_service("/mcp", endpoint.clone())
        .route_service("/sse", endpoint.clone())
        .route_service("/messages", endpoint.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(endpoint.shutdown_on(async {
                let _ = stopped.await;
            }))
            .await
    });
    // An HTTP+SSE stream: open until the server ends it.
    let mut stream = RawRequest::new("GET", "/sse")
        .header("Accept", "text/event-stream")
        .open(addr)
        .await;
    assert_eq!(stream.status, 200);
    let first = stream.event().await.expect("the endpoint event");
    assert_eq!(first.event.as_deref(), Some("endpoint"), "{first:?}");
    stop.send(()).unwrap();
    tokio::time::timeout(WAIT, serving)
        .await
        .expect("axum's graceful shutdown ends with the stream still held")
        .unwrap()
        .unwrap();
    let rest = tokio::time::timeout(WAIT, async { while stream.event().await.is_some() {} }).await;
    assert!(rest.is_ok(), "the stream was ended by the server");
}

#[tokio::test]
async fn a_path_the_endpoint_does_not_serve_is_a_404_that_says_which_it_does() {
    let server = Server::builder("axum-test", "1").build().unwrap();
    let endpoint = HttpEndpoint::new(server, HttpConfig::new());
    // Mounted at /api/mcp without telling the endpoint: every request is a 404, which says why.
    let app = axum::Router::new().route_service("/api/mcp", endpoint);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move { axum::serve(listener, app).await });
    let response = RawRequest::new("POST", "/api/mcp")
        .header("Accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .header("Content-Type", "application/json")
        .send(addr)
        .await;
    assert_eq!(response.status, 404);
    let body = String::from_utf8_lossy(&response.body).into_owned();
    assert!(body.contains("this MCP endpoint serves /mcp"), "{body}");
    assert!(body.contains("HttpConfig::path"), "{body}");
    serving.abort();
}
