//! `http::Routes` (issue 46): paths mounted beside MCP on the endpoint's listener. A mounted
//! `Routes` answers only the requests it claims, after the `Host`/`Origin` checks, with the
//! body read within the endpoint's body limit and the peer's address; the first that claims a
//! request answers it; every other request reaches MCP as before.

use crate::raw_http;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Method, Request, Response, StatusCode, Uri};
use mcp_server::http::{HttpConfig, Routes};
use mcp_server::{NoArgs, Server, Tool};
use raw_http::{RawRequest, Running};
use serde_json::json;

/// Claims every method on `prefix…`; answers `NAME METHOD PATH BODY-LENGTH PEER-KNOWN`.
#[derive(Debug)]
struct Echo {
    name: &'static str,
    prefix: &'static str,
    served: Arc<AtomicUsize>,
}

impl Routes for Echo {
    fn claims(&self, _: &Method, uri: &Uri) -> bool {
        uri.path().starts_with(self.prefix)
    }

    fn serve(
        &self,
        peer: Option<SocketAddr>,
        request: Request<Bytes>,
    ) -> BoxFuture<'_, Response<Bytes>> {
        self.served.fetch_add(1, Ordering::SeqCst);
        let text = format!(
            "{} {} {} {} {}",
            self.name,
            request.method(),
            request.uri().path(),
            request.body().len(),
            peer.is_some_and(|p| p.ip().is_loopback()),
        );
        Box::pin(async move {
            let mut response = Response::new(Bytes::from(text));
            *response.status_mut() = StatusCode::ACCEPTED;
            response
        })
    }
}

#[tokio::test]
async fn mounted_routes_answer_only_their_paths_within_the_endpoints_checks() {
    let served = Arc::new(AtomicUsize::new(0));
    let echo = |name, prefix| Echo {
        name,
        prefix,
        served: served.clone(),
    };
    let server = Server::builder("routes", "1")
        .tool(Tool::new("echo", |_: NoArgs| async { "echo".to_owned() }))
        .build()
        .unwrap();
    let config = HttpConfig::new()
        .body_limit(1024)
        .routes(echo("first", "/extra"))
        .routes(echo("second", "/extra/more"))
        .routes(echo("third", "/other"));
    let running = Running::start(server, config).await;
    let addr = running.addr;

    // Claimed paths, any method, with the body and the peer's address; the first claim wins.
    let get = RawRequest::new("GET", "/extra/page").send(addr).await;
    assert_eq!(get.status, 202, "{get:?}");
    assert_eq!(
        String::from_utf8_lossy(&get.body),
        "first GET /extra/page 0 true"
    );
    let post = RawRequest::new("POST", "/extra/more/x")
        .body(vec![b'a'; 100])
        .send(addr)
        .await;
    assert_eq!(
        String::from_utf8_lossy(&post.body),
        "first POST /extra/more/x 100 true"
    );
    let other = RawRequest::new("DELETE", "/other").send(addr).await;
    assert_eq!(
        String::from_utf8_lossy(&other.body),
        "third DELETE /other 0 true"
    );
    assert_eq!(served.load(Ordering::SeqCst), 3);

    // The endpoint's checks come first: a body over the limit, a foreign Origin, a Host the
    // loopback listener does not serve never reach the routes.
    let large = RawRequest::new("POST", "/extra/big")
        .body(vec![b'a'; 2048])
        .send(addr)
        .await;
    assert_eq!(large.status, 413, "{large:?}");
    let origin = RawRequest::new("GET", "/extra/page")
        .header("Origin", "https://evil.example")
        .send(addr)
        .await;
    assert_eq!(origin.status, 403, "{origin:?}");
    let host = RawRequest::new("GET", "/extra/page")
        .header("Host", "evil.example")
        .send(addr)
        .await;
    assert_eq!(host.status, 403, "{host:?}");
    assert_eq!(
        served.load(Ordering::SeqCst),
        3,
        "refused before the routes"
    );

    // Everything else is MCP (or 404) as without routes.
    let initialize = RawRequest::new("POST", "/mcp")
        .header("Accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "routes", "version": "1"}}}),
        )
        .send(addr)
        .await;
    assert_eq!(initialize.status, 200, "{initialize:?}");
    assert_eq!(initialize.json()["result"]["serverInfo"]["name"], "routes");
    let unknown = RawRequest::new("GET", "/elsewhere").send(addr).await;
    assert_eq!(unknown.status, 404, "{unknown:?}");
    assert_eq!(served.load(Ordering::SeqCst), 3);
    running.stop().await;
}
